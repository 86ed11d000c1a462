"""``rtreport collect``: every runtime this machine can run, through the whole protocol, into one DuckDB file."""
from __future__ import annotations

import socket
import uuid
from dataclasses import asdict, dataclass

import numpy as np

from rtreport import schema

from . import measure, provenance
from .agent.network import sha256_file
from .agent.protocol import EVAL_EPSILON, make_eval_env, protocol_settings
from .agent.shipped import load_seeds
from .artifacts import Artifacts
from .model_input import ModelSource
from .paths import FIXED_STATES, shown
from .play_pool import PlayPool, auto_workers
from .progress import Silent
from .registry import Runtime, all_runtimes, reference_runtime_id
from .runners.base import RuntimeUnavailable
from .store import RunStore


@dataclass(frozen=True)
class Profile:
    name: str
    num_states: int | None = None            # None: all 60 fixed states
    num_seeds: int | None = None             # None: all 30 evaluation seeds
    episode_step_cap: int | None = None      # None: whole games (the protocol's 108,000-frame cap only)
    latency_warmup: int = 200
    latency_samples: int = 2000
    batch_sizes: tuple = measure.BATCH_SIZES
    batch_iterations: int = 100
    batch_budget_seconds: float = 3.0


FULL = Profile("full")
QUICK = Profile("quick", num_states=8, num_seeds=2, episode_step_cap=150, latency_warmup=20, latency_samples=300,
                batch_sizes=(1, 8, 32), batch_iterations=10, batch_budget_seconds=0.5)


def default_label(cuda_index: int = 0) -> str:
    """<host>-<gpu or cpu>, in the slug's spelling (it names the default file too)."""
    import torch

    from rtreport.labels import slug
    gpu = torch.cuda.get_device_name(cuda_index) if torch.cuda.is_available() else "cpu"
    return slug(f"{socket.gethostname()}-{gpu}")


class Collector:
    def __init__(self, model: ModelSource, store: RunStore, artifacts: Artifacts, profile: Profile,
                 runtime_ids: list[str] | None = None, cuda_index: int = 0, label: str = "run", ui=None,
                 play_workers: int | None = None):
        """``play_workers``: processes that play each runtime's episodes; None picks per runtime
        (``play_pool.auto_workers``). Results do not depend on it; only the wall time does."""
        self.model, self.store, self.artifacts, self.profile = model, store, artifacts, profile
        self.cuda_index, self.label = cuda_index, label
        self.known = all_runtimes()
        self.specs = [s for s in self.known if runtime_ids is None or s.id in runtime_ids]
        self.ui = ui or Silent()
        # Which runtimes can run here, and so which one is the reference, is known before anything is measured.
        self.reasons = {s.id: s.check(self.model) for s in self.specs}
        self.reference = reference_runtime_id([rid for rid, r in self.reasons.items() if r is None], self.known)
        states = np.load(FIXED_STATES)
        self.states = states[: profile.num_states] if profile.num_states else states
        seeds = load_seeds()["evaluation"]
        self.seeds = seeds[: profile.num_seeds] if profile.num_seeds else seeds
        self.phase, self.runtime_id = "starting", None
        self.play_workers = {s.id: play_workers or auto_workers(s.device, len(self.seeds)) for s in self.specs}

    def run(self) -> None:
        reasons, reference = self.reasons, self.reference
        machine = provenance.machine(self.cuda_index)
        self.store.start_run({
            "label": self.label, "profile": self.profile.name, **machine,
            "model_path": shown(self.model.path), "model_format": self.model.format,
            "model_sha256": self.model.sha256, "num_actions": self.model.num_actions,
            "fixed_states_sha256": sha256_file(FIXED_STATES),
            "seeds_sha256": schema.seeds_sha256(self.seeds),
            "reference_runtime": reference, "eval_epsilon": EVAL_EPSILON,
            "protocol": protocol_settings(),
            "settings": {**asdict(self.profile), "cuda_index": self.cuda_index,
                         "runtimes_requested": [s.id for s in self.specs],
                         "states": len(self.states), "seeds": self.seeds, "play_workers": self.play_workers},
        })
        for spec in self.specs:
            if reasons[spec.id]:
                self._record(spec, "unavailable", reasons[spec.id])
        ordered = sorted((s for s in self.specs if not reasons[s.id]), key=lambda s: s.id != reference)
        for spec in ordered:
            self._measure_runtime(spec)
        self.store.finish_run("complete")

    def where(self) -> str:
        """Where the run is, in words (e.g. for an interrupted run's status)."""
        return f"{self.phase} of {self.runtime_id}" if self.runtime_id else self.phase

    def _record(self, spec: Runtime, status: str, reason: str | None = None, runner=None) -> None:
        fields = dict(position=self.known.index(spec), title=spec.title, framework=spec.framework,
                      device=spec.device, precision=spec.precision, variant=spec.variant, status=status, reason=reason)
        if runner is not None:
            fields.update(artifact_path=str(runner.artifact_path) if runner.artifact_path else None,
                          artifact_bytes=runner.artifact_bytes, prepare_seconds=runner.prepare_seconds)
            try:
                fields.update(runner.describe())
            except Exception as e:  # a half-prepared runner may not describe itself
                fields["details"] = {"describe_error": f"{type(e).__name__}: {e}"}
        self.store.put_runtime(spec.id, **fields)

    def _measure_runtime(self, spec: Runtime) -> None:
        rid = spec.id
        runner = None
        try:
            self.runtime_id, self.phase = rid, "prepare"
            runner = spec.make(self.model, self.artifacts, self.cuda_index)
            with self.ui.phase(f"{rid}: prepare", 1) as tick:
                runner.prepare()
                tick(1)
            self._record(spec, "available", runner=runner)
            self._phases(rid, runner)
        except RuntimeUnavailable as e:
            self._record(spec, "unavailable", str(e), runner)
        except KeyboardInterrupt:
            raise
        except Exception as e:  # this runtime failed; the others go on
            self._record(spec, "failed", f"{self.phase}: {type(e).__name__}: {e}", runner)
        finally:
            if runner is not None:
                try:
                    runner.close()
                except Exception:
                    pass

    def _phases(self, rid: str, runner) -> None:
        p = self.profile
        ui = self.ui
        self.phase = "decision latency"
        with ui.phase(f"{rid}: decision latency", p.latency_samples) as tick:
            seconds = measure.decision_latency(runner, self.states, p.latency_warmup, p.latency_samples, tick)
        self.store.add_latency(rid, "decision", 1, seconds)

        self.phase = "batch sweep"
        with ui.phase(f"{rid}: batch sweep", len(p.batch_sizes)) as tick:
            for b in p.batch_sizes:
                if runner.fixed_batch is not None and b != runner.fixed_batch:
                    tick(1)
                    continue  # a captured CUDA graph serves its one batch size
                self.store.add_latency(rid, "batch", b, measure.batch_latency(
                    runner, self.states, b, p.batch_iterations, p.batch_budget_seconds))
                tick(1)

        self.phase = "fixed states"
        with ui.phase(f"{rid}: fixed states", len(self.states)) as tick:
            q = measure.state_q_values(runner, self.states)
            tick(len(self.states))
        self.store.add_state_q(rid, q, q.argmax(axis=1))

        self.phase = "play"
        workers = self.play_workers[rid]
        with ui.phase(f"{rid}: play" + (f" ({workers} processes)" if workers > 1 else ""), len(self.seeds)) as tick:
            if workers > 1:
                with PlayPool(workers, self.model.path, self.artifacts, rid, self.cuda_index,
                              runner.worker_args()) as pool:
                    for episode, seconds in pool.play(self.seeds, p.episode_step_cap):
                        self.store.add_episode(rid, episode, p.episode_step_cap, seconds)
                        tick(1)
                return
            env = make_eval_env()
            try:
                for seed in self.seeds:
                    episode, seconds = measure.play(runner, seed, p.episode_step_cap, env)
                    self.store.add_episode(rid, episode, p.episode_step_cap, seconds)
                    tick(1)
            finally:
                env.close()


def new_run_id() -> str:
    return uuid.uuid4().hex[:16]
