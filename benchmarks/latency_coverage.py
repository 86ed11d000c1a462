"""What the speed gate does, simulated from the committed files' own spread.

For each committed machine file and each candidate runtime, the per-round log ratios of its P95 (the gate's
statistic) to the reference's are fitted with three nested effects by the method of moments:

- **boot**: the machine's boot the rounds ran on (``conditions.boot``; a fresh lease of the lent H200 is a fresh
  boot): the spread of boot means beyond what their processes and rounds explain;
- **process**: a fresh process on the same boot (the run and the repeats ``rtreport collect`` takes after it, or a
  later ``--repeat`` on that boot), beyond what their rounds explain;
- **round**: the latency rounds within one process; their residuals are resampled as measured (the heavy tail a
  drifting round gives, e.g. the H200 reference's 0.35 → 0.76 ms step), scaled to the fitted round spread.

Runs of one label in several files are pooled as processes of that machine (the CPU VM's earlier runs each had one
process). Then it simulates the measurements a file holds, as collect takes them: the run's process (10 rounds)
and its repeats (3 rounds each), each measurement on a fresh boot where the file's measurements are boots, or a
fresh process where they are processes; and counts, with the published rule (``rtreport.latency_stats.interval``
and ``site_gen.verdict.faster_gate``):

- the 95 % CI for the machine's typical ratio: how often it holds the true typical ratio;
- the 95 % prediction interval: how often it holds what one more measurement (a fresh boot or process, 3 rounds)
  gives;
- the false-pass rate: how often the gate passes a runtime whose true typical ratio is exactly the gate (0.90), over
  more simulated files than the rest (``--gate-machines``), since it is a rate of a few per cent;
- the chance that a runtime with a true typical ratio of 0.3 and of 0.7 passes, with 3 and with 5 measurements;
- beside the last two, what the rule before this one (pass when the prediction interval's slow end reaches the gate)
  does on the same simulated files.

Rates are pooled over the fitted runtimes of each file (each runtime simulated with its own fitted spread) and
shown per runtime as their range.

    python benchmarks/latency_coverage.py                     # the committed files; about 2 minutes on 2 cores
    python benchmarks/latency_coverage.py --machines 300 --gate-machines 1000   # quicker, rougher
    python benchmarks/latency_coverage.py data/nvidia-h200.duckdb old-h200.duckdb   # runs of one label pool
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from fingerprint import fingerprint  # noqa: E402  (benchmarks/fingerprint.py)
from rtreport import latency_stats as ls  # noqa: E402
from rtreport.gates import Gates  # noqa: E402

COMMITTED = (
    "nvidia-h200.duckdb",
    "nvidia-h100.duckdb",
    "cpu-epyc-2core.duckdb",
    "cpu-epyc-2core-2.duckdb",
    "cpu-epyc-2core-3.duckdb",
    "cpu-epyc-2core-4.duckdb",
)
PROTOCOL_ROUNDS, REPEAT_ROUNDS = 10, 3
# On a machine measured on several boots (the lent H200: one repeat per fresh lease), the run takes no repeats on its
# own boot (``--repeats 0``, docs/gpu-run.md); ``--same-boot-repeats`` simulates a run that does.
SAME_BOOT_REPEATS = 0
STATISTIC = "p95"


@dataclass
class Fit:
    """One runtime's fitted effects (sd of log ratio) on one machine, and its round residuals."""

    label: str
    runtime: str
    unit: str  # "boot" or "process": what the machine's independent measurements are
    boot: float
    process: float
    round: float
    residuals: np.ndarray  # standardised round residuals (sd 1), resampled in the simulation
    mean: float  # log of the observed typical ratio
    counts: tuple  # (boots, processes, rounds) it was fitted on


def _rounds_by_machine(paths) -> dict:
    """label -> runtime -> [(boot, process, log ratio)], every round of every file of that label."""
    from site_gen.analysis import boots, keyed_rounds
    from site_gen.load import load_file

    out: dict = {}
    for path in paths:
        for run in load_file(path):
            ref = run.runtime(run.run.get("reference_runtime"))
            if ref is None or not ref.rounds:
                continue
            ref_keyed, where = keyed_rounds(ref), boots(ref)
            for rt in run.runtimes:
                if rt is ref or not rt.rounds:
                    continue
                ratios = ls.paired_ratios(keyed_rounds(rt), ref_keyed, STATISTIC)
                rows = out.setdefault(run.run["label"], {}).setdefault(rt.runtime_id, [])
                for r, (rep, value) in ratios.items():
                    rows.append(
                        (
                            where.get(r) or f"{run.run['run_id']}:unknown-boot",
                            f"{run.run['run_id']}:{rep}",
                            math.log(value),
                        )
                    )
    return out


def _moments(groups: list[np.ndarray]) -> tuple[float, float]:
    """(between-group variance of the means beyond the within part, pooled within variance) of log values."""
    within_ss = sum(float(((g - g.mean()) ** 2).sum()) for g in groups)
    within_df = sum(g.size - 1 for g in groups)
    within = within_ss / within_df if within_df else 0.0
    if len(groups) < 2:
        return 0.0, within
    means = np.array([g.mean() for g in groups])
    expected = float(np.mean([within / g.size for g in groups]))
    return max(0.0, float(means.var(ddof=1)) - expected), within


def _plural(word: str) -> str:
    return word + ("es" if word.endswith("s") else "s")


def _count(n: int, word: str) -> str:
    return f"{n} {word if n == 1 else _plural(word)}"


def fit(label: str, runtime: str, rows: list) -> Fit | None:
    boots_, processes = {}, {}
    for boot, proc, y in rows:
        processes.setdefault((boot, proc), []).append(y)
        boots_.setdefault(boot, set()).add(proc)
    proc_groups = {k: np.array(v) for k, v in processes.items()}
    if sum(g.size for g in proc_groups.values()) < 4:
        return None
    # rounds within a process; processes within a boot (boots with two or more); boots
    _, within = _moments(list(proc_groups.values()))
    process_var, n_process = [], 0
    for boot, procs in boots_.items():
        if len(procs) >= 2:
            between, _ = _moments([proc_groups[(boot, p)] for p in procs])
            process_var.append(between)
            n_process += len(procs)
    process = float(np.mean(process_var)) if process_var else 0.0
    boot_means = [np.concatenate([proc_groups[(b, p)] for p in procs]) for b, procs in boots_.items()]
    boot_between, _ = _moments(boot_means) if len(boot_means) >= 2 else (0.0, within)
    boot = max(0.0, boot_between - process / max(1.0, np.mean([len(p) for p in boots_.values()])))
    unit = "boot" if len(boots_) >= 2 and not any(b.endswith("unknown-boot") for b in boots_) else "process"
    if unit == "process":  # one boot (or none recorded): the processes are the measurements
        all_procs = list(proc_groups.values())
        process = _moments(all_procs)[0] if len(all_procs) >= 2 else 0.0
        boot = 0.0
    resid = np.concatenate([g - g.mean() for g in proc_groups.values() if g.size >= 2])
    resid = resid / (resid.std() or 1.0)
    logs = np.concatenate(list(proc_groups.values()))
    return Fit(
        label,
        runtime,
        unit,
        math.sqrt(boot),
        math.sqrt(process),
        math.sqrt(within),
        resid,
        float(logs.mean()),
        (len(boots_), len(proc_groups), int(logs.size)),
    )


def _measurement(rng, f: Fit, mu: float, same_boot_repeats: int, rounds: int) -> list[tuple[str, int, np.ndarray]]:
    """One independent measurement's rounds: [(unit key, repeat, log ratios)] of its processes."""
    b = rng.normal(0, f.boot) if f.unit == "boot" else 0.0
    out = []
    for k in range(1 + same_boot_repeats):
        p = rng.normal(0, f.process)
        n = rounds if k == 0 else REPEAT_ROUNDS
        e = rng.choice(f.residuals, n) * f.round
        out.append((k, mu + b + p + e))
    return out


def simulate_file(rng, f: Fit, mu: float, measurements: int) -> tuple[dict, dict]:
    """The rounds a file of ``measurements`` measurements holds (round id -> (repeat, ratio)), its boots (round id
    -> boot), as they are taken: on boots, the run (and ``SAME_BOOT_REPEATS`` repeats) on the first boot and one
    repeat on each further boot; on processes, the run and a repeat for each further measurement."""
    values, boots, rid, repeat = {}, {}, 0, 0
    for m in range(measurements):
        first = m == 0
        same = SAME_BOOT_REPEATS if (first and f.unit == "boot") else 0
        for k, logs in _measurement(rng, f, mu, same, PROTOCOL_ROUNDS if first else REPEAT_ROUNDS):
            for y in logs:
                values[rid] = (repeat, math.exp(y))
                boots[rid] = f"boot-{m}" if f.unit == "boot" else "one-boot"
                rid += 1
            repeat += 1
    return values, boots


def next_measurement(rng, f: Fit, mu: float) -> float:
    """What one more measurement gives: a fresh boot (or process) with a repeat's rounds, its geometric mean."""
    [(_, logs)] = _measurement(rng, f, mu, 0, REPEAT_ROUNDS)
    return math.exp(float(logs.mean()))


def run(fits: list[Fit], machines: int, seed: int, gates: Gates, gate_machines: int) -> list[str]:
    from site_gen.verdict import faster_gate

    rng = np.random.default_rng(seed)
    gate = 1 - gates.min_p95_reduction
    out = []
    by_label: dict = {}
    for f in fits:
        by_label.setdefault(f.label, []).append(f)
    for label, group in by_label.items():
        tallies: dict = {}
        for f in group:
            per = {}
            for g in (3, 5):
                hits_ci, hits_next = [], []
                for _ in range(machines):
                    values, boots = simulate_file(rng, f, f.mean, g)
                    iv = ls.interval(values, boots=boots)
                    hits_ci.append(iv["low"] <= math.exp(f.mean) <= iv["high"])
                    nxt = next_measurement(rng, f, f.mean)
                    hits_next.append(iv["next_low"] <= nxt <= iv["next_high"])
                per[f"typical CI holds the true typical ratio, {g} measurements"] = hits_ci
                per[f"prediction interval holds the next measurement, {g} measurements"] = hits_next
                for true in (gate, 0.3, 0.7):
                    passed, earlier = [], []
                    for _ in range(gate_machines if true == gate else machines):
                        values, boots = simulate_file(rng, f, math.log(true), g)
                        iv = ls.interval(values, boots=boots)
                        passed.append(faster_gate(gates, iv).state == "pass")
                        earlier.append(iv["next_high"] <= gate)  # the rule before: the prediction interval's end
                    key = (
                        "false-pass rate at the gate" if true == gate else f"passes at a true ratio of {true}"
                    ) + f", {g} measurements"
                    per[key] = passed
                    per[key + " (the earlier rule: the prediction interval)"] = earlier
            for key, hits in per.items():
                tallies.setdefault(key, []).append((f.runtime, float(np.mean(hits)), len(hits)))
        units = sorted({f.unit for f in group})
        kinds = " and ".join(_plural(u) for u in units)
        first = f"the run and {_count(SAME_BOOT_REPEATS, 'repeat')}" if SAME_BOOT_REPEATS else "the run alone"
        where = f" (the first boot: {first})" if units == ["boot"] else ""
        out.append(
            f"\n{label}: {_count(len(group), 'runtime')} fitted, measurements are {kinds}{where}; per runtime sd of "
            "the log P95 ratio (boot / process / round):"
        )
        for f in group:
            out.append(
                f"  {f.runtime:26s} {f.boot:.3f} / {f.process:.3f} / {f.round:.3f}   (fitted on "
                f"{_count(f.counts[0], 'boot')}, {_count(f.counts[1], 'process')}, {_count(f.counts[2], 'round')})"
            )
        for key, rows in tallies.items():
            pooled = sum(p * n for _, p, n in rows) / sum(n for _, _, n in rows)
            (low_id, low, _), (high_id, high, _) = min(rows, key=lambda r: r[1]), max(rows, key=lambda r: r[1])
            out.append(
                f"  {key:<96s} {100 * pooled:6.2f} %   (runtimes {100 * low:.1f}–{100 * high:.1f} %: "
                f"{low_id}, {high_id})"
            )
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="*", type=Path, help="machine files (default: the committed ones)")
    ap.add_argument("--machines", type=int, default=2000, help="simulated files per runtime and scenario")
    ap.add_argument(
        "--gate-machines",
        type=int,
        default=8000,
        help="simulated files per runtime for the false-pass rate at the gate",
    )
    ap.add_argument("--seed", type=int, default=20261203)
    ap.add_argument(
        "--same-boot-repeats",
        type=int,
        default=SAME_BOOT_REPEATS,
        help="repeats on the run's own boot, where the measurements are boots (default 0)",
    )
    args = ap.parse_args(argv)
    globals()["SAME_BOOT_REPEATS"] = args.same_boot_repeats
    print(fingerprint(), flush=True)
    paths = args.files or [p for p in (ROOT / "data" / n for n in COMMITTED) if p.exists()]
    t0, c0 = time.time(), time.process_time()
    data = _rounds_by_machine(paths)
    fits = [f for label, rts in data.items() for rid, rows in sorted(rts.items()) if (f := fit(label, rid, rows))]
    print(
        f"files: {', '.join(p.name for p in paths)}; statistic {STATISTIC.upper()}; {args.machines} simulated "
        f"files per runtime and scenario; the run's process {PROTOCOL_ROUNDS} rounds, each repeat {REPEAT_ROUNDS}"
    )
    print("\n".join(run(fits, args.machines, args.seed, Gates.load(), args.gate_machines)))
    print(f"({time.time() - t0:.0f} s wall, {time.process_time() - c0:.0f} s CPU)")


if __name__ == "__main__":
    main()
