"""Where the time of play goes: W processes, S games in flight in each, play their share of the seeds with the
engine of collect (``engine.play_tasks``), every runtime's ``submit`` / ``ready`` / ``fetch`` and the emulator's
``step`` and ``reset`` timed, all processes starting together so that they contend as in a run.

    python benchmarks/play_profile.py --driver torch-cuda-fp32 \\
        --shadows torch-cuda-fp16,torch-cuda-fp16-graph,torch-cuda-fp16-compile,ort-cuda-fp16,ort-cuda-fp16-graph \\
        --slots 8 --processes 16 --seeds 256 --step-cap 300 --mps

Per component, summed over the processes: calls, microseconds per call, and its share of the processes' wall
time; "the engine and the games" is the rest (the engine's own Python, argmax, tallies, ε draws). For a CUDA
runtime, ``submit`` is the host's work to issue a decision and ``fetch`` mostly the wait for the GPU. Also: each
process's CPU time over its wall time (a blocking CUDA wait spins, so it counts as busy), the machine's CPU busy
share (/proc/stat) and the GPU's utilisation (NVML, where installed) over the run. The question: which part bounds
the protocol's play on one GPU.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from collect import paths  # noqa: E402
from collect.agent.shipped import load_seeds  # noqa: E402
from collect.artifacts import Artifacts  # noqa: E402
from collect.model_input import load_model  # noqa: E402
from collect.play import Players, Task  # noqa: E402
from collect.registry import all_runtimes  # noqa: E402
from fingerprint import fingerprint  # noqa: E402  (benchmarks/fingerprint.py)


def _child(initargs, tasks, barrier, results) -> None:
    from collect.play import worker as play_pool
    from collect.play.engine import RuntimeFault, play_tasks

    try:
        play_pool._init(*initargs)
        runners = {k: v for k, v in play_pool._worker.items() if k != "__envs__"}
        envs = play_pool._worker["__envs__"]
        broken = {rid: r for rid, r in runners.items() if isinstance(r, str)}
        if broken:
            raise RuntimeError("; ".join(f"{rid}: {why}" for rid, why in broken.items()))
        times: dict = defaultdict(lambda: [0, 0.0])

        def timed(name, f):
            def call(*a, **k):
                t = time.perf_counter()
                try:
                    return f(*a, **k)
                finally:
                    entry = times[name]
                    entry[0] += 1
                    entry[1] += time.perf_counter() - t

            return call

        for rid, r in runners.items():
            for method in ("submit", "ready", "fetch"):
                setattr(r, method, timed(f"{rid} {method}", getattr(r, method)))
        for env in envs:
            env.step, env.reset = timed("emulator step", env.step), timed("emulator reset", env.reset)
        # the self-check and one short game per slot, not timed
        list(play_tasks(runners, envs, [Task(t.driver, t.shadows, t.seed, 5) for t in tasks[: len(envs)]]))
        times.clear()
        barrier.wait(timeout=900)
        wall, cpu = time.perf_counter(), time.process_time()
        decisions = steps = 0
        for _, result in play_tasks(runners, envs, tasks):
            if isinstance(result, RuntimeFault):
                raise result
            episode, _, tallies, *_ = result
            steps += episode.steps
            decisions += episode.steps + sum(t.decisions for t in tallies.values())
        results.put(
            {
                "wall": time.perf_counter() - wall,
                "cpu": time.process_time() - cpu,
                "steps": steps,
                "decisions": decisions,
                "times": {k: tuple(v) for k, v in times.items()},
            }
        )
    except BaseException as e:
        barrier.abort()
        results.put({"error": f"{type(e).__name__}: {e}"})


def _cpu_busy() -> tuple[float, float] | None:
    """(busy, total) jiffies of the whole machine so far (Linux)."""
    try:
        values = [float(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    except OSError:
        return None
    idle = values[3] + (values[4] if len(values) > 4 else 0.0)
    return sum(values) - idle, sum(values)


class _GpuSampler(threading.Thread):
    """NVML's utilisation of GPU 0 (the share of time a kernel ran) every 0.25 s, where nvidia-ml-py is installed."""

    def __init__(self):
        super().__init__(daemon=True)
        self.samples, self.stop = [], threading.Event()
        try:
            import pynvml

            pynvml.nvmlInit()
            self.nvml, self.handle = pynvml, pynvml.nvmlDeviceGetHandleByIndex(0)
        except Exception:
            self.nvml = None

    def run(self):
        while self.nvml and not self.stop.wait(0.25):
            self.samples.append(self.nvml.nvmlDeviceGetUtilizationRates(self.handle).gpu)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--driver", default="torch-cpu-fp32")
    ap.add_argument("--shadows", default="", help="comma-separated runtime ids shown every observation")
    ap.add_argument("--slots", type=int, default=8)
    ap.add_argument("--processes", type=int, default=1)
    ap.add_argument("--seeds", type=int, default=16)
    ap.add_argument("--step-cap", type=int, default=300)
    ap.add_argument("--mps", action="store_true", help="the processes share the GPU through a private MPS daemon")
    args = ap.parse_args()
    print(fingerprint(), flush=True)
    shadows = tuple(s for s in args.shadows.split(",") if s)
    specs = {s.id: s for s in all_runtimes()}
    unknown = [rid for rid in (args.driver, *shadows) if rid not in specs]
    if unknown or min(args.slots, args.processes, args.seeds, args.step_cap) < 1:
        print(
            f"unknown runtime {', '.join(unknown)}"
            if unknown
            else "--slots, --processes, --seeds and --step-cap take positive numbers",
            file=sys.stderr,
        )
        return 2
    model = load_model(paths.AGENT_WEIGHTS)
    artifacts = Artifacts(Path(tempfile.mkdtemp(prefix="play-profile-")), model.onnx_source())
    runners = {}
    for rid in (args.driver, *shadows):
        reason = specs[rid].check(model)
        if reason:
            print(f"{rid}: cannot run here: {reason}", file=sys.stderr)
            return 2
        runners[rid] = specs[rid].make(model, artifacts, 0)
        runners[rid].prepare()  # here first, so that every process takes the same artifacts
    seeds = list(load_seeds()["play"])[: args.seeds]
    tasks = [Task(args.driver, shadows, s, args.step_cap) for s in seeds]
    daemon, env = None, {}
    if args.mps:
        from collect.mps import MpsDaemon

        daemon = MpsDaemon().__enter__()
        daemon.probe()
        env = daemon.env
        print(f"MPS: {'on' if env else 'off: ' + str(daemon.reason)}")
    initargs = (*Players(runners, 2, paths.AGENT_WEIGHTS, artifacts, 0, args.slots)._initargs, env)
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(args.processes + 1), context.Queue()
    processes = [
        context.Process(target=_child, args=(initargs, tasks[i :: args.processes], barrier, results))
        for i in range(args.processes)
    ]
    try:
        for p in processes:
            p.start()
        gpu = _GpuSampler()
        try:
            barrier.wait(timeout=900)
        except threading.BrokenBarrierError:
            pass
        cpu0, wall0 = _cpu_busy(), time.perf_counter()
        gpu.start()
        rows = [results.get() for _ in processes]
        wall = time.perf_counter() - wall0
        gpu.stop.set()
        cpu1 = _cpu_busy()
    finally:
        for p in processes:
            p.join(timeout=30)
        if daemon is not None:
            daemon.__exit__(None, None, None)
    errors = [r["error"] for r in rows if "error" in r]
    if errors:
        print(f"a play process failed: {errors[0]}", file=sys.stderr)
        return 1
    _report(args, shadows, rows, wall, cpu0, cpu1, gpu.samples)
    return 0


def _report(args, shadows, rows, wall, cpu0, cpu1, gpu_samples) -> None:
    decisions, steps = sum(r["decisions"] for r in rows), sum(r["steps"] for r in rows)
    process_wall = sum(r["wall"] for r in rows)
    print(
        f"{os.cpu_count()} cores; {args.processes} processes x {args.slots} slots; driver {args.driver}; shadows "
        f"{', '.join(shadows) or 'none'}; {args.seeds} seeds, step cap {args.step_cap}"
    )
    print(
        f"wall {wall:.2f} s: {decisions:,} runtime decisions ({decisions / wall:,.0f}/s), {steps:,} agent steps "
        f"({steps / wall:,.0f}/s); the processes' CPU time is {sum(r['cpu'] for r in rows) / process_wall:.0%} "
        "of their wall time"
    )
    if cpu0 and cpu1:
        print(f"machine CPU busy: {(cpu1[0] - cpu0[0]) / max(1.0, cpu1[1] - cpu0[1]):.0%} of {os.cpu_count()} cores")
    if gpu_samples:
        print(
            f"GPU utilisation (NVML, share of time a kernel ran): mean {sum(gpu_samples) / len(gpu_samples):.0f} %"
            f" over {len(gpu_samples)} samples"
        )
    totals: dict = defaultdict(lambda: [0, 0.0])
    for r in rows:
        for name, (calls, seconds) in r["times"].items():
            totals[name][0] += calls
            totals[name][1] += seconds
    print(f"{'component':<40} {'calls':>10} {'us/call':>9} {'share':>7}")
    for name, (calls, seconds) in sorted(totals.items(), key=lambda kv: -kv[1][1]):
        print(f"{name:<40} {calls:>10,} {seconds / calls * 1e6:>9.0f} {seconds / process_wall:>7.1%}")
    rest = process_wall - sum(seconds for _, seconds in totals.values())
    print(
        f"{'the engine and the games (the rest)':<40} {'':>10} {rest / max(1, steps) * 1e6:>9.0f} "
        f"{rest / process_wall:>7.1%}   (us per agent step)"
    )


if __name__ == "__main__":
    sys.exit(main())
