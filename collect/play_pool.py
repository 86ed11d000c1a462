"""Who plays the episodes: this process with its prepared runners, or worker processes that each hold their own
prepared copy of the same runtimes.

A task is one episode: a driver runtime plays a seed while shadow runtimes are shown every observation
(``measure.play_shadowed``). An episode's outcome depends only on its seed and the Q-values the runtimes return,
so playing seeds in parallel gives exactly what playing them one after another gives (tests/test_collect.py
checks it). Each worker makes its runners from the artifacts the main process already made (the same ONNX
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

_worker: dict = {}


@dataclass(frozen=True)
class Task:
    driver: str
    shadows: tuple
    seed: int
    step_cap: int | None
    until_first_flip: bool = False


class RuntimeFault(Exception):
    """A runtime failed while playing (its id first, so the main process can record which)."""

    def __init__(self, runtime_id: str, message: str):
        super().__init__(runtime_id, message)
        self.runtime_id, self.message = runtime_id, message

    def __str__(self):
        return f"{self.runtime_id}: {self.message}"


def auto_workers(devices, num_tasks: int) -> int:
    """How many processes play when the user does not say. GPU runtimes: the episodes are bound by the
    emulator and Python on the CPU, so one process per two cores (at most 8). CPU runtimes only: one, since
    parallel games would compete with the runtimes' own threads for the cores."""
    if "cuda" not in set(devices):
        return 1
    return max(1, min(num_tasks, 8, (os.cpu_count() or 1) // 2))


def _play_task(runners: dict, env, task: Task):
    from .measure import play_shadowed

    try:
        driver = runners[task.driver]
    except KeyError:
        raise RuntimeFault(task.driver, "not prepared in this process") from None
    if isinstance(driver, str):
        raise RuntimeFault(task.driver, driver)
    shadows = {rid: runners[rid] for rid in task.shadows if not isinstance(runners.get(rid, ""), str)}
    try:
        episode, seconds, tallies, margins = play_shadowed(driver, shadows, task.seed, task.step_cap, env,
                                                           task.until_first_flip)
    except Exception as e:
        raise RuntimeFault(task.driver, f"{type(e).__name__}: {e}") from None
    for rid in task.shadows:
        if rid not in shadows:
            from .measure import Shadow
            tallies[rid] = Shadow(error=runners.get(rid, "not prepared in this process"))
    return episode, seconds, tallies, margins


def _init(model_path, artifacts_folder, made, runtime_ids, cuda_index, worker_args):
    from .interrupts import ignore_stop_signals
    ignore_stop_signals()
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
    _worker["__env__"] = make_eval_env()


def _play(task: Task):
    return _play_task(_worker, _worker["__env__"], task)


class Players:
    """``with Players(...) as players: for task, result, fault in players.run(tasks)`` (in task order; ``fault``
    is the ``RuntimeFault`` of a task whose driver failed, else None)."""

    def __init__(self, runners: dict, workers: int, model_path, artifacts, cuda_index: int):
        self.workers = workers
        self._originals = dict(runners)
        self.runners = {rid: r.for_play() for rid, r in runners.items()} if workers <= 1 else runners
        self._initargs = (str(model_path), str(artifacts.folder), artifacts.made(), tuple(runners), cuda_index,
                          {rid: r.worker_args() for rid, r in runners.items()})
        self.executor = None

    def __enter__(self):
        if self.workers > 1:
            # spawn, not fork: the main process holds a CUDA context and threads that a fork cannot copy.
            self.executor = ProcessPoolExecutor(self.workers, multiprocessing.get_context("spawn"), _init,
                                                self._initargs)
        else:
            from .agent.protocol import make_eval_env
            self.env = make_eval_env()
        return self

    def run(self, tasks):
        tasks = list(tasks)
        if self.executor is None:
            for task in tasks:
                try:
                    yield task, _play_task(self.runners, self.env, task), None
                except RuntimeFault as fault:
                    yield task, None, fault
            return
        futures = [self.executor.submit(_play, task) for task in tasks]
        self._started = self.processes()  # kept: a broken executor forgets its processes
        for task, future in zip(tasks, futures):
            try:
                yield task, future.result(), None
            except RuntimeFault as fault:
                yield task, None, fault

    def processes(self) -> list:
        return list((getattr(self.executor, "_processes", None) or {}).values())

    def __exit__(self, exc_type, *exc):
        if self.executor is None:
            self.env.close()
            for rid, runner in self.runners.items():
                if runner is not self._originals.get(rid, runner):
                    runner.close()
            return
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
