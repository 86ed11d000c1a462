"""Rewrite a run file with this code's table definitions, rows unchanged: ``python tools/repack_run.py FILE``.

A file written before the large tables lost their index (``rtreport.schema.UNINDEXED``) keeps the index's room;
this copies its rows into a fresh file, checks that every run's integrity checksums still hold and that every
table holds as many rows as before, and only then replaces the file (a failure leaves it as it was).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from rtreport import integrity, schema  # noqa: E402


def main(path: Path) -> int:
    dest = path.with_name(f".{path.name}.repack")
    dest.unlink(missing_ok=True)
    try:
        copied = schema.repack(path, dest)
        src = duckdb.connect(str(path), read_only=True)
        new = duckdb.connect(str(dest), read_only=True)
        for table, n in copied.items():
            before = src.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]
            if before != n:
                raise SystemExit(f"repack: {table} has {n} rows in the copy, {before} in {path}")
        for (run_id,) in new.execute("SELECT run_id FROM runs").fetchall():
            verdict = integrity.verify(new, run_id)
            if verdict.state != integrity.verify(src, run_id).state or verdict.damaged:
                raise SystemExit(f"repack: run {run_id}: {verdict.line()}")
            print(f"run {run_id}: {verdict.line()}")
        src.close()
        new.close()
    except BaseException:
        dest.unlink(missing_ok=True)
        raise
    before = path.stat().st_size
    os.replace(dest, path)
    print(
        f"{path}: {before / 1e6:.1f} MB -> {path.stat().st_size / 1e6:.1f} MB, {sum(copied.values()):,} rows in "
        f"{len(copied)} tables"
    )
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2 or not Path(sys.argv[1]).is_file():
        raise SystemExit("usage: python tools/repack_run.py FILE.duckdb")
    raise SystemExit(main(Path(sys.argv[1])))
