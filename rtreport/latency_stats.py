"""Latency statistics with the latency *round* as the unit (pure numpy, no I/O).

Why rounds, not samples: decisions within one round share the machine's state (lag-1 autocorrelation 0.1–0.96)
and the machine drifts between rounds (the H200's eager reference went from 0.35 to 0.76 ms P50 between two
rounds of one process). A bootstrap over samples or blocks of them treats one round's 2,000 decisions as
2,000 pieces of evidence; they are one. So every figure here is computed per round first:

- a runtime's P50 (or P95) of round r, and for a comparison ratio_r = candidate / reference *of the same round*
  (both ran in it, in a shuffled order, so a drift of the host during the round hits both);
- the published value is the geometric mean of the per-round values, and its interval a Student-t *prediction*
  interval on their logarithms for the estimate the next measurement of the same machine will give
  (``center ± t(n−1) · s · √(1/n + 1/n)``: the error of this estimate plus that of a next one of as many rounds);
- with one or more later *repeats* (fresh processes: k ≥ 2 groups of rounds with the protocol's own), two levels:
  each group's mean of log values, then a t prediction interval over the groups (``t(k−1) · s_groups · √(1 + 1/k)``),
  never narrower than the round-level interval of all rounds pooled. With one repeat the spread between groups
  has one degree of freedom (t = 12.7): wide, and honestly so; a second repeat narrows it about fivefold;
- where the rounds say which boot of the machine they ran on (``conditions.boot``) and there are two boots or more,
  the groups are the boots: repeats minutes apart on one boot (a lent VM's lease) share its state, and on the H200
  a held-out repeat on a fresh lease fell outside intervals whose five repeats shared the run's lease.

Why this method: ``benchmarks/latency_coverage.py`` simulates rounds with a random-walk drift, a step in the
reference (0.35 → 0.76 ms in one round), within-round autocorrelation 0.1–0.96 and repeat-to-repeat shifts of
5–50 % for host-bound runtimes, and counts how often each method's interval holds the next repeat's estimate and
the true value. A fresh process shifts host-bound runtimes by an amount no round inside one process can show, so
every interval made from one process's rounds (today's two-stage bootstrap of rounds and sample blocks,
``stats.p95_ratio``; a t interval over rounds) falls well short of 90 % there, and the two-level interval over
repeats reaches it (docs/latency-method.md has the figures). Pooling a repeat's rounds with the protocol's instead
covers about 60 %: the between-process shift must be measured as such. A prediction interval, not a confidence interval, because the claim a reader checks is "measure it
again and you will find this".
"""
from __future__ import annotations

import math

import numpy as np

CONFIDENCE = 0.95
MIN_GROUPS_TWO_LEVEL = 2     # the protocol's rounds and at least one later repeat
STATISTICS = {"p50": 50, "p95": 95}

# Student t quantiles t(0.975, df) for df = 1..30 (rounded to 3 decimals).
_T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
         2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045,
         2.042]


def t975(df: int) -> float:
    """Two-sided 95 % Student t quantile for ``df`` degrees of freedom (df ≥ 1)."""
    if df < 1:
        raise ValueError("at least two values are needed for an interval")
    if df <= len(_T975):
        return _T975[df - 1]
    z = 1.959964
    return z + (z ** 3 + z) / (4 * df)   # Cornish–Fisher's first term: within 0.01 % of t for df > 30


def round_statistic(seconds, statistic: str) -> float:
    """P50 or P95 (``statistic``: "p50" | "p95") of one round's samples, in milliseconds."""
    return float(np.percentile(np.asarray(seconds, dtype=float), STATISTICS[statistic])) * 1e3


def per_round(rounds: dict, statistic: str) -> dict:
    """``rounds``: round id -> (repeat, seconds). Returns round id -> (repeat, statistic in ms)."""
    values = {k: (rep, round_statistic(s, statistic)) for k, (rep, s) in rounds.items() if np.size(s)}
    return {k: v for k, v in values.items() if v[1] > 0}   # a zero-time round (a broken clock) has no logarithm


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
    """Log values grouped by repeat (0 = the protocol's own rounds), in repeat order. With ``boots`` (round id ->
    the machine's boot id, or None) and at least two boots, rounds on one boot are one group whatever their repeat:
    repeats minutes apart on one boot (a lent VM's lease) share more of the machine's state than the next boot's
    measurement will. Returns the groups and whether they are boots (True wherever the rounds name two boots or
    more, also where each repeat had a boot of its own: the reader is told the unit, and that the next measurement
    that counts is on another boot)."""
    by_repeat = _partition(values, lambda r, rep: rep)
    chosen, by_boot = by_repeat, False
    if boots:
        by_machine = _partition(values, lambda r, rep: ("boot", boots[r]) if boots.get(r) else ("repeat", rep))
        if sum(1 for key in by_machine if key[0] == "boot") >= 2:
            chosen, by_boot = by_machine, True
    return [np.asarray([math.log(values[r][1]) for r in rounds]) for rounds in chosen.values()], by_boot


def interval(values: dict, two_level_from: int | None = None, boots: dict | None = None) -> dict | None:
    """The published value and its 95 % prediction interval from per-round values (round id -> (repeat, value)).

    Returns {value, low, high, rounds, repeats, groups, sd (of the logs, the level that set the width), df, level},
    where ``level`` is "rounds", "repeats" or "boots" (the groups are the machine's boots, ``_groups``); None with
    fewer than two rounds (no spread, so no interval)."""
    groups, by_boot = _groups(values, boots)
    logs = np.concatenate(groups) if groups else np.zeros(0)
    n = logs.size
    if n < 2:
        return None
    center = float(logs.mean())
    sd = float(logs.std(ddof=1))
    half = t975(n - 1) * sd * math.sqrt(2 / n)
    level, df, used_sd = "rounds", n - 1, sd
    k = len(groups)
    if k >= (two_level_from or MIN_GROUPS_TWO_LEVEL):
        means = np.array([g.mean() for g in groups])
        center = float(means.mean())
        sd_groups = float(means.std(ddof=1))
        half_groups = t975(k - 1) * sd_groups * math.sqrt(1 + 1 / k)
        if half_groups > half:
            half, level, df, used_sd = half_groups, "boots" if by_boot else "repeats", k - 1, sd_groups
    repeats = len({int(rep or 0) for rep, _ in values.values()}) - 1
    return {"value": math.exp(center), "low": math.exp(center - half), "high": math.exp(center + half),
            "rounds": int(n), "repeats": repeats, "groups": k, "boots": k if by_boot else None, "sd": used_sd,
            "df": df, "level": level}


def runtime_interval(rounds: dict, statistic: str, **kw) -> dict | None:
    """One runtime's P50 or P95 (ms) with its interval, from its rounds."""
    return interval(per_round(rounds, statistic), **kw)


def ratio_interval(candidate: dict, baseline: dict, statistic: str, **kw) -> dict | None:
    """candidate / baseline for ``statistic``, paired by round, with its interval (see ``interval``)."""
    return interval(paired_ratios(candidate, baseline, statistic), **kw)


def rounds_to_decide(result: dict, boundary: float, limit: int = 10_000) -> int | None:
    """How many rounds (at the observed spread) would put the interval wholly on one side of ``boundary``.

    Solves t(n−1) · sd · √(2/n) < |log value − log boundary| for n at the level that set the width (rounds; or
    repeats, whose count is returned then). None when the value sits on the boundary or the spread is zero."""
    gap = abs(math.log(result["value"]) - math.log(boundary))
    sd = result["sd"]
    if gap == 0 or sd == 0:
        return None
    two_level = result["level"] in ("repeats", "boots")
    n = 2
    while n <= limit:
        factor = math.sqrt(1 + 1 / n) if two_level else math.sqrt(2 / n)
        if t975(n - 1) * sd * factor < gap:
            return n
        n += 1
    return None


def repeat_values(values: dict) -> list[tuple[int, float, int]]:
    """Per repeat: (repeat, geometric mean of its rounds' values, rounds) — what the machine page lists."""
    by: dict = {}
    for rep, v in values.values():
        by.setdefault(int(rep or 0), []).append(math.log(v))
    return [(k, math.exp(float(np.mean(v))), len(v)) for k, v in sorted(by.items())]
