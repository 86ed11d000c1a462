"""The run file on disk: which DuckDB storage format it is written in, connecting to it for writing, and compacting
it once closed (``collect.store`` writes its rows; ``rtreport.schema`` says what they are)."""

from __future__ import annotations

from pathlib import Path

import duckdb

# Run files are written in DuckDB's v1.0.0 storage format, which every DuckDB from 1.0 on reads: DuckDB 2.0
# writes new files in its own format by default, which DuckDB 1.x refuses ("version number 69 ... we can only read
# versions between 64 and 68"), so a file collected or compacted with 2.0 could not be resumed or built where an
# older DuckDB is installed (the project asks for duckdb>=1.1). DuckDB before 1.2 knows no such option and
# writes that format anyway.
STORAGE = "v1.0.0"
STORAGE_NUMBER = 64  # what the file's header says for it


def connect(path: Path) -> duckdb.DuckDBPyConnection:
    """A writable connection; a file it creates is in the ``STORAGE`` format (an existing file keeps its own)."""
    try:
        return duckdb.connect(str(path), config={"storage_compatibility_version": STORAGE})
    except duckdb.Error as e:
        if "storage_compatibility_version" not in str(e):
            raise
        return duckdb.connect(str(path))


def storage_number(path: Path) -> int | None:
    """The storage version number in a DuckDB file's header (64: v1.0.0); None if it is not a DuckDB file."""
    with open(path, "rb") as f:
        head = f.read(20)
    return int.from_bytes(head[12:20], "little") if len(head) == 20 and head[8:12] == b"DUCK" else None


def compact(path: Path) -> bool:
    """Rewrite a closed run file without the free blocks that DuckDB keeps after its many small transactions
    (an H200 file of 17.3 MB became 12.1 MB, every row the same): the published files stay small. The copy is in
    the ``STORAGE`` format, and it also replaces a file that is not smaller but is in a newer format. It
    replaces the file only if every table holds the same rows; on any failure the file is left as it was.
    Returns whether it was replaced."""
    path = Path(path)
    copy = path.with_name(path.name + ".compact")
    copy.unlink(missing_ok=True)

    def quoted(p: Path) -> str:
        return "'" + str(p).replace("'", "''") + "'"

    try:
        con = duckdb.connect()
        try:
            con.execute(f"ATTACH {quoted(path)} AS old (READ_ONLY)")
            try:
                con.execute(f"ATTACH {quoted(copy)} AS new (STORAGE_VERSION '{STORAGE}')")
            except duckdb.Error:  # a DuckDB before 1.2: no such option, and the v1.0.0 format anyway
                copy.unlink(missing_ok=True)
                con.execute(f"ATTACH {quoted(copy)} AS new")
            con.execute("COPY FROM DATABASE old TO new")
            tables = [
                t
                for (t,) in con.execute("SELECT table_name FROM duckdb_tables() WHERE database_name = 'old'").fetchall()
            ]
            for t in tables:
                a = con.execute(f'SELECT * FROM old."{t}" EXCEPT ALL SELECT * FROM new."{t}"').fetchone()
                b = con.execute(f'SELECT * FROM new."{t}" EXCEPT ALL SELECT * FROM old."{t}"').fetchone()
                if a is not None or b is not None:
                    return False
        finally:
            con.close()
        newer = (storage_number(path) or 0) > STORAGE_NUMBER
        if copy.stat().st_size >= path.stat().st_size and not newer:
            return False
        copy.replace(path)
        return True
    except (duckdb.Error, OSError):
        return False
    finally:
        copy.unlink(missing_ok=True)
        copy.with_name(copy.name + ".wal").unlink(missing_ok=True)
