"""Verdicts per runtime from gates fixed before looking (``rtreport/gates.toml``); pure, no I/O.

Each gate reads an interval, so it can pass, fail, or stay undecided (the interval straddles the threshold);
it is missing when its data are.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rtreport import latency_stats
from rtreport.gates import Gates  # noqa: F401  (re-exported: build and pages load gates through here)

TOLERANCE = 1e-9  # a value exactly on a threshold passes, whatever the float rounding of its ratio


@dataclass
class GateResult:
    gate: str  # faster | agreement | play
    state: str  # pass | fail | undecided | missing
    value: float | None  # the point estimate
    low: float | None
    high: float | None
    threshold: float
    detail: dict = field(default_factory=dict)

    @property
    def passed(self) -> bool | None:
        return {"pass": True, "fail": False}.get(self.state)


@dataclass
class Verdict:
    outcome: str  # deployment-worthy | not-adopted | undecided | no-verdict
    gates: list[GateResult]


def faster_gate(gates, ratio) -> GateResult:
    """``ratio``: latency_stats.interval of the per-round ratio candidate / reference for the gate's statistic
    (``gates.speed_statistic``), or None. The gate reads the 95 % confidence interval for the machine's typical
    ratio. Pass ("faster"): even its upper end is at least ``min_p95_reduction`` below 1. Fail: even its lower end
    is not — "slower" when that end is above 1, else "not faster enough". Otherwise undecided, with how many
    measurements in all at the observed spread would decide. With fewer independent measurements than
    ``gates.min_measurements`` it is undecided whatever the interval shows: "not confirmed"."""
    limit = 1 - gates.min_p95_reduction
    if ratio is None:
        return GateResult("faster", "missing", None, None, None, limit, {"statistic": gates.speed_statistic})
    point, low, high = ratio["value"], ratio["low"], ratio["high"]
    measurements, least = ratio["measurements"], gates.min_measurements
    confirmed = measurements >= least
    state = (
        "undecided"
        if not confirmed
        else "pass"
        if high <= limit + TOLERANCE
        else "fail"
        if low > limit + TOLERANCE
        else "undecided"
    )
    detail = {
        "statistic": gates.speed_statistic,
        "rounds": ratio["rounds"],
        "repeats": ratio["repeats"],
        "boots": ratio.get("boots"),
        "measurements": measurements,
        "min_measurements": least,
        "confirmed": confirmed,
        "level": ratio["level"],
        "next_low": ratio.get("next_low"),
        "next_high": ratio.get("next_high"),
        "below": ratio.get("below"),
        "above": ratio.get("above"),
        "slower": state == "fail" and low > 1 + TOLERANCE,
        "needed": None,
    }
    if state == "undecided":
        needed = latency_stats.measurements_to_decide(ratio, limit)
        if not confirmed:
            needed = max(least, needed or least)
        detail["needed"] = needed if needed and needed > measurements else None
    return GateResult("faster", state, point, low, high, limit, detail)


def agreement_gate(gates, shadow) -> GateResult:
    """``shadow``: the played-decision agreement (stats.clustered_fraction and counts) or None."""
    thr = gates.min_same_action_fraction
    if not shadow:
        return GateResult("agreement", "missing", None, None, None, thr)
    low, high = shadow["low"], shadow["high"]
    state = "pass" if low >= thr - TOLERANCE else "fail" if high < thr - TOLERANCE else "undecided"
    return GateResult(
        "agreement",
        state,
        shadow["fraction"],
        low,
        high,
        thr,
        {"same": shadow["same"], "decisions": shadow["decisions"], "episodes": shadow["episodes"]},
    )


def play_gate(gates, play) -> GateResult:
    """``play``: the sequential play test's result at the last look reached (analysis.play_test) or None."""
    if not play:
        return GateResult("play", "missing", None, None, None, -gates.play_margin)
    state = {"non-inferior": "pass", "inferior": "fail", "undecided": "undecided"}[play["outcome"]]
    return GateResult("play", state, play["mean"], play["low"], play["high"], -play["margin"], play)


def judge(gates, ratio, shadow, play, twin_differed: dict | None = None) -> Verdict:
    """A failed gate ⇒ not adopted; else a missing one ⇒ no verdict; else an undecided one ⇒ undecided;
    all three pass ⇒ deployment-worthy. ``twin_differed``: the twin summary (analysis.twin_summary) of a twin
    that computed play decisions and differed from its runtime in some checked one: agreement and play, measured
    on those decisions, are then undecided whatever their intervals say."""
    results = [faster_gate(gates, ratio), agreement_gate(gates, shadow), play_gate(gates, play)]
    if twin_differed:
        results = [
            r
            if r.gate == "faster" or r.state == "missing"
            else GateResult(
                r.gate, "undecided", r.value, r.low, r.high, r.threshold, {**r.detail, "twin_differed": twin_differed}
            )
            for r in results
        ]
    states = {r.state for r in results}
    outcome = (
        "not-adopted"
        if "fail" in states
        else "no-verdict"
        if "missing" in states
        else "undecided"
        if "undecided" in states
        else "deployment-worthy"
    )
    return Verdict(outcome, results)
