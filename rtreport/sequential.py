"""The play test: a group-sequential non-inferiority design on same-seed paired score differences (pure).

The design (fixed before any result, recorded with each run):
  * paired differences d = candidate − reference on pre-registered seeds, looked at after n_1 < … < n_K seeds;
  * error spent with the Lan–DeMets O'Brien–Fleming-type function, one-sided α = 0.025 in each direction, so
    look k has a critical value c_k and the repeated confidence interval (RCI) mean ± c_k · sd / √n;
    RCIs hold their 95 % coverage jointly over all looks, whatever the stopping rule (Jennison & Turnbull 2000,
    ch. 9), so stopping when a runtime is decided never biases the answer;
  * outcome at a look: non-inferior (lower bound ≥ −margin), inferior (upper bound < −margin), else undecided;
    undecided at the last look says how many seeds a decision would need at the observed spread.
"""
from __future__ import annotations

import functools
import math

import numpy as np

ALPHA = 0.025          # one-sided, each direction (= the two sides of a 95 % interval)
POWER = 0.80


_erf = np.frompyfunc(math.erf, 1, 1)


def _phi(x):
    return 0.5 * (1.0 + np.asarray(_erf(np.asarray(x, float) / math.sqrt(2.0)), dtype=float))


def _z(p: float) -> float:
    """Standard normal quantile (bisection on erf: exact to 1e-12, no SciPy)."""
    lo, hi = -40.0, 40.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if 0.5 * (1 + math.erf(mid / math.sqrt(2))) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def spent(t: float, alpha: float = ALPHA) -> float:
    """Lan–DeMets O'Brien–Fleming-type spending: error spent by information fraction ``t``."""
    if t <= 0:
        return 0.0
    return float(2.0 - 2.0 * _phi(_z(1 - alpha / 2) / math.sqrt(min(t, 1.0))))


def boundaries(fractions, alpha: float = ALPHA) -> list[float]:
    """Critical values c_k of the one-sided test at information fractions ``fractions`` (increasing, last 1).

    Recursive numerical integration (Armitage, McPherson & Rowe) of the score process S(t) = Z(t)·√t, a
    Brownian motion: its density at each look is carried on the continuation region only, and each c_k is
    found by bisection so that the error spent at look k is spent(t_k) − spent(t_{k−1})."""
    return list(_boundaries(tuple(float(t) for t in fractions), float(alpha)))


@functools.lru_cache(maxsize=64)
def _boundaries(fractions: tuple, alpha: float, points: int = 1601) -> tuple:
    z = np.linspace(-10.0, 10.0, points)
    out, t_prev, s_prev, density = [], 0.0, None, None
    for t in fractions:
        dt, s = t - t_prev, z * math.sqrt(t)
        target = spent(t, alpha) - spent(t_prev, alpha)
        if density is None:
            tail = lambda c: 1.0 - float(_phi(c * math.sqrt(t) / math.sqrt(dt)))  # noqa: E731
        else:
            h = s_prev[1] - s_prev[0]
            tail = lambda c: float(np.sum(density * (1.0 - _phi((c * math.sqrt(t) - s_prev) / math.sqrt(dt)))) * h)  # noqa: E731
        c = math.inf
        if target > 0:
            lo, hi = 0.0, 40.0
            for _ in range(60):
                mid = (lo + hi) / 2
                lo, hi = (lo, mid) if tail(mid) < target else (mid, hi)
            c = (lo + hi) / 2
        out.append(c)
        if density is None:
            new = np.exp(-s ** 2 / (2 * dt)) / math.sqrt(2 * math.pi * dt)
        else:
            kernel = np.exp(-(s[:, None] - s_prev[None, :]) ** 2 / (2 * dt)) / math.sqrt(2 * math.pi * dt)
            new = kernel @ density * (s_prev[1] - s_prev[0])
        density = np.where(z < c, new, 0.0)
        t_prev, s_prev = t, s
    return tuple(out)


def repeated_ci(differences, look: int, looks, alpha: float = ALPHA) -> tuple[float, float, float]:
    """(mean, low, high): the RCI of the mean paired difference at look ``look`` (0-based) of ``looks`` seeds."""
    d = np.asarray(differences, float)
    c = boundaries([n / looks[-1] for n in looks], alpha)[look]
    sd = float(d.std(ddof=1)) if d.size > 1 else 0.0
    half = c * sd / math.sqrt(d.size)
    mean = float(d.mean())
    return mean, mean - half, mean + half


def outcome(low: float, high: float, margin: float) -> str:
    if low >= -margin:
        return "non-inferior"
    if high < -margin:
        return "inferior"
    return "undecided"


def seeds_needed(mean: float, sd: float, margin: float, alpha: float = ALPHA, power: float = POWER) -> int | None:
    """Paired seeds a fixed-size test would need to decide with ``power``, were the true mean difference and
    spread what was observed (None when the observed mean sits on the margin: no size decides)."""
    distance = abs(mean + margin)
    if sd == 0:
        return 2
    if distance < 1e-9:
        return None
    return int(math.ceil(((_z(1 - alpha) + _z(power)) * sd / distance) ** 2))


def design_power(sd: float, margin: float, looks, true_difference: float = 0.0, simulations: int = 20_000,
                 seed: int = 20261130, alpha: float = ALPHA) -> float:
    """Chance that a runtime whose true mean difference is ``true_difference`` (normal paired differences with
    spread ``sd``) ends non-inferior under the design (simulated with a fixed seed)."""
    rng = np.random.default_rng(seed)
    c = boundaries([n / looks[-1] for n in looks], alpha)
    n_max = looks[-1]
    decided = np.zeros(simulations, dtype=bool)
    result = np.zeros(simulations, dtype=bool)
    for start in range(0, simulations, 2000):
        block = rng.normal(true_difference, sd, size=(min(2000, simulations - start), n_max))
        sums, squares = np.cumsum(block, axis=1), np.cumsum(block ** 2, axis=1)
        sl = slice(start, start + block.shape[0])
        for k, n in enumerate(looks):
            mean = sums[:, n - 1] / n
            var = (squares[:, n - 1] - n * mean ** 2) / (n - 1)
            half = c[k] * np.sqrt(np.maximum(var, 0) / n)
            open_ = ~decided[sl]
            ni = (mean - half >= -margin) & open_
            inf = (mean + half < -margin) & open_
            result[sl] |= ni
            decided[sl] |= ni | inf
    return float(result.mean())
