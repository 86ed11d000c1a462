"""Who plays the episodes: this process with its prepared runners, or worker processes that each hold their own
prepared copy of the same runtimes.

A task is one episode: a driver runtime plays a seed while shadow runtimes are shown every observation
(``measure.ShadowedGame``); each process keeps several in flight (``engine.play_tasks``, ``slots``) and takes a
new task as soon as one of its games ends, so no slot waits for the longest game of a batch. Tasks go to the
workers through one queue and each game's result comes back as it ends; the caller (``play.PlayPhase``) may add
tasks while games are in flight. An episode's outcome depends only on its seed and the Q-values the runtimes
return, so playing seeds in parallel gives exactly what playing them one after another gives
(tests/test_collect.py and tests/test_engine.py check it). Each worker makes its runners from the artifacts the
main process already made (the same ONNX files, the same TensorRT engine) rather than building its own.

Workers ignore Ctrl-C, SIGTERM and SIGHUP: the main process is interrupted, stops the workers and keeps every
episode it has already stored; a main process killed outright is noticed by its idle workers, which then end. A
worker that dies (a native crash, the OOM killer) raises ``BrokenProcessPool`` where the main process waits."""

from __future__ import annotations

import multiprocessing
import queue as queues
import time
from collections import deque
from concurrent.futures.process import BrokenProcessPool

from ..task import BREAKOUT
from .engine import RuntimeFault, in_task_order, play_tasks
from .timing import Timings
from .worker import Task, _serve, core_sets

__all__ = ["Players", "Task"]


class Players:
    """``with Players(...) as players:`` then either ``players.put(key, task)`` and ``players.next_result()``
    (each game's (key, result, fault) as it ends; the caller may add tasks in between), or
    ``for task, result, fault in players.run(tasks)`` (in task order). ``fault`` is the ``RuntimeFault`` of a
    task whose driver failed, else None."""

    def __init__(
        self,
        runners: dict,
        workers: int,
        model_path,
        artifacts,
        cuda_index: int,
        slots: int = 1,
        mps: bool = False,
        task=BREAKOUT,
    ):
        """``workers`` processes (1: this one), each keeping ``slots`` games in flight (``engine.play_tasks``);
        ``mps``: the worker processes share the GPU through a private CUDA MPS daemon (``collect.mps``);
        ``task``: what is played (``tasks.Task``), each slot in its own environment."""
        self.workers, self.slots = workers, max(1, slots)
        self.gpu = gpu = any(getattr(getattr(r, "info", None), "device", None) == "cuda" for r in runners.values())
        self.cpus: list = [None]
        self.mps_asked, self.mps = mps, None
        self.mps_off = (
            None
            if not mps
            else ("no GPU runtime plays" if not gpu else "play runs in one process" if workers <= 1 else None)
        )
        self.in_flight = max(1, workers) * self.slots  # games played at once
        self._originals = dict(runners)
        self.runners = {rid: r.for_play() for rid, r in runners.items()} if workers <= 1 else runners
        self._initargs = (
            str(model_path),
            str(artifacts.folder),
            artifacts.made(),
            tuple(runners),
            cuda_index,
            {rid: r.worker_args() for rid, r in runners.items()},
            self.slots,
            task,
        )
        self.task = task
        self._procs: list = []
        self._started: set = set()
        self._abandoned = False
        self.outstanding = 0  # tasks put and not yet answered
        self.main = Timings()  # this process's play time (all of it when it plays alone)
        self._times: dict = {}  # worker pid -> its latest ``Timings.snapshot()``

    @property
    def mps_wanted(self) -> bool:
        return self.mps_asked and self.mps_off is None

    def __enter__(self):
        if self.workers > 1:
            env = {}
            if self.mps_wanted:
                from ..mps import MpsDaemon

                self.mps = MpsDaemon().__enter__()
                self.mps.probe()
                env = self.mps.env
            # spawn, not fork: the main process holds a CUDA context and threads that a fork cannot copy.
            context = multiprocessing.get_context("spawn")
            self._tasks, self._results = context.Queue(), context.Queue()
            self.cpus = core_sets(self.workers, self.gpu)
            self._procs = [
                context.Process(
                    target=_serve,
                    args=(self._tasks, self._results, cpus, *self._initargs, env),
                    daemon=True,
                    name=f"rtreport-play-{i}",
                )
                for i, cpus in enumerate(self.cpus)
            ]
            for process in self._procs:
                process.start()
        else:
            self.envs = [self.task.make_env() for _ in range(self.slots)]
            self.main.watch_envs(self.envs)
            self._local: deque = deque()
            self._engine = None
        return self

    # -- tasks in, results out ---------------------------------------------------------------------------
    def put(self, key, task: Task) -> None:
        self.outstanding += 1
        if self._procs:
            self._tasks.put((key, task))
        else:
            self._local.append((key, task))

    def next_result(self):
        """The next game to end, as (key, result, fault); None when no task is outstanding."""
        if self.outstanding == 0:
            return None
        t = time.perf_counter()
        if self._procs:
            while (message := self._receive())[0] != "done":
                pass  # a worker's "ready"
            key, result = message[1:]
            self.main.add("waiting for results", time.perf_counter() - t)
        else:
            key, result = self._from_here()
        self.outstanding -= 1
        if isinstance(result, RuntimeFault):
            return key, None, result
        return key, result, None

    def _from_here(self):
        if self._engine is not None:
            item = next(self._engine, None)
            if item is not None:
                return item
        # the engine ends when it has nothing in flight and nothing queued: a new one takes what was put since
        self._engine = play_tasks(
            self.runners,
            self.envs,
            lambda block: self._local.popleft() if self._local else None,
            self.main,
            self.task.decisions(),
        )
        return next(self._engine)

    def _receive(self):
        """The workers' next message: ("ready", pid, None) as each has prepared (noted), ("done", key, result)
        as a game ends. A worker that died or failed raises ``BrokenProcessPool``."""
        while True:
            try:
                kind, key, value = self._results.get(timeout=0.5)
            except queues.Empty:
                gone = [p for p in self._procs if p.exitcode is not None]
                if gone:
                    raise BrokenProcessPool(
                        f"a play process ended unexpectedly (pid {gone[0].pid}, exit code "
                        f"{gone[0].exitcode}); the episodes it was playing are lost"
                    )
                continue
            if kind == "error":
                raise BrokenProcessPool(f"play process {key} failed: {value.strip().splitlines()[-1]}\n{value}")
            if kind == "ready":
                self._started.add(key)
            if kind == "time":
                self._times[key] = value
                continue
            return kind, key, value

    def timings(self) -> dict:
        """{process number: its running totals (``play_timing``)}: 0 this process, 1 … the workers in start order."""
        numbers = {p.pid: i + 1 for i, p in enumerate(self._procs)}
        return {0: self.main.snapshot(), **{numbers[pid]: snap for pid, snap in self._times.items() if pid in numbers}}

    def abandon(self) -> None:
        """Drop every task outstanding: the workers are stopped rather than left to finish them."""
        self.outstanding = 0
        self._abandoned = True
        self._engine = None
        if not self._procs:
            self._local.clear()

    def run(self, tasks):
        """Play ``tasks``; yields (task, result, fault) in task order."""
        tasks = list(tasks)
        for position, task in enumerate(tasks):
            self.put(position, task)

        def ended():
            while (item := self.next_result()) is not None:
                yield item[0], item[1:]

        for position, (result, fault) in in_task_order(ended(), len(tasks)):
            yield tasks[position], result, fault

    # -- the processes -----------------------------------------------------------------------------------
    def wait_started(self) -> int:
        """Block until every worker process has started and prepared its runtimes; returns how many there are.
        For measurements that must not count the start. Call before putting tasks."""
        while self._procs and len(self._started) < self.workers:
            self._receive()
        return len(self._started) if self._procs else 1

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

    def processes(self) -> list:
        return list(self._procs)

    def __exit__(self, exc_type, *exc):
        if not self._procs:
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
        """Done: each worker ends after its games. Interrupted or failed: the games in flight are dropped, and
        the workers, which ignore the stop signals, are killed by this process."""
        if exc_type is None and not self._abandoned:
            for _ in self._procs:
                self._tasks.put(None)
            for process in self._procs:
                process.join(timeout=30)
        for process in self._procs:
            if process.exitcode is None:
                process.kill()
        for process in self._procs:
            process.join(timeout=10)
        for q in (self._tasks, self._results):
            q.cancel_join_thread()
            q.close()
