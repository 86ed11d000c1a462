"""Episodes of one runtime played in parallel worker processes, each deciding with its own runner.

An episode's outcome depends only on its seed and on the Q-values the runtime returns, so playing
seeds in parallel must give exactly what playing them one after another gives
(``tests/test_collect.py`` checks it). Each worker makes its own runner of the same runtime from
the artifacts the main process already made (the same ONNX files, the same TensorRT engine),
rather than building its own.

Workers ignore Ctrl-C, SIGTERM and SIGHUP: the main process is interrupted, stops the pool and keeps
every episode it has already stored. A worker that dies (a crash in a runtime's native code, the kernel's OOM killer)
breaks the pool: the episodes still owed raise ``BrokenProcessPool``, so the runtime is recorded
as failed instead of the run waiting forever.
"""
from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor

_worker: dict = {}


def auto_workers(device: str, num_seeds: int) -> int:
    """How many processes play a runtime's episodes when the user does not say.

    GPU runtimes: the episodes are bound by the emulator and preprocessing on the CPU, so one
    process per two cores (at most 8). CPU runtimes: one, since parallel games would compete with
    the runtime's own threads for the cores.
    """
    if device != "cuda":
        return 1
    return max(1, min(num_seeds, 8, (os.cpu_count() or 1) // 2))


def _init(model_path, artifacts_folder, made, runtime_id, cuda_index, worker_args):
    from .interrupts import ignore_stop_signals
    ignore_stop_signals()
    try:
        from .artifacts import Artifacts
        from .model_input import load_model
        from .agent.protocol import make_eval_env
        from .registry import all_runtimes

        model = load_model(model_path)
        artifacts = Artifacts(artifacts_folder, model.onnx_source(), made)
        spec = next(s for s in all_runtimes() if s.id == runtime_id)
        runner = spec.make(model, artifacts, cuda_index)
        runner.reuse(worker_args)
        runner.prepare()
        _worker.update(runner=runner, env=make_eval_env())
    except BaseException as e:  # raised again from the first episode, so the main process records it
        _worker["error"] = f"play worker could not prepare {runtime_id}: {type(e).__name__}: {e}"


def _play(job):
    seed, step_cap = job
    if "error" in _worker:
        raise RuntimeError(_worker["error"])
    from .measure import play
    return play(_worker["runner"], seed, step_cap, _worker["env"])


class PlayPool:
    """``with PlayPool(...) as pool: for episode, seconds in pool.play(seeds, cap)`` (in seed order)."""

    def __init__(self, workers: int, model_path, artifacts, runtime_id: str, cuda_index: int, worker_args: dict):
        self.workers = workers
        self._initargs = (str(model_path), str(artifacts.folder), artifacts.made(), runtime_id, cuda_index,
                          worker_args)

    def __enter__(self):
        # spawn, not fork: the main process holds a CUDA context and threads that a fork cannot copy.
        self.executor = ProcessPoolExecutor(self.workers, multiprocessing.get_context("spawn"), _init,
                                            self._initargs)
        return self

    def play(self, seeds, step_cap):
        """(Episode, seconds) per seed, in the order given, as each becomes ready."""
        futures = [self.executor.submit(_play, (seed, step_cap)) for seed in seeds]
        self._started = self.processes()  # kept: a broken executor forgets its processes
        for future in futures:
            yield future.result()

    def processes(self) -> list:
        return list((getattr(self.executor, "_processes", None) or {}).values())

    def __exit__(self, exc_type, *exc):
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
