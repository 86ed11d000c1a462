"""One run's speed evidence, from its raw rows (pure): the rounds keyed for pairing and grouped by the machine's
boots, each runtime's published P50/P95 and their intervals, two runtimes compared round by round, and the rounds
that ran under other processes' load; ``site_gen.analysis`` puts them on each runtime's result."""

from __future__ import annotations

from rtreport import host_load, latency_stats, stats
from rtreport.gates import Gates

from .load import RunRows, RuntimeRows


def load_summary(run: RunRows, runtime_ids=None) -> dict:
    """Latency rounds under other processes' load (``rtreport.host_load``), over the runtimes named (all by
    default): rounds counted, rounds measured again (each attempt that ran loaded is kept in ``retaken``), and
    rounds whose counted attempt still ran loaded; ``retaking``: whether the file was made by a collect that
    measures such rounds again (its settings name ``retakes``)."""
    ids = set(runtime_ids) if runtime_ids is not None else {rt.runtime_id for rt in run.runtimes}
    counted = [(rt.runtime_id, i) for rt in run.runtimes if rt.runtime_id in ids for i in rt.round_info]
    again = {(rid, r) for rid, r, _ in run.retaken if rid in ids}
    return {
        "rounds": len(counted),
        "retaken": len(again),
        "loaded": sum(host_load.loaded(i.get("conditions") or {}) for _, i in counted),
        "retaking": "retakes" in (run.run.get("settings") or {}),
        "retakes": (run.run.get("settings") or {}).get("retakes"),
    }


def rejudged(run: RunRows, gates: Gates) -> bool:
    """The run started before the speed gate's current rule was written: its verdicts are judged by a rule made
    after it was measured (the page says so)."""
    started = str(run.run.get("started_at") or "")[:10]
    return bool(gates.rule_written and started and started < gates.rule_written)


def boots(rt: RuntimeRows) -> dict:
    """Round id -> the machine's boot id it ran on (conditions.boot; None where not recorded)."""
    return {i["round"]: (i.get("conditions") or {}).get("boot") for i in rt.round_info}


def keyed_rounds(rt: RuntimeRows) -> dict:
    """Round id -> (repeat, seconds); the repeat (0: the protocol's own rounds) from the round's conditions."""
    repeat = {i["round"]: int((i.get("conditions") or {}).get("repeat") or 0) for i in rt.round_info}
    ids = rt.round_ids or list(range(len(rt.rounds)))
    return {k: (repeat.get(k, 0), s) for k, s in zip(ids, rt.rounds)}


def latency_summary(rt: RuntimeRows, keyed: dict) -> dict:
    """Pooled description of every sample (P99, mean, std), and the published P50/P95: from the rounds."""
    summary = stats.latency_summary(rt.decision_seconds)
    summary["rounds"] = stats.round_summaries(rt.rounds)
    summary["spread"] = stats.rounds_spread(rt.rounds)
    summary["est"] = {q: latency_stats.runtime_interval(keyed, q, boots=boots(rt)) for q in latency_stats.STATISTICS}
    for q, est in summary["est"].items():  # one round: its value, and no interval
        summary[q] = est["value"] if est else latency_stats.round_statistic(rt.rounds[0], q)
    p95 = summary["est"]["p95"]
    summary["p95_ci_low"], summary["p95_ci_high"] = (p95["low"], p95["high"]) if p95 else (None, None)
    summary["per_round"] = [
        {
            "round": k,
            "repeat": rep,
            "p50": latency_stats.round_statistic(s, "p50"),
            "p95": latency_stats.round_statistic(s, "p95"),
        }
        for k, (rep, s) in keyed.items()
    ]
    return summary


def head_to_head(a, b, statistic: str) -> dict | None:
    """a / b for ``statistic``, paired by round (both ran in the same rounds), with its interval."""
    return latency_stats.ratio_interval(a.keyed, b.keyed, statistic, boots=boots(b.rows))
