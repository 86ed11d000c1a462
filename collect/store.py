"""The DuckDB file of one collect run: raw observations plus provenance.

Every phase is committed as soon as it is measured, so an interrupted or failing run keeps
everything already measured; the run's ``status`` says whether it completed. Statistics are
not stored: ``rtreport build`` derives them from these rows. See docs/duckdb-schema.md.
"""
from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import duckdb

from . import interrupts

SCHEMA_VERSION = 1
APPLICATION = "rtreport"

SCHEMA = """
CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR NOT NULL);
CREATE TABLE runs (
    run_id VARCHAR PRIMARY KEY, label VARCHAR NOT NULL,
    started_at TIMESTAMP NOT NULL, finished_at TIMESTAMP,   -- UTC
    status VARCHAR NOT NULL,              -- running | complete | incomplete
    status_detail VARCHAR,
    profile VARCHAR NOT NULL,             -- full | quick
    host VARCHAR, os VARCHAR, cpu VARCHAR, cpu_count INTEGER,
    gpu_name VARCHAR, gpu_driver VARCHAR, cuda_version VARCHAR,
    python_version VARCHAR, torch_version VARCHAR, onnxruntime_version VARCHAR, tensorrt_version VARCHAR,
    ale_py_version VARCHAR, gymnasium_version VARCHAR, numpy_version VARCHAR, rtreport_version VARCHAR,
    code_version VARCHAR,
    model_path VARCHAR, model_format VARCHAR, model_sha256 VARCHAR, num_actions INTEGER,
    reference_runtime VARCHAR,
    eval_epsilon DOUBLE, torch_tf32_reference JSON,
    protocol JSON, settings JSON
);
CREATE TABLE runtimes (
    run_id VARCHAR, runtime_id VARCHAR, title VARCHAR, framework VARCHAR, device VARCHAR, precision VARCHAR,
    variant VARCHAR, status VARCHAR NOT NULL,   -- available | failed | unavailable
    reason VARCHAR, artifact_path VARCHAR, artifact_bytes BIGINT, prepare_seconds DOUBLE, details JSON,
    PRIMARY KEY (run_id, runtime_id)
);
CREATE TABLE latency (
    run_id VARCHAR, runtime_id VARCHAR, kind VARCHAR,  -- decision (batch 1, closed loop) | batch (sweep)
    batch_size INTEGER, iteration INTEGER, seconds DOUBLE
);
CREATE TABLE state_q (run_id VARCHAR, runtime_id VARCHAR, state_index INTEGER, q_values FLOAT[], action INTEGER);
CREATE TABLE episodes (
    run_id VARCHAR, runtime_id VARCHAR, seed BIGINT, score DOUBLE, steps INTEGER, truncated BOOLEAN,
    step_cap INTEGER, seconds DOUBLE
);
CREATE TABLE actions (run_id VARCHAR, runtime_id VARCHAR, seed BIGINT, step INTEGER, action TINYINT);
"""


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
            self.con.execute(SCHEMA)
            self.con.executemany("INSERT INTO meta VALUES (?, ?)",
                                 [("application", APPLICATION), ("schema_version", str(SCHEMA_VERSION))])

    def _write(self):
        return _Transaction(self.con)

    def start_run(self, row: dict) -> None:
        row = {**row, "run_id": self.run_id, "started_at": now(), "status": "running"}
        for key in ("protocol", "settings", "torch_tf32_reference"):
            if key in row and not isinstance(row[key], str):
                row[key] = json.dumps(row[key], sort_keys=True)
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
        if "details" in fields and not isinstance(fields["details"], str):
            fields["details"] = json.dumps(fields["details"], sort_keys=True, default=str)
        row = {"run_id": self.run_id, "runtime_id": runtime_id, **fields}
        with self._write():
            self.con.execute("DELETE FROM runtimes WHERE run_id = ? AND runtime_id = ?", [self.run_id, runtime_id])
            self.con.execute(f"INSERT INTO runtimes ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                             list(row.values()))

    def add_latency(self, runtime_id: str, kind: str, batch_size: int, seconds: list[float]) -> None:
        with self._write():
            self.con.execute(
                "INSERT INTO latency SELECT ?, ?, ?, ?, UNNEST(range(len(s))), UNNEST(s) FROM (SELECT ?::DOUBLE[] AS s)",
                [self.run_id, runtime_id, kind, batch_size, seconds])

    def add_state_q(self, runtime_id: str, q_values, actions) -> None:
        with self._write():
            self.con.executemany("INSERT INTO state_q VALUES (?, ?, ?, ?, ?)",
                                 [[self.run_id, runtime_id, i, [float(v) for v in q], int(a)]
                                  for i, (q, a) in enumerate(zip(q_values, actions))])

    def add_episode(self, runtime_id: str, episode, step_cap: int | None, seconds: float) -> None:
        with self._write():
            self.con.execute("INSERT INTO episodes VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                             [self.run_id, runtime_id, episode.seed, episode.score, episode.steps, episode.truncated,
                              step_cap, seconds])
            self.con.execute(
                "INSERT INTO actions SELECT ?, ?, ?, UNNEST(range(len(a))), UNNEST(a) FROM (SELECT ?::TINYINT[] AS a)",
                [self.run_id, runtime_id, episode.seed, episode.actions])

    def close(self) -> None:
        self.con.close()


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
