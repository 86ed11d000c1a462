"""Read collect runs' DuckDB files into plain structures (the only I/O on the way to the statistics)."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from collect.errors import UserError
from collect.store import APPLICATION, SCHEMA_VERSION


@dataclass
class RuntimeRows:
    runtime_id: str
    title: str
    framework: str
    device: str
    precision: str
    variant: str
    status: str
    reason: str | None
    artifact_bytes: int | None
    prepare_seconds: float | None
    details: dict
    decision_seconds: np.ndarray = field(default_factory=lambda: np.zeros(0))
    batch_seconds: dict = field(default_factory=dict)          # batch size -> seconds array
    state_q: np.ndarray | None = None                           # (states, actions)
    episodes: list = field(default_factory=list)                # dicts: seed, score, steps, truncated, step_cap
    traces: dict = field(default_factory=dict)                  # seed -> list of actions


@dataclass
class RunRows:
    source: Path
    run: dict
    runtimes: list[RuntimeRows]

    @property
    def complete(self) -> bool:
        return self.run["status"] == "complete"

    def runtime(self, runtime_id: str | None) -> RuntimeRows | None:
        return next((r for r in self.runtimes if r.runtime_id == runtime_id), None)


def load_run(path: Path) -> RunRows:
    """One collect file; bad input raises UserError with one clear line."""
    import duckdb

    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: no such file")
    try:
        con = duckdb.connect(str(path), read_only=True)
    except Exception:
        raise UserError(f"{path} is not a DuckDB file") from None
    try:
        tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        meta = dict(con.execute("SELECT key, value FROM meta").fetchall()) if "meta" in tables else {}
        if meta.get("application") != APPLICATION:
            raise UserError(f"{path} is a DuckDB file but not one written by rtreport collect")
        version = int(meta.get("schema_version", "0"))
        if version > SCHEMA_VERSION:
            raise UserError(f"{path} has schema version {version}, newer than this rtreport reads ({SCHEMA_VERSION}); "
                            "upgrade rtreport")
        if version < 1:
            raise UserError(f"{path} has no valid schema version")
        try:
            return _read(con, path)
        except UserError:
            raise
        except Exception as e:  # a damaged file or one edited by hand
            raise UserError(f"{path}: cannot read the run: {type(e).__name__}: {str(e).splitlines()[0][:200]}") from None
    finally:
        con.close()


def _read(con, path: Path) -> RunRows:
    cur = con.execute("SELECT * REPLACE (CAST(started_at AS VARCHAR) AS started_at, "
                      "CAST(finished_at AS VARCHAR) AS finished_at) FROM runs")
    names = [d[0] for d in cur.description]
    rows = cur.fetchall()
    if len(rows) != 1:
        raise UserError(f"{path} holds {len(rows)} runs; rtreport collect writes exactly one per file")
    run = dict(zip(names, rows[0]))
    for key in ("protocol", "settings", "torch_tf32_reference"):
        run[key] = json.loads(run[key]) if run.get(key) else {}
    run_id = run["run_id"]
    runtimes = []
    for r in con.execute("SELECT runtime_id, title, framework, device, precision, variant, status, reason, "
                         "artifact_bytes, prepare_seconds, details FROM runtimes WHERE run_id = ?", [run_id]).fetchall():
        rt = RuntimeRows(*r[:10], details=json.loads(r[10]) if r[10] else {})
        rid = rt.runtime_id
        lat = con.execute("SELECT kind, batch_size, list(seconds ORDER BY iteration) FROM latency "
                          "WHERE run_id = ? AND runtime_id = ? GROUP BY kind, batch_size ORDER BY kind, batch_size",
                          [run_id, rid]).fetchall()
        for kind, batch, seconds in lat:
            if kind == "decision":
                rt.decision_seconds = np.asarray(seconds, dtype=float)
            else:
                rt.batch_seconds[int(batch)] = np.asarray(seconds, dtype=float)
        q = con.execute("SELECT q_values FROM state_q WHERE run_id = ? AND runtime_id = ? ORDER BY state_index",
                        [run_id, rid]).fetchall()
        rt.state_q = np.asarray([v[0] for v in q], dtype=float) if q else None
        rt.episodes = [dict(zip(("seed", "score", "steps", "truncated", "step_cap"), e)) for e in con.execute(
            "SELECT seed, score, steps, truncated, step_cap FROM episodes WHERE run_id = ? AND runtime_id = ? "
            "ORDER BY seed", [run_id, rid]).fetchall()]
        rt.traces = {int(s): list(a) for s, a in con.execute(
            "SELECT seed, list(action ORDER BY step) FROM actions WHERE run_id = ? AND runtime_id = ? GROUP BY seed",
            [run_id, rid]).fetchall()}
        runtimes.append(rt)
    from collect.runtimes import all_runtimes
    order = [s.info.runtime_id for s in all_runtimes()]
    runtimes.sort(key=lambda r: (order.index(r.runtime_id) if r.runtime_id in order else len(order), r.runtime_id))
    return RunRows(path, run, runtimes)
