"""Pure statistics over raw rows: numpy in, numbers out, no I/O (after rliable's metrics.py)."""
from __future__ import annotations

import numpy as np


def percentile(samples, q: float) -> float:
    """The q-th percentile (0-100) with linear interpolation between order statistics (numpy's default).

    Args:
        samples: 1-D sequence of numbers, not empty.
        q: percentile in [0, 100].
    Returns:
        A float.
    """
    return float(np.percentile(np.asarray(samples, dtype=float), q))


def same_action_count(reference_actions, actions) -> int:
    """How many positions hold the same action in both sequences (same length)."""
    a, b = np.asarray(reference_actions), np.asarray(actions)
    if a.shape != b.shape:
        raise ValueError(f"action sequences differ in length: {a.shape} vs {b.shape}")
    return int((a == b).sum())


def max_abs_difference(reference, values) -> float:
    """Largest |values - reference| over all elements."""
    return float(np.max(np.abs(np.asarray(values, float) - np.asarray(reference, float))))
