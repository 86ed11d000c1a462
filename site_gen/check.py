"""``rtreport check FILE``: what ``rtreport build`` would say of a run file's integrity, from the shell."""

from __future__ import annotations

from pathlib import Path

from rtreport import integrity
from rtreport.errors import UserError

from .run_file import duckdb_problem, open_run_file


def check_file(path: Path, echo) -> int:
    """One line; 0 as recorded (or no checksum recorded), 1 damaged. Unreadable: UserError (exit 2)."""
    import duckdb

    path = Path(path)
    con = open_run_file(path)
    try:
        runs = [
            (label, status, integrity.verify(con, run_id))
            for run_id, label, status in con.execute(
                "SELECT run_id, label, status FROM runs ORDER BY started_at, run_id"
            ).fetchall()
        ]
    except duckdb.Error as e:
        raise UserError(duckdb_problem(path, e)) from None
    finally:
        con.close()
    if not runs:
        raise UserError(f"{path} holds no run: damaged or edited by hand")
    for label, status, verdict in runs:
        echo(f"{path}: {label} ({status}): {verdict.line()}")
    return 1 if any(v.damaged for *_, v in runs) else 0
