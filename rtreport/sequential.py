"""The play test: a group-sequential non-inferiority design on same-seed paired score differences (pure).

The design (fixed before any result, recorded with each run):
  * paired differences d = candidate − reference on pre-registered seeds, looked at after n_1 < … < n_K seeds;
  * error spent with the Lan–DeMets O'Brien–Fleming-type function, one-sided α = 0.025 in each direction, so
    look k has a critical value c_k and the repeated confidence interval (RCI) mean ± c_k · sd / √n;
    RCIs hold their 95 % coverage jointly over all looks, whatever the stopping rule (Jennison & Turnbull 2000,
    ch. 9), so the decision keeps its error rate; the mean at an early stop does not (see ``after_stopping``);
  * outcome at a look: non-inferior (lower bound ≥ −margin), inferior (upper bound < −margin), else undecided.

Every probability of the design is computed exactly (to 1e-5 and better) by recursive numerical integration
(Armitage, McPherson & Rowe 1969; the grid and Simpson weights of Jennison & Turnbull 2000, ch. 19), here, with
numpy only: ``crossing`` is the one engine; boundaries, the bias-adjusted estimate and conditional power
(``rtreport.after_stopping``) are all root-finding on it.
"""

from __future__ import annotations

import functools
import math

import numpy as np

ALPHA = 0.025  # one-sided, each direction (= the two sides of a 95 % interval)
GRID = 32  # Jennison & Turnbull's r: 6r − 1 grid points a look; the error falls as r⁻⁴ (< 1e-7 here)

_erfc = np.frompyfunc(math.erfc, 1, 1)


def _upper(x):
    """P(N(0,1) > x), accurate in the far tail (erfc, not 1 − Φ)."""
    return np.asarray(_erfc(np.asarray(x, float) / math.sqrt(2.0)), dtype=float) / 2.0


def _phi(x):
    return 1.0 - _upper(x)


def _z(p: float) -> float:
    """Standard normal quantile (bisection on erfc: exact to 1e-12, no SciPy)."""
    lo, hi = -40.0, 40.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if 1.0 - 0.5 * math.erfc(mid / math.sqrt(2)) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def spent(t: float, alpha: float = ALPHA) -> float:
    """Lan–DeMets O'Brien–Fleming-type spending: error spent by information fraction ``t`` (gsDesign's sfLDOF,
    rpact's asOF): 2 − 2Φ(z_{1−α/2} / √t)."""
    if t <= 0:
        return 0.0
    return float(2.0 * _upper(_z(1 - alpha / 2) / math.sqrt(min(t, 1.0))))


def _grid(mean: float, scale: float, low: float, high: float, r: int):
    """Jennison & Turnbull's grid for one look (§19.2.1): 6r − 1 points, dense within ±3 sd of the statistic's
    mean and log-spaced out to ±(3 + 4 log r) sd, trimmed to the continuation region [low, high]; midpoints
    added and Simpson's weights. Returns (points, weights)."""
    i = np.arange(1, 6 * r, dtype=float)
    x = mean + scale * np.where(
        i < r, -3 - 4 * np.log(r / i), np.where(i <= 5 * r, -3 + 3 * (i - r) / (2 * r), 3 + 4 * np.log(r / (6 * r - i)))
    )
    lo, hi = max(low, x[0]), min(high, x[-1])
    if lo >= hi:
        return np.array([lo]), np.array([0.0])
    z = np.concatenate([[lo], x[(x > lo) & (x < hi)], [hi]])
    d = np.diff(z)
    points = np.empty(2 * z.size - 1)
    points[0::2], points[1::2] = z, (z[:-1] + z[1:]) / 2
    weights = np.empty_like(points)
    weights[0::2] = (np.concatenate([[0.0], d]) + np.concatenate([d, [0.0]])) / 6
    weights[1::2] = 4 * d / 6
    return points, weights


def crossing(low, high, info, theta: float = 0.0, start: tuple = (0.0, 0.0), r: int = GRID):
    """Exact crossing probabilities of a group-sequential test on Z_k (Z_k √I_k a Brownian motion with drift θ in
    information I). Looks k = 1…K at information ``info``; the test stops at look k when Z_k ≥ high[k] (upper)
    or Z_k ≤ low[k] (lower; −inf for none). ``start`` = (I_0, Z_0) conditions on where the process stands now
    (default: the beginning). Returns (upper, lower): the chance of stopping at each look through each side."""
    i_0, s_0 = float(start[0]), float(start[1]) * math.sqrt(float(start[0]))
    i_prev, z_prev = i_0, float(start[1])
    points, mass = np.array([z_prev]), np.array([1.0])
    upper, lower = [], []
    for k, i_k in enumerate(info):
        i_k = float(i_k)
        step = i_k - i_prev
        drift = points * math.sqrt(i_prev) + theta * step  # S_{k-1} + θΔ for each grid point
        sd = math.sqrt(step)
        upper.append(float(mass @ _upper((high[k] * math.sqrt(i_k) - drift) / sd)))
        lower.append(float(mass @ _phi((low[k] * math.sqrt(i_k) - drift) / sd)) if low[k] > -np.inf else 0.0)
        if k + 1 < len(info):
            # Z_k's mean and sd given the start (θ√I_k and 1 from the beginning)
            new, w = _grid(
                (s_0 + theta * (i_k - i_0)) / math.sqrt(i_k), math.sqrt((i_k - i_0) / i_k), low[k], high[k], r
            )
            u = (new[:, None] * math.sqrt(i_k) - drift[None, :]) / sd
            density = np.exp(-(u**2) / 2) @ mass * math.sqrt(i_k) / (sd * math.sqrt(2 * math.pi))
            points, mass = new, density * w
        i_prev = i_k
    return upper, lower


def boundaries(fractions, alpha: float = ALPHA, sides: int = 2) -> list[float]:
    """Critical values c_k at information ``fractions`` (increasing, last 1) of the symmetric two-sided test that
    stops when |Z_k| ≥ c_k and spends, on each side, spent(t_k) − spent(t_{k−1}) at look k (to 1e-10).
    ``sides=1``: the one-sided test that stops only at Z_k ≥ c_k (gsDesign test.type=1, rpact sided=1); at
    α = 0.025 the two differ by less than 1e-6."""
    return list(_boundaries(tuple(float(t) for t in fractions), float(alpha), int(sides)))


@functools.lru_cache(maxsize=64)
def _boundaries(fractions: tuple, alpha: float, sides: int = 2, r: int = GRID) -> tuple:
    out: list = []
    for k, t in enumerate(fractions):
        target = spent(t, alpha) - spent(fractions[k - 1] if k else 0.0, alpha)
        if target <= 0:
            out.append(math.inf)
            continue
        known = [-c if sides == 2 else -math.inf for c in out]

        def tail(c):
            return crossing(known + [-math.inf], out + [c], fractions[: k + 1], r=r)[0][-1]

        lo, hi = 0.0, 40.0
        while hi - lo > 1e-10:
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if tail(mid) < target else (mid, hi)
        out.append((lo + hi) / 2)
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


def mean_scale(looks, sd: float, margin: float, alpha: float = ALPHA):
    """The design on the scale of the mean difference μ: information I_k = n_k / sd², the statistic
    Z_k = mean_k √I_k (drift μ), and the look's stopping bounds on Z_k: non-inferior at Z_k ≥ c_k − margin √I_k,
    inferior at Z_k < −c_k − margin √I_k. Returns (info, low, high) as arrays."""
    c = np.array(boundaries([n / looks[-1] for n in looks], alpha))
    info = np.asarray(looks, float) / sd**2
    return info, -c - margin * np.sqrt(info), c - margin * np.sqrt(info)


def exact_power(sd: float, margin: float, looks, true_difference: float = 0.0, alpha: float = ALPHA) -> float:
    """Chance that the design ends non-inferior when the true mean difference is ``true_difference`` and the
    paired spread ``sd`` is known (recursive integration; ``design_power`` simulates it with estimated spread)."""
    info, low, high = mean_scale(looks, sd, margin, alpha)
    return float(sum(crossing(low, high, info, true_difference)[0]))


def design_power(
    sd: float,
    margin: float,
    looks,
    true_difference: float = 0.0,
    simulations: int = 20_000,
    seed: int = 20261130,
    alpha: float = ALPHA,
) -> float:
    """Chance that a runtime whose true mean difference is ``true_difference`` (normal paired differences with
    spread ``sd``) ends non-inferior under the design (simulated with a fixed seed)."""
    return float(simulate(sd, margin, looks, true_difference, simulations, seed, alpha)[0].mean())


def simulate(
    sd: float,
    margin: float,
    looks,
    true_difference: float = 0.0,
    simulations: int = 20_000,
    seed: int = 20261130,
    alpha: float = ALPHA,
    block: int = 2000,
    pool=None,
):
    """Simulated runs of the design on normal paired differences (or, given ``pool``, differences resampled from
    it, centred, shifted to ``true_difference``): per run (non-inferior?, inferior?, stop look, mean at the
    stop), as numpy arrays; undecided runs stop at the last look."""
    centred = None if pool is None else np.asarray(pool, float) - float(np.mean(pool))
    rng = np.random.default_rng(seed)
    c = boundaries([n / looks[-1] for n in looks], alpha)
    ni, inf = np.zeros(simulations, bool), np.zeros(simulations, bool)
    stop, mean_at = np.full(simulations, len(looks) - 1), np.zeros(simulations)
    for start in range(0, simulations, block):
        shape = (min(block, simulations - start), looks[-1])
        d = (
            rng.normal(true_difference, sd, size=shape)
            if centred is None
            else true_difference + centred[rng.integers(0, centred.size, size=shape)]
        )
        sums, squares = np.cumsum(d, axis=1), np.cumsum(d**2, axis=1)
        sl, open_ = slice(start, start + d.shape[0]), np.ones(d.shape[0], bool)
        for k, n in enumerate(looks):
            mean = sums[:, n - 1] / n
            half = c[k] * np.sqrt(np.maximum((squares[:, n - 1] - n * mean**2) / (n - 1), 0) / n)
            up, down = (mean - half >= -margin) & open_, (mean + half < -margin) & open_
            ni[sl] |= up
            inf[sl] |= down
            now = up | down | (open_ & (k == len(looks) - 1))
            stop[sl] = np.where(now, k, stop[sl])
            mean_at[sl] = np.where(now, mean, mean_at[sl])
            open_ &= ~(up | down)
    return ni, inf, stop, mean_at
