"""Verdicts per runtime from gates fixed before looking (``gates.toml``); pure, no I/O."""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_GATES = Path(__file__).with_name("gates.toml")


@dataclass(frozen=True)
class Gates:
    min_p95_reduction: float
    min_same_action_fraction: float
    min_ci_low_fraction_of_reference_mean: float
    source: str = "default"

    @classmethod
    def load(cls, path: Path | None = None) -> "Gates":
        path = Path(path) if path else DEFAULT_GATES
        data = tomllib.loads(path.read_text())
        return cls(float(data["faster"]["min_p95_reduction"]),
                   float(data["agreement"]["min_same_action_fraction"]),
                   float(data["play"]["min_ci_low_fraction_of_reference_mean"]),
                   "default" if path == DEFAULT_GATES else path.name)


@dataclass
class GateResult:
    gate: str          # faster | agreement | play
    passed: bool | None  # None: could not be judged (data missing)
    value: float | None
    threshold: float
    detail: dict = field(default_factory=dict)


@dataclass
class Verdict:
    outcome: str       # deployment-worthy | not-adopted | reference | no-verdict
    gates: list[GateResult]
    reasons: list[str]  # message keys with parameters, rendered by the templates' catalogs


TOLERANCE = 1e-9  # a value exactly on a threshold passes, whatever the float rounding of its ratio


def judge(gates: Gates, reference_p95: float | None, p95: float | None,
          same_actions: int | None, states: int | None,
          reference_mean_score: float | None, paired_ci_low: float | None) -> Verdict:
    """All three gates pass ⇒ deployment-worthy; any fails ⇒ not adopted; any unjudgeable ⇒ no verdict."""
    results = []
    if reference_p95 and p95 is not None:
        reduction = 1 - p95 / reference_p95
        results.append(GateResult("faster", reduction >= gates.min_p95_reduction - TOLERANCE, reduction, gates.min_p95_reduction))
    else:
        results.append(GateResult("faster", None, None, gates.min_p95_reduction))
    if states:
        frac = same_actions / states
        results.append(GateResult("agreement", frac >= gates.min_same_action_fraction - TOLERANCE, frac,
                                  gates.min_same_action_fraction, {"same": same_actions, "states": states}))
    else:
        results.append(GateResult("agreement", None, None, gates.min_same_action_fraction))
    if reference_mean_score is not None and paired_ci_low is not None and reference_mean_score > 0:
        frac = paired_ci_low / reference_mean_score
        results.append(GateResult("play", frac >= gates.min_ci_low_fraction_of_reference_mean - TOLERANCE, frac,
                                  gates.min_ci_low_fraction_of_reference_mean,
                                  {"ci_low": paired_ci_low, "reference_mean": reference_mean_score}))
    else:
        results.append(GateResult("play", None, None, gates.min_ci_low_fraction_of_reference_mean))
    if any(r.passed is None for r in results):
        outcome = "no-verdict"
    elif all(r.passed for r in results):
        outcome = "deployment-worthy"
    else:
        outcome = "not-adopted"
    reasons = [f"gate_{r.gate}_{'pass' if r.passed else 'fail' if r.passed is False else 'missing'}" for r in results]
    return Verdict(outcome, results, reasons)
