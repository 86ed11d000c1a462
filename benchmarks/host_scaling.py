"""How play's emulator work scales with processes on this host (is a look bound by the host's cores?).

    python benchmarks/host_scaling.py [--procs 1,2,4,8,12,16] [--steps 3000] [--rounds 2]

Each configuration starts N processes at once; each steps ``DirectEvalEnv`` (the ALE calls play makes, OpenCV on
one thread) through ``--steps`` random agent steps from its own seeded game. Printed per configuration and round:
the aggregate agent steps per second and the speed-up over one process, beside the machine's fingerprint and its
CPU topology (``lscpu``: threads per core, cores per socket), configurations interleaved round by round. A game
that ends starts the next seeded one, as in play; random actions end games far sooner than the agent does (every
few hundred steps), so seeded resets (the ROM loaded again, about 0.24 s) weigh more here than in play's 3.5–5 %.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fingerprint import fingerprint  # noqa: E402  (benchmarks/fingerprint.py)


def _work(args) -> float:
    seed, steps, start = args
    import cv2
    import numpy as np

    from collect.agent.direct_env import DirectEvalEnv

    cv2.setNumThreads(1)
    env = DirectEvalEnv()
    env.reset(seed=seed)
    actions = np.random.default_rng(seed).choice(4, size=steps, p=[0.2, 0.4, 0.2, 0.2])
    while time.time() < start:  # every process starts stepping at the same moment
        time.sleep(0.001)
    t0 = time.perf_counter()
    for a in actions:
        _, _, terminated, truncated, _ = env.step(int(a))
        if terminated or truncated:
            env.reset(seed=seed + 1)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--procs", default="1,2,4,8,12,16")
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    print(fingerprint(), flush=True)
    topo = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    keep = ("CPU(s)", "Thread(s) per core", "Core(s) per socket", "Socket(s)", "Model name", "NUMA node(s)")
    print(
        "; ".join(
            f"{k.strip()}: {v.strip()}"
            for k, _, v in (line.partition(":") for line in topo.splitlines())
            if k.strip() in keep
        ),
        flush=True,
    )
    counts = [int(n) for n in args.procs.split(",")]
    ctx = mp.get_context("spawn")
    rates: dict[int, list[float]] = {}
    with ctx.Pool(max(counts)) as pool:
        pool.map(_work, [(1000 + i, 50, 0.0) for i in range(max(counts))])  # import and load the ROM once
        for r in range(args.rounds):
            for n in counts:
                start = time.time() + 0.5
                times = pool.map(_work, [(1000 + 97 * r + i, args.steps, start) for i in range(n)])
                rate = n * args.steps / max(times)
                rates.setdefault(n, []).append(rate)
                print(
                    f"round {r + 1}: {n:2d} processes: {rate:8.0f} agent steps/s "
                    f"({rate / rates[counts[0]][r] * counts[0]:.2f}x one process's rate; slowest "
                    f"{max(times):.2f} s, fastest {min(times):.2f} s)",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
