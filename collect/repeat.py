"""``rtreport collect --repeat FILE``: a short repeat of a complete run, in this fresh process: every runtime the
run measured (that can run here) is prepared again, computes the fixed states' Q-values (kept in
``repeat_state_q``, to compare bit for bit with the run's first measurement) and takes latency rounds (5 by
default, the run's warm-up and sample counts, a seeded order per round, the reference in every round), stored as
repeat k: rounds numbered after every round in the file, ``conditions.repeat`` = k, ``conditions.phase`` =
``repeat``, one ``repeats`` row with the machine and software it ran on, and a session row.

Like ``--resume`` it refuses a file whose rows fail their checksums, another model or another kind of machine, and
works on a copy of the file that replaces it only when the repeat is whole: stopped or failed, the file stays as it
was.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
import numpy as np

from rtreport.errors import UserError
from rtreport.reproducibility import by_repeat, in_words

from . import measure, paths, provenance, task_states, tasks
from . import resume as resume_run
from .artifacts import Artifacts, run_folder
from .conditions import Host
from .interrupts import hold, stop_signals_raise
from .model_input import load_model
from .outfile import OutputFile
from .progress import Bars, Lines, Silent
from .registry import all_runtimes, make_runner
from .rounds import attempts_progress, measure_round, next_round, order_of
from .store import RunStore, now

REPEAT_ROUNDS = 5  # latency rounds of a repeat of a file that names none (settings.repeat_rounds), unless --rounds


def run_repeat(path: Path, model_path, cuda_index: int, artifacts, rounds: int | None, quiet: bool) -> int:
    path = Path(path)
    stored = resume_run.read_run(path, option="--repeat")
    if stored["status"] != "complete":
        raise UserError(
            f"--repeat {path}: the run is {stored['status']}; a repeat adds to a complete run "
            f"(finish it first: rtreport collect --resume {path})"
        )
    resume_run.check_same_kind(stored, provenance.kind(cuda_index), "--repeat", path)
    task = tasks.from_protocol(stored.get("protocol"))
    resume_run.model_given(stored, model_path, task, "--repeat", path)
    model = load_model(model_path or paths.AGENT_WEIGHTS, task)
    resume_run.check_same_run(stored, model)
    specs = {s.id: s for s in all_runtimes()}
    con_ids = _available(path)
    here = [rid for rid in con_ids if rid in specs and specs[rid].check(model) is None]
    reference = stored["reference_runtime"]
    if reference not in here:
        raise UserError(
            f"--repeat {path}: its reference {reference} cannot run here, and every round of a repeat measures it"
        )
    here.sort(key=lambda rid: rid != reference)
    profile = resume_run.profile_for(stored, None)
    artifacts_dir = run_folder(artifacts, stored["label"], stored["run_id"])

    def say(line: str) -> None:
        if not quiet:
            click.echo(line, err=True)

    ui = Silent() if quiet else Bars(_console()) if sys.stderr.isatty() else Lines(say)
    with OutputFile(path, overwrite=True, copy=True) as target:
        resume_run.copy_for_writing(path, target.partial)
        store = RunStore(target.partial, stored["run_id"], existing=True)
        say(
            f"repeating run {stored['run_id']} of {stored['label']}: {len(here)} runtime(s), written as "
            f"{target.partial.name} until the repeat ends"
        )
        if stored.get("integrity_note"):
            say(stored["integrity_note"])
        job = _Repeat(
            store,
            model,
            here,
            specs,
            Artifacts(artifacts_dir, model.onnx_source()),
            cuda_index,
            ui,
            profile,
            stored["settings"].get("states"),
        )
        with stop_signals_raise():
            try:
                ui.start()
                k = job.run(rounds or stored["settings"].get("repeat_rounds") or REPEAT_ROUNDS)
            except BaseException as e:
                hold()  # stopping already: a second signal must not cut the clean-up
                store.close()
                for p in (target.partial, target.partial.with_name(target.partial.name + ".wal")):
                    p.unlink(missing_ok=True)
                if isinstance(e, KeyboardInterrupt):
                    click.echo(
                        f"repeat stopped by {getattr(e, 'signal_name', 'SIGINT')} during {job.where}: "
                        f"{path} is unchanged",
                        err=True,
                    )
                    return getattr(e, "exit_code", 130)
                first = (str(e).strip().splitlines() or [""])[0][:300]
                click.echo(
                    f"Error: repeat failed during {job.where}: {type(e).__name__}: {first}; {path} is unchanged",
                    err=True,
                )
                return 1
            finally:
                ui.stop()
            lines = closing_lines(store.con, store.run_id, k, job)
            store.close()
            where = target.commit()
    if not quiet:
        click.echo("\n".join(lines))
    say(f"wrote repeat {k} into {where}")
    return 0


def _console():
    from rich.console import Console

    return Console(stderr=True)


def _available(path: Path) -> list[str]:
    import duckdb

    con = duckdb.connect(str(path), read_only=True)
    try:
        return [
            r
            for (r,) in con.execute(
                "SELECT runtime_id FROM runtimes WHERE status = 'available' ORDER BY position, runtime_id"
            ).fetchall()
        ]
    finally:
        con.close()


class _Repeat:
    def __init__(self, store, model, runtime_ids, specs, artifacts, cuda_index, ui, profile, states):
        self.store, self.model, self.ids, self.specs = store, model, runtime_ids, specs
        self.artifacts, self.cuda_index, self.ui, self.profile = artifacts, cuda_index, ui, profile
        task = model.task
        stored = None if task.is_breakout else task_states.stored(store.con, store.run_id, task)
        all_states = np.load(paths.FIXED_STATES) if stored is None else stored
        self.states = all_states[:states] if states else all_states
        self.where, self.runners, self.skipped, self.q, self.first_round = "start", {}, {}, {}, None

    def _drop(self, rid: str, error: Exception, runner) -> None:
        """A runtime that fails is left out of the rest of the repeat (its rounds so far are kept); the reference
        cannot be: the repeat fails with it."""
        if rid == self.ids[0]:
            raise error
        self.skipped[rid] = f"{self.where}: {type(error).__name__}: {error}"
        self.runners.pop(rid, None)
        self.q.pop(rid, None)
        try:
            runner.close()
        except Exception:
            pass

    def run(self, rounds: int) -> int:
        con, run_id = self.store.con, self.store.run_id
        machine = {**provenance.machine(self.cuda_index), **provenance.hardware()}
        self.store.start_session(machine["code_hash"], machine["rtreport_version"], machine["host"], run_goes_on=False)
        k = 1 + max(
            [
                con.execute("SELECT coalesce(max(repeat), 0) FROM repeats WHERE run_id = ?", [run_id]).fetchone()[0],
                *[
                    json.loads(c).get("repeat") or 0
                    for (c,) in con.execute(
                        "SELECT conditions FROM rounds WHERE run_id = ? AND conditions IS NOT NULL", [run_id]
                    ).fetchall()
                ],
            ]
        )
        started = now()
        try:
            described, q = {}, self.q
            for rid in self.ids:
                self.where = f"prepare of {rid}"
                runner = make_runner(self.specs[rid], self.model, self.artifacts, self.cuda_index)
                try:
                    with self.ui.phase(f"{rid}: prepare", 1) as tick:
                        runner.prepare()
                        tick(1)
                    described[rid] = runner.describe()
                    self.runners[rid] = runner
                    self.where = f"fixed states of {rid}"
                    with self.ui.phase(f"{rid}: fixed states (repeat {k})", len(self.states)) as tick:
                        q[rid] = measure.state_q_values(runner, self.states)
                        tick(len(self.states))
                except Exception as e:
                    self._drop(rid, e, runner)
            self.first_round = max(self.profile.rounds, next_round(con, run_id))
            host, p = Host(), self.profile
            for r in range(self.first_round, self.first_round + rounds):
                for position, rid in enumerate(order_of(self.runners, r)):
                    if rid not in self.runners:
                        continue
                    self.where = f"latency round {r + 1} of {rid}"
                    try:
                        label = f"{rid}: latency round {r + 1} (repeat {k})"
                        measure_round(
                            self.store,
                            rid,
                            self.runners[rid],
                            r,
                            position,
                            self.states,
                            p.latency_warmup,
                            p.latency_samples,
                            host,
                            self.cuda_index,
                            "repeat",
                            k,
                            attempts_progress(self.ui, label, p.latency_samples, p.retakes),
                            p.retakes,
                            p.retake_pause_s,
                        )
                    except Exception as e:
                        self._drop(rid, e, self.runners[rid])
            self.rounds = rounds
            self.store.add_repeat(
                k,
                started,
                machine,
                described,
                q,
                f"repeat {k}: {rounds} latency rounds of {len(self.runners)} runtimes",
            )
        finally:
            for runner in self.runners.values():
                try:
                    runner.close()
                except Exception:
                    pass
        return k


def closing_lines(con, run_id: str, k: int, job: _Repeat) -> list[str]:
    """What the repeat measured, and whether each runtime's fixed-state Q-values reproduced bit for bit."""
    found = by_repeat(
        con.execute("SELECT runtime_id, state_index, q_values FROM state_q WHERE run_id = ?", [run_id]).fetchall(),
        con.execute(
            "SELECT runtime_id, repeat, state_index, q_values FROM repeat_state_q WHERE run_id = ? AND repeat = ?",
            [run_id, k],
        ).fetchall(),
    )
    last = job.first_round + job.rounds
    lines = [
        f"repeat {k}: {job.rounds} latency rounds (rounds {job.first_round + 1}-{last}) of "
        f"{len(job.runners)} runtimes; fixed states reproduced bit for bit by "
        f"{sum(r.identical for r in found.values())} of {len(found)}"
    ]
    lines += [f"  {rid}: {in_words(r)}" for (rid, _), r in found.items() if not r.identical]
    lines += [f"  {rid}: not repeated ({why})" for rid, why in job.skipped.items()]
    return lines
