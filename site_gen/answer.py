"""A machine page's first screen, told as the study's summary: which runtime to use, how much faster (with its
interval), whether it picks the reference's actions, whether it plays as well (its mean difference and interval
against the margin), the decision and its scope; then one line for the other runtimes that pass, one for each
outcome of those that do not, with the reason, and one for those that did not run here. Every line with a number
is a claim (``claims.say``) or a count."""

from __future__ import annotations

from collections import Counter

from . import claims, reasons
from .analysis import RunResult
from .describe import scope_text
from .findings import failed_why, recommendation, recommendation_text, undecided_why
from .wording import pct, play_claim, reproduction, speed, stat_name


def _line(key: str, t, text: str) -> dict:
    return {"key": key, "label": t(f"ans_label_{key}"), "text": text}


def answer_lines(res: RunResult, t, brief: bool = False) -> list[dict]:
    """[{label, text}] in reading order; a run that cannot be judged (or where nothing passes) says so first.
    ``brief`` (the home page's card): the other runtimes that pass are counted, not named, as the home page's table
    names them."""
    rec = recommendation(res)
    if res.withheld or rec is None:
        lines = [_line("answer", t, recommendation_text(res, t))]
    else:
        lines = _recommended(res, rec, t)
    judged = [r for r in res.runtimes if r.verdict]
    worthy = [
        r for r in judged if r.verdict.outcome == "deployment-worthy" and (rec is None or r is not rec["runtime"])
    ]
    if worthy:
        e = {"outcomes": [r.verdict.outcome for r in worthy], "n": len(worthy)}
        lines.append(
            {
                "key": "also",
                "label": t("ans_label_also"),
                "text": claims.say(
                    t,
                    "verdict_group",
                    claims.count_key("card_also" if brief else "ans_also", len(worthy)),
                    e,
                    "deployment-worthy",
                    n=len(worthy),
                    runtimes=claims.titles([r.rows.title for r in worthy], t),
                ),
            }
        )
    for outcome, why in (("not-adopted", failed_why), ("undecided", undecided_why)):
        group = [r for r in judged if r.verdict.outcome == outcome]
        if not group:
            continue
        e = {"outcomes": [r.verdict.outcome for r in group], "n": len(group)}
        named = t("semi").join(t("ans_named", runtime=r.rows.title, why=why(r, t)) for r in group)
        lines.append(
            {
                "key": outcome,
                "label": t(f"ans_label_{outcome}"),
                "text": claims.say(
                    t,
                    "verdict_group",
                    claims.count_key(f"ans_{outcome}", len(group)),
                    e,
                    outcome,
                    n=len(group),
                    runtimes=named,
                ),
            }
        )
    absent = [r for r in res.runtimes if r.rows.status in ("unavailable", "failed")]
    if absent:  # what did not run, by reason: the first screen says how much of the request this page answers
        kinds = Counter(reasons.kind(r.rows.status, r.rows.reason) for r in absent)
        why = t("semi").join(t("ans_not_run_kind", n=n, why=t(f"reason_kind_{k}")) for k, n in kinds.most_common())
        text = t(claims.count_key("ans_not_run", len(absent)), n=len(absent), listed=len(res.runtimes), why=why)
        lines.append(_line("not_run", t, text))
    return lines


def _recommended(res: RunResult, rec: dict, t) -> list[dict]:
    q, ref, r = res.gates.speed_statistic, res.runtime(res.reference_id), rec["runtime"]
    rid = r.rows.runtime_id
    others = [x.ratio[0] for x in res.runtimes if x.verdict and x.verdict.outcome == "deployment-worthy" and x.ratio]
    # a runtime whose Q-values differ between processes says so here, on the first screen (the "Mind" line below
    # gives the counts)
    key = "ans_use_mind" if r.reproduction and r.reproduction["reproducible"] is False else "ans_use"
    evidence = {"outcome": r.verdict.outcome, "ratio": r.ratio[0], "others": others, "versus": rec["versus"]}
    if rec["runner_up"] is None:  # the one that passes is not "the fastest of those that do"
        use = claims.say(t, "recommend", key + "_only", evidence, rid, runtime=r.rows.title)
    elif claims.check("recommend_paired", evidence):  # faster than the next, by their own ratio's interval
        use = claims.say(t, "recommend_paired", key, evidence, rid, runtime=r.rows.title)
    else:  # fastest by point estimate only: the next one is not shown slower
        use = claims.say(
            t, "recommend_point", key + "_point", evidence, rid, runtime=r.rows.title, other=rec["runner_up"].rows.title
        )
    ratio = r.ratios[q]
    fast = claims.say(
        t,
        claims.speed_kind(ratio),
        "ans_speed",
        ratio,
        rid,
        stat=stat_name(res),
        speed=speed(ratio, t, rid),
        value=f"{r.latency[q]:.3f}",
        ref_value=f"{ref.latency[q]:.3f}",
    )
    load = r.load  # its rounds' and the reference's (analysis.load_summary)
    if load and load["loaded"]:  # on the first screen, beside the figure it touches (the counts: under Speed)
        fast = t("two_sentences", a=fast, b=t("ans_speed_loaded", loaded=load["loaded"], rounds=f"{load['rounds']:,}"))
    s = r.shadow
    counts = r.rows.shadow_differences
    if s["flips"] == 0 and counts and counts[0] != s["decisions"]:  # continuous: within the tolerance, not equal
        tolerance = float((res.rows.run.get("protocol") or {}).get("action_tolerance") or 0)
        evidence = {**s, "continuous": True, "equal": counts[0]}
        same = claims.say(
            t,
            "within_tolerance",
            "ans_same_within",
            evidence,
            rid,
            decisions=f"{s['decisions']:,}",
            tolerance=f"{tolerance * 100:g} %",
            equal=f"{counts[0]:,}",
        )
    elif s["flips"] == 0:
        same = claims.say(t, "exact", "ans_same_exact", s, rid, decisions=f"{s['decisions']:,}")
    else:
        gate = res.gates.min_same_action_fraction
        same = claims.say(
            t,
            "agreement_pass",
            "ans_same",
            {"low": s["low"], "high": s["high"], "gate": gate},
            rid,
            same=pct(s["fraction"], 2),
            decisions=f"{s['decisions']:,}",
            low=pct(s["low"], 2),
            threshold=pct(gate, 0),
        )
    lines = [
        _line("use", t, use),
        _line("speed", t, fast),
        _line("same", t, same),
        _line("play", t, play_claim(r.play, t, rid, prefix="ans_play")),
        _line("decision", t, t("ans_decision", outcome=t("outcome_deployment-worthy"))),
        _line("scope", t, scope_text(res, t, "scope_bare")),
    ]
    if r.reproduction and r.reproduction["reproducible"] is not True:  # what a deployer must know
        lines.append(_line("mind", t, t("ans_mind", text=reproduction(r.reproduction, t, rid))))
    return lines
