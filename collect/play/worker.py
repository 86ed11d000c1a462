"""A play process: it prepares its own copy of every runtime from the artifacts the main process made, then plays
tasks from the shared queue (``engine.play_tasks``), sending each game's result as it ends, and its running
time totals (``timing``) after it. Also: what a task is, and how many processes and slots play by default."""

from __future__ import annotations

import os
import queue as queues
import time
import traceback
from dataclasses import dataclass

from .engine import play_tasks
from .timing import Timings

_worker: dict = {}


@dataclass(frozen=True)
class Task:
    driver: str
    shadows: tuple
    seed: int
    step_cap: int | None
    until_first_flip: bool = False
    twins: tuple = ()  # ((runtime id, its twin), ...): who computes whose decisions in this game (``twins``)


def auto_workers(devices, num_tasks: int, slots: int = 1) -> int:
    """How many processes play when the user does not say. CPU runtimes only: one, whose runtimes use every core
    (``--play-workers N`` plays in N processes, each on its share of the cores: ``core_sets``). GPU runtimes: with
    one game per process, one process per two cores (at most 8), as more only time-slice the GPU; with several
    games in flight per process, the emulator and Python bound each process, so one per core (at most 16;
    benchmarks/play_throughput.py)."""
    if "cuda" not in set(devices):
        return 1
    cores = os.cpu_count() or 1
    most = min(16, cores) if slots > 1 else min(8, cores // 2)
    return max(1, min(num_tasks, most))


def core_sets(workers: int, gpu: bool) -> list:
    """The cores each play process may run on: for CPU runtimes played by several processes, a share of this
    process's cores each (round robin), so that every process's runtimes use one thread a core instead of all of
    them contending for every core (on a 2-core VM two unpinned processes played 3.7x slower than one, two pinned
    ones about twice as fast: docs/quantization.md). None for each where a GPU runtime plays or one process plays."""
    cores = sorted(os.sched_getaffinity(0))
    if gpu or workers <= 1:
        return [None] * max(1, workers)
    return [cores[i::workers] or [cores[i % len(cores)]] for i in range(workers)]


def _pin(cpus) -> None:
    """Run this process on ``cpus`` (None: leave it), and size the thread pools that are already loaded to them."""
    if not cpus:
        return
    os.sched_setaffinity(0, cpus)
    import sys

    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(len(cpus))


def auto_slots(devices) -> int:
    """How many games each play process keeps in flight when the user does not say. GPU runtimes: 16, so that
    eager PyTorch CUDA decisions overlap on the GPU (``engine``); CPU runtimes: 1, as a CPU runtime decides each
    slot in turn anyway."""
    return 16 if "cuda" in set(devices) else 1


def _init(model_path, artifacts_folder, made, runtime_ids, cuda_index, worker_args, slots, task, mps_env=None):
    from ..interrupts import ignore_stop_signals

    ignore_stop_signals()
    os.environ.update(mps_env or {})  # a client of the run's MPS daemon (collect.mps), before anything starts CUDA
    import cv2

    cv2.setNumThreads(1)  # the play processes already use every core; the resize is the same either way
    from ..artifacts import Artifacts
    from ..model_input import load_model
    from ..registry import all_runtimes, make_runner

    model = load_model(model_path, task)
    artifacts = Artifacts(artifacts_folder, model.onnx_source(), made)
    specs = {s.id: s for s in all_runtimes()}
    for rid in runtime_ids:
        try:
            runner = make_runner(specs[rid], model, artifacts, cuda_index)
            runner.reuse(worker_args.get(rid, {}))
            runner.prepare()
            _worker[rid] = runner.for_play()
        except BaseException as e:  # recorded: tasks that need this runtime report it
            _worker[rid] = f"play worker could not prepare it: {type(e).__name__}: {e}"
    _worker["__envs__"] = [task.make_env() for _ in range(slots)]
    _worker["__decisions__"] = task.decisions()


def _end_with_parent() -> None:
    """A main process killed outright takes this process with it, at once (``collect.children``): this process
    ignores the stop signals, so SIGKILL. Its parent is the one ``multiprocessing`` started it from."""
    import multiprocessing
    import signal

    from ..children import end_with_parent

    parent = multiprocessing.parent_process()
    if parent is not None and parent.pid:
        end_with_parent(signal.SIGKILL, parent.pid)


def _serve(tasks, results, cpus, *initargs) -> None:
    """A worker: run on ``cpus`` (``core_sets``), prepare (``_init``), say so, play tasks from ``tasks`` until the
    stop mark (None), each result put on ``results`` as its game ends."""
    parent, pid = os.getppid(), os.getpid()
    _end_with_parent()
    try:
        _pin(cpus)
        _init(*initargs)
        results.put(("ready", pid, None))
        stopping = False
        timings = Timings()
        timings.watch_envs(_worker["__envs__"])

        def next_task(block):
            nonlocal stopping
            while not stopping:
                try:
                    if block:
                        t = time.perf_counter()
                        item = tasks.get(timeout=1.0)
                        timings.add("waiting for a task", time.perf_counter() - t)
                    else:
                        item = tasks.get_nowait()
                except queues.Empty:
                    if block:
                        timings.add("waiting for a task", time.perf_counter() - t)
                    if not block:
                        return None
                    # a main process killed outright (SIGKILL) never sends the stop mark: end with it
                    stopping = os.getppid() != parent
                    continue
                stopping = item is None
                return item
            return None

        runners = {k: v for k, v in _worker.items() if not k.startswith("__")}
        for key, result in play_tasks(runners, _worker["__envs__"], next_task, timings, _worker["__decisions__"]):
            # the totals first: when the main process has this game's result, it has this process's time up to it
            t = time.perf_counter()
            results.put(("time", pid, timings.snapshot()))
            results.put(("done", key, result))
            timings.add("sending results", time.perf_counter() - t)
    except BaseException:  # not a runtime's fault (those are results): the pool cannot go on
        results.put(("error", os.getpid(), traceback.format_exc(limit=8)))
