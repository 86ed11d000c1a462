"""Whether a runtime's decisions reproduce between processes: the fixed states' Q-values that a repeat computed
in a fresh process (``repeat_state_q``) against the run's first measurement (``state_q``), bit for bit.
Pure functions over plain rows; no I/O."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Reproduction:
    states: int          # fixed states measured both times
    q_differ: int        # states whose Q-values differ in at least one bit
    action_differ: int   # states whose greedy action (argmax, ties to the lowest index) differs

    @property
    def identical(self) -> bool:
        """Every state compared, and every Q-value the same bits."""
        return self.states > 0 and self.q_differ == 0


def compare(first: dict, again: dict) -> Reproduction:
    """``first``, ``again``: {state index: Q-values}; states in only one of them are not compared."""
    common = sorted(set(first) & set(again))
    q_differ = action_differ = 0
    for i in common:
        a, b = np.asarray(first[i], np.float32), np.asarray(again[i], np.float32)
        if a.shape != b.shape or not np.array_equal(a.view(np.uint32), b.view(np.uint32)):
            q_differ += 1
        if a.size and b.size and int(np.argmax(a)) != int(np.argmax(b)):
            action_differ += 1
    return Reproduction(len(common), q_differ, action_differ)


def by_repeat(first_rows, repeat_rows) -> dict:
    """{(runtime id, repeat): Reproduction} from ``state_q`` rows (runtime id, state index, Q-values) and
    ``repeat_state_q`` rows (runtime id, repeat, state index, Q-values)."""
    first: dict = {}
    for rid, i, q in first_rows:
        first.setdefault(rid, {})[int(i)] = q
    again: dict = {}
    for rid, k, i, q in repeat_rows:
        again.setdefault((rid, int(k)), {})[int(i)] = q
    return {key: compare(first.get(key[0], {}), q) for key, q in sorted(again.items())}


def in_words(r: Reproduction) -> str:
    """One line for the terminal (the report's own words come from site_gen's translations)."""
    if r.states == 0:
        return "no fixed state to compare"
    if r.identical:
        return f"bit for bit the first measurement's Q-values on all {r.states} fixed states"
    return (f"Q-values differ from the first measurement's on {r.q_differ} of {r.states} fixed states, "
            f"the action on {r.action_differ}: not reproducible")
