"""The emulator as play uses it: gymnasium's chain (``protocol.make_eval_env``: AtariEnv, AtariPreprocessing,
FrameStackObservation) against ``direct_env.DirectEvalEnv`` (the same ALE calls without gymnasium's layers), side by
side in one process, interleaved in rounds, on the same seeds and actions; the observations are compared as they
come (any difference stops the benchmark).

    python benchmarks/env_step.py [--rounds 5] [--steps 2000] [--threads N]

Per round and env: microseconds per agent step (resets excluded) and milliseconds per seeded reset; then the
median ratio direct / gymnasium over the rounds. ``--threads``: OpenCV's thread count (play processes use 1).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from collect.agent.direct_env import DirectEvalEnv  # noqa: E402
from collect.agent.protocol import make_eval_env  # noqa: E402
from fingerprint import fingerprint  # noqa: E402  (benchmarks/fingerprint.py)


def one_round(envs: dict, seed: int, steps: int) -> dict:
    """Each env plays the same FIRE-heavy random actions from ``seed`` (a new seeded game when one ends)."""
    actions = np.random.default_rng(seed).choice(4, size=steps, p=[0.2, 0.4, 0.2, 0.2])
    out, seen = {}, {}
    for name, env in envs.items():
        step_s, resets, reset_s, game = 0.0, 0, 0.0, seed
        t = time.perf_counter()
        obs, _ = env.reset(seed=game)
        reset_s += time.perf_counter() - t
        trace = [obs[-1].copy()]
        for a in actions:
            t = time.perf_counter()
            obs, _, terminated, truncated, _ = env.step(int(a))
            step_s += time.perf_counter() - t
            trace.append(obs[-1].copy())
            if terminated or truncated:
                game += 1
                t = time.perf_counter()
                env.reset(seed=game)
                reset_s += time.perf_counter() - t
                resets += 1
        seen[name] = np.stack(trace)
        out[name] = (step_s / steps * 1e6, reset_s / (resets + 1) * 1e3)
    first, *rest = seen.values()
    if any(not np.array_equal(first, other) for other in rest):
        raise SystemExit(f"round with seed {seed}: the envs' observations differ")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--threads", type=int, default=None, help="OpenCV threads (default: OpenCV's own)")
    args = ap.parse_args()
    print(fingerprint(), flush=True)
    import cv2

    if args.threads is not None:
        cv2.setNumThreads(args.threads)
    print(f"OpenCV {cv2.__version__}, {cv2.getNumThreads()} thread(s); {args.rounds} rounds of {args.steps} steps")
    envs = {"gymnasium": make_eval_env(), "direct": DirectEvalEnv()}
    ratios = []
    for r in range(args.rounds):
        order = dict(reversed(envs.items())) if r % 2 else envs  # alternate which goes first
        res = one_round(order, 1000 + r, args.steps)
        ratios.append(res["direct"][0] / res["gymnasium"][0])
        print(
            f"round {r + 1}: gymnasium {res['gymnasium'][0]:7.0f} µs/step, reset {res['gymnasium'][1]:6.1f} ms; "
            f"direct {res['direct'][0]:7.0f} µs/step, reset {res['direct'][1]:6.1f} ms; ratio {ratios[-1]:.3f}"
        )
    print(
        f"median ratio direct / gymnasium per step: {statistics.median(ratios):.3f} "
        f"(rounds {min(ratios):.3f}–{max(ratios):.3f}); observations identical in every round"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
