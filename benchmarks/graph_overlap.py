"""Overlapped CUDA decisions (PyTorch, ONNX Runtime's CUDA EP) against one at a time: the play engine's self-check
(``collect.engine.overlap_differences``: every slot of every runtime a different state, all in flight, each
result compared bit for bit with ``infer``), for each runtime alone and for all of them together as in play, with
the slot graphs captured on each slot's own stream (as collect does) and on PyTorch's one default capture stream
(as the first concurrent engine did); and the decisions/s of each runtime's overlapped slots against ``infer``.

    python benchmarks/graph_overlap.py --slots 16 --rounds 256
    python benchmarks/graph_overlap.py --runtimes torch-cuda-fp16-graph,ort-cuda-fp16,ort-cuda-fp16-graph --captures own

(The capture stream is PyTorch's matter; ONNX Runtime's sessions are the same in both passes.)

GPU only; no emulator. Exit 1 if any overlapped decision differs with the capture collect uses.
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
from collect.play.engine import open_slots, overlap_differences  # noqa: E402
from collect.model_input import load_model  # noqa: E402
from collect.registry import all_runtimes  # noqa: E402
from collect.runners.torch_runner import TorchRunner  # noqa: E402
from fingerprint import fingerprint  # noqa: E402  (benchmarks/fingerprint.py)

RUNTIMES = "torch-cuda-fp32,torch-cuda-fp16,torch-cuda-fp32-graph,torch-cuda-fp16-graph,torch-cuda-fp16-compile"


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
    ap.add_argument(
        "--captures",
        default="own,default",
        help="which captures of the PyTorch slot graphs: own (each slot's stream), default, or both",
    )
    args = ap.parse_args()
    print(fingerprint(), flush=True)
    model = load_model(paths.AGENT_WEIGHTS)
    artifacts = Artifacts(Path(tempfile.mkdtemp(prefix="graph-overlap-")), model.onnx_source())
    specs = {s.id: s for s in all_runtimes()}
    ids = args.runtimes.split(",")
    unknown = [rid for rid in ids if rid not in specs]
    if unknown:
        print(f"unknown runtime {', '.join(unknown)}; known: {', '.join(specs)}", file=sys.stderr)
        return 2
    for rid in ids:
        reason = specs[rid].check(model)
        if reason:
            print(f"{rid}: cannot run here: {reason}")
            return 2
    n, total, failed = args.slots, args.slots * args.rounds, False
    for own in [c == "own" for c in args.captures.split(",")]:
        TorchRunner.capture_on_slot_stream = own
        capture = "own stream per slot" if own else "default capture stream"
        runners = {rid: specs[rid].make(model, artifacts, 0) for rid in ids}
        for r in runners.values():
            r.prepare()
        said = open_slots(runners, n)  # the engine's joint self-check, as collect runs it
        for r in runners.values():  # slots again where the check closed them, to count how often they differ
            r.overlap = None
            r.open_slots(n)
        together = overlap_differences(runners, n, args.rounds)
        for rid, r in runners.items():
            alone = overlap_differences({rid: r}, n, args.rounds)[rid]
            print(
                f"{capture:<22} {rid:<24} differing alone {alone:>5}, together {together[rid]:>5} of {total}; "
                f"overlapped {rate(r, n, True):8,.0f}/s vs one at a time {rate(r, n, False):8,.0f}/s",
                flush=True,
            )
            failed = failed or (own and (alone or together[rid]))
        print(f"{capture}: the engine says: {said}", flush=True)
        for r in runners.values():
            r.close()
    TorchRunner.capture_on_slot_stream = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
