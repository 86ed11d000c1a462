"""Pure statistics over raw rows: numpy in, numbers out, no I/O (after rliable's metrics.py).

Conventions: percentiles interpolate linearly between order statistics (numpy's default);
bootstrap intervals are percentile intervals from a fixed-seed generator, so the same rows
always give the same report.
"""

from __future__ import annotations

import numpy as np

BOOTSTRAP_SEED = 20261130
SCORE_RESAMPLES = 10_000
LATENCY_RESAMPLES = 2_000


def percentile(samples, q: float) -> float:
    """The q-th percentile (0-100) of a non-empty 1-D sample."""
    return float(np.percentile(np.asarray(samples, dtype=float), q))


def latency_summary(seconds) -> dict:
    """P50/P95/P99, mean and std (ddof 1) of latency samples, in milliseconds."""
    ms = np.asarray(seconds, dtype=float) * 1e3
    return {
        "n": int(ms.size),
        "p50": percentile(ms, 50),
        "p95": percentile(ms, 95),
        "p99": percentile(ms, 99),
        "mean": float(ms.mean()),
        "std": float(ms.std(ddof=1)) if ms.size > 1 else 0.0,
    }


def bootstrap_ci(
    values, statistic, resamples: int = SCORE_RESAMPLES, confidence: float = 0.95, seed: int = BOOTSTRAP_SEED
) -> tuple[float, float]:
    """Percentile bootstrap interval of ``statistic`` (a function of a 2-D array, reducing axis 1).

    Args:
        values: 1-D sample.
        statistic: e.g. ``lambda x: x.mean(axis=1)``.
        resamples: number of bootstrap resamples.
        confidence: e.g. 0.95.
        seed: generator seed (fixed, so reports are reproducible).
    Returns:
        (low, high).
    """
    values = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    stats = np.empty(resamples)
    chunk = max(1, 2_000_000 // max(values.size, 1))  # bounded memory for long latency samples
    for start in range(0, resamples, chunk):
        n = min(chunk, resamples - start)
        stats[start : start + n] = statistic(values[rng.integers(0, values.size, size=(n, values.size))])
    alpha = (1 - confidence) / 2
    return float(np.quantile(stats, alpha)), float(np.quantile(stats, 1 - alpha))


def mean_ci(values, resamples: int = SCORE_RESAMPLES) -> tuple[float, float]:
    return bootstrap_ci(values, lambda x: x.mean(axis=1), resamples)


def p95_ci(seconds, resamples: int = LATENCY_RESAMPLES) -> tuple[float, float]:
    """Bootstrap 95 % CI of the P95 latency, in milliseconds."""
    ms = np.asarray(seconds, dtype=float) * 1e3
    return bootstrap_ci(ms, lambda x: np.percentile(x, 95, axis=1), resamples)


def throughput(batch_size: int, seconds) -> float:
    """Decisions per second at ``batch_size``, from the median call time."""
    return batch_size / float(np.median(np.asarray(seconds, dtype=float)))


def interquartile_mean(scores) -> float:
    """Mean of the middle half: drop floor(n/4) from each end (scipy's trim_mean(x, 0.25))."""
    x = np.sort(np.asarray(scores, dtype=float))
    cut = int(0.25 * x.size)
    return float(x[cut : x.size - cut].mean())


def iqm_ci(scores, resamples: int = SCORE_RESAMPLES) -> tuple[float, float]:
    """Bootstrap 95 % CI of the interquartile mean. For whole-number scores the middle half is found by partition,
    not a full sort: the same numbers in another order, whose sum is exact in either order."""
    v = np.asarray(scores, dtype=float)
    whole = bool(v.size and np.all(v == np.floor(v)) and np.abs(v).max() * v.size < 2**52)

    def iqm_rows(x):
        cut = int(0.25 * x.shape[1])
        x = np.partition(x, [cut, x.shape[1] - cut - 1], axis=1) if whole else np.sort(x, axis=1)
        return x[:, cut : x.shape[1] - cut].mean(axis=1)

    return bootstrap_ci(scores, iqm_rows, resamples)


def score_summary(scores) -> dict:
    x = np.asarray(scores, dtype=float)
    return {
        "n": int(x.size),
        "mean": float(x.mean()),
        "median": float(np.median(x)),
        "std": float(x.std(ddof=1)) if x.size > 1 else 0.0,
        "p10": percentile(x, 10),
        "p90": percentile(x, 90),
        "min": float(x.min()),
        "max": float(x.max()),
        "iqm": interquartile_mean(x),
    }


def same_action_count(reference_actions, actions) -> int:
    """How many positions hold the same action in both sequences (same length)."""
    a, b = np.asarray(reference_actions), np.asarray(actions)
    if a.shape != b.shape:
        raise ValueError(f"action sequences differ in length: {a.shape} vs {b.shape}")
    return int((a == b).sum())


def max_abs_difference(reference, values) -> float:
    """Largest |values - reference| over all elements."""
    return float(np.max(np.abs(np.asarray(values, float) - np.asarray(reference, float))))


def top_two_margin(q_values) -> np.ndarray:
    """Per row: best Q minus second-best Q (how close the decision was)."""
    q = np.sort(np.asarray(q_values, dtype=float), axis=-1)
    return q[..., -1] - q[..., -2]


def agreement(reference_q, q) -> dict:
    """Fixed-state agreement of ``q`` (states x actions) with the reference's Q-values.

    Returns same-action count, max and mean |ΔQ| (mean over all state-action pairs), per-state
    max |ΔQ|, and for each flipped state the reference's top-two margin.
    """
    ref, q = np.asarray(reference_q, float), np.asarray(q, float)
    ref_actions, actions = ref.argmax(axis=1), q.argmax(axis=1)
    delta = np.abs(q - ref)
    margins = top_two_margin(ref)
    flips = np.flatnonzero(ref_actions != actions)
    return {
        "states": int(ref.shape[0]),
        "same_actions": int((ref_actions == actions).sum()),
        "max_abs_dq": float(delta.max()),
        "mean_abs_dq": float(delta.mean()),
        "per_state_max_abs_dq": delta.max(axis=1).tolist(),
        "reference_margin": margins.tolist(),
        "flips": [
            {
                "state": int(i),
                "reference_action": int(ref_actions[i]),
                "action": int(actions[i]),
                "reference_margin": float(margins[i]),
                "max_abs_dq": float(delta[i].max()),
            }
            for i in flips
        ],
    }


def first_divergence(trace_a, trace_b) -> int | None:
    """First step where two action traces differ (or where the shorter one ends); None if identical."""
    a, b = list(trace_a), list(trace_b)
    n = min(len(a), len(b))
    for start in range(
        0, n, 256
    ):  # compare runs of steps as lists (in C), then find the step in the first that differs
        end = min(start + 256, n)
        if a[start:end] != b[start:end]:
            return next(i for i in range(start, end) if a[i] != b[i])
    return None if len(a) == len(b) else n


def paired_difference(
    scores, baseline_scores, traces=None, baseline_traces=None, resamples: int = SCORE_RESAMPLES
) -> dict:
    """Same-seed paired score differences (runtime − baseline), aligned by position (same seeds).

    Returns the per-seed differences, their mean with a bootstrap 95 % CI, how many episodes
    were identical (same action trace, or same score when traces are not given) and the first
    step where each pair's traces part.
    """
    s, b = np.asarray(scores, float), np.asarray(baseline_scores, float)
    if s.shape != b.shape:
        raise ValueError("paired scores must cover the same seeds")
    d = s - b
    low, high = mean_ci(d, resamples)
    out = {"differences": d.tolist(), "mean": float(d.mean()), "ci_low": low, "ci_high": high, "n": int(d.size)}
    if traces is not None and baseline_traces is not None:
        parts = [first_divergence(t, u) for t, u in zip(traces, baseline_traces)]
        out["first_divergence"] = parts
        out["identical"] = sum(p is None for p in parts)
    else:
        out["identical"] = int((d == 0).sum())
    return out


# -- latency from repeated rounds ------------------------------------------------------------------------

BLOCK = 100  # samples per block: decisions of one block share the machine's state (autocorrelation)


def round_summaries(rounds) -> list[dict]:
    """P50/P95 (ms) of each round's samples."""
    return [
        {"n": int(np.size(r)), "p50": percentile(np.asarray(r) * 1e3, 50), "p95": percentile(np.asarray(r) * 1e3, 95)}
        for r in rounds
    ]


def rounds_spread(rounds) -> float:
    """Largest over smallest per-round P50 (1.0 = rounds agree); > 1.10 flags a machine that drifted."""
    p50 = [s["p50"] for s in round_summaries(rounds)]
    return max(p50) / min(p50) if p50 and min(p50) > 0 else float("nan")


def _block_resample(rounds, rng, block: int) -> np.ndarray:
    """One two-stage resample: rounds with replacement, then blocks with replacement within each round."""
    picked = [rounds[i] for i in rng.integers(0, len(rounds), len(rounds))]
    parts = []
    for r in picked:
        r = np.asarray(r, float)
        blocks = max(1, r.size // block)
        starts = rng.integers(0, blocks, blocks) * block
        parts.append(np.concatenate([r[s : s + block] for s in starts]))
    return np.concatenate(parts)


def p95_ratio(
    candidate_rounds,
    reference_rounds,
    resamples: int = LATENCY_RESAMPLES,
    block: int = BLOCK,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float, float, float]:
    """(ratio, low, high): candidate P95 / reference P95 with a 95 % CI from a two-stage bootstrap (rounds,
    then blocks of ``block`` consecutive samples), so run-to-run shifts and autocorrelation widen it."""
    cand = np.concatenate([np.asarray(r, float) for r in candidate_rounds])
    ref = np.concatenate([np.asarray(r, float) for r in reference_rounds])
    point = percentile(cand, 95) / percentile(ref, 95)
    rng = np.random.default_rng(seed)
    ratios = np.array(
        [
            np.percentile(_block_resample(candidate_rounds, rng, block), 95)
            / np.percentile(_block_resample(reference_rounds, rng, block), 95)
            for _ in range(resamples)
        ]
    )
    return point, float(np.quantile(ratios, 0.025)), float(np.quantile(ratios, 0.975))


def p95_ci_rounds(
    rounds, resamples: int = LATENCY_RESAMPLES, block: int = BLOCK, seed: int = BOOTSTRAP_SEED
) -> tuple[float, float]:
    """95 % CI of one runtime's P95 (ms), by the same two-stage bootstrap."""
    rng = np.random.default_rng(seed)
    p95 = np.array([np.percentile(_block_resample(rounds, rng, block), 95) for _ in range(resamples)]) * 1e3
    return float(np.quantile(p95, 0.025)), float(np.quantile(p95, 0.975))


# -- agreement on every played decision --------------------------------------------------------------------


def clustered_fraction(same, decisions, resamples: int = SCORE_RESAMPLES, seed: int = BOOTSTRAP_SEED):
    """(fraction, low, high): share of decisions with the reference's action over episodes, with a 95 % CI that
    resamples whole episodes (decisions within one game are not independent)."""
    same, decisions = np.asarray(same, float), np.asarray(decisions, float)
    point = float(same.sum() / decisions.sum())
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, same.size, size=(resamples, same.size))
    if _small_counts(same, decisions):  # counts: both sums at once in one int64 each, exact, as the floats are
        totals = ((decisions.astype(np.int64) << 32) | same.astype(np.int64))[idx].sum(axis=1)
        fractions = (totals & 0xFFFFFFFF).astype(float) / (totals >> 32).astype(float)
    else:
        fractions = same[idx].sum(axis=1) / decisions[idx].sum(axis=1)
    return point, float(np.quantile(fractions, 0.025)), float(np.quantile(fractions, 0.975))


def _small_counts(same, decisions) -> bool:
    """Whole non-negative numbers whose sums over any resample fit 32 bits (same) and 31 bits (decisions)."""
    both = np.concatenate([same, decisions])
    return bool(
        both.size
        and np.all(both >= 0)
        and np.all(both == np.floor(both))
        and same.max() * same.size < 2**32
        and decisions.max() * decisions.size < 2**31
    )


def zero_event_upper(n: int, confidence: float = 0.95) -> float:
    """Upper bound on a rate when 0 events were seen in n trials (exact binomial: 1 − (1 − c)^(1/n))."""
    return 1.0 - (1.0 - confidence) ** (1.0 / n) if n else 1.0


MARGIN_BINS = (0.0, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, float("inf"))


def margin_bin(margins) -> np.ndarray:
    """Index into MARGIN_BINS of each top-two Q margin (how close each decision was)."""
    return np.searchsorted(np.asarray(MARGIN_BINS[1:-1]), np.asarray(margins, float), side="right")


# -- secondary play statistics (rliable's definitions) -----------------------------------------------------


def probability_of_improvement(x, y) -> float:
    """P(X > Y) + ½ P(X = Y) over all pairs of a score of X and a score of Y (Mann–Whitney)."""
    x, y = np.sort(np.asarray(x, float)), np.sort(np.asarray(y, float))
    below = np.searchsorted(y, x, side="left")
    equal = np.searchsorted(y, x, side="right") - below
    return float((below + 0.5 * equal).sum() / (x.size * y.size))


def probability_of_improvement_ci(x, y, resamples: int = 2_000, seed: int = BOOTSTRAP_SEED) -> tuple[float, float]:
    """95 % CI of ``probability_of_improvement(x, y)`` for paired scores (``x[i]`` and ``y[i]``: one seed's games),
    resampling seeds, each with both its games: ``paired_ci(x, y, probability_of_improvement)`` bit for bit, all
    resamples at once (each resample's pair counts in integers, so no rounding differs). Games on the same seeds are
    not two independent samples; two runtimes that played the very same games get exactly ½ in every resample."""
    x, y = _paired(x, y)
    rng = np.random.default_rng(seed)
    idx = np.empty((resamples, x.size), dtype=np.intp)
    for i in range(resamples):
        idx[i] = rng.integers(0, x.size, x.size)
    levels, codes = np.unique(np.concatenate([x, y]), return_inverse=True)
    rows = np.arange(resamples)[:, None] * levels.size
    hx, hy = (
        np.bincount((rows + c[idx]).ravel(), minlength=resamples * levels.size).reshape(resamples, -1)
        for c in (codes[: x.size], codes[x.size :])
    )
    twice = 2 * (hx * (np.cumsum(hy, axis=1) - hy)).sum(axis=1) + (hx * hy).sum(axis=1)  # 2·(x > y) + (x = y)
    values = (twice / 2) / (x.size * x.size)
    return float(np.quantile(values, 0.025)), float(np.quantile(values, 0.975))


def paired_ci(x, y, statistic, resamples: int = 2_000, seed: int = BOOTSTRAP_SEED) -> tuple[float, float]:
    """95 % CI of ``statistic(x, y)`` for paired samples, resampling pairs (the same indices of x and y)."""
    x, y = _paired(x, y)
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(resamples):
        i = rng.integers(0, x.size, x.size)
        values.append(statistic(x[i], y[i]))
    return float(np.quantile(values, 0.025)), float(np.quantile(values, 0.975))


def _paired(x, y) -> tuple[np.ndarray, np.ndarray]:
    x, y = np.asarray(x, float), np.asarray(y, float)
    if x.shape != y.shape or x.ndim != 1 or not x.size:
        raise ValueError(f"paired samples need two equal, non-empty lists (got {x.size} and {y.size})")
    return x, y


def percent(x: float, digits: int = 1) -> str:
    """A share as a percentage with ``digits`` decimals, and more where those would round a share that is not all
    (or not none) to 100 (or 0): 181,294 of 181,295 is "99.999 %", never "100.00 %"."""
    text = f"{x * 100:.{digits}f}"
    while (0 < x < 1) and float(text) in (0.0, 100.0) and digits < 12:
        digits += 1
        text = f"{x * 100:.{digits}f}"
    return f"{text} %"
