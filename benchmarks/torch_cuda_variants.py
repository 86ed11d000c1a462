"""Which PyTorch CUDA set-up earns its place? Every variant side by side in one process, on the shipped agent:
the stored kind of P50 (``measure.decision_latency`` through ``TorchRunner``), the device time of one replayed
graph (CUDA events, so host overhead is left out), the copy floor, preparation time, and agreement with eager FP32
on the 60 fixed states.

    python benchmarks/torch_cuda_variants.py [--samples 2000] [--autotune]

Variants: eager; CUDA graph; CUDA graph with ``cudnn.benchmark`` (timed algorithm choice); ``torch.compile``
(Inductor, default mode) captured into a CUDA graph; with ``--autotune`` also Inductor's
``max-autotune-no-cudagraphs`` (slow to prepare). FP32 with TF32 off, and FP16.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from copy_floor import copy_floor  # noqa: E402

from collect import measure, paths  # noqa: E402
from collect.model_input import load_model  # noqa: E402
from collect.runners import torch_runner  # noqa: E402
from collect.registry import Runtime  # noqa: E402
from collect.runners.torch_runner import TorchRunner  # noqa: E402
from fingerprint import fingerprint  # noqa: E402  (benchmarks/fingerprint.py)


def graph_device_ms(runner, replays: int = 1000) -> float:
    """Mean device time of one graph replay, from CUDA events around many back-to-back replays."""
    import torch

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(50):
        runner.graph.replay()
    start.record()
    for _ in range(replays):
        runner.graph.replay()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / replays


def print_kernels(runner, states):
    """The GPU kernels of one forward (outside any CUDA graph, so the profiler sees each) and their device time."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    x = torch.from_numpy(states[:1]).to(runner._torch_device)
    with torch.inference_mode():
        for _ in range(20):
            runner.model(x)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            runner.model(x)
            torch.cuda.synchronize()
    events = [e for e in prof.events() if e.device_type.name == "CUDA"]
    print(
        f"-- kernels of one decision, {runner.info.title}: {len(events)}, "
        f"{sum(e.device_time for e in events):.1f} us of device time"
    )
    for e in events:
        print(f"   {e.device_time:7.2f} us  {e.name[:100]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=2000)
    ap.add_argument("--autotune", action="store_true", help="also Inductor's max-autotune-no-cudagraphs")
    ap.add_argument(
        "--kernels", action="store_true", help="list the kernels of one eager and one compiled FP32 decision"
    )
    a = ap.parse_args()
    print(fingerprint(), flush=True)
    import torch

    if not torch.cuda.is_available():
        raise SystemExit("needs a CUDA GPU")
    model = load_model(paths.AGENT_WEIGHTS)
    states = np.load(paths.FIXED_STATES)
    variants = []
    for precision in ("fp32", "fp16"):
        variants += [
            (f"eager {precision}", precision, dict(), None, False),
            (f"graph {precision}", precision, dict(cuda_graph=True), None, False),
            (f"graph+cudnn.benchmark {precision}", precision, dict(cuda_graph=True), None, True),
            (f"compile(default)+graph {precision}", precision, dict(compiled=True), "default", False),
        ]
        if a.autotune:
            variants.append(
                (
                    f"compile(max-autotune)+graph {precision}",
                    precision,
                    dict(compiled=True),
                    "max-autotune-no-cudagraphs",
                    False,
                )
            )
    floor, _ = copy_floor(a.samples)
    reference_q = None
    rows = []
    for name, precision, kwargs, mode, benchmark in variants:
        torch.backends.cudnn.benchmark = benchmark
        if mode:
            torch_runner.COMPILE_MODE = mode
        runner = TorchRunner(
            Runtime(f"torch-cuda-{precision}", "PyTorch", "cuda", precision, name), model.torch_model, 0, **kwargs
        )
        try:
            runner.prepare()
            measure.decision_latency(runner, states, 200, 0)
            seconds = measure.decision_latency(runner, states, 0, a.samples)
            q = measure.state_q_values(runner, states)
            device_ms = graph_device_ms(runner) if runner.cuda_graph else float("nan")
        except Exception as e:  # a variant that fails is a row, not the end of the comparison
            rows.append((name, f"FAILED {type(e).__name__}: {str(e).splitlines()[0][:120]}"))
            continue
        finally:
            runner.close()
        if reference_q is None:
            reference_q = q
        p50 = float(np.percentile(seconds, 50)) * 1e3
        rows.append(
            (
                name,
                p50,
                float(np.percentile(seconds, 95)) * 1e3,
                device_ms,
                p50 / floor,
                runner.prepare_seconds,
                float(np.abs(q - reference_q).max()),
                int((q.argmax(1) == reference_q.argmax(1)).sum()),
            )
        )
        time.sleep(0.2)
    torch.backends.cudnn.benchmark = False
    if a.kernels:
        torch_runner.COMPILE_MODE = "default"
        for kwargs in (dict(), dict(compiled=True)):
            info = Runtime("torch-cuda-fp32", "PyTorch", "cuda", "fp32", "compiled" if kwargs else "eager")
            with TorchRunner(info, model.torch_model, 0, **kwargs) as runner:
                print_kernels(runner, states)
    print(f"GPU {torch.cuda.get_device_name(0)}, torch {torch.__version__}, copy floor P50 {floor:.4f} ms")
    print(
        f"{'variant':<36} {'P50 ms':>8} {'P95 ms':>8} {'graph ms':>9} {'x floor':>8} {'prep s':>7} "
        f"{'max|dQ|':>9} {'same':>5}"
    )
    for row in rows:
        if isinstance(row[1], str):
            print(f"{row[0]:<36} {row[1]}")
            continue
        name, p50, p95, dev, ratio, prep, dq, same = row
        print(
            f"{name:<36} {p50:>8.4f} {p95:>8.4f} {dev:>9.4f} {ratio:>8.2f} {prep:>7.1f} {dq:>9.2e} "
            f"{same:>2}/{len(states)}"
        )


if __name__ == "__main__":
    main()
