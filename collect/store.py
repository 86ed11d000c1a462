"""Writing one collect run into its DuckDB file (the schema is ``rtreport.schema``, the contract with site_gen).

Every phase is committed as soon as it is measured, so an interrupted or failing run keeps
everything already measured; the run's ``status`` says whether it completed. Statistics are
not stored: ``rtreport build`` derives them from these rows. See docs/duckdb-schema.md.
"""
from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import duckdb

from rtreport import schema

from . import interrupts

JSON_COLUMNS = ("environment", "protocol", "settings", "libraries", "numerics", "details")


def now() -> datetime:
    """UTC, stored without a zone (DuckDB's TIMESTAMPTZ would need pytz to read back)."""
    return datetime.now(timezone.utc).replace(tzinfo=None)


class RunStore:
    """Writes one run into a new DuckDB file. Each write is one transaction, held together against stop
    signals (``interrupts.hold``/``release``), so an interrupted run's file holds whole phases only."""

    def __init__(self, path: Path, run_id: str):
        self.path = Path(path)
        self.run_id = run_id
        self.con = duckdb.connect(str(self.path))
        with self._write():
            schema.create(self.con)

    def _write(self):
        return _Transaction(self.con)

    def start_run(self, row: dict) -> None:
        row = _json({**row, "run_id": self.run_id, "started_at": now(), "status": "running"})
        cols = ", ".join(row)
        with self._write():
            self.con.execute(f"INSERT INTO runs ({cols}) VALUES ({', '.join('?' * len(row))})", list(row.values()))

    def update_run(self, **fields) -> None:
        sets = ", ".join(f"{k} = ?" for k in fields)
        with self._write():
            self.con.execute(f"UPDATE runs SET {sets} WHERE run_id = ?", [*fields.values(), self.run_id])

    def finish_run(self, status: str, detail: str | None = None) -> None:
        self.update_run(status=status, status_detail=detail, finished_at=now())

    def put_runtime(self, runtime_id: str, **fields) -> None:
        """Insert or replace a runtime's row (its status moves as the run goes on)."""
        row = _json({"run_id": self.run_id, "runtime_id": runtime_id, **fields})
        with self._write():
            self.con.execute("DELETE FROM runtimes WHERE run_id = ? AND runtime_id = ?", [self.run_id, runtime_id])
            self.con.execute(f"INSERT INTO runtimes ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                             list(row.values()))

    def add_latency(self, runtime_id: str, kind: str, batch_size: int, seconds: list[float], round_: int = 0) -> None:
        with self._write():
            self.con.execute(
                "INSERT INTO latency SELECT ?, ?, ?, ?, ?, UNNEST(range(len(s))), UNNEST(s) FROM (SELECT ?::DOUBLE[] AS s)",
                [self.run_id, runtime_id, kind, batch_size, round_, seconds])

    def add_state_q(self, runtime_id: str, q_values, actions) -> None:
        with self._write():
            self.con.executemany("INSERT INTO state_q VALUES (?, ?, ?, ?, ?)",
                                 [[self.run_id, runtime_id, i, [float(v) for v in q], int(a)]
                                  for i, (q, a) in enumerate(zip(q_values, actions))])

    def add_episode(self, runtime_id: str, episode, step_cap: int | None, seconds: float) -> None:
        with self._write():
            self.con.execute("INSERT INTO episodes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?::UTINYINT[])",
                             [self.run_id, runtime_id, episode.seed, episode.score, episode.steps, episode.truncated,
                              step_cap, seconds, episode.actions])

    def close(self) -> None:
        self.con.close()


def _json(row: dict) -> dict:
    return {k: json.dumps(v, sort_keys=True, default=str) if k in JSON_COLUMNS and v is not None
            and not isinstance(v, str) else v for k, v in row.items()}


class _Transaction:
    """One write: a DuckDB transaction that a stop signal cannot cut in half."""

    def __init__(self, con):
        self.con = con

    def __enter__(self):
        interrupts.hold()
        self.con.execute("BEGIN TRANSACTION")
        return self.con

    def __exit__(self, exc_type, exc, tb):
        try:
            self.con.execute("COMMIT" if exc_type is None else "ROLLBACK")
        finally:
            interrupts.release()  # a stop signal held during the write is raised now
