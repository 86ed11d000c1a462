"""The play test's non-inferiority margin, by the rule a run was made under (its settings name it; the gates
file writes each rule down before the files it judges were measured).

* ``reference-mean``: a fraction of the reference's mean score on the look's seeds. It is Breakout's rule, where
  every score is at least 0, and the rule of every file made before tasks had their own.
* ``gain-over-random``: a fraction of the reference's gain over a uniformly random policy on the same seeds (the
  mean reference score minus the mean random score), the way non-inferiority trials set a margin from the effect
  of the active control over placebo. It holds on any return scale: negative returns (Pendulum), returns near
  zero, or a fixed offset per step. Where the reference gains nothing over random play the margin is zero: a
  candidate must then be shown to play no worse at all (its games the very same as the reference's, for one).
"""

from __future__ import annotations

import numpy as np

RULES = ("reference-mean", "gain-over-random")
DEFAULT_RULE = "reference-mean"  # a file whose settings name no rule


def margin(rule: str, fraction: float, reference_scores, random_scores=None) -> float | None:
    """The margin (points a game, never negative) on one look's seeds; None where the random policy's scores on
    those seeds are missing."""
    reference_mean = float(np.mean(reference_scores))
    if rule == "reference-mean":
        return fraction * reference_mean
    if rule == "gain-over-random":
        if random_scores is None or len(random_scores) != len(reference_scores):
            return None
        gain = reference_mean - float(np.mean(random_scores))
        return fraction * max(gain, 0.0)
    raise ValueError(f"unknown play margin rule {rule!r}; one of {', '.join(RULES)}")


def rule_of(settings: dict) -> str:
    return (settings or {}).get("play_margin_rule") or DEFAULT_RULE
