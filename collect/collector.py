"""``rtreport collect``: every runtime this machine can run, through the whole protocol, into one DuckDB file.

Phases, each doing only what the file still lacks (so ``--resume`` continues a run where it stopped):
prepare every runtime; fixed states; batch sweep; latency rounds (``rounds.Rounds``), each runtime once per
round in a seeded order, spread over the run: before play, between looks, after play; play (``play.PlayPhase``):
the reference with every candidate shadowing it, looks of the group-sequential play test, own play only where a
candidate can differ.
"""

from __future__ import annotations

import json
import socket
import uuid

import numpy as np

from rtreport import play_margin
from rtreport.gates import Gates

from . import costs, finite, measure, provenance, run_record, task_states
from .agent.shipped import load_seeds
from .artifacts import Artifacts
from .cost_phase import GpuCosts
from .finite import NonFiniteOutputs, ReferenceNotFinite
from .model_input import ModelSource
from .options import CollectOptions
from .paths import FIXED_STATES
from .play import Design, PlayPhase, Players, auto_slots, auto_workers, engine, twins
from .profiles import FULL, PROFILES, QUICK, Profile  # noqa: F401  (re-exported)
from .progress import Silent
from .registry import Runtime, all_runtimes, make_runner, reference_runtime_id
from .rounds import Rounds, ends_only_reason
from .runners.base import RuntimeUnavailable
from .store import RunStore


def default_label(cuda_index: int = 0) -> str:
    """<host>-<gpu or cpu>, in the slug's spelling (it names the default file too)."""
    import torch

    from rtreport.labels import slug

    gpu = torch.cuda.get_device_name(cuda_index) if torch.cuda.is_available() else "cpu"
    return slug(f"{socket.gethostname()}-{gpu}")


class Collector(GpuCosts):
    def __init__(
        self,
        model: ModelSource,
        store: RunStore,
        artifacts: Artifacts,
        profile: Profile,
        options: CollectOptions | None = None,
        runtime_ids: list[str] | None = None,
        ui=None,
        resuming: dict | None = None,
    ):
        """``options``: the command's, as ``run_collect`` resolved them (label, GPU, play processes, slots, MPS);
        ``runtime_ids``: those asked for (None: all); ``resuming``: the stored run's row (``collect --resume``),
        whose settings decide the protocol."""
        options = options or CollectOptions(label="run")
        cuda_index, label = options.cuda_index, options.label or "run"
        self.model, self.store, self.artifacts, self.profile = model, store, artifacts, profile
        self.cuda_index, self.label, self.resuming = cuda_index, label, resuming
        self.known = all_runtimes()
        self.specs = [s for s in self.known if runtime_ids is None or s.id in runtime_ids]
        self.ui = ui or Silent()
        self.not_finite: dict[str, str] = {}  # runtime id -> why its outputs are not believed (collect.finite)
        # Which runtimes can run here, and so which one is the reference, is known before anything is measured.
        # An opt-in runtime that --runtimes does not name is recorded as not measured, with why.
        self.reasons = {
            s.id: s.check(self.model) or (s.opt_in if runtime_ids is None and s.opt_in else None) for s in self.specs
        }
        if resuming:  # an opt-in runtime the run left out stays out unless this command's --runtimes names it
            named = {r.strip() for r in (options.runtime_list or "").split(",") if r.strip()}
            left_out = dict(
                store.con.execute(
                    "SELECT runtime_id, reason FROM runtimes WHERE run_id = ? AND status = 'unavailable'",
                    [store.run_id],
                ).fetchall()
            )
            for s in self.specs:
                if s.opt_in and left_out.get(s.id) == s.opt_in and s.id not in named:
                    self.reasons[s.id] = self.reasons[s.id] or s.opt_in
        self.reference = (
            (resuming or {}).get("reference_runtime")
            if resuming
            else reference_runtime_id([rid for rid, r in self.reasons.items() if r is None], self.known)
        )
        # Breakout's fixed states ship with rtreport; any other task's are taken when the run begins (``run``)
        self.states = self._cut(np.load(FIXED_STATES)) if model.task.is_breakout else None
        self.seeds = tuple(load_seeds()["play"])[: profile.looks[-1]]
        self.play_workers, self.play_slots, self.play_mps = options.play_workers, options.play_slots, options.play_mps
        self.play_twins = options.play_twins
        self.phase, self.runtime_id = "starting", None
        self.runners: dict = {}
        self._idle = None  # the GPU's idle power, read once per session by the first runtime's energy phase

    def where(self) -> str:
        """Where the run is, in words (e.g. for an interrupted run's status)."""
        return f"{self.phase} of {self.runtime_id}" if self.runtime_id else self.phase

    def _at(self, phase: str, runtime_id: str | None = None) -> None:
        self.phase, self.runtime_id = phase, runtime_id

    def _cut(self, states: np.ndarray) -> np.ndarray:
        return states[: self.profile.num_states] if self.profile.num_states else states

    def run(self) -> None:
        machine = provenance.machine(self.cuda_index)
        harvested = None
        if self.states is None:
            self._at("fixed states: harvest")
            states, harvested = task_states.for_run(self.store, self.model, self.profile, self.ui, self.resuming)
            self.states = self._cut(states)
            harvested = harvested if harvested is None else harvested[: len(self.states)]
        if not self.resuming:
            self.store.start_run(run_record.first_row(self, machine))
        self.store.start_session(machine["code_hash"], machine["rtreport_version"], machine["host"])
        if harvested is not None:
            self.store.add_task_states(self.states, harvested)
        stored = dict(
            self.store.con.execute(
                "SELECT runtime_id, status FROM runtimes WHERE run_id = ?", [self.store.run_id]
            ).fetchall()
        )
        for spec in self.specs:
            # a resumed run keeps a reason it stored (the machine that started the run may have said more, e.g.
            # TensorRT-RTX's refusal of this GPU, where this one lacks the library)
            if self.reasons[spec.id] and stored.get(spec.id) not in ("available", "unavailable"):
                self._record(spec, "unavailable", self.reasons[spec.id])
        todo = [s for s in self.specs if not self.reasons[s.id] and stored.get(s.id) != "failed"]
        todo.sort(key=lambda s: s.id != self.reference)
        try:
            for spec in todo:
                self._prepare(spec)
            for rid, runner in list(self.runners.items()):
                self._guard(rid, self._fixed_states_and_batches, rid, runner)
            self._refuse_a_reference_not_finite()
            design = self._design()
            # as the run's first session decided it (stored at its start; files before it: between looks too)
            ends_only = self._settings().get("rounds_ends_only")
            self.rounds = Rounds(self, design.looks, design.seeds, between=ends_only is None)
            self.rounds.take(0)  # before play; then after looks (play.PlayPhase) and after play
            self._costs()
            self._play(design)
            self.rounds.take(len(design.looks))
        finally:
            for runner in self.runners.values():
                try:
                    runner.close()
                except Exception:
                    pass
        self.store.finish_run("complete")

    # -- runtimes ----------------------------------------------------------------------------------------
    def _record(self, spec: Runtime, status: str, reason: str | None = None, runner=None) -> None:
        fields = dict(
            position=self.known.index(spec),
            title=spec.title,
            framework=spec.framework,
            device=spec.device,
            precision=spec.precision,
            variant=spec.variant,
            status=status,
            reason=reason,
        )
        if runner is not None:
            fields.update(
                artifact_path=str(runner.artifact_path) if runner.artifact_path else None,
                artifact_bytes=runner.artifact_bytes,
                prepare_seconds=runner.prepare_seconds,
            )
            try:
                fields.update(runner.describe())
            except Exception as e:  # a half-prepared runner may not describe itself
                fields["details"] = {"describe_error": f"{type(e).__name__}: {e}"}
        if spec.package:  # a plugin's results tied to its code: the package, its version, its files' hash
            name, version, sha = spec.package
            fields["details"] = {
                **(fields.get("details") or {}),
                "package": {"name": name, "version": version, "sha256": sha},
            }
        self.store.put_runtime(spec.id, **fields)

    def _prepare(self, spec: Runtime) -> None:
        self._at("prepare", spec.id)
        runner = None
        try:
            runner = make_runner(spec, self.model, self.artifacts, self.cuda_index)
            before = costs.memory_snapshot(spec.device, self.cuda_index)
            with self.ui.phase(f"{spec.id}: prepare", 1) as tick:
                runner.prepare()
                tick(1)
            after = costs.memory_snapshot(spec.device, self.cuda_index)
            self._record(spec, "available", runner=runner)
            if not self._have(
                "SELECT 1 FROM resources WHERE run_id = ? AND runtime_id = ? AND kind = 'rss_increase'", spec.id
            ):
                self.store.add_costs(spec.id, resources=costs.memory_rows(before, after))
            self.runners[spec.id] = runner
        except RuntimeUnavailable as e:
            self._record(spec, "unavailable", str(e), runner)
        except KeyboardInterrupt:
            raise
        except Exception as e:  # this runtime failed; the others go on
            self._record(spec, "failed", f"prepare: {type(e).__name__}: {short(e)}", runner)

    def _fail(self, rid: str, reason: str) -> None:
        """A runtime failed after preparing: recorded with its error; it keeps what it measured."""
        spec = next(s for s in self.known if s.id == rid)
        self._record(spec, "failed", reason, self.runners.pop(rid, None))

    def _guard(self, rid: str, phase, *args) -> None:
        try:
            phase(*args)
        except KeyboardInterrupt:
            raise
        except NonFiniteOutputs as e:  # the reason says it: "its outputs are NaN on 8 of 8 fixed states"
            self._fail(rid, f"{self.phase}: {e}")
            self.not_finite[rid] = str(e)
        except Exception as e:  # this runtime failed; the others go on
            self._fail(rid, f"{self.phase}: {type(e).__name__}: {short(e)}")

    def _refuse_a_reference_not_finite(self) -> None:
        """Nothing is compared with a reference whose outputs are NaN or infinite: the run ends here."""
        why = self.not_finite.get(self.reference)
        if why:
            raise ReferenceNotFinite(f"the reference {self.reference}: {why}; nothing can be compared with it")

    def _have(self, sql: str, *params) -> set:
        return {r[0] for r in self.store.con.execute(sql, [self.store.run_id, *params]).fetchall()}

    # -- phases -----------------------------------------------------------------------------------------
    def _fixed_states_and_batches(self, rid: str, runner) -> None:
        p = self.profile
        if not self._have("SELECT 1 FROM state_q WHERE run_id = ? AND runtime_id = ?", rid):
            self._at("fixed states", rid)
            with self.ui.phase(f"{rid}: fixed states", len(self.states)) as tick:
                q = measure.state_q_values(runner, self.states)
                tick(len(self.states))
            finite.check(q, "fixed states")  # before anything is stored or compared
            self.store.add_state_q(rid, q, q.argmax(axis=1))
        done = self._have(
            "SELECT DISTINCT batch_size FROM latency WHERE run_id = ? AND runtime_id = ? AND kind = 'batch'", rid
        )
        sizes = [b for b in p.batch_sizes if b not in done and (runner.fixed_batch is None or b == runner.fixed_batch)]
        if sizes:  # a captured CUDA graph serves its one batch size
            self._at("batch sweep", rid)
            with self.ui.phase(f"{rid}: batch sweep", len(sizes)) as tick:
                for b in sizes:
                    self.store.add_latency(
                        rid,
                        "batch",
                        b,
                        measure.batch_latency(runner, self.states, b, p.batch_iterations, p.batch_budget_seconds),
                    )
                    tick(1)

    def ends_only(self) -> str | None:
        return ends_only_reason(self.play_mps and any(s.device == "cuda" for s in self.specs))

    def _design(self) -> Design:
        settings = self._settings()  # as the run's first session stored them
        p = self.profile
        return Design(
            tuple(settings.get("seeds", self.seeds)),
            tuple(settings.get("looks", p.looks)),
            settings.get("check_seeds", p.check_seeds),
            settings.get("episode_step_cap", p.episode_step_cap),
            settings.get("play_margin_fraction", Gates.load().play_margin),
            settings.get("play_margin_rule", play_margin.DEFAULT_RULE),
        )

    def _play(self, design: Design) -> None:
        if self.reference not in self.runners:
            return  # no reference: nothing to pair with (the report says so)
        candidates = [s.id for s in self.known if s.id in self.runners and s.id != self.reference]
        phase = PlayPhase(
            self.store,
            design,
            self.reference,
            candidates,
            None,
            self.ui,
            self._fail,
            lambda text: self._at(text),
            between=self.rounds,
        )
        if design.margin_rule == "gain-over-random":  # each look's seeds played by random, before the look
            phase.before_look = lambda seeds: task_states.owe_random(
                self.store, self.model.task, seeds, design, self.ui
            )
        # only what is still owed plays: a candidate decided at an earlier look is not prepared again in every worker
        owed = [self.reference, *phase.active()]
        stands = twins.for_play(self.known, self.runners, self.store, owed) if self.play_twins else {}
        phase.twins = tuple(sorted(stands.items()))
        playing = {rid: self.runners[rid] for rid in dict.fromkeys([*owed, *stands.values()])}
        devices = [r.info.device for r in playing.values()]
        slots = self.play_slots or auto_slots(devices)
        workers = self.play_workers or auto_workers(devices, len(design.seeds), slots)
        # the self-check here, where it is recorded (each worker process runs its own before its first game)
        overlap = engine.open_slots(playing, slots)
        self.store.update_run(
            settings=json.dumps(
                {
                    **self._settings(),
                    "play_workers": workers,
                    "play_slots": slots,
                    "play_overlap": overlap,
                    "play_mps": None,
                    "play_twins": stands,
                    "twin_check_every": twins.CHECK_EVERY,
                },
                sort_keys=True,
            )
        )
        with Players(
            playing,
            workers,
            self.model.path,
            self.artifacts,
            self.cuda_index,
            slots,
            mps=self.play_mps,
            task=self.model.task,
        ) as players:
            phase.players = players
            if any(players.cpus):  # CPU runtimes in several processes: each on its own share of the cores
                self.store.update_run(
                    settings=json.dumps({**self._settings(), "play_cpus": players.cpus}, sort_keys=True)
                )
            if self.play_mps:  # whether the play processes really share the GPU through MPS: said, and kept
                state = players.start_through_mps(self.ui)
                self.store.update_run(settings=json.dumps({**self._settings(), "play_mps": state}, sort_keys=True))
            phase.run()

    def _settings(self) -> dict:
        return json.loads(
            self.store.con.execute("SELECT settings FROM runs WHERE run_id = ?", [self.store.run_id]).fetchone()[0]
        )


def short(e: BaseException) -> str:
    """An error's message for the report: a long one (a TorchScript interpreter's trace of the user's module) as
    its first and last lines, which say where and what."""
    lines = [line.strip() for line in str(e).strip().splitlines() if line.strip()]
    return f"{lines[0]} … {lines[-1]}" if len(lines) > 3 else str(e)


def new_run_id() -> str:
    return uuid.uuid4().hex[:16]
