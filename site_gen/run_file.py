"""Opening a collect file for reading: is it there, is it DuckDB's, is it rtreport's, and which schema (an older
one is upgraded in memory through ``migrations.upgrade``); each way it is not is one line (``UserError``)."""

from __future__ import annotations

from pathlib import Path

from rtreport import migrations, schema
from rtreport.errors import UserError


def open_run_file(path: Path):
    """A collect file opened read-only, in the current schema (older schemas upgraded in memory); one clear line
    (UserError) for a missing or unreadable one. The caller closes it."""
    import duckdb

    if path.is_dir():
        raise UserError(f"{path} is a folder, not a run file (rtreport build takes a folder of them)")
    if not path.is_file():
        raise UserError(f"{path}: no such file")
    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error as e:
        raise UserError(duckdb_problem(path, e)) from None
    try:
        return _current_schema(con, path)
    except BaseException as e:
        con.close()
        if isinstance(e, duckdb.Error):
            raise UserError(duckdb_problem(path, e)) from None
        raise


def _current_schema(con, path: Path):
    """``con`` itself for a file of the current schema; an in-memory upgraded copy for an older one."""
    tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    meta = dict(con.execute("SELECT key, value FROM meta").fetchall()) if "meta" in tables else {}
    if meta.get("application") != schema.APPLICATION:
        wal = path.with_name(path.name + ".wal")
        if not tables and path.name.endswith(".partial") and not wal.exists():
            raise UserError(
                f"{path} is the partial file of a collect that stopped before its first checkpoint, and "
                f"its log {wal.name}, which held everything it measured, is gone (moved or deleted): "
                "nothing of that run can be read"
            )
        raise UserError(f"{path} is a DuckDB file but not one written by rtreport collect")
    text = str(meta.get("schema_version", ""))
    version = int(text) if text.isdigit() else 0
    if version > schema.SCHEMA_VERSION:
        raise UserError(
            f"{path} has schema version {version}, newer than this rtreport reads "
            f"({schema.SCHEMA_VERSION}); upgrade rtreport"
        )
    if version < 1:
        raise UserError(f"{path} has no valid schema version")
    wanted = list(schema.TABLES) if version == schema.SCHEMA_VERSION else schema.OLD_TABLES[version]
    missing = [t for t in wanted if t not in tables and t not in schema.LATER_V3_TABLES]
    if missing:
        raise UserError(
            f"{path} is an rtreport file without its {', '.join(missing)} table"
            f"{'s' * (len(missing) > 1)}: damaged or edited by hand"
        )
    if version == schema.SCHEMA_VERSION:
        return con
    con.close()
    return migrations.upgrade(str(path), version)


def duckdb_problem(path: Path, e: Exception) -> str:
    """DuckDB's error, in the CLI's one-line style."""
    text = first_line(e)
    if "Could not set lock" in text or "Conflicting lock" in text:
        return f"{path} is open for writing in another process (a collect still running?); wait for it to end"
    if "not a valid DuckDB database" in text:
        return f"{path} is not a DuckDB database file (or its header is damaged)"
    if any(k in text for k in ("read enough bytes", "truncated", "Corrupt", "corrupt", "checksum")):
        return f"{path} is damaged or truncated: DuckDB cannot read it (copy it again from where it was measured)"
    return f"{path}: DuckDB cannot read it: {text}"


def first_line(e: Exception) -> str:
    lines = str(e).strip().splitlines()
    return lines[0][:200] if lines else type(e).__name__
