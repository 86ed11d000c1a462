"""Concurrent CUDA-graph replays, and why each slot's graph is captured on its own stream: for each PyTorch CUDA
runtime, the play engine's self-check (``Runner.overlap_differences``: every slot a different state, all slots
in flight, each result compared bit for bit with ``infer``) with the slot graphs captured on each slot's own
stream (as collect does) and on PyTorch's one default capture stream (as the first concurrent engine did).

    python benchmarks/graph_overlap.py --slots 16 --rounds 256

Prints, per runtime and capture, how many of slots x rounds decisions differed, and the decisions/s of the
overlapped replays against one at a time through ``infer`` (GPU only; no emulator).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from collect import paths  # noqa: E402
from collect.agent.protocol import OBSERVATION_SHAPE  # noqa: E402
from collect.artifacts import Artifacts  # noqa: E402
from collect.model_input import load_model  # noqa: E402
from collect.registry import all_runtimes  # noqa: E402
from collect.runners.torch_runner import TorchRunner  # noqa: E402

RUNTIMES = "torch-cuda-fp32,torch-cuda-fp16,torch-cuda-fp32-graph,torch-cuda-fp16-graph,torch-cuda-fp32-compile," \
           "torch-cuda-fp16-compile"


def rate(runner, n: int, overlapped: bool, seconds: float = 1.0) -> float:
    states = np.random.default_rng(1).integers(0, 256, (n, 1, *OBSERVATION_SHAPE), dtype=np.uint8)
    done, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        if overlapped:
            for slot in range(n):
                runner.submit(slot, states[slot])
            for slot in range(n):
                runner.fetch(slot)
        else:
            for slot in range(n):
                runner.infer(states[slot])
        done += n
    return done / (time.perf_counter() - start)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runtimes", default=RUNTIMES)
    ap.add_argument("--slots", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=256)
    args = ap.parse_args()
    model = load_model(paths.AGENT_WEIGHTS)
    artifacts = Artifacts(Path(tempfile.mkdtemp(prefix="graph-overlap-")), model.onnx_source())
    specs = {s.id: s for s in all_runtimes()}
    failed = False
    for rid in args.runtimes.split(","):
        reason = specs[rid].check(model)
        if reason:
            print(f"{rid}: cannot run here: {reason}")
            return 2
        for own in (True, False) if "graph" in rid or "compile" in rid else (True,):
            TorchRunner.capture_on_slot_stream = own
            runner = specs[rid].make(model, artifacts, 0)
            runner.prepare()
            runner.open_slots(args.slots)  # the engine's self-check (64 rounds)
            slots_made = bool(runner.__dict__.get("_slots"))
            if not slots_made:  # make the slots anyway, to count how often they differ
                runner._slots = {slot: runner._make_slot() for slot in range(args.slots)}
            differing = runner.overlap_differences(args.slots, args.rounds)
            capture = "own stream per slot" if own else "default capture stream"
            print(f"{rid:<24} {capture:<22} differing {differing:>5} of {args.slots * args.rounds}; "
                  f"overlapped {rate(runner, args.slots, True):8,.0f}/s vs one at a time "
                  f"{rate(runner, args.slots, False):8,.0f}/s; engine: {runner.overlap}", flush=True)
            failed = failed or (own and differing > 0)
            runner.close()
    TorchRunner.capture_on_slot_stream = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
