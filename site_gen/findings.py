"""What a machine's run found, in generated sentences (both languages): which runtime to use and why, how they
rank in speed, which pass and fail and why, and the fixed-states-versus-play story when it occurs. Every number
comes from the analysis; nothing here decides anything the gates did not."""
from __future__ import annotations

import numpy as np

from .analysis import RunResult, RuntimeResult, head_to_head
from .wording import conditional_power, pct, speed_change, stat_name


def _speedup(r: RuntimeResult) -> float:
    return 1 / r.ratio[0]


def recommendation(res: RunResult) -> dict | None:
    """The fastest deployment-worthy runtime and, when another passes too, the two compared directly: their own
    per-round ratio (best / runner-up, same statistic as the gate) and its interval. A tie only when that interval
    holds 1. None if no runtime passes."""
    worthy = sorted([r for r in res.runtimes if r.verdict and r.verdict.outcome == "deployment-worthy" and r.ratio],
                    key=lambda r: r.ratio[0])
    if not worthy:
        return None
    best, out = worthy[0], {"runtime": worthy[0], "runner_up": None, "versus": None, "tie": False}
    if len(worthy) > 1:
        versus = head_to_head(best, worthy[1], res.gates.speed_statistic)
        out.update(runner_up=worthy[1], versus=versus, tie=versus is None or versus["low"] <= 1 <= versus["high"])
    return out


def _interval(x: dict | None) -> str:
    return f"{x['low']:.3f}–{x['high']:.3f}" if x else "—"


def measured_reference(res: RunResult):
    ref = res.runtime(res.reference_id)
    return ref if ref and ref.latency else None


def recommendation_text(res: RunResult, t) -> str:
    rec, ref = recommendation(res), measured_reference(res)
    if res.withheld:
        return t(f"find_withheld_{res.withheld}")
    if rec is None:
        best_undecided = [r for r in res.runtimes if r.verdict and r.verdict.outcome == "undecided" and r.ratio]
        if best_undecided:
            b = min(best_undecided, key=lambda r: r.ratio[0])
            return t("find_no_recommendation_undecided", runtime=b.rows.title, stat=stat_name(res),
                     times=f"{_speedup(b):.2f}", low=f"{1 / b.ratio[2]:.2f}", high=f"{1 / b.ratio[1]:.2f}",
                     why=undecided_why(b, t))
        return t("find_no_recommendation")
    r, q = rec["runtime"], res.gates.speed_statistic
    text = t("find_recommend", runtime=r.rows.title, stat=stat_name(res), value=f"{r.latency[q]:.3f}",
             times=f"{_speedup(r):.2f}", low=f"{1 / r.ratio[2]:.2f}", high=f"{1 / r.ratio[1]:.2f}",
             rounds=r.ratios[q]["rounds"], ref=ref.rows.title, ref_value=f"{ref.latency[q]:.3f}",
             saved=f"{ref.latency[q] - r.latency[q]:.3f}",
             same=pct(r.shadow["fraction"], 2), decisions=f"{r.shadow['decisions']:,}", seeds=f"{r.play['n']:,}")
    if rec["runner_up"] is not None:
        v, other = rec["versus"], rec["runner_up"].rows.title
        if rec["tie"]:
            text += " " + t("find_tie", other=other, stat=stat_name(res),
                            ratio=f"{v['value']:.3f}" if v else "—", interval=_interval(v))
        else:
            text += " " + t("find_ahead", other=other, stat=stat_name(res), change=speed_change(v["value"], t),
                            ratio=f"{v['value']:.3f}", interval=_interval(v), rounds=v["rounds"])
    return text


def undecided_why(r: RuntimeResult, t) -> str:
    gate = next(g for g in r.verdict.gates if g.state == "undecided")
    if gate.gate == "play" and gate.detail:
        return t("why_play_undecided", n=f"{gate.detail['n']:,}", power=conditional_power(gate.detail, t))
    if gate.gate == "faster":
        d = gate.detail
        needed = t(f"needs_{d['level']}", n=d["needed"]) if d.get("needed") else t("needs_speed_unknown")
        return t("why_faster_undecided", stat=d["statistic"].upper(), low=speed_change(gate.low, t),
                 high=speed_change(gate.high, t), threshold=pct(1 - gate.threshold, 0), needed=needed)
    return t(f"why_{gate.gate}_undecided")


def sentences(res: RunResult, t) -> list[str]:
    """The machine page's "What we found"."""
    out = [recommendation_text(res, t)]
    ref = measured_reference(res)
    ranked = sorted([r for r in res.runtimes if r.ratio], key=lambda r: r.ratio[0])
    q = res.gates.speed_statistic
    if ranked and ref:
        top = t("sep").join(t("paren", a=r.rows.title, b=f"{r.latency[q]:.3f} ms, {_speedup(r):.2f}× "
                              f"[{1 / r.ratio[2]:.2f}–{1 / r.ratio[1]:.2f}]") for r in ranked[:3])
        if len(ranked) == 1:
            out.append(t("find_speed_one", top=top, ref=ref.rows.title, stat=stat_name(res),
                         ref_value=f"{ref.latency[q]:.3f}"))
        else:
            out.append(t("find_speed", top=top, ref=ref.rows.title, stat=stat_name(res),
                         ref_value=f"{ref.latency[q]:.3f}", slowest=ranked[-1].rows.title,
                         slowest_change=speed_change(ranked[-1].ratio[0], t),
                         slowest_low=speed_change(ranked[-1].ratio[1], t),
                         slowest_high=speed_change(ranked[-1].ratio[2], t)))
    judged = [r for r in res.runtimes if r.verdict]
    for outcome in ("deployment-worthy", "not-adopted", "undecided"):
        group = [r for r in judged if r.verdict.outcome == outcome]
        if not group:
            continue
        if outcome == "deployment-worthy":
            out.append(t("find_pass", n=len(group), runtimes=t("sep").join(r.rows.title for r in group)))
        elif outcome == "not-adopted":
            out.append(t("find_fail", n=len(group), runtimes=t("semi").join(
                t("paren", a=r.rows.title, b=failed_why(r, t)) for r in group)))
        else:
            out.append(t("find_undecided", n=len(group), runtimes=t("semi").join(
                t("paren", a=r.rows.title, b=undecided_why(r, t)) for r in group)))
    story = fixed_states_vs_play(res, t)
    if story:
        out.append(story)
    return out


def failed_why(r: RuntimeResult, t) -> str:
    parts = []
    for g in r.verdict.gates:
        if g.state != "fail":
            continue
        if g.gate == "faster":
            parts.append(t("why_faster_slower" if g.detail.get("slower") else "why_faster_fail",
                           stat=g.detail["statistic"].upper(), change=speed_change(g.value, t),
                           low=speed_change(g.low, t), high=speed_change(g.high, t)))
        elif g.gate == "agreement":
            parts.append(t("why_agreement_fail", value=pct(g.value, 2)))
        else:
            parts.append(t("why_play_fail", mean=f"{g.value:+.1f}"))
    return t("sep").join(parts)


def fixed_states_vs_play(res: RunResult, t) -> str | None:
    """The study's lesson when the data show it: all fixed states agree, yet played games part."""
    group = [r for r in res.runtimes if r.agreement and r.shadow and r.agreement["same_actions"] == r.agreement["states"]
             and r.shadow["flips"] > 0 and r.shadow["episodes_with_flip"] >= 0.5 * r.shadow["episodes"]]
    if not group:
        return None
    firsts = [s for r in group for s in r.shadow["first_flip_steps"]]
    pairs: dict = {}
    for r in group:
        for k, n in r.shadow["pairs"].items():
            pairs[k] = pairs.get(k, 0) + n
    meanings = res.rows.run.get("protocol", {}).get("action_meanings") or []
    (a, b), n = max(pairs.items(), key=lambda kv: kv[1])
    name = (lambda x: meanings[x] if x < len(meanings) else str(x))
    share = n / sum(pairs.values())
    states = group[0].agreement["states"]
    # the runtimes may have shadowed different numbers of games (one decided at an earlier look): a range then
    every = all(r.shadow["episodes_with_flip"] == r.shadow["episodes"] for r in group)
    low, high = min(r.shadow["episodes"] for r in group), max(r.shadow["episodes"] for r in group)
    return t("find_story_every" if every else "find_story", runtimes=t("sep").join(r.rows.title for r in group),
             states=states,
             games=f"{min(r.shadow['episodes_with_flip'] for r in group):,}",
             episodes=f"{low:,}" if low == high else f"{low:,}–{high:,}", median=f"{np.median(firsts):.0f}",
             pair=f"{name(a)}→{name(b)}", share=pct(share, 0))
