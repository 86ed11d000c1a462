"""``rtreport check FILE``: what ``rtreport build`` would say of a run file's integrity, from the shell."""
from __future__ import annotations

from pathlib import Path

from rtreport import integrity
from rtreport.errors import UserError

from .load import _current_schema, duckdb_problem


def check_file(path: Path, echo) -> int:
    """One line; 0 as recorded (or no checksum recorded), 1 damaged. Unreadable: UserError (exit 2)."""
    import duckdb

    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: no such file")
    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error as e:
        raise UserError(duckdb_problem(path, e)) from None
    try:
        con = _current_schema(con, path)
        verdict = integrity.verify(con)
        runs = con.execute("SELECT label, status FROM runs ORDER BY started_at").fetchall()
    except duckdb.Error as e:
        raise UserError(duckdb_problem(path, e)) from None
    finally:
        con.close()
    what = ", ".join(f"{label} ({status})" for label, status in runs) or "no run"
    echo(f"{path}: {what}: {verdict.line()}")
    return 1 if verdict.damaged else 0
