"""From one run's raw rows to its results: statistics, comparisons and verdicts (pure, no I/O)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rtreport import action_difference, latency_stats, play_margin, reproducibility, stats

from .load import RunRows, RuntimeRows
from .play_test import _look, _scores_by_seed, design, play_test  # noqa: F401  (_look, design: read elsewhere)
from .speed_analysis import boots, head_to_head, keyed_rounds, latency_summary, load_summary, rejudged  # noqa: F401
from .twin_view import stood_in, twin_summary
from .verdict import Gates, Verdict, judge

# Extra same-seed comparisons, made when both runtimes ran (candidate, baseline).
BASELINE_PAIRS = [
    ("trt-fp32", "ort-cuda-fp32"),
    ("trt-fp16", "trt-fp32"),
    ("ort-cuda-fp16", "ort-cuda-fp32"),
    ("torch-cuda-fp16", "torch-cuda-fp32"),
    ("ort-cpu-fp32", "torch-cpu-fp32"),
]
DRIFT_LIMIT = 1.10  # rounds whose P50s differ by more than this factor flag the machine


@dataclass
class RuntimeResult:
    rows: RuntimeRows
    is_reference: bool
    latency: dict | None = None  # stats.latency_summary, per-round summaries, spread, and "est": the
    # published P50/P95 from rounds (latency_stats.interval, or None)
    ratio: tuple | None = None  # the gate's statistic / the reference's, per round: (value, low, high)
    ratios: dict = field(default_factory=dict)  # "p50"/"p95" -> latency_stats.interval of the per-round ratio
    keyed: dict = field(default_factory=dict)  # round id -> (repeat, seconds): the rounds, paired by id
    throughput: dict = field(default_factory=dict)  # batch -> decisions/s
    agreement: dict | None = None  # fixed states (a diagnostic)
    shadow: dict | None = None  # every decision of the reference's episodes (the agreement gate)
    scores: dict | None = None
    scores_reference: dict | None = None  # the reference's score summary over this runtime's seeds
    paired_vs_reference: dict | None = None
    play: dict | None = None  # the sequential play test
    secondary: dict | None = None  # IQM and probability of improvement, with CIs
    check: dict | None = None  # the reuse rule's standing check
    reproduction: dict | None = None  # the fixed states again in fresh processes (``reproduction``)
    twin: dict | None = None  # in play, a twin computed its decisions (``twin_summary``)
    load: dict | None = None  # its and the reference's rounds under other processes' load
    verdict: Verdict | None = None


@dataclass
class RunResult:
    rows: RunRows
    reference_id: str | None
    runtimes: list[RuntimeResult]
    comparisons: list[dict]  # {candidate, baseline, paired}
    gates: Gates
    # Why no runtime of this run can be judged: "no-reference" (none chosen), "reference-not-measured"
    # (its row is missing or it failed or was unavailable), "invalid" (the file failed validation), "smoke" (the
    # --quick profile: too few measurements to decide); None: judged.
    withheld: str | None = None
    drift: bool = False  # some runtime's latency rounds disagree by more than DRIFT_LIMIT
    load: dict | None = None  # rounds under other processes' load: measured again, still loaded (``load_summary``)
    measurements: int = 0  # independent measurements of the machine's speed (boots, else processes)
    rejudged: bool = False  # made before the speed gate's rule was written (``Gates.rule_written``)

    def runtime(self, runtime_id):
        return next((r for r in self.runtimes if r.rows.runtime_id == runtime_id), None)


def reproduction(rt: RuntimeRows, run: RunRows) -> dict | None:
    """The fixed states' Q-values of every later repeat (a fresh process) against the run's first measurement,
    bit for bit, and whether that shows the runtime reproducible (``rtreport.reproducibility.standing``: at least
    two repeats that agree, for a compiled runtime two that started without a carried compile cache). None
    without a repeat."""
    again: dict = {}
    for k, i, q in rt.repeat_q:
        again.setdefault(int(k), {})[int(i)] = q
    carried = {k: reproducibility.cache_at_start(run.repeat_details.get(k, {})) for k in again}
    return reproducibility.standing(rt.first_q, again, bool(rt.details.get("inductor_cache")), carried)


def paired(candidate: RuntimeRows, baseline: RuntimeRows) -> dict | None:
    """Paired differences over the seeds both have (bootstrap CI of the mean; traces compared where both played)."""
    a, b = _scores_by_seed(candidate), _scores_by_seed(baseline)
    seeds = sorted(set(a) & set(b))
    if len(seeds) < 2:
        return None
    traces = [candidate.traces.get(s) for s in seeds]
    base = [baseline.traces.get(s) for s in seeds]
    compare = all(t is not None for t in traces + base)
    result = stats.paired_difference(
        [a[s] for s in seeds], [b[s] for s in seeds], traces if compare else None, base if compare else None
    )
    result["seeds"] = seeds
    result["mean_candidate"] = float(np.mean([a[s] for s in seeds]))  # both means over the same seeds
    result["mean_baseline"] = float(np.mean([b[s] for s in seeds]))
    return result


def shadow_agreement(rt: RuntimeRows, stood: dict | None = None, continuous: bool = False) -> dict | None:
    """Played-decision agreement along the reference's games; on the seeds of ``stood`` (``stood_in``) only the
    decisions the reference recomputed itself count (equal bits: the same action). ``continuous``: a decision
    agrees within the task's tolerance, and a flip is an action outside it; a shadow's "first flip" is then its
    first action unequal in some bit (where it stopped playing the reference's game), kept apart as
    ``first_unequal_steps``."""
    if not rt.shadow:
        return None
    seeds = sorted(rt.shadow)
    stood = stood or {}
    same = np.array([stood[s][1] if s in stood else rt.shadow[s]["same"] for s in seeds])
    decisions = np.array([stood[s][0] if s in stood else rt.shadow[s]["decisions"] for s in seeds])
    fraction, low, high = stats.clustered_fraction(same, decisions)
    unequal = [rt.shadow[s]["first_flip"] for s in seeds if rt.shadow[s]["first_flip"] is not None]
    firsts = [] if continuous else unequal
    pairs: dict = {}
    for f in rt.flips:
        key = (f["reference_action"], f["action"])
        pairs[key] = pairs.get(key, 0) + 1
    return {
        "episodes": len(seeds),
        "decisions": int(decisions.sum()),
        "same": int(same.sum()),
        "fraction": fraction,
        "low": low,
        "high": high,
        "flips": int(decisions.sum() - same.sum()),
        "zero_upper": stats.zero_event_upper(int(decisions.sum())) if same.sum() == decisions.sum() else None,
        "episodes_with_flip": int((same < decisions).sum()) if continuous else len(firsts),
        "first_flip_steps": firsts,
        "first_unequal_steps": unequal if continuous else None,
        "pairs": pairs,
        "flip_margins": [f["reference_margin"] for f in rt.flips],
        "stood_in": {"games": len(stood), "checked": sum(c for c, _ in stood.values())} if stood else None,
    }


def flips_by_margin(rt: RuntimeRows, reference: RuntimeRows) -> list[tuple[int, int]]:
    """Per margin bin: (reference decisions on the shadowed episodes, flips)."""
    decisions = np.zeros(len(stats.MARGIN_BINS) - 1, dtype=int)
    for seed in rt.shadow:
        if seed in reference.margin_counts:
            decisions += np.asarray(reference.margin_counts[seed], dtype=int)
    flips = np.bincount(stats.margin_bin([f["reference_margin"] for f in rt.flips]), minlength=decisions.size)
    return list(zip(decisions.tolist(), flips[: decisions.size].tolist()))


def standing_check(rt: RuntimeRows, reference: RuntimeRows, run: dict) -> dict | None:
    """Seeds every candidate replayed although the shadow said it would play the reference's episode: the
    replay must be that episode, action for action."""
    seeds, _ = design(run)
    check = seeds[: run.get("settings", {}).get("check_seeds", 0)]
    played = {e["seed"] for e in rt.episodes if e["source"] is None}
    tested = [
        s
        for s in check
        if s in rt.shadow
        and rt.shadow[s]["first_flip"] is None
        and s in played
        and s in rt.traces
        and s in reference.traces
    ]
    if not tested:
        return None
    failed = [s for s in tested if rt.traces[s] != reference.traces[s]]
    return {"tested": len(tested), "matched": len(tested) - len(failed), "failed_seeds": failed}


def analyse(run: RunRows, gates: Gates) -> RunResult:
    reference_id = run.run.get("reference_runtime")
    reference = run.runtime(reference_id)
    if reference_id is None:
        withheld = "no-reference"
    elif reference is None or reference.status != "available":
        withheld, reference = "reference-not-measured", None
    else:
        withheld = "invalid" if run.problems or run.damaged else "smoke" if run.run.get("profile") == "quick" else None
    results = []
    for rt in run.runtimes:
        r = RuntimeResult(rt, rt.runtime_id == reference_id)
        if rt.decision_seconds.size:
            r.keyed = keyed_rounds(rt)
            r.latency = latency_summary(rt, r.keyed)
            if reference is not None and reference.rounds and not r.is_reference:
                ref_keyed = keyed_rounds(reference)
                r.ratios = {
                    q: latency_stats.ratio_interval(r.keyed, ref_keyed, q, boots=boots(reference))
                    for q in latency_stats.STATISTICS
                }
                gated = r.ratios.get(gates.speed_statistic)
                r.ratio = (gated["value"], gated["low"], gated["high"]) if gated else None
        r.throughput = {b: stats.throughput(b, s) for b, s in sorted(rt.batch_seconds.items()) if s.size}
        if (
            rt.state_q is not None
            and reference is not None
            and reference.state_q is not None
            and rt.state_q.shape == reference.state_q.shape
        ):
            protocol = run.run.get("protocol") or {}
            if protocol.get("action_kind") == "continuous":
                r.agreement = action_difference.fixed_states(
                    reference.state_q,
                    rt.state_q,
                    protocol["action_low"],
                    protocol["action_high"],
                    float(protocol["action_tolerance"]),
                )
            else:
                r.agreement = stats.agreement(reference.state_q, rt.state_q)
        if rt.episodes:
            scores = [e["score"] for e in rt.episodes]
            r.scores = stats.score_summary(scores)
            if reference is not None and not r.is_reference:
                r.paired_vs_reference = paired(rt, reference)
                ref_seeds = _scores_by_seed(reference)
                same_seeds = [ref_seeds[e["seed"]] for e in rt.episodes if e["seed"] in ref_seeds]
                r.scores_reference = stats.score_summary(same_seeds) if same_seeds else None
                over_random = play_margin.rule_of(run.run.get("settings", {})) == "gain-over-random"
                fraction = gates.play_margin_over_random if over_random else gates.play_margin
                r.play = play_test(rt, reference, run.run, fraction, run.random_scores)
                r.check = standing_check(rt, reference, run.run)
                ref_by_seed, own_by_seed = _scores_by_seed(reference), _scores_by_seed(rt)
                shared = [s for s in sorted(own_by_seed) if s in ref_by_seed]
                own, ref_scores = [own_by_seed[s] for s in shared], [ref_by_seed[s] for s in shared]
                if len(shared) >= 2:  # paired by seed: the games of one seed are one observation
                    r.secondary = {
                        "iqm": stats.interquartile_mean(scores),
                        "iqm_ci": stats.iqm_ci(scores),
                        "iqm_reference": stats.interquartile_mean(ref_scores),
                        "poi": stats.probability_of_improvement(own, ref_scores),
                        "poi_ci": stats.probability_of_improvement_ci(own, ref_scores),
                    }
        r.reproduction = reproduction(rt, run)
        if reference is not None and not r.is_reference:
            continuous = (run.run.get("protocol") or {}).get("action_kind") == "continuous"
            r.shadow = shadow_agreement(rt, stood_in(rt, reference), continuous)
            if r.shadow:
                r.shadow["by_margin"] = flips_by_margin(rt, reference)
        results.append(r)

    titles = {rt.runtime_id: rt.title for rt in run.runtimes}
    for r in results:
        r.twin = twin_summary(r.rows, run.run, titles)
    ref_result = next((r for r in results if r.is_reference), None)
    ref_twin = ref_result.twin if ref_result and ref_result.twin and ref_result.twin["differing"] else None
    for r in results:
        if r.is_reference or r.rows.status != "available" or withheld:
            continue
        # a twin that differed from its runtime somewhere: the play rows are not the runtime's own (or, for the
        # reference's twin, not the reference's): agreement and play cannot be judged
        differed = ref_twin or (r.twin if r.twin and r.twin["differing"] else None)
        r.verdict = judge(gates, r.ratios.get(gates.speed_statistic), r.shadow, r.play, differed)
        faster = next((g for g in r.verdict.gates if g.gate == "faster"), None)
        if faster is not None and r.ratios:  # beside the speed verdict: its rounds under other processes' load
            faster.detail["load"] = load_summary(run, [r.rows.runtime_id, reference_id])

    comparisons = []
    for cand, base in BASELINE_PAIRS:
        c, b = run.runtime(cand), run.runtime(base)
        if c and b and c.episodes and b.episodes and base != reference_id:
            p = paired(c, b)
            if p:
                comparisons.append({"candidate": c, "baseline": b, "paired": p})
    drift = any(r.latency and r.latency["spread"] > DRIFT_LIMIT for r in results)
    for r in results:
        if r.ratios:
            r.load = load_summary(run, [r.rows.runtime_id, reference_id])
    ref_est = reference.runtime_id if reference is not None else None
    measured = next(
        (
            r.latency["est"][gates.speed_statistic]
            for r in results
            if r.rows.runtime_id == ref_est and r.latency and r.latency["est"].get(gates.speed_statistic)
        ),
        None,
    )
    return RunResult(
        run,
        reference_id,
        results,
        comparisons,
        gates,
        withheld,
        drift,
        load_summary(run),
        measured["measurements"] if measured else 0,
        rejudged(run, gates),
    )
