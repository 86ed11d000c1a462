"""``verdicts.json`` of each machine: per runtime, the outcome and every gate's statistic, interval, threshold
and sample size, for readers who process the report by program (pure)."""

from __future__ import annotations

import json

from .analysis import RunResult

FIELDS = {
    "faster": (
        "{stat}_ratio",
        "ratio of {STAT}s, candidate / reference of the same latency round: geometric mean "
        "over each independent measurement's rounds (the machine's boots where the "
        "rounds name two or more, else its fresh processes), then over the "
        "measurements, each weighing the same; ci_low/ci_high: the 95 % confidence "
        "interval for the machine's typical ratio, t(G-1) over the G measurements (the "
        "gate reads it); next_low/next_high: the 95 % prediction interval for what one "
        "more measurement will show",
    ),
    "agreement": (
        "same_action_fraction",
        "share of the reference's played decisions with the same action (95 % CI: episodes resampled)",
    ),
    "play": (
        "mean_paired_difference",
        "mean same-seed score difference, candidate − reference (repeated 95 % CI at the last look)",
    ),
}


def _round(x):
    return None if x is None else round(float(x), 6)


def _rounded(d: dict | None) -> dict | None:
    return None if d is None else {k: _round(v) if isinstance(v, float) else v for k, v in d.items()}


def verdicts_document(res: RunResult) -> str:
    run = res.rows.run
    runtimes = []
    for r in res.runtimes:
        entry = {
            "runtime_id": r.rows.runtime_id,
            "title": r.rows.title,
            "status": r.rows.status,
            "reference": r.is_reference,
            "outcome": "reference" if r.is_reference else r.verdict.outcome if r.verdict else None,
        }
        if r.verdict:
            gates = {}
            for g in r.verdict.gates:
                name, meaning = FIELDS[g.gate]
                if g.gate == "faster":
                    q = g.detail["statistic"]
                    name, meaning = name.format(stat=q), meaning.format(STAT=q.upper())
                gate = {
                    "state": g.state,
                    "statistic": name,
                    "meaning": meaning,
                    "value": _round(g.value),
                    "ci_low": _round(g.low),
                    "ci_high": _round(g.high),
                    "threshold": _round(g.threshold),
                }
                if g.gate == "faster" and r.latency:
                    gate["n"] = r.latency["n"]
                    gate["rounds"] = len(r.latency["rounds"])
                    d = g.detail
                    gate.update(
                        next_low=_round(d.get("next_low")),
                        next_high=_round(d.get("next_high")),
                        measurements=d.get("measurements"),
                        min_measurements=d.get("min_measurements"),
                        confirmed=d.get("confirmed"),
                        repeats=d.get("repeats", 0),
                        boots=d.get("boots"),
                        interval_level=d.get("level"),
                        rounds_below_1=d.get("below"),
                        rounds_above_1=d.get("above"),
                        slower=d.get("slower"),
                    )
                    if d.get("needed"):
                        gate["needed_measurements"] = d["needed"]
                    if d.get("load"):
                        gate["rounds_under_load"] = {k: d["load"][k] for k in ("rounds", "retaken", "loaded")}
                if g.gate == "agreement" and g.detail:
                    gate.update(n=g.detail["decisions"], same=g.detail["same"], episodes=g.detail["episodes"])
                if g.gate == "play" and g.detail:
                    gate.update(
                        n=g.detail["n"],
                        look=g.detail["look"] + 1,
                        looks=g.detail["looks"],
                        margin=_round(g.detail["margin"]),
                        outcome=g.detail["outcome"],
                        conditional_power=_rounded(g.detail.get("conditional_power")),
                        median_unbiased=_rounded(g.detail.get("adjusted")),
                    )
                if g.detail.get("twin_differed"):
                    gate["twin_differed"] = True
                gates[g.gate] = gate
            entry["gates"] = gates
        if r.reproduction:  # the fixed states again in fresh processes, bit for bit (not a gate: a label)
            rep = r.reproduction
            entry["reproducibility"] = {
                "reproducible": rep["reproducible"],
                "repeats": rep["repeats"],
                "states": rep["states"],
                "fresh_processes": rep["fresh"],
                "needed": rep["needed"],
                "compiled": rep["compiled"],
                "meaning": "fixed states' Q-values computed again in fresh processes (repeats), compared bit for bit "
                "with the run's first measurement; true only when at least `needed` repeats agreed (for "
                "a compiled runtime: repeats that started without a carried compile cache), null when "
                "too few did (not shown), false when one differed",
                "per_repeat": {str(k): v for k, v in rep["per_repeat"].items()},
            }
        if r.twin:  # in play, a CUDA-graph twin computed its decisions (collect.play.twins)
            entry["play_decisions_by_twin"] = {
                "twins": r.twin["twins"],
                "decisions": r.twin["decisions"],
                "checked": r.twin["checked"],
                "differing": r.twin["differing"],
                "check_every": r.twin["every"],
                "meaning": "in play, these runtimes (CUDA-graph captures of this one's kernels) "
                "computed its decisions; "
                "it recomputed the checked ones itself, compared bit for bit",
            }
        runtimes.append(entry)
    doc = {
        "machine": run["label"],
        "run_id": run["run_id"],
        "status": run["status"],
        "profile": run.get("profile"),
        "reference": res.reference_id,
        "withheld": res.withheld,
        "source": res.rows.source.name,
        "gates": {
            "source": res.gates.source,
            "speed_statistic": res.gates.speed_statistic,
            "min_reduction": res.gates.min_p95_reduction,
            "min_measurements": res.gates.min_measurements,
            "speed_rule_written": res.gates.rule_written,
            "rejudged": res.rejudged,
            "min_same_action_fraction": res.gates.min_same_action_fraction,
            "play_margin_fraction_of_reference_mean": res.gates.play_margin,
        },
        "runtimes": runtimes,
    }
    return json.dumps(doc, indent=1, ensure_ascii=False, sort_keys=False, allow_nan=False) + "\n"
