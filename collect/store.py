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

from rtreport import integrity, schema

from . import interrupts
from .file_format import STORAGE, STORAGE_NUMBER, compact, connect, storage_number  # noqa: F401  (re-exported)
from .write_faults import as_cannot_write

JSON_COLUMNS = ("environment", "protocol", "settings", "libraries", "numerics", "details")


def now() -> datetime:
    """UTC, stored without a zone (DuckDB's TIMESTAMPTZ would need pytz to read back)."""
    return datetime.now(timezone.utc).replace(tzinfo=None)


class RunStore:
    """Writes one run into a new DuckDB file. Each write is one transaction, held together against stop
    signals (``interrupts.hold``/``release``), so an interrupted run's file holds whole phases only."""

    def __init__(self, path: Path, run_id: str, existing: bool = False):
        """A new file; or, with ``existing``, a file that already holds run ``run_id`` (``collect --resume``)."""
        self.path = Path(path)
        self.run_id = run_id
        self.con = connect(self.path)
        # checksums are recorded only over rows this process wrote or verified: a file's rows that fail theirs, or
        # have none to check (a run killed before its session ended, a file made before checksums), stay unsealed
        self.verified = not existing or integrity.verify(self.con, run_id).verified
        with self._write():
            if existing:
                schema.upgrade_in_place(self.con)
            else:
                schema.create(self.con)
        self.session = (
            self.con.execute(
                "SELECT coalesce(max(session) + 1, 0) FROM sessions WHERE run_id = ?", [run_id]
            ).fetchone()[0]
            if existing
            else 0
        )

    def _write(self):
        return _Transaction(self.con, self.path)

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
        finished = now()
        with self._write():
            self.con.execute(
                "UPDATE runs SET status = ?, status_detail = ?, finished_at = ? WHERE run_id = ?",
                [status, detail, finished, self.run_id],
            )
            self.con.execute(
                "UPDATE sessions SET status = ?, detail = ?, finished_at = ? WHERE run_id = ? AND session = ?",
                [status, detail, finished, self.run_id, self.session],
            )
            self._seal()  # row counts and checksums, for build and check to verify

    def start_session(
        self, code_hash: str | None, version: str | None, host: str | None, run_goes_on: bool = True
    ) -> None:
        """A session row; ``run_goes_on``: the run itself is running again (not so for a repeat)."""
        with self._write():
            self.con.execute(
                "INSERT INTO sessions VALUES (?, ?, ?, NULL, 'running', NULL, ?, ?, ?)",
                [self.run_id, self.session, now(), code_hash, version, host],
            )
            if run_goes_on:
                self.con.execute(
                    "UPDATE runs SET status = 'running', status_detail = NULL, finished_at = NULL WHERE run_id = ?",
                    [self.run_id],
                )
                integrity.forget(self.con, self.run_id)

    def add_repeat(self, repeat: int, started_at, machine: dict, runtimes: dict, q_values: dict, detail: str) -> None:
        """A repeat's row, its fixed states' Q-values ({runtime id: (states, actions) array}) and the end of its
        session, in one transaction (its rounds are already stored)."""
        finished = now()
        with self._write():
            self.con.execute(
                "INSERT INTO repeats VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    self.run_id,
                    repeat,
                    self.session,
                    started_at,
                    finished,
                    json.dumps(machine, sort_keys=True, default=str),
                    json.dumps(runtimes, sort_keys=True),
                ],
            )
            for rid, q in q_values.items():
                self.con.executemany(
                    "INSERT INTO repeat_state_q VALUES (?, ?, ?, ?, ?, ?)",
                    [
                        [self.run_id, rid, repeat, i, [float(v) for v in row], int(row.argmax())]
                        for i, row in enumerate(q)
                    ],
                )
            self.con.execute(
                "UPDATE sessions SET status = 'complete', detail = ?, finished_at = ? WHERE run_id = ? AND session = ?",
                [detail, finished, self.run_id, self.session],
            )
            self._seal()  # the run's rows now include the repeat's

    def _seal(self) -> None:
        """Inside the transaction that ends a session: the run's counts and checksums, where its rows were all
        written or verified by this process; else none (a checksum over unverified rows would vouch for them)."""
        if self.verified:
            integrity.record(self.con, self.run_id)
        else:
            integrity.forget(self.con, self.run_id)

    def put_runtime(self, runtime_id: str, **fields) -> None:
        """Insert or replace a runtime's row (its status moves as the run goes on)."""
        row = _json({"run_id": self.run_id, "runtime_id": runtime_id, **fields})
        with self._write():
            self.con.execute("DELETE FROM runtimes WHERE run_id = ? AND runtime_id = ?", [self.run_id, runtime_id])
            self.con.execute(
                f"INSERT INTO runtimes ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", list(row.values())
            )

    def add_task_states(self, states, index: list[dict]) -> None:
        """The fixed states of a task that ships none, with where each was taken (seed, step of its episode)."""
        with self._write():
            self.con.executemany(
                "INSERT INTO task_states VALUES (?, ?, ?, ?, ?, ?)",
                [
                    [self.run_id, i, int(x["seed"]), int(x["step"]), int(x["episode_steps"]), states[i].tobytes()]
                    for i, x in enumerate(index)
                ],
            )

    def add_baseline_episodes(self, policy: str, episodes) -> None:
        """Episodes of a policy that is no runtime (``Episode``s), e.g. the uniformly random one."""
        with self._write():
            self.con.executemany(
                "INSERT INTO baseline_episodes VALUES (?, ?, ?, ?, ?, ?)",
                [[self.run_id, policy, int(e.seed), float(e.score), int(e.steps), bool(e.truncated)] for e in episodes],
            )

    def add_state_q(self, runtime_id: str, q_values, actions) -> None:
        with self._write():
            self.con.executemany(
                "INSERT INTO state_q VALUES (?, ?, ?, ?, ?)",
                [
                    [self.run_id, runtime_id, i, [float(v) for v in q], int(a)]
                    for i, (q, a) in enumerate(zip(q_values, actions))
                ],
            )

    def add_round(
        self, runtime_id: str, round_: int, position: int, started_at, seconds: list[float], conditions: dict | None
    ) -> None:
        """One latency round of one runtime: its samples and when, in which order and how the GPU was then."""
        with self._write():
            self._insert_latency(runtime_id, "decision", 1, seconds, round_)
            self.con.execute(
                "INSERT INTO rounds VALUES (?, ?, ?, ?, ?, ?)",
                [
                    self.run_id,
                    runtime_id,
                    round_,
                    position,
                    started_at,
                    json.dumps(conditions, sort_keys=True) if conditions else None,
                ],
            )

    def add_retaken(
        self, runtime_id: str, round_: int, attempt: int, started_at, seconds: list[float], conditions: dict
    ) -> None:
        """A latency round's attempt superseded because other processes loaded the host during it: kept as
        measured, out of the statistics (``rtreport.host_load``)."""
        with self._write():
            self.con.execute(
                "INSERT INTO retaken VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    self.run_id,
                    runtime_id,
                    round_,
                    attempt,
                    started_at,
                    json.dumps(conditions, sort_keys=True),
                    [float(x) for x in seconds],
                ],
            )

    def add_costs(self, runtime_id: str, kernels=None, decisions: int | None = None, resources=()) -> None:
        """Kernels and copies ([(name, kind, calls, seconds)] over ``decisions``), resources
        ([(kind, value, unit, method)])."""
        with self._write():
            if kernels is not None:
                self.con.executemany(
                    "INSERT INTO kernels VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [[self.run_id, runtime_id, *k, decisions] for k in kernels],
                )
            for kind, value, unit, method in resources:
                self.con.execute(
                    "DELETE FROM resources WHERE run_id = ? AND runtime_id = ? AND kind = ?",
                    [self.run_id, runtime_id, kind],
                )
                self.con.execute(
                    "INSERT INTO resources VALUES (?, ?, ?, ?, ?, ?)",
                    [self.run_id, runtime_id, kind, float(value), unit, method],
                )

    def add_play_time(self, look: int, per_process: dict) -> None:
        """Each play process's running time totals at the end of ``look`` (``collect.play.timing``)."""
        from .play.timing import look_rows

        rows = look_rows(self.run_id, self.session, look, per_process)
        with self._write():
            self.con.execute(
                "DELETE FROM play_time WHERE run_id = ? AND session = ? AND look = ?", [self.run_id, self.session, look]
            )
            self.con.executemany("INSERT INTO play_time VALUES (?, ?, ?, ?, ?, ?, ?)", rows)

    def add_floor(self, kind: str, seconds: list[float]) -> None:
        with self._write():
            self.con.execute(
                "INSERT INTO floors SELECT ?, ?, UNNEST(range(len(s))), UNNEST(s) FROM (SELECT ?::DOUBLE[] AS s)",
                [self.run_id, kind, seconds],
            )

    def add_latency(self, runtime_id: str, kind: str, batch_size: int, seconds: list[float], round_: int = 0) -> None:
        with self._write():
            self._insert_latency(runtime_id, kind, batch_size, seconds, round_)

    def _insert_latency(self, runtime_id, kind, batch_size, seconds, round_):
        self.con.execute(
            "INSERT INTO latency SELECT ?, ?, ?, ?, ?, UNNEST(range(len(s))), UNNEST(s) FROM (SELECT ?::DOUBLE[] AS s)",
            [self.run_id, runtime_id, kind, batch_size, round_, seconds],
        )

    def add_episode(
        self,
        runtime_id: str,
        episode,
        step_cap: int | None,
        seconds: float,
        tallies: dict | None = None,
        margin_counts: list | None = None,
        flips: bool = False,
        establish=(),
        twins=None,
    ) -> None:
        """A played episode, in one transaction with what its shadows saw (``tallies``: {runtime id: Shadow}),
        their flips (``flips``: the driver is the reference), the episodes it establishes for ``establish`` (runtimes
        that took the driver's greedy action at every step: this very episode is theirs too) and ``twins``
        ({runtime id: (twin, decisions, checked, differing)}, ``collect.play.twins``)."""
        with self._write():
            self.con.execute(
                "DELETE FROM episodes WHERE run_id = ? AND runtime_id = ? AND seed = ?",
                [self.run_id, runtime_id, episode.seed],
            )
            self.con.execute(
                "INSERT INTO episodes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?::UTINYINT[], NULL, ?)",
                [
                    self.run_id,
                    runtime_id,
                    episode.seed,
                    episode.score,
                    episode.steps,
                    episode.truncated,
                    step_cap,
                    seconds,
                    episode.actions,
                    margin_counts,
                ],
            )
            for rid, t in (tallies or {}).items():
                if t.error:
                    continue
                self.con.execute(
                    "INSERT INTO shadow VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [self.run_id, rid, episode.seed, runtime_id, t.decisions, t.same, t.first_flip, t.complete],
                )
                if t.differences:
                    self.con.execute(
                        "INSERT INTO shadow_differences VALUES (?, ?, ?, ?, ?)",
                        [self.run_id, rid, episode.seed, runtime_id, t.differences],
                    )
                if flips and t.flips:
                    self.con.executemany(
                        "INSERT INTO flips VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        [[self.run_id, rid, episode.seed, *f] for f in t.flips],
                    )
            for rid, counts in (twins or {}).items():  # a replayed game's counts replace the earlier ones
                self.con.execute(
                    "DELETE FROM twins WHERE run_id = ? AND runtime_id = ? AND seed = ? AND driver = ?",
                    [self.run_id, rid, episode.seed, runtime_id],
                )
                self.con.execute(
                    "INSERT INTO twins VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [self.run_id, rid, episode.seed, runtime_id, *counts],
                )
            for rid in establish:
                self.con.execute(
                    "INSERT INTO episodes VALUES (?, ?, ?, ?, ?, ?, ?, NULL, NULL, ?, NULL)",
                    [
                        self.run_id,
                        rid,
                        episode.seed,
                        episode.score,
                        episode.steps,
                        episode.truncated,
                        step_cap,
                        runtime_id,
                    ],
                )

    def close(self) -> None:
        """Checkpoint (the log into the file) and close; a checkpoint that cannot be written raises
        ``CannotWrite`` (DuckDB's own close would drop that error silently) and leaves file and log as they are."""
        try:
            self.con.execute("CHECKPOINT")
        except duckdb.Error as e:
            self.abandon()
            raise as_cannot_write(e, self.path) or e
        self.con.close()

    def abandon(self) -> None:
        """Close without writing anything more (after a write fault): what is committed stays in file and log."""
        try:
            self.con.close()
        except duckdb.Error:
            pass


def _json(row: dict) -> dict:
    return {
        k: json.dumps(v, sort_keys=True, default=str)
        if k in JSON_COLUMNS and v is not None and not isinstance(v, str)
        else v
        for k, v in row.items()
    }


class _Transaction:
    """One write: a DuckDB transaction that a stop signal cannot cut in half."""

    def __init__(self, con, path):
        self.con, self.path = con, path

    def __enter__(self):
        interrupts.hold()
        self.con.execute("BEGIN TRANSACTION")
        return self.con

    def __exit__(self, exc_type, exc, tb):
        try:
            try:
                self.con.execute("COMMIT" if exc_type is None else "ROLLBACK")
            except duckdb.Error as e:  # a failed commit is rolled back by DuckDB itself
                fault = as_cannot_write(e, self.path)
                if fault is None and exc_type is None:
                    raise
                if fault is not None:
                    raise fault from None
            fault = as_cannot_write(exc, self.path) if exc is not None else None
            if fault is not None:
                raise fault from None
        finally:
            interrupts.release()  # a stop signal held during the write is raised now
