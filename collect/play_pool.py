"""Who plays the episodes: this process with its prepared runners, or worker processes that each hold their own
prepared copy of the same runtimes.

A task is one episode: a driver runtime plays a seed while shadow runtimes are shown every observation
(``measure.ShadowedGame``); each process keeps several in flight (``engine.play_tasks``, ``slots``). An
episode's outcome depends only on its seed and the Q-values the runtimes return, so playing seeds in parallel
gives exactly what playing them one after another gives (tests/test_collect.py and tests/test_engine.py
check it). Each worker makes its runners from the artifacts the main process already made (the same ONNX
files, the same TensorRT engine) rather than building its own.

Workers ignore Ctrl-C, SIGTERM and SIGHUP: the main process is interrupted, stops the pool and keeps every
episode it has already stored. A worker that dies (a crash in a runtime's native code, the kernel's OOM killer)
breaks the pool: the episodes still owed raise ``BrokenProcessPool`` instead of the run waiting forever.
"""
from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

from .engine import RuntimeFault, in_task_order, play_tasks

_worker: dict = {}


@dataclass(frozen=True)
class Task:
    driver: str
    shadows: tuple
    seed: int
    step_cap: int | None
    until_first_flip: bool = False


def auto_workers(devices, num_tasks: int, slots: int = 1) -> int:
    """How many processes play when the user does not say. CPU runtimes only: one, since parallel games would
    compete with the runtimes' own threads for the cores. GPU runtimes: with one game per process, one process
    per two cores (at most 8), as more only time-slice the GPU; with several games in flight per process, the
    emulator and Python bound each process, so one per core (at most 16; benchmarks/play_throughput.py)."""
    if "cuda" not in set(devices):
        return 1
    cores = os.cpu_count() or 1
    most = min(16, cores) if slots > 1 else min(8, cores // 2)
    return max(1, min(num_tasks, most))


def auto_slots(devices) -> int:
    """How many games each play process keeps in flight when the user does not say. GPU runtimes: 16, so that
    eager PyTorch CUDA decisions overlap on the GPU (``engine``); CPU runtimes: 1, as a CPU runtime decides each
    slot in turn anyway."""
    return 16 if "cuda" in set(devices) else 1


def _init(model_path, artifacts_folder, made, runtime_ids, cuda_index, worker_args, slots, mps_env=None):
    from .interrupts import ignore_stop_signals
    ignore_stop_signals()
    os.environ.update(mps_env or {})  # a client of the run's MPS daemon (collect.mps), before anything starts CUDA
    from .agent.protocol import make_eval_env
    from .artifacts import Artifacts
    from .model_input import load_model
    from .registry import all_runtimes

    model = load_model(model_path)
    artifacts = Artifacts(artifacts_folder, model.onnx_source(), made)
    specs = {s.id: s for s in all_runtimes()}
    for rid in runtime_ids:
        try:
            runner = specs[rid].make(model, artifacts, cuda_index)
            runner.reuse(worker_args.get(rid, {}))
            runner.prepare()
            _worker[rid] = runner.for_play()
        except BaseException as e:  # recorded: tasks that need this runtime report it
            _worker[rid] = f"play worker could not prepare it: {type(e).__name__}: {e}"
    _worker["__envs__"] = [make_eval_env() for _ in range(slots)]


def _ready(hold: float) -> int:
    import time
    time.sleep(hold)  # holds this worker, so that the others take the rest of the round
    return os.getpid()


def _play(tasks: list):
    """A chunk of tasks in this worker's slots: [(position in the chunk, result or RuntimeFault)]."""
    runners = {k: v for k, v in _worker.items() if k != "__envs__"}
    return list(play_tasks(runners, _worker["__envs__"], tasks))


class Players:
    """``with Players(...) as players: for task, result, fault in players.run(tasks)`` (in task order; ``fault``
    is the ``RuntimeFault`` of a task whose driver failed, else None)."""

    def __init__(self, runners: dict, workers: int, model_path, artifacts, cuda_index: int, slots: int = 1,
                 mps: bool = False):
        """``workers`` processes (1: this one), each keeping ``slots`` games in flight (``engine.play_tasks``);
        ``mps``: the worker processes share the GPU through a private CUDA MPS daemon (``collect.mps``)."""
        self.workers, self.slots = workers, max(1, slots)
        gpu = any(getattr(getattr(r, "info", None), "device", None) == "cuda" for r in runners.values())
        self.mps_asked, self.mps = mps, None
        self.mps_off = None if not mps else ("no GPU runtime plays" if not gpu else
                                             "play runs in one process" if workers <= 1 else None)
        self.in_flight = max(1, workers) * self.slots  # games played at once
        self._originals = dict(runners)
        self.runners = {rid: r.for_play() for rid, r in runners.items()} if workers <= 1 else runners
        self._initargs = (str(model_path), str(artifacts.folder), artifacts.made(), tuple(runners), cuda_index,
                          {rid: r.worker_args() for rid, r in runners.items()}, self.slots)
        self.executor = None

    @property
    def mps_wanted(self) -> bool:
        return self.mps_asked and self.mps_off is None

    def __enter__(self):
        if self.workers > 1:
            env = {}
            if self.mps_wanted:
                from .mps import MpsDaemon
                self.mps = MpsDaemon().__enter__()
                self.mps.probe()
                env = self.mps.env
            # spawn, not fork: the main process holds a CUDA context and threads that a fork cannot copy.
            self.executor = ProcessPoolExecutor(self.workers, multiprocessing.get_context("spawn"), _init,
                                                (*self._initargs, env))
        else:
            from .agent.protocol import make_eval_env
            self.envs = [make_eval_env() for _ in range(self.slots)]
        return self

    def wait_started(self, hold: float = 0.3) -> int:
        """Block until every worker process has started and prepared its runtimes (each runs the initializer
        before its first task); returns how many there are. For measurements that must not count the start."""
        if self.executor is None:
            return 1
        seen: set = set()
        while len(seen) < self.workers:
            seen.update(self.executor.map(_ready, [hold] * self.workers))
        return len(seen)

    def mps_state(self) -> str | None:
        """What MPS did for this pool, in words (None where it was not asked for). Call after ``wait_started``."""
        if not self.mps_asked:
            return None
        if self.mps_off:
            return f"off: {self.mps_off}"
        if self.mps is None or not self.mps.env:
            return f"off: {self.mps.reason if self.mps else 'not started'}"
        clients = set(self.mps.clients())
        workers = {p.pid for p in self.processes()}
        return f"on: {len(workers & clients)} of {len(workers)} play processes are clients of the run's MPS daemon"

    def start_through_mps(self, ui) -> str | None:
        """Start every worker (a progress phase of ``ui``) and say whether they are the MPS daemon's clients."""
        if self.mps_wanted:
            with ui.phase(f"play: {self.workers} processes start through the run's MPS daemon", self.workers) as tick:
                tick(self.wait_started())
        state = self.mps_state()
        with ui.phase(f"play: MPS {state}", 1) as tick:
            tick(1)
        return state

    def run(self, tasks):
        tasks = list(tasks)
        if self.executor is None:
            results = play_tasks(self.runners, self.envs, tasks)
        else:
            results = self._in_workers(tasks)
        for position, result in in_task_order(results, len(tasks)):
            if isinstance(result, RuntimeFault):
                yield tasks[position], None, result
            else:
                yield tasks[position], result, None

    def _in_workers(self, tasks):
        """Chunks of tasks to the workers: one episode per slot, so that a worker's results come back (and are
        stored) about once per game's length, and an interrupted run loses at most the games in flight."""
        size = self.slots
        chunks = [list(range(i, min(i + size, len(tasks)))) for i in range(0, len(tasks), size)]
        futures = [self.executor.submit(_play, [tasks[i] for i in chunk]) for chunk in chunks]
        self._started = self.processes()  # kept: a broken executor forgets its processes
        for chunk, future in zip(chunks, futures):
            for offset, result in future.result():
                yield chunk[offset], result

    def processes(self) -> list:
        return list((getattr(self.executor, "_processes", None) or {}).values())

    def __exit__(self, exc_type, *exc):
        if self.executor is None:
            for env in self.envs:
                env.close()
            for rid, runner in self.runners.items():
                if runner is not self._originals.get(rid, runner):
                    runner.close()
            return
        try:
            self._stop_workers(exc_type)
        finally:
            if self.mps is not None:
                self.mps.__exit__(None, None, None)

    def _stop_workers(self, exc_type):
        if exc_type is None:
            self.executor.shutdown(wait=True)
            return
        # Interrupted or failed: drop the episodes not started and stop the ones being played.
        processes = list({p.pid: p for p in [*getattr(self, "_started", []), *self.processes()]}.values())
        self.executor.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            process.kill()  # workers ignore the stop signals: the main process stops them
        for process in processes:
            process.join(timeout=10)
