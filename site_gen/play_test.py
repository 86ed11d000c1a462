"""The play test of one candidate against the reference: the repeated confidence interval of the mean same-seed
paired score difference at the looks both completed, against the margin of the run's rule
(``rtreport.play_margin``), with the estimate after stopping or the conditional power while undecided."""

from __future__ import annotations

from functools import partial

import numpy as np

from rtreport import after_stopping, play_margin, sequential

from .load import RuntimeRows


def design(run: dict) -> tuple[list, tuple]:
    """The run's pre-registered seeds and looks (files before the sequential design: one look at all seeds)."""
    settings = run.get("settings", {})
    seeds = [int(s) for s in settings.get("seeds", [])]
    looks = tuple(settings.get("looks") or (len(seeds),))
    return seeds, looks


def _scores_by_seed(rt: RuntimeRows) -> dict:
    return {e["seed"]: e["score"] for e in rt.episodes}


def play_test(
    candidate: RuntimeRows, reference: RuntimeRows, run: dict, margin_fraction: float, random_scores: dict | None = None
) -> dict | None:
    """The play test at the last look both runtimes completed: RCI of the mean paired difference, outcome. The
    margin follows the run's rule (``rtreport.play_margin``; ``random_scores``: the uniformly random policy's
    scores by seed, for the rule that needs them)."""
    seeds, looks = design(run)
    rule = play_margin.rule_of(run.get("settings", {}))
    margin_of = partial(_margin, rule, margin_fraction, random_scores or {})
    mine, ref = _scores_by_seed(candidate), _scores_by_seed(reference)
    reached = [k for k, n in enumerate(looks) if all(s in mine and s in ref for s in seeds[:n])]
    if not reached:
        return None
    k = reached[-1]
    rule_of = {"rule": rule, "fraction": margin_fraction}  # which rule set the margin (the page says it)
    for j in reached:  # the first look where it was decided (collect stops there)
        test = _look(mine, ref, seeds[: looks[j]], j, looks, margin_of)
        if test["outcome"] != "undecided":
            return {**test, **rule_of}
    last = _look(mine, ref, seeds[: looks[k]], k, looks, margin_of)
    # no margin (the random policy's games are missing): no test to report, and the play gate cannot pass
    return None if last["margin"] is None else {**last, **rule_of}


def _margin(rule, fraction, random_scores: dict, ref: dict, seeds) -> float | None:
    random = [random_scores[s] for s in seeds] if all(s in random_scores for s in seeds) else None
    return play_margin.margin(rule, fraction, [ref[s] for s in seeds], random)


def _look(mine, ref, seeds, k, looks, margin_of) -> dict:
    """``margin_of(ref, seeds)``: the look's margin by the run's rule; a number: that fraction of the reference's
    mean (the rule of every file before tasks)."""
    if not callable(margin_of):
        margin_of = partial(_margin, play_margin.DEFAULT_RULE, margin_of, {})
    d = np.array([mine[s] - ref[s] for s in seeds])
    margin = margin_of(ref, seeds)
    mean, low, high = sequential.repeated_ci(d, k, looks)
    outcome = "undecided" if margin is None else sequential.outcome(low, high, margin)
    sd = float(d.std(ddof=1)) if d.size > 1 else 0.0
    stopped = outcome != "undecided" or k == len(looks) - 1
    return {
        "look": k,
        "looks": len(looks),
        "n": int(d.size),
        "mean": mean,
        "low": low,
        "high": high,
        "margin": margin,
        "outcome": outcome,
        "sd": sd,
        "up": int((d > 0).sum()),
        "down": int((d < 0).sum()),
        # after a stop: the median-unbiased estimate; while undecided with looks left: conditional power
        "adjusted": (
            after_stopping.median_unbiased(d, k, looks, margin) if stopped and sd > 0 and margin is not None else None
        ),
        "conditional_power": (
            None if stopped or margin is None else after_stopping.conditional_powers(d, k, looks, margin)
        ),
    }
