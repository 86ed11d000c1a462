"""From one run's raw rows to its results: statistics, comparisons and verdicts (pure, no I/O)."""
from __future__ import annotations

from dataclasses import dataclass, field

from rtreport import stats
from .load import RunRows, RuntimeRows
from .verdict import Gates, Verdict, judge

# Extra same-seed comparisons, made when both runtimes ran (candidate, baseline).
BASELINE_PAIRS = [("trt-fp32", "ort-cuda-fp32"), ("trt-fp16", "trt-fp32"), ("ort-cuda-fp16", "ort-cuda-fp32"),
                  ("torch-cuda-fp16", "torch-cuda-fp32"), ("ort-cpu-fp32", "torch-cpu-fp32")]


@dataclass
class RuntimeResult:
    rows: RuntimeRows
    is_reference: bool
    latency: dict | None = None          # stats.latency_summary + p95_ci_low/high (ms)
    throughput: dict = field(default_factory=dict)   # batch -> decisions/s
    agreement: dict | None = None
    scores: dict | None = None
    paired_vs_reference: dict | None = None
    verdict: Verdict | None = None


@dataclass
class RunResult:
    rows: RunRows
    reference_id: str | None
    runtimes: list[RuntimeResult]
    comparisons: list[dict]   # {candidate, baseline, paired}
    gates: Gates
    # Why no runtime of this run can be judged: "no-reference" (none chosen), "reference-not-measured"
    # (its row is missing or it failed or was unavailable), "invalid" (the file failed validation); None: judged.
    withheld: str | None = None

    def runtime(self, runtime_id):
        return next((r for r in self.runtimes if r.rows.runtime_id == runtime_id), None)


def _scores_by_seed(rt: RuntimeRows) -> dict:
    return {e["seed"]: e["score"] for e in rt.episodes}


def paired(candidate: RuntimeRows, baseline: RuntimeRows) -> dict | None:
    """Paired differences over the seeds both played (the same pre-registered seeds in a full run)."""
    a, b = _scores_by_seed(candidate), _scores_by_seed(baseline)
    seeds = sorted(set(a) & set(b))
    if len(seeds) < 2:
        return None
    result = stats.paired_difference([a[s] for s in seeds], [b[s] for s in seeds],
                                     [candidate.traces.get(s, []) for s in seeds],
                                     [baseline.traces.get(s, []) for s in seeds])
    result["seeds"] = seeds
    return result


def analyse(run: RunRows, gates: Gates) -> RunResult:
    reference_id = run.run.get("reference_runtime")
    reference = run.runtime(reference_id)
    if reference_id is None:
        withheld = "no-reference"
    elif reference is None or reference.status != "available":
        withheld, reference = "reference-not-measured", None
    else:
        withheld = "invalid" if run.problems else None
    results = []
    for rt in run.runtimes:
        r = RuntimeResult(rt, rt.runtime_id == reference_id)
        if rt.decision_seconds.size:
            r.latency = stats.latency_summary(rt.decision_seconds)
            r.latency["p95_ci_low"], r.latency["p95_ci_high"] = stats.p95_ci(rt.decision_seconds)
        r.throughput = {b: stats.throughput(b, s) for b, s in sorted(rt.batch_seconds.items()) if s.size}
        if rt.state_q is not None and reference is not None and reference.state_q is not None \
                and rt.state_q.shape == reference.state_q.shape:
            r.agreement = stats.agreement(reference.state_q, rt.state_q)
        if rt.episodes:
            r.scores = stats.score_summary([e["score"] for e in rt.episodes])
            if reference is not None and not r.is_reference:
                r.paired_vs_reference = paired(rt, reference)
        results.append(r)

    # A verdict needs the whole pre-registered workload: every fixed state and every seed of the run's settings.
    settings = run.run.get("settings", {})
    want_states, want_seeds = settings.get("states"), len(settings.get("seeds", []))
    ref_result = next((r for r in results if r.is_reference), None)
    for r in results:
        if r.is_reference or r.rows.status != "available" or withheld:
            continue
        agreement = r.agreement if r.agreement and r.agreement["states"] == want_states else None
        pair = r.paired_vs_reference if r.paired_vs_reference and r.paired_vs_reference["n"] == want_seeds else None
        r.verdict = judge(
            gates,
            reference_p95=ref_result.latency["p95"] if ref_result and ref_result.latency else None,
            p95=r.latency["p95"] if r.latency else None,
            same_actions=agreement["same_actions"] if agreement else None,
            states=agreement["states"] if agreement else None,
            reference_mean_score=ref_result.scores["mean"] if ref_result and ref_result.scores else None,
            paired_ci_low=pair["ci_low"] if pair else None)

    comparisons = []
    for cand, base in BASELINE_PAIRS:
        c, b = run.runtime(cand), run.runtime(base)
        if c and b and c.episodes and b.episodes and base != reference_id:
            p = paired(c, b)
            if p:
                comparisons.append({"candidate": c, "baseline": b, "paired": p})
    return RunResult(run, reference_id, results, comparisons, gates, withheld)

