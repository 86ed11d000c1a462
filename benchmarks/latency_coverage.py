"""How often does a published latency interval hold the next measurement of the same machine?

Simulates latency rounds the way a machine gives them, then counts how often each method's 95 % interval contains
(a) the estimate a *next repeat* (a fresh process, later) gives, and (b) the true value. Per simulated machine:

- three runtimes: the reference (eager, host-bound: every kernel is launched from the CPU), a CUDA-graph candidate
  (host sensitivity 0.2) and an eager candidate (host sensitivity 1);
- samples within a round: log-latency AR(1) with lag-1 autocorrelation drawn from 0.1–0.96, marginal sd 0.05–0.25;
- rounds: the host's state is a random walk (step sd 0.01–0.05 per round in log latency, continuing across
  processes), scaled by each runtime's host sensitivity, plus 0.03 of round-to-round noise of its own;
- a step in the reference: in half the machines, one round of the protocol has the reference 0.76 / 0.35 as slow;
- repeat-to-repeat shifts: each process shifts the host's speed by 5–50 % (uniform, either way), felt in proportion to each runtime's host sensitivity, plus 3 % of its own per runtime — what a fresh process
  changes (memory layout, launch path, a neighbour) and rounds inside one process cannot show. (On the H200 a
  re-run moved both eager runtimes by +46–48 % and the graph runtimes by +4–21 %: a shared, host-bound shift.)
The true value of a runtime is its P50/P95 without drift, step or shift; the true ratio their quotient.

Designs: "today" (3 rounds, as the committed files), "protocol" (10 rounds), "+1 repeat" and "+2 repeats" (5 rounds
each, in fresh processes). The next repeat has 5 rounds. Methods: today's two-stage bootstrap of rounds and sample
blocks (``stats.p95_ratio`` / ``stats.p95_ci_rounds``; 200 resamples here to keep the run short), a t confidence
interval over per-round values, and the published prediction interval (``rtreport.latency_stats``).

    python benchmarks/latency_coverage.py            # about 3 minutes on 2 cores
    python benchmarks/latency_coverage.py --quick    # about 20 s, fewer machines and samples
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from rtreport import latency_stats as ls  # noqa: E402
from rtreport import stats  # noqa: E402
from fingerprint import fingerprint  # noqa: E402  (benchmarks/fingerprint.py)

RUNTIMES = {"reference": (0.35e-3, 1.0), "graph": (0.08e-3, 0.2), "eager": (0.30e-3, 1.0)}  # base s, host sensitivity
STEP = 0.76 / 0.35
PROTOCOL_ROUNDS, REPEAT_ROUNDS = 10, 5
Z95 = 1.6448536


def ar1(rng, n_series: int, n: int, phi: float, sd: np.ndarray) -> np.ndarray:
    """(n_series, n) AR(1) series with lag-1 autocorrelation ``phi`` and marginal sd ``sd`` (per series)."""
    e = rng.standard_normal((n_series, n)) * math.sqrt(1 - phi * phi)
    x = np.empty((n_series, n))
    x[:, 0] = rng.standard_normal(n_series)
    for i in range(1, n):
        x[:, i] = phi * x[:, i - 1] + e[:, i]
    return x * sd[:, None]


def machine(rng, samples: int) -> dict:
    """One simulated machine: per process (0 = protocol, 1, 2 = repeats, 3 = the next repeat) per runtime a list
    of rounds' samples (seconds), and the true P50/P95 of each runtime (ms)."""
    phi, tau = rng.uniform(0.1, 0.96), rng.uniform(0.01, 0.05)
    sds = {k: rng.uniform(0.05, 0.25) for k in RUNTIMES}
    step_round = int(rng.integers(PROTOCOL_ROUNDS)) if rng.random() < 0.5 else None
    sizes = [PROTOCOL_ROUNDS, REPEAT_ROUNDS, REPEAT_ROUNDS, REPEAT_ROUNDS]
    walk, out = 0.0, []
    for p, rounds in enumerate(sizes):
        # a fresh process: the host's speed shifts by 5–50 % either way, felt in proportion to host sensitivity
        host = rng.choice((-1, 1)) * math.log1p(rng.uniform(0.05, 0.5))
        offsets = {k: sens * host + rng.normal(0, 0.03) for k, (_, sens) in RUNTIMES.items()}
        proc = {k: [] for k in RUNTIMES}
        names = list(RUNTIMES)
        noise = ar1(rng, rounds * len(names), samples, phi, np.array([sds[k] for _ in range(rounds) for k in names]))
        for r in range(rounds):
            walk += rng.normal(0, tau)
            for j, k in enumerate(names):
                base, sens = RUNTIMES[k]
                level = math.log(base) + sens * walk + offsets[k] + rng.normal(0, 0.03 * sens)
                if k == "reference" and p == 0 and r == step_round:
                    level += math.log(STEP)
                proc[k].append(np.exp(level + noise[r * len(names) + j]))
        out.append(proc)
    true = {k: {"p50": base * 1e3, "p95": base * 1e3 * math.exp(Z95 * sds[k])} for k, (base, _) in RUNTIMES.items()}
    return {"processes": out, "true": true}


def keyed(processes: list, runtime: str) -> dict:
    """Round id -> (repeat, seconds) over the given processes (repeat = the process's place)."""
    out, i = {}, 0
    for rep, proc in processes:
        for s in proc[runtime]:
            out[i] = (rep, s)
            i += 1
    return out


def new_method(procs, next_proc, true, confidence_only=False, **kw):
    """Hits (next repeat, true, interval width high/low) of the round method for two ratios and three single
    runtimes, per statistic."""
    hits = {}
    nxt = [(9, next_proc)]
    for stat in ("p50", "p95"):
        for cand in ("graph", "eager"):
            res = ls.ratio_interval(keyed(procs, cand), keyed(procs, "reference"), stat, **kw)
            nres = ls.ratio_interval(keyed(nxt, cand), keyed(nxt, "reference"), stat)
            if confidence_only:
                res = _ci(res)
            hits[(stat, "ratio")] = hits.get((stat, "ratio"), []) + [
                (res["low"] <= nres["value"] <= res["high"], res["low"] <= true[cand][stat] / true["reference"][stat]
                 <= res["high"], res["high"] / res["low"])]
        for rt in RUNTIMES:
            res = ls.runtime_interval(keyed(procs, rt), stat, **kw)
            nres = ls.runtime_interval(keyed(nxt, rt), stat)
            if confidence_only:
                res = _ci(res)
            hits[(stat, "single")] = hits.get((stat, "single"), []) + [
                (res["low"] <= nres["value"] <= res["high"], res["low"] <= true[rt][stat] <= res["high"], res["high"] / res["low"])]
    return hits


def _ci(res):
    """The same rounds read as a plain t confidence interval (√(1/n) instead of √(2/n)): the method not chosen."""
    center, half = math.log(res["value"]), math.log(res["high"] / res["value"]) / math.sqrt(2)
    return {**res, "low": math.exp(center - half), "high": math.exp(center + half)}


def old_method(proc, next_proc, true, resamples: int):
    """Today's method (P95 only): pooled-sample point, two-stage bootstrap of rounds and blocks."""
    hits = {("p95", "ratio"): [], ("p95", "single"): []}
    pooled = (lambda rounds: stats.percentile(np.concatenate(rounds), 95) * 1e3)
    for cand in ("graph", "eager"):
        _, low, high = stats.p95_ratio(proc[cand], proc["reference"], resamples=resamples)
        nxt = pooled(next_proc[cand]) / pooled(next_proc["reference"])
        hits[("p95", "ratio")].append((low <= nxt <= high, low <= true[cand]["p95"] / true["reference"]["p95"] <= high,
                                       high / low))
    for rt in RUNTIMES:
        low, high = stats.p95_ci_rounds(proc[rt], resamples=resamples)
        hits[("p95", "single")].append((low <= pooled(next_proc[rt]) <= high, low <= true[rt]["p95"] <= high,
                                        high / low))
    return hits


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer machines and samples (about 20 s)")
    ap.add_argument("--machines", type=int, default=None)
    ap.add_argument("--seed", type=int, default=20261201)
    args = ap.parse_args(argv)
    print(fingerprint(), flush=True)
    machines = args.machines or (40 if args.quick else 240)
    samples, resamples = (400, 100) if args.quick else (2000, 200)
    print(f"{machines} simulated machines, {samples} samples per round, next repeat of {REPEAT_ROUNDS} rounds; "
          f"coverage of the 95 % interval: next repeat's estimate / true value")
    rng = np.random.default_rng(args.seed)
    t0, c0 = time.time(), time.process_time()
    tally: dict = {}

    def add(name, hits):
        for key, pairs in hits.items():
            tally.setdefault((name,) + key, []).extend(pairs)

    for _ in range(machines):
        m = machine(rng, samples)
        p, true = m["processes"], m["true"]
        today = {k: v[:3] for k, v in p[0].items()}
        add("today: 3 rounds, bootstrap of rounds and blocks (p95_ratio, p95_ci_rounds)",
            old_method(today, p[3], true, resamples))
        add("3 rounds, t confidence interval over rounds", new_method([(0, today)], p[3], true, True))
        add("3 rounds, prediction interval over rounds (published)", new_method([(0, today)], p[3], true))
        add("10 rounds, t confidence interval over rounds", new_method([(0, p[0])], p[3], true, True))
        add("10 rounds, prediction interval over rounds (published)", new_method([(0, p[0])], p[3], true))
        add("10 rounds + 1 repeat, rounds pooled", new_method([(0, p[0]), (1, p[1])], p[3], true, two_level_from=99))
        add("10 rounds + 1 repeat, two-level (published; t with 1 df)",
            new_method([(0, p[0]), (1, p[1])], p[3], true))
        add("10 rounds + 2 repeats, two-level (published)",
            new_method([(0, p[0]), (1, p[1]), (2, p[2])], p[3], true))
    names = list(dict.fromkeys(k[0] for k in tally))
    print(f"{'method':<78} {'stat':<4} {'ratio: next / true / width':>27} {'single: next / true / width':>28}")
    for name in names:
        for stat in ("p50", "p95"):
            cells = []
            for what in ("ratio", "single"):
                pairs = tally.get((name, stat, what))
                cells.append("—" if not pairs else
                             f"{100 * np.mean([a for a, _, _ in pairs]):.0f} % / "
                             f"{100 * np.mean([b for _, b, _ in pairs]):.0f} % / "
                             f"{np.median([w for _, _, w in pairs]):.2f}×")
            if cells != ["—", "—"]:
                print(f"{name:<78} {stat:<4} {cells[0]:>27} {cells[1]:>28}")
    print("width: the median of high / low of the interval (1.10× = ±5 %)")
    print(f"({time.time() - t0:.0f} s wall, {time.process_time() - c0:.0f} s CPU)")


if __name__ == "__main__":
    main()
