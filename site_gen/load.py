"""Read collect runs' DuckDB files into plain structures (the only I/O on the way to the statistics).

The file is the whole contract (``rtreport.schema``): everything a page shows about a runtime — its title,
framework, device, precision, variant, library versions and TF32 state — comes from its row here.
Files of an older schema are read through ``migrations.upgrade`` (``run_file``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rtreport import integrity
from rtreport.errors import UserError

from . import agents, validate
from .run_file import first_line, duckdb_problem, open_run_file


@dataclass
class RuntimeRows:
    runtime_id: str
    position: int
    title: str
    framework: str
    device: str
    precision: str
    variant: str
    status: str
    reason: str | None
    artifact_bytes: int | None
    prepare_seconds: float | None
    libraries: dict = field(default_factory=dict)
    numerics: dict = field(default_factory=dict)
    details: dict = field(default_factory=dict)
    decision_seconds: np.ndarray = field(default_factory=lambda: np.zeros(0))  # every round, in order
    rounds: list = field(default_factory=list)  # per round: seconds array
    round_ids: list = field(default_factory=list)  # the round number of each entry of ``rounds``
    round_info: list = field(default_factory=list)  # per round: {round, position, started_at, conditions}
    batch_seconds: dict = field(default_factory=dict)  # batch size -> seconds array
    state_q: np.ndarray | None = None  # (states, actions)
    first_q: dict = field(default_factory=dict)  # state index -> Q-values as stored (float32 bits)
    repeat_q: list = field(default_factory=list)  # (repeat, state index, Q-values): later processes
    episodes: list = field(default_factory=list)  # dicts: seed, score, steps, truncated, step_cap, source
    traces: dict = field(default_factory=dict)  # seed -> list of actions (played episodes)
    margin_counts: dict = field(default_factory=dict)  # seed -> decisions per margin bin (played episodes)
    shadow: dict = field(default_factory=dict)  # seed -> {decisions, same, first_flip} along the reference
    shadow_differences: list = field(default_factory=list)  # agents.shadow_differences
    flips: list = field(default_factory=list)  # dicts: seed, step, reference_action, action, margins
    kernels: list = field(default_factory=list)  # dicts: name, kind, calls, seconds, decisions
    resources: dict = field(default_factory=dict)  # kind -> {value, unit, method}
    twins: dict = field(default_factory=dict)  # twin -> {games, decisions, checked, differing}
    twin_games: dict = field(default_factory=dict)  # seed -> (twin, checked, differing): its own games


@dataclass
class RunRows:
    source: Path
    run: dict
    runtimes: list[RuntimeRows]
    problems: list = field(default_factory=list)  # validate.Problem: rows that failed checks (left out)
    sessions: list = field(default_factory=list)  # each command that wrote the run (the first, every --resume)
    floors: dict = field(default_factory=dict)  # kind -> seconds array (the copy floor of a GPU machine)
    damaged: list = field(default_factory=list)  # integrity.Damage: what no longer matches the rows recorded at
    # the run's end
    repeat_details: dict = field(default_factory=dict)  # repeat -> {runtime id: details}: what each repeat's
    # process said of each runtime (its compile cache, …)
    repeat_sessions: dict = field(default_factory=dict)  # session -> the repeat it took (collect --repeat)
    retaken: list = field(default_factory=list)  # rounds measured again for foreign load: (runtime, round, attempt)
    random_scores: dict = field(default_factory=dict)  # agents.random_scores

    @property
    def complete(self) -> bool:
        return self.run["status"] == "complete"

    def runtime(self, runtime_id: str | None) -> RuntimeRows | None:
        return next((r for r in self.runtimes if r.runtime_id == runtime_id), None)


def load_file(path: Path, allow_invalid: bool = False) -> list[RunRows]:
    """Every run in one collect file; bad input raises UserError with one clear line.

    Raw rows are validated first (``validate.problems``); a file that fails is refused unless
    ``allow_invalid``, in which case its bad rows are left out and each run carries its problems."""
    import duckdb

    path = Path(path)
    con = open_run_file(path)
    try:
        ids = [r for (r,) in con.execute("SELECT run_id FROM runs ORDER BY started_at, run_id").fetchall()]
        verdicts = {run_id: integrity.verify(con, run_id) for run_id in ids}
        damaged = [v for v in verdicts.values() if v.damaged]
        if damaged and not allow_invalid:
            raise UserError(
                f"{path} is refused: it no longer holds the rows recorded at its run's end "
                f"({'; '.join(str(p) for v in damaged for p in v.problems)[:400]}); copy it again from where "
                "it was measured, or rtreport build --allow-invalid publishes it marked damaged"
            )
        runs = [_read(con, path, run_id, allow_invalid) for run_id in ids]
        for run in runs:
            found = verdicts[run.run["run_id"]]
            run.damaged = found.problems if found.damaged else []
        if not runs:
            raise UserError(f"{path} holds no run: damaged or edited by hand")
        return runs
    except UserError:
        raise
    except duckdb.Error as e:
        raise UserError(duckdb_problem(path, e)) from None
    except Exception as e:  # a file edited by hand into something this reader cannot follow
        raise UserError(f"{path}: cannot read the run: {type(e).__name__}: {first_line(e)}") from None
    finally:
        con.close()


def _json(text) -> dict:
    return json.loads(text) if text else {}


def _read(con, path: Path, run_id: str, allow_invalid: bool) -> RunRows:
    cur = con.execute(
        "SELECT * REPLACE (CAST(started_at AS VARCHAR) AS started_at, "
        "CAST(finished_at AS VARCHAR) AS finished_at) FROM runs WHERE run_id = ?",
        [run_id],
    )
    run = dict(zip([d[0] for d in cur.description], cur.fetchone()))
    for key in ("environment", "protocol", "settings"):
        run[key] = _json(run.get(key))
    if run["protocol"].get("family"):  # an agent other than Breakout's: one answer per machine and agent
        run["machine_label"] = run["label"]
        run["label"] = agents.agent_label(run)
    num_actions = int(run.get("num_actions") or 0)
    seeds = [int(x) for x in run["settings"].get("seeds", [])]
    found = validate.problems(con, run_id, num_actions, seeds)
    if found and not allow_invalid:
        shown = "; ".join(str(p) for p in found[:3]) + (f"; and {len(found) - 3} more" if len(found) > 3 else "")
        raise UserError(
            f"{path} is refused: its raw rows fail validation ({shown}); "
            "rtreport build --allow-invalid publishes it marked invalid, without those rows"
        )

    has_differences = agents.has_table(con, "shadow_differences")

    def query(table: str, select: str, rid: str, tail: str = ""):
        keep = validate.valid_rows(table, num_actions) if found else ""
        sql = f"SELECT {select} FROM (SELECT * FROM {table} WHERE run_id = $run {keep}) WHERE runtime_id = $rid {tail}"
        params = {"run": run_id, "rid": rid, "seeds": seeds}
        return con.execute(sql, {k: v for k, v in params.items() if f"${k}" in sql}).fetchall()

    has_twins = bool(con.execute("SELECT 1 FROM information_schema.tables WHERE table_name = 'twins'").fetchall())
    runtimes = []
    for r in con.execute(
        "SELECT runtime_id, position, title, framework, device, precision, variant, status, reason, "
        "artifact_bytes, prepare_seconds, libraries, numerics, details FROM runtimes "
        "WHERE run_id = ? ORDER BY position, runtime_id",
        [run_id],
    ).fetchall():
        rt = RuntimeRows(*r[:11], libraries=_json(r[11]), numerics=_json(r[12]), details=_json(r[13]))
        rid = rt.runtime_id
        for kind, batch, round_, seconds in query(
            "latency",
            "kind, batch_size, round, list(seconds ORDER BY iteration)",
            rid,
            "GROUP BY kind, batch_size, round ORDER BY kind, batch_size, round",
        ):
            if kind == "decision":
                rt.rounds.append(np.asarray(seconds, dtype=float))
                rt.round_ids.append(int(round_))
            else:
                rt.batch_seconds[int(batch)] = np.asarray(seconds, dtype=float)
        if rt.rounds:
            rt.decision_seconds = np.concatenate(rt.rounds)
        rt.round_info = [
            {"round": r, "position": p, "started_at": str(t) if t else None, "conditions": _json(c)}
            for r, p, t, c in con.execute(
                "SELECT round, position, started_at, conditions FROM rounds WHERE run_id = ? AND "
                "runtime_id = ? ORDER BY round",
                [run_id, rid],
            ).fetchall()
        ]
        q = query("state_q", "state_index, q_values", rid, "ORDER BY state_index")
        rt.state_q = np.asarray([v[1] for v in q], dtype=float) if q else None
        rt.first_q = {int(i): v for i, v in q}
        rt.repeat_q = query("repeat_state_q", "repeat, state_index, q_values", rid, "ORDER BY repeat, state_index")
        for seed, score, steps, truncated, cap, actions, source, margins in query(
            "episodes", "seed, score, steps, truncated, step_cap, actions, source, margin_counts", rid, "ORDER BY seed"
        ):
            rt.episodes.append(
                {
                    "seed": seed,
                    "score": score,
                    "steps": steps,
                    "truncated": truncated,
                    "step_cap": cap,
                    "source": source,
                }
            )
            if actions is not None:
                rt.traces[int(seed)] = list(actions)
            if margins is not None:
                rt.margin_counts[int(seed)] = list(margins)
        reference = run.get("reference_runtime")
        rt.shadow = {
            int(s): {"decisions": d, "same": m, "first_flip": f}
            for s, d, m, f in con.execute(
                "SELECT seed, decisions, same, first_flip FROM shadow "
                "WHERE run_id = ? AND runtime_id = ? AND driver = ? "
                "ORDER BY seed",
                [run_id, rid, reference],
            ).fetchall()
        }
        if has_differences:
            rt.shadow_differences = agents.shadow_differences(con, run_id, rid, reference)
        rt.flips = [
            dict(zip(("seed", "step", "reference_action", "action", "reference_margin", "margin"), f))
            for f in con.execute(
                "SELECT seed, step, reference_action, action, reference_margin, margin "
                "FROM flips WHERE run_id = ? AND runtime_id = ? ORDER BY seed, step",
                [run_id, rid],
            ).fetchall()
        ]
        rt.kernels = [
            dict(zip(("name", "kind", "calls", "seconds", "decisions"), k))
            for k in con.execute(
                "SELECT name, kind, calls, seconds, decisions FROM kernels WHERE run_id = ? AND runtime_id = ? "
                "ORDER BY seconds DESC, name",
                [run_id, rid],
            ).fetchall()
        ]
        rt.resources = {
            k: {"value": v, "unit": u, "method": m}
            for k, v, u, m in con.execute(
                "SELECT kind, value, unit, method FROM resources WHERE run_id = ? AND runtime_id = ? ORDER BY kind",
                [run_id, rid],
            ).fetchall()
        }
        if has_twins:  # in play, a twin computed its decisions (collect.play.twins)
            rt.twins = {
                twin: dict(zip(("games", "decisions", "checked", "differing"), map(int, counts)))
                for twin, *counts in con.execute(
                    "SELECT twin, count(*), sum(decisions), sum(checked), sum(differing) FROM twins "
                    "WHERE run_id = ? AND runtime_id = ? GROUP BY twin ORDER BY twin",
                    [run_id, rid],
                ).fetchall()
            }
            rt.twin_games = {
                int(seed): (twin, checked, differing)
                for seed, twin, checked, differing in con.execute(
                    "SELECT seed, twin, checked, differing FROM twins "
                    "WHERE run_id = ? AND runtime_id = ? AND driver = ?",
                    [run_id, rid, rid],
                ).fetchall()
            }
        runtimes.append(rt)
    floors = {
        k: np.asarray(v, dtype=float)
        for k, v in con.execute(
            "SELECT kind, list(seconds ORDER BY iteration) FROM floors WHERE run_id = ? GROUP BY kind", [run_id]
        ).fetchall()
    }
    by_id = {rt.runtime_id: rt for rt in runtimes}
    for rt in runtimes:  # an episode established by the reuse rule is its source's played episode
        for e in rt.episodes:
            source = by_id.get(e["source"]) if e["source"] else None
            if source is not None and e["seed"] in source.traces:
                rt.traces[e["seed"]] = source.traces[e["seed"]]
    sessions = [
        dict(
            zip(
                ("session", "started_at", "finished_at", "status", "detail", "code_hash"),
                (n, str(a) if a else None, str(b) if b else None, st, d, h),
            )
        )
        for n, a, b, st, d, h in con.execute(
            "SELECT session, started_at, finished_at, status, detail, code_hash "
            "FROM sessions WHERE run_id = ? ORDER BY session",
            [run_id],
        ).fetchall()
    ]
    repeats = con.execute(
        "SELECT repeat, session, runtimes FROM repeats WHERE run_id = ? ORDER BY repeat", [run_id]
    ).fetchall()
    repeat_details = {
        int(k): {rid: (v or {}).get("details") or {} for rid, v in _json(rts).items()} for k, _, rts in repeats
    }
    repeat_sessions = {int(s): int(k) for k, s, _ in repeats if s is not None}
    has_retaken = bool(con.execute("SELECT 1 FROM information_schema.tables WHERE table_name = 'retaken'").fetchall())
    retaken = (
        [
            tuple(r)
            for r in con.execute(
                "SELECT runtime_id, round, attempt FROM retaken WHERE run_id = ? ORDER BY runtime_id, round, attempt",
                [run_id],
            ).fetchall()
        ]
        if has_retaken
        else []
    )
    random_scores = agents.random_scores(con, run_id)
    return RunRows(
        path,
        run,
        runtimes,
        found,
        sessions,
        floors,
        repeat_details=repeat_details,
        repeat_sessions=repeat_sessions,
        retaken=retaken,
        random_scores=random_scores,
    )
