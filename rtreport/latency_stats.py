"""Latency statistics with the latency *round* as the unit and the independent *measurement* as the unit of
evidence (pure numpy, no I/O).

Why rounds, not samples: decisions within one round share the machine's state (lag-1 autocorrelation 0.1–0.96)
and the machine drifts between rounds (the H200's eager reference went from 0.35 to 0.76 ms P50 between two
rounds of one process). A bootstrap over samples or blocks of them treats one round's 2,000 decisions as
2,000 pieces of evidence; they are one. So every figure here is computed per round first:

- a runtime's P50 (or P95) of round r, and for a comparison ratio_r = candidate / reference *of the same round*
  (both ran in it, in a shuffled order, so a drift of the host during the round hits both);
- rounds are grouped into independent *measurements*: the machine's boots where the rounds name two boots or more
  (``conditions.boot``: repeats minutes apart on one boot share its state, and the next measurement that counts is
  on another boot), else the fresh processes (the protocol's own rounds, then each ``collect --repeat``);
- the published value is the geometric mean over measurements of each measurement's geometric mean over its
  rounds (each measurement weighs the same), so "X ms against Y ms, Z× its speed" agrees with itself.

Two intervals, for two questions (docs/latency-method.md):

- **The machine's typical value** (the gate reads this one): a 95 % Student-t *confidence* interval for the mean
  of log values over the machine's measurements, ``center ± t(G−1) · s_G / √G`` over the G measurements' means.
  It narrows as measurements accumulate: a runtime three times as fast as the reference on every boot passes with
  three boots, and its chance of passing when it is exactly at the gate is 2.5 %.
- **What the next measurement will show**: a 95 % *prediction* interval for the value one more measurement (a
  fresh boot or process, as the file's own) will give, ``center ± t(G−1) · s_G · √(1 + 1/G)``. It never gets
  narrower than about ±1.96 · s_G: it describes the machine's spread, not the precision of its mean.

Both are never narrower than the same interval over all rounds pooled as if independent (a floor for the case of
measurements that happen to agree closely). With one measurement (one process on one boot) there is no spread
between measurements to go on: the interval is the rounds' own (``t(n−1) · s / √n``), which a fresh process can
leave (``benchmarks/latency_coverage.py``), so no gate decides on it, and there is no next-measurement interval.
"""

from __future__ import annotations

import math

import numpy as np

CONFIDENCE = 0.95
STATISTICS = {"p50": 50, "p95": 95}

# Student t quantiles t(0.975, df) for df = 1..30 (rounded to 3 decimals).
_T975 = [
    12.706,
    4.303,
    3.182,
    2.776,
    2.571,
    2.447,
    2.365,
    2.306,
    2.262,
    2.228,
    2.201,
    2.179,
    2.160,
    2.145,
    2.131,
    2.120,
    2.110,
    2.101,
    2.093,
    2.086,
    2.080,
    2.074,
    2.069,
    2.064,
    2.060,
    2.056,
    2.052,
    2.048,
    2.045,
    2.042,
]


def t975(df: int) -> float:
    """Two-sided 95 % Student t quantile for ``df`` degrees of freedom (df ≥ 1)."""
    if df < 1:
        raise ValueError("at least two values are needed for an interval")
    if df <= len(_T975):
        return _T975[df - 1]
    z = 1.959964
    return z + (z**3 + z) / (4 * df)  # Cornish–Fisher's first term: within 0.01 % of t for df > 30


def round_statistic(seconds, statistic: str) -> float:
    """P50 or P95 (``statistic``: "p50" | "p95") of one round's samples, in milliseconds."""
    return float(np.percentile(np.asarray(seconds, dtype=float), STATISTICS[statistic])) * 1e3


def per_round(rounds: dict, statistic: str) -> dict:
    """``rounds``: round id -> (repeat, seconds). Returns round id -> (repeat, statistic in ms)."""
    values = {k: (rep, round_statistic(s, statistic)) for k, (rep, s) in rounds.items() if np.size(s)}
    return {k: v for k, v in values.items() if v[1] > 0}  # a zero-time round (a broken clock) has no logarithm


def paired_ratios(candidate: dict, baseline: dict, statistic: str) -> dict:
    """Round id -> (repeat, candidate / baseline) over the rounds both measured (the round is the pair)."""
    a, b = per_round(candidate, statistic), per_round(baseline, statistic)
    return {k: (a[k][0], a[k][1] / b[k][1]) for k in sorted(set(a) & set(b)) if b[k][1] > 0 and a[k][1] > 0}


def _partition(values: dict, key) -> dict:
    """Round ids grouped by ``key(round id, repeat)``, the groups in the order of their first (repeat, round)."""
    out: dict = {}
    for r in sorted(values, key=lambda r: (int(values[r][0] or 0), r)):
        out.setdefault(key(r, int(values[r][0] or 0)), []).append(r)
    return out


def _groups(values: dict, boots: dict | None = None) -> tuple[list[np.ndarray], bool]:
    """Log values grouped into independent measurements, in the order of their first (repeat, round): by repeat
    (0 = the protocol's own rounds), or, with ``boots`` (round id -> the machine's boot id, or None) naming at
    least two boots, by boot whatever the repeat (repeats on one boot share its state). Returns the groups and
    whether they are boots (True wherever the rounds name two boots or more, also where each repeat had a boot of
    its own: the reader is told the unit, and that the next measurement that counts is on another boot)."""
    by_repeat = _partition(values, lambda r, rep: rep)
    chosen, by_boot = by_repeat, False
    if boots:
        by_machine = _partition(values, lambda r, rep: ("boot", boots[r]) if boots.get(r) else ("repeat", rep))
        if sum(1 for key in by_machine if key[0] == "boot") >= 2:
            chosen, by_boot = by_machine, True
    return [np.asarray([math.log(values[r][1]) for r in rounds]) for rounds in chosen.values()], by_boot


def interval(values: dict, boots: dict | None = None) -> dict | None:
    """The published value, the 95 % confidence interval for the machine's typical value and the 95 % prediction
    interval for the next measurement, from per-round values (round id -> (repeat, value)).

    Returns {value, low, high (the confidence interval: what a gate reads), next_low, next_high (the prediction
    interval; None from one measurement), rounds, measurements (G), groups (= G), repeats, boots (G where the
    measurements are boots, else None), level ("boots" | "repeats" | "rounds": the unit of the interval), sd (of
    the logs at that level), df, below and above (rounds whose value is under / over 1), group_values (each
    measurement's geometric mean, in order)}; None with fewer than two rounds (no spread, so no interval)."""
    groups, by_boot = _groups(values, boots)
    logs = np.concatenate(groups) if groups else np.zeros(0)
    n, k = logs.size, len(groups)
    if n < 2:
        return None
    sd_rounds = float(logs.std(ddof=1))
    t_rounds = t975(n - 1)
    means = np.array([g.mean() for g in groups])
    if k >= 2:
        center, sd, df = float(means.mean()), float(means.std(ddof=1)), k - 1
        half = max(t975(df) * sd / math.sqrt(k), t_rounds * sd_rounds / math.sqrt(n))
        half_next = max(t975(df) * sd * math.sqrt(1 + 1 / k), t_rounds * sd_rounds * math.sqrt(2 / n))
        level = "boots" if by_boot else "repeats"
    else:
        center, sd, df = float(logs.mean()), sd_rounds, n - 1
        half, half_next, level = t_rounds * sd_rounds / math.sqrt(n), None, "rounds"
    repeats = len({int(rep or 0) for rep, _ in values.values()}) - 1
    raw = np.exp(logs)
    return {
        "value": math.exp(center),
        "low": math.exp(center - half),
        "high": math.exp(center + half),
        "next_low": None if half_next is None else math.exp(center - half_next),
        "next_high": None if half_next is None else math.exp(center + half_next),
        "rounds": int(n),
        "measurements": k,
        "groups": k,
        "repeats": repeats,
        "boots": k if by_boot else None,
        "sd": sd,
        "df": df,
        "level": level,
        "below": int((raw < 1).sum()),
        "above": int((raw > 1).sum()),
        "group_values": [math.exp(float(m)) for m in means],
    }


def runtime_interval(rounds: dict, statistic: str, **kw) -> dict | None:
    """One runtime's P50 or P95 (ms) with its intervals, from its rounds."""
    return interval(per_round(rounds, statistic), **kw)


def ratio_interval(candidate: dict, baseline: dict, statistic: str, **kw) -> dict | None:
    """candidate / baseline for ``statistic``, paired by round, with its intervals (see ``interval``)."""
    return interval(paired_ratios(candidate, baseline, statistic), **kw)


def measurements_to_decide(result: dict, boundary: float, limit: int = 1_000) -> int | None:
    """How many independent measurements in all (at the spread observed between them) would put the confidence
    interval wholly on one side of ``boundary``: the smallest G with t(G−1) · sd / √G < |log value − log boundary|.
    None from one measurement (no spread between measurements to go on), or when the value sits on the boundary or
    the spread is zero."""
    if result["level"] == "rounds":
        return None
    gap = abs(math.log(result["value"]) - math.log(boundary))
    sd = result["sd"]
    if gap == 0 or sd == 0:
        return None
    for g in range(2, limit + 1):
        if t975(g - 1) * sd / math.sqrt(g) < gap:
            return g
    return None


def repeat_values(values: dict) -> list[tuple[int, float, int]]:
    """Per repeat: (repeat, geometric mean of its rounds' values, rounds) — what the machine page lists."""
    by: dict = {}
    for rep, v in values.values():
        by.setdefault(int(rep or 0), []).append(math.log(v))
    return [(k, math.exp(float(np.mean(v))), len(v)) for k, v in sorted(by.items())]


def shift(before: dict | None, after: dict | None) -> str | None:
    """Whether a machine's typical value moved between two runs (``interval`` results of each): "faster" (lower)
    or "slower" (higher) when a 95 % Welch t interval for the difference of their log means over measurements
    leaves 0, "same" when it holds 0; None where either run has fewer than two measurements (a spread between
    measurements is needed on both sides) or is missing."""
    if not before or not after or before["measurements"] < 2 or after["measurements"] < 2:
        return None
    a = np.log(np.asarray(before["group_values"], dtype=float))
    b = np.log(np.asarray(after["group_values"], dtype=float))
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    diff = float(b.mean() - a.mean())
    if va + vb == 0:
        return "same" if diff == 0 else "slower" if diff > 0 else "faster"
    df = (va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1))
    half = t975(max(1, math.floor(df))) * math.sqrt(va + vb)
    return "slower" if diff > half else "faster" if diff < -half else "same"
