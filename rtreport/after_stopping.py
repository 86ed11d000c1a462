"""What the play test's data say beyond the decision (pure): the estimate after stopping, and conditional power.

A mean read at a look where the test stopped is biased: the test stops early when the running mean happens to lie
far from the margin, so early stops keep the lucky highs (or lows). The median-unbiased estimate under the
stage-wise ordering (Jennison & Turnbull 2000, §8.3–8.4) asks instead: for which true mean difference μ would a
run of this design end *at least as high* as this one with probability ½ — where a stop at an earlier look
through the upper (non-inferior) bound ranks above every later outcome, a stop through the lower bound below,
and at the same look a higher mean ranks higher. The μ where that chance is 2.5 % and 97.5 % bound its 95 %
confidence interval. The paired spread is taken as known (the observed sd), as in the design's intervals.

Conditional power: while a runtime is undecided with looks left, the chance that the design still ends
non-inferior given where its mean stands now, under the design's assumption (true difference 0) and under the
current estimate (the observed mean).
"""

from __future__ import annotations

import math

import numpy as np

from .sequential import ALPHA, crossing, mean_scale


def _root(f, target: float, lo: float, hi: float, tol: float) -> float:
    """x in [lo, hi] with f(x) = target for an increasing f (Illinois false position, to ``tol`` in x; the
    bracket is widened first if it does not hold the root)."""
    width = hi - lo
    while f(lo) > target:
        lo -= width
    while f(hi) < target:
        hi += width
    f_lo, f_hi, side, last = f(lo) - target, f(hi) - target, 0, math.inf
    for _ in range(200):
        x = hi - f_hi * (hi - lo) / (f_hi - f_lo) if f_hi != f_lo else (lo + hi) / 2
        f_x = f(x) - target
        if f_x == 0 or hi - lo < tol or abs(x - last) < tol:
            return x
        last = x
        if f_x < 0:
            lo, f_lo = x, f_x
            f_hi, side = (f_hi / 2, -1) if side == -1 else (f_hi, -1)
        else:
            hi, f_hi = x, f_x
            f_lo, side = (f_lo / 2, 1) if side == 1 else (f_lo, 1)
    return (lo + hi) / 2


def ordering_tail(mu: float, mean: float, look: int, looks, sd: float, margin: float, alpha: float = ALPHA) -> float:
    """P_μ(a run of the design ends at least as high as one that stopped at ``look`` with this ``mean``, in the
    stage-wise ordering): upper-bound stops before ``look`` plus reaching ``look`` with a mean ≥ this one."""
    info, low, high = mean_scale(looks, sd, margin, alpha)
    k = look
    low = np.concatenate([low[:k], [-math.inf]])
    high = np.concatenate([high[:k], [mean * math.sqrt(info[k])]])
    return float(sum(crossing(low, high, info[: k + 1], mu)[0]))


def stagewise_quantile(
    q: float, mean: float, sd: float, look: int, looks, margin: float, alpha: float = ALPHA
) -> float:
    """The μ at which a run ends at least as high as this one with probability ``q`` (to 1e-6 standard errors)."""
    if sd <= 0:
        return mean
    step = sd / math.sqrt(looks[0])
    return _root(
        lambda mu: ordering_tail(mu, mean, look, looks, sd, margin, alpha),
        q,
        mean - 4 * step,
        mean + 4 * step,
        1e-6 * sd / math.sqrt(looks[-1]),
    )


def stagewise_estimate(
    mean: float, sd: float, look: int, looks, margin: float, alpha: float = ALPHA, level: float = 0.95
) -> tuple[float, float, float]:
    """(median-unbiased estimate, low, high) of the mean difference for a run that stopped at ``look`` (0-based;
    the last look for a run that ended undecided) with ``mean`` and paired spread ``sd``."""
    low, est, high = (
        stagewise_quantile(q, mean, sd, look, looks, margin, alpha) for q in ((1 - level) / 2, 0.5, (1 + level) / 2)
    )
    return est, low, high


def median_unbiased(differences, look: int, looks, margin: float, alpha: float = ALPHA) -> dict:
    """The estimate after stopping for paired ``differences`` (all seeds up to ``look``): the naive mean beside
    the median-unbiased estimate and its 95 % confidence interval under the stage-wise ordering."""
    d = np.asarray(differences, float)
    sd = float(d.std(ddof=1)) if d.size > 1 else 0.0
    estimate, low, high = stagewise_estimate(float(d.mean()), sd, look, looks, margin, alpha)
    return {"naive": float(d.mean()), "estimate": estimate, "low": low, "high": high}


def conditional_power(
    mean: float, sd: float, look: int, looks, margin: float, true_difference: float, alpha: float = ALPHA
) -> float | None:
    """P(the design ends non-inferior at one of the looks after ``look`` | the mean now) when the true mean
    difference is ``true_difference`` (None when no look remains)."""
    if look + 1 >= len(looks):
        return None
    info, low, high = mean_scale(looks, sd, margin, alpha) if sd > 0 else (None, None, None)
    if info is None:  # no spread: the mean stays where it is
        return 1.0 if mean >= -margin else 0.0
    start = (info[look], mean * math.sqrt(info[look]))
    return float(sum(crossing(low[look + 1 :], high[look + 1 :], info[look + 1 :], true_difference, start)[0]))


def conditional_powers(differences, look: int, looks, margin: float, alpha: float = ALPHA) -> dict | None:
    """Conditional power with the looks that remain, under the design's assumption (true difference 0) and under
    the current estimate (the observed mean); None when no look remains."""
    d = np.asarray(differences, float)
    if look + 1 >= len(looks) or d.size < 2:
        return None
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    return {
        "design": conditional_power(mean, sd, look, looks, margin, 0.0, alpha),
        "observed": conditional_power(mean, sd, look, looks, margin, mean, alpha),
        "looks_left": len(looks) - look - 1,
    }
