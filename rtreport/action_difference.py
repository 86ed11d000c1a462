"""How far a runtime's continuous action is from the reference's: the largest difference over the action's
dimensions, each as a fraction of that dimension's range (high − low), so that one tolerance reads the same on
every task. A decision agrees when the difference is at most the gates file's tolerance. Played decisions are
kept as counts per bin (``BIN_EDGES``); the fixed states' outputs are stored whole."""

from __future__ import annotations

import numpy as np

# Upper edges of the bins (fraction of the range); bin 0 holds exactly equal actions.
BIN_EDGES = (0.0, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, float("inf"))


def difference(a, b, low, high) -> float:
    """max_i |a_i − b_i| / (high_i − low_i)."""
    span = np.asarray(high, np.float64) - np.asarray(low, np.float64)
    return float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)) / span))


def bin_of(d: float) -> int:
    if d == 0:
        return 0
    return next(i for i, edge in enumerate(BIN_EDGES) if i and d <= edge)


def bin_labels() -> list[str]:
    """ "0", "≤ 1e-07", …, "> 0.1": each bin's range, for a table."""
    out = ["0"]
    for edge in BIN_EDGES[1:-1]:
        out.append(f"≤ {edge:g}")
    out.append(f"> {BIN_EDGES[-2]:g}")
    return out


def counts(differences) -> list[int]:
    out = [0] * (len(BIN_EDGES))
    for d in differences:
        out[bin_of(d)] += 1
    return out


def fixed_states(reference_outputs, outputs, low, high, tolerance: float) -> dict:
    """Fixed-state agreement of continuous actions, in the keys of ``stats.agreement`` (``same_actions``: states
    whose clipped actions are within ``tolerance``), with each state's difference and their counts per bin."""
    low, high = np.asarray(low, np.float64), np.asarray(high, np.float64)
    ref = np.clip(np.asarray(reference_outputs, np.float64), low, high)
    mine = np.clip(np.asarray(outputs, np.float64), low, high)
    per_state = (np.abs(mine - ref) / (high - low)).max(axis=1)
    delta = np.abs(np.asarray(outputs, np.float64) - np.asarray(reference_outputs, np.float64))
    outside = np.flatnonzero(per_state > tolerance)
    return {
        "continuous": True,
        "tolerance": tolerance,
        "states": int(ref.shape[0]),
        "same_actions": int((per_state <= tolerance).sum()),
        "max_abs_dq": float(delta.max()),
        "mean_abs_dq": float(delta.mean()),
        "per_state_max_abs_dq": delta.max(axis=1).tolist(),
        "reference_margin": [0.0] * int(ref.shape[0]),
        "differences": per_state.tolist(),
        "counts": counts(per_state),
        "flips": [
            {"state": int(i), "reference_action": -1, "action": -1, "reference_margin": 0.0, "difference": per_state[i]}
            for i in outside
        ],
    }
