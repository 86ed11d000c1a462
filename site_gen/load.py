"""Read collect runs' DuckDB files into plain structures (the only I/O on the way to the statistics)."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from collect.store import APPLICATION, SCHEMA_VERSION
from rtreport.errors import UserError

from . import validate


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
    problems: list = field(default_factory=list)   # validate.Problem: rows that failed checks (left out)

    @property
    def complete(self) -> bool:
        return self.run["status"] == "complete"

    def runtime(self, runtime_id: str | None) -> RuntimeRows | None:
        return next((r for r in self.runtimes if r.runtime_id == runtime_id), None)


TABLES = ("meta", "runs", "runtimes", "latency", "state_q", "episodes", "actions")


def load_run(path: Path, allow_invalid: bool = False) -> RunRows:
    """One collect file; bad input raises UserError with one clear line.

    Raw rows are validated first (``validate.problems``); a file that fails is refused unless
    ``allow_invalid``, in which case its bad rows are left out and the run carries its problems."""
    import duckdb

    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: no such file")
    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error as e:
        raise UserError(duckdb_problem(path, e)) from None
    try:
        tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        meta = dict(con.execute("SELECT key, value FROM meta").fetchall()) if "meta" in tables else {}
        if meta.get("application") != APPLICATION:
            raise UserError(f"{path} is a DuckDB file but not one written by rtreport collect")
        version = int(meta.get("schema_version", "0")) if str(meta.get("schema_version", "0")).isdigit() else 0
        if version > SCHEMA_VERSION:
            raise UserError(f"{path} has schema version {version}, newer than this rtreport reads ({SCHEMA_VERSION}); "
                            "upgrade rtreport")
        if version < 1:
            raise UserError(f"{path} has no valid schema version")
        missing = [t for t in TABLES if t not in tables]
        if missing:
            raise UserError(f"{path} is an rtreport file without its {', '.join(missing)} table"
                            f"{'s' * (len(missing) > 1)}: damaged or edited by hand")
        return _read(con, path, allow_invalid)
    except UserError:
        raise
    except duckdb.Error as e:
        raise UserError(duckdb_problem(path, e)) from None
    except Exception as e:  # a file edited by hand into something this reader cannot follow
        raise UserError(f"{path}: cannot read the run: {type(e).__name__}: {_first_line(e)}") from None
    finally:
        con.close()


def duckdb_problem(path: Path, e: Exception) -> str:
    """DuckDB's error, in the CLI's one-line style."""
    text = _first_line(e)
    if "Could not set lock" in text or "Conflicting lock" in text:
        return f"{path} is open for writing in another process (a collect still running?); wait for it to end"
    if "not a valid DuckDB database" in text:
        return f"{path} is not a DuckDB database file (or its header is damaged)"
    if any(k in text for k in ("read enough bytes", "truncated", "Corrupt", "corrupt", "checksum")):
        return f"{path} is damaged or truncated: DuckDB cannot read it (copy it again from where it was measured)"
    return f"{path}: DuckDB cannot read it: {text}"


def _first_line(e: Exception) -> str:
    lines = str(e).strip().splitlines()
    return lines[0][:200] if lines else type(e).__name__


def _read(con, path: Path, allow_invalid: bool) -> RunRows:
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
    num_actions = int(run.get("num_actions") or 0)
    found = validate.problems(con, run_id, num_actions, run["settings"].get("seeds", []))
    if found and not allow_invalid:
        shown = "; ".join(str(p) for p in found[:3]) + (f"; and {len(found) - 3} more" if len(found) > 3 else "")
        raise UserError(f"{path} is refused: its raw rows fail validation ({shown}); "
                        "rtreport build --allow-invalid publishes it marked invalid, without those rows")

    def rows_of(table: str) -> str:
        return validate.valid_rows(table, num_actions) if found else ""

    def query(sql: str, rid: str):
        params = {"run": run_id, "rid": rid, "seeds": [int(x) for x in run["settings"].get("seeds", [])]}
        return con.execute(sql, {k: v for k, v in params.items() if f"${k}" in sql}).fetchall()
    runtimes = []
    for r in con.execute("SELECT runtime_id, title, framework, device, precision, variant, status, reason, "
                         "artifact_bytes, prepare_seconds, details FROM runtimes WHERE run_id = ?", [run_id]).fetchall():
        rt = RuntimeRows(*r[:10], details=json.loads(r[10]) if r[10] else {})
        rid = rt.runtime_id
        lat = query("SELECT kind, batch_size, list(seconds ORDER BY iteration) FROM (SELECT * FROM latency "
                    f"WHERE run_id = $run {rows_of('latency')}) WHERE runtime_id = $rid "
                    "GROUP BY kind, batch_size ORDER BY kind, batch_size", rid)
        for kind, batch, seconds in lat:
            if kind == "decision":
                rt.decision_seconds = np.asarray(seconds, dtype=float)
            else:
                rt.batch_seconds[int(batch)] = np.asarray(seconds, dtype=float)
        q = query(f"SELECT q_values FROM (SELECT * FROM state_q WHERE run_id = $run {rows_of('state_q')}) "
                  "WHERE runtime_id = $rid ORDER BY state_index", rid)
        rt.state_q = np.asarray([v[0] for v in q], dtype=float) if q else None
        rt.episodes = [dict(zip(("seed", "score", "steps", "truncated", "step_cap"), e)) for e in query(
            "SELECT seed, score, steps, truncated, step_cap FROM (SELECT * FROM episodes WHERE run_id = $run "
            f"{rows_of('episodes')}) WHERE runtime_id = $rid ORDER BY seed", rid)]
        rt.traces = {int(s): list(a) for s, a in query(
            "SELECT seed, list(action ORDER BY step) FROM (SELECT * FROM actions WHERE run_id = $run "
            f"{rows_of('actions')}) WHERE runtime_id = $rid GROUP BY seed", rid)}
        runtimes.append(rt)
    from collect.runtimes import all_runtimes
    order = [s.info.runtime_id for s in all_runtimes()]
    runtimes.sort(key=lambda r: (order.index(r.runtime_id) if r.runtime_id in order else len(order), r.runtime_id))
    return RunRows(path, run, runtimes, found)
