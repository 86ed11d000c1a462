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
    return {"n": int(ms.size), "p50": percentile(ms, 50), "p95": percentile(ms, 95), "p99": percentile(ms, 99),
            "mean": float(ms.mean()), "std": float(ms.std(ddof=1)) if ms.size > 1 else 0.0}


def bootstrap_ci(values, statistic, resamples: int = SCORE_RESAMPLES, confidence: float = 0.95,
                 seed: int = BOOTSTRAP_SEED) -> tuple[float, float]:
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
        stats[start:start + n] = statistic(values[rng.integers(0, values.size, size=(n, values.size))])
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
    return float(x[cut:x.size - cut].mean())


def score_summary(scores) -> dict:
    x = np.asarray(scores, dtype=float)
    return {"n": int(x.size), "mean": float(x.mean()), "median": float(np.median(x)),
            "std": float(x.std(ddof=1)) if x.size > 1 else 0.0, "p10": percentile(x, 10), "p90": percentile(x, 90),
            "min": float(x.min()), "max": float(x.max()), "iqm": interquartile_mean(x)}


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
        "states": int(ref.shape[0]), "same_actions": int((ref_actions == actions).sum()),
        "max_abs_dq": float(delta.max()), "mean_abs_dq": float(delta.mean()),
        "per_state_max_abs_dq": delta.max(axis=1).tolist(), "reference_margin": margins.tolist(),
        "flips": [{"state": int(i), "reference_action": int(ref_actions[i]), "action": int(actions[i]),
                   "reference_margin": float(margins[i]), "max_abs_dq": float(delta[i].max())} for i in flips],
    }


def first_divergence(trace_a, trace_b) -> int | None:
    """First step where two action traces differ (or where the shorter one ends); None if identical."""
    n = min(len(trace_a), len(trace_b))
    a, b = np.asarray(trace_a[:n]), np.asarray(trace_b[:n])
    diff = np.flatnonzero(a != b)
    if diff.size:
        return int(diff[0])
    return None if len(trace_a) == len(trace_b) else n


def paired_difference(scores, baseline_scores, traces=None, baseline_traces=None,
                      resamples: int = SCORE_RESAMPLES) -> dict:
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
    out = {"differences": d.tolist(), "mean": float(d.mean()), "ci_low": low, "ci_high": high,
           "n": int(d.size)}
    if traces is not None and baseline_traces is not None:
        parts = [first_divergence(t, u) for t, u in zip(traces, baseline_traces)]
        out["first_divergence"] = parts
        out["identical"] = sum(p is None for p in parts)
    else:
        out["identical"] = int((d == 0).sum())
    return out
