"""What a machine's run found, in generated sentences (both languages): which runtime to use and why, how they
rank in speed, which pass and fail and why, and the fixed-states-versus-play story when it occurs. Every number
comes from the analysis; nothing here decides anything the gates did not."""

from __future__ import annotations


from . import claims
from .analysis import RunResult, RuntimeResult, head_to_head
from .story import fixed_states_vs_play  # noqa: F401  (read by the tests as findings')
from .claims import titles
from .wording import (
    conditional_power,
    gate_reason,
    gate_speed,
    next_range,
    pct,
    play_claim,
    play_evidence,
    rule_fraction,
    rule_key,
    signed,
    reproduction,
    rounds_text,
    speed,
    speed_evidence,
    speed_needed,
    stat_name,
)


def _speedup(r: RuntimeResult) -> float:
    return 1 / r.ratio[0]


def recommendation(res: RunResult) -> dict | None:
    """The fastest deployment-worthy runtime and, when another passes too, the two compared directly: their own
    per-round ratio (best / runner-up, same statistic as the gate) and its interval. A tie only when that interval
    holds 1. None if no runtime passes."""
    worthy = sorted(
        [r for r in res.runtimes if r.verdict and r.verdict.outcome == "deployment-worthy" and r.ratio],
        key=lambda r: r.ratio[0],
    )
    if not worthy:
        return None
    best, out = worthy[0], {"runtime": worthy[0], "runner_up": None, "versus": None, "tie": False}
    if len(worthy) > 1:
        versus = head_to_head(best, worthy[1], res.gates.speed_statistic)
        out.update(runner_up=worthy[1], versus=versus, tie=is_tie(versus))
    return out


def is_tie(versus: dict | None) -> bool:
    """Two runtimes cannot be told apart in speed: no pair measured in the same rounds, or their own ratio's 95 %
    confidence interval holds 1 and their rounds went both ways (every round one way is never a tie)."""
    return versus is None or claims.speed_kind(versus) == "speed_unresolved"


def measured_reference(res: RunResult):
    ref = res.runtime(res.reference_id)
    return ref if ref and ref.latency else None


def recommendation_text(res: RunResult, t, versus: bool = True) -> str:
    """``versus``: with the runner-up compared directly (left out where the trade-off's speed sentence says it)."""
    rec, ref = recommendation(res), measured_reference(res)
    if res.withheld:
        return t(f"find_withheld_{res.withheld}")
    if rec is None:
        best_undecided = [r for r in res.runtimes if r.verdict and r.verdict.outcome == "undecided" and r.ratio]
        if best_undecided:
            b = min(best_undecided, key=lambda r: r.ratio[0])
            e = {"value": b.ratio[0], "others": [r.ratio[0] for r in best_undecided]}
            return claims.say(
                t,
                "fastest_point",
                "find_no_recommendation_undecided",
                e,
                b.rows.runtime_id,
                runtime=b.rows.title,
                stat=stat_name(res),
                times=f"{_speedup(b):.2f}",
                low=f"{1 / b.ratio[2]:.2f}",
                high=f"{1 / b.ratio[1]:.2f}",
                why=undecided_why(b, t),
            )
        return t("find_no_recommendation")
    r, q = rec["runtime"], res.gates.speed_statistic
    others = [x.ratio[0] for x in res.runtimes if x.verdict and x.verdict.outcome == "deployment-worthy" and x.ratio]
    evidence = {"outcome": r.verdict.outcome, "ratio": r.ratio[0], "others": others}
    text = claims.say(
        t,
        "recommend",
        "find_recommend",
        evidence,
        r.rows.runtime_id,
        runtime=r.rows.title,
        stat=stat_name(res),
        value=f"{r.latency[q]:.3f}",
        margin=f"{r.play['margin']:.2f}",
        times=f"{_speedup(r):.2f}",
        low=f"{1 / r.ratio[2]:.2f}",
        high=f"{1 / r.ratio[1]:.2f}",
        rounds=rounds_text(r.ratios[q], t),
        next=next_range(r.ratios[q], t),
        ref=ref.rows.title,
        ref_value=f"{ref.latency[q]:.3f}",
        saved=f"{ref.latency[q] - r.latency[q]:.3f}",
        same=pct(r.shadow["fraction"], 2),
        decisions=f"{r.shadow['decisions']:,}",
        seeds=f"{r.play['n']:,}",
        play=play_claim(r.play, t, r.rows.runtime_id),
    )
    if r.reproduction and r.reproduction["reproducible"] is not True:  # part of the verdict a deployer must know
        text += " " + t("find_recommend_not_reproducible", why=reproduction(r.reproduction, t, r.rows.runtime_id))
    if rec["runner_up"] is not None and versus:
        v, other = rec["versus"], rec["runner_up"].rows.title
        if v is None:
            text += " " + t("find_tie_unpaired", other=other)
        else:  # the runner-up sentence claims what the two's own per-round ratio licenses, as its speed claim does
            pair = f"{r.rows.runtime_id}/{rec['runner_up'].rows.runtime_id}"
            text += " " + claims.say(
                t,
                claims.speed_kind(v),
                "find_tie" if rec["tie"] else "find_ahead",
                v,
                pair,
                other=other,
                stat=stat_name(res),
                rounds=rounds_text(v, t),
                speed=speed(v, t, pair, t("whose_runtime", runtime=other)),
            )
    return text


def _identical(p: dict) -> bool:
    return p["sd"] == 0 and p["mean"] == 0


def fastest_exact(res: RunResult):
    """The fastest runtime that passes, never flipped a played decision and is shown reproducible between processes
    (``rtreport.reproducibility.standing``), or None."""
    adopted = [r for r in res.runtimes if r.verdict and r.verdict.outcome == "deployment-worthy" and r.ratio]
    return min((r for r in adopted if _exact(r)), key=lambda r: r.ratio[0], default=None)


def _exact(r: RuntimeResult) -> bool:
    """The reference's action at every played decision, and reproducible; continuous actions: equal bit for bit
    (within the tolerance is agreement, not exactness)."""
    return _same_in_play(r) and _reproducible(r)


def _same_in_play(r: RuntimeResult) -> bool:
    counts = r.rows.shadow_differences
    return bool(r.shadow and r.shadow["flips"] == 0 and (not counts or counts[0] == sum(counts)))


def _reproducible(r: RuntimeResult) -> bool:
    return bool(r.reproduction and r.reproduction["reproducible"] is True)


def _none_exact_key(adopted: list) -> str:
    """Why none of the runtimes that pass is exact and reproducible, as far as the data say: each changed an action
    in play (``_inexact``), each is not shown reproducible (``_unshown``), or some one and some the other."""
    inexact = [not _same_in_play(r) for r in adopted]
    unshown = [not _reproducible(r) for r in adopted]
    why = "_inexact" if all(inexact) and not any(unshown) else "_unshown" if all(unshown) and not any(inexact) else ""
    return claims.count_key("trade_none_exact" + why, len(adopted))


def trade_off(res: RunResult, t) -> list[str]:
    """What the recommendation trades away: the fastest runtime that passes against the fastest exact and
    reproducible one (the reference's action on every decision played, the same bits in fresh processes), in speed,
    agreement and play, one sentence each, and in reproducibility where the fastest is not shown reproducible."""
    rec = recommendation(res)
    if rec is None:
        return []
    fast = rec["runtime"]
    adopted = [r for r in res.runtimes if r.verdict and r.verdict.outcome == "deployment-worthy" and r.ratio]
    exact = sorted([r for r in adopted if _exact(r)], key=lambda r: r.ratio[0])
    if not exact:
        return [t(_none_exact_key(adopted), n=len(adopted))]
    best = exact[0]
    claims.say(
        t,
        "fastest_exact",
        "trade_exact_title",
        {"flips": best.shadow["flips"], "ratio": best.ratio[0], "others": [r.ratio[0] for r in exact]},
        best.rows.runtime_id,
    )
    if best is fast:
        return [
            claims.say(
                t,
                "exact",
                "trade_is_exact",
                best.shadow,
                fast.rows.runtime_id,
                decisions=f"{best.shadow['decisions']:,}",
            )
        ]
    q, out = res.gates.speed_statistic, []
    v = head_to_head(fast, best, q)
    pair = f"{fast.rows.runtime_id}/{best.rows.runtime_id}"
    # "the fastest exact" outright only where its own ratio to the next exact one lies below 1; else by point
    # estimate, the next one named
    second = exact[1] if len(exact) > 1 else None
    versus = head_to_head(best, second, q) if second is not None else None
    point = "_point" if second is not None and (versus is None or versus["high"] >= 1) else ""
    named = {"second": second.rows.title} if point else {}
    out.append(
        t("trade_speed_unpaired" + point, fast=fast.rows.title, exact=best.rows.title, **named)
        if v is None
        else claims.say(
            t,
            claims.speed_kind(v),
            "trade_speed" + point,
            v,
            pair,
            fast=fast.rows.title,
            exact=best.rows.title,
            stat=stat_name(res),
            rounds=rounds_text(v, t),
            speed=speed(v, t, pair, t("whose_runtime", runtime=best.rows.title)),
            **named,
        )
    )
    s = fast.shadow
    lowest = ""
    if len(adopted) > 2:
        e = {"value": s["fraction"], "others": [r.shadow["fraction"] for r in adopted]}
        if claims.check("lowest_of", e):
            lowest = claims.say(t, "lowest_of", "trade_lowest_agreement", e, fast.rows.runtime_id, n=len(adopted))
    out.append(
        claims.say(
            t,
            "exact",
            "trade_agreement",
            best.shadow,
            best.rows.runtime_id,
            fast=fast.rows.title,
            same=pct(s["fraction"], 2),
            decisions=f"{s['decisions']:,}",
            flips=f"{s['flips']:,}",
            games=f"{s['episodes_with_flip']:,}",
            episodes=f"{s['episodes']:,}",
            lowest=lowest,
            exact=best.rows.title,
            exact_decisions=f"{best.shadow['decisions']:,}",
        )
    )
    p, b = fast.play, best.play
    lowest = ""
    if len(adopted) > 2:
        e = {"value": p["mean"], "others": [r.play["mean"] for r in adopted]}
        if claims.check("lowest_of", e):
            lowest = claims.say(t, "lowest_of", "trade_lowest_play", e, fast.rows.runtime_id, n=len(adopted))

    def said(x, rid):
        return (
            t("trade_play_identical")
            if _identical(x)
            else claims.say(
                t,
                "score_difference",
                "trade_play_mean",
                x,
                rid,
                mean=signed(x["mean"]),
                low=signed(x["low"]),
                high=signed(x["high"]),
            )
        )

    out.append(
        claims.say(
            t,
            "both_non_inferior",
            "trade_play",
            {"outcomes": [p["outcome"], b["outcome"]]},
            pair,
            fast=fast.rows.title,
            exact=best.rows.title,
            fast_play=said(p, fast.rows.runtime_id),
            exact_play=said(b, best.rows.runtime_id),
            lowest=lowest,
            margin=t(rule_key(p, t, "trade_margin_same"), margin=f"{p['margin']:.2f}", fraction=rule_fraction(p))
            if f"{p['margin']:.2f}" == f"{b['margin']:.2f}"
            else t(
                rule_key(p, t, "trade_margins"),
                fast=f"{p['margin']:.2f}",
                exact=f"{b['margin']:.2f}",
                fraction=rule_fraction(p),
            ),
        )
    )
    if fast.reproduction and fast.reproduction["reproducible"] is not True:  # what else separates them
        out.append(
            t(
                "trade_reproduction",
                fast=fast.rows.title,
                exact=best.rows.title,
                fast_repro=reproduction(fast.reproduction, t, fast.rows.runtime_id),
                exact_repro=reproduction(best.reproduction, t, best.rows.runtime_id),
            )
        )
    return out


def undecided_why(r: RuntimeResult, t) -> str:
    gate = next(g for g in r.verdict.gates if g.state == "undecided")
    if gate.detail.get("twin_differed"):  # undecided whatever its interval says (verdict.judge)
        return gate_reason(gate, t, r.rows.runtime_id)
    if gate.gate == "play" and gate.detail:
        return claims.say(
            t,
            "play_undecided",
            "why_play_undecided",
            play_evidence(gate.detail),
            r.rows.runtime_id,
            n=f"{gate.detail['n']:,}",
            power=conditional_power(gate.detail, t),
        )
    if gate.gate == "faster":
        d, e = gate.detail, speed_evidence(gate)
        if not d.get("confirmed", True):
            return claims.say(
                t,
                "gate_faster_unconfirmed",
                claims.count_key("why_faster_unconfirmed", d["measurements"]),
                e,
                r.rows.runtime_id,
                stat=d["statistic"].upper(),
                have=d["measurements"],
                least=d["min_measurements"],
            )
        return claims.say(
            t,
            "gate_faster_straddles",
            "why_faster_undecided",
            e,
            r.rows.runtime_id,
            stat=d["statistic"].upper(),
            times=f"{1 / gate.value:.2f}",
            low=f"{1 / gate.high:.2f}",
            high=f"{1 / gate.low:.2f}",
            gate=gate_speed(gate),
            needed=speed_needed(gate, t),
        )
    return claims.say(
        t,
        "agreement_straddles",
        "why_agreement_undecided",
        {"low": gate.low, "high": gate.high, "gate": gate.threshold},
        r.rows.runtime_id,
        low=pct(gate.low, 2),
        high=pct(gate.high, 2),
        threshold=pct(gate.threshold, 0),
    )


def sentences(res: RunResult, t) -> list[str]:
    """The machine page's "What we found"."""
    trade, rec = trade_off(res, t), recommendation(res)
    # the runner-up is the fastest exact runtime: the trade-off's speed sentence compares the two already
    said = len(trade) >= 3 and rec["runner_up"] is not None and rec["runner_up"] is fastest_exact(res)
    out = [recommendation_text(res, t, versus=not said), *trade]
    ref = measured_reference(res)
    ranked = sorted([r for r in res.runtimes if r.ratio], key=lambda r: r.ratio[0])
    q = res.gates.speed_statistic
    if ranked and ref:
        top = t("semi").join(
            t(
                "paren",
                a=r.rows.title,
                b=t(
                    "find_speed_item",
                    value=f"{r.latency[q]:.3f}",
                    times=f"{_speedup(r):.2f}",
                    low=f"{1 / r.ratio[2]:.2f}",
                    high=f"{1 / r.ratio[1]:.2f}",
                ),
            )
            for r in ranked[:3]
        )
        e = {"values": [r.ratio[0] for r in ranked]}  # in the order of their point estimates, each with its interval
        if len(ranked) == 1:
            out.append(
                claims.say(
                    t,
                    "ranked_point",
                    "find_speed_one",
                    e,
                    res.reference_id,
                    top=top,
                    ref=ref.rows.title,
                    stat=stat_name(res),
                    ref_value=f"{ref.latency[q]:.3f}",
                )
            )
        else:
            out.append(
                claims.say(
                    t,
                    "ranked_point",
                    "find_speed",
                    e,
                    res.reference_id,
                    top=top,
                    ref=ref.rows.title,
                    stat=stat_name(res),
                    ref_value=f"{ref.latency[q]:.3f}",
                    slowest=ranked[-1].rows.title,
                    slowest_speed=speed(ranked[-1].ratios[q], t, ranked[-1].rows.runtime_id),
                )
            )
    judged = [r for r in res.runtimes if r.verdict]
    for outcome in ("deployment-worthy", "not-adopted", "undecided"):
        group = [r for r in judged if r.verdict.outcome == outcome]
        if not group:
            continue
        e = {"outcomes": [r.verdict.outcome for r in group], "n": len(group)}
        key = claims.count_key(
            {"deployment-worthy": "find_pass", "not-adopted": "find_fail", "undecided": "find_undecided"}[outcome],
            len(group),
        )
        if outcome == "deployment-worthy":
            named = titles([r.rows.title for r in group], t)
        else:
            why = failed_why if outcome == "not-adopted" else undecided_why
            named = t("semi").join(t("paren", a=r.rows.title, b=why(r, t)) for r in group)
        out.append(claims.say(t, "verdict_group", key, e, outcome, n=len(group), runtimes=named))
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
            e = speed_evidence(g)
            kind = "gate_faster_slower" if g.detail.get("slower") else "gate_faster_short"
            parts.append(
                claims.say(
                    t,
                    kind,
                    "why_faster_slower" if g.detail.get("slower") else "why_faster_fail",
                    e,
                    r.rows.runtime_id,
                    stat=g.detail["statistic"].upper(),
                    speed=speed(e, t, r.rows.runtime_id),
                    gate=gate_speed(g),
                )
            )
        elif g.gate == "agreement":
            parts.append(
                claims.say(
                    t,
                    "agreement_fail",
                    "why_agreement_fail",
                    {"low": g.low, "high": g.high, "gate": g.threshold},
                    r.rows.runtime_id,
                    value=pct(g.value, 2),
                    high=pct(g.high, 2),
                    threshold=pct(g.threshold, 0),
                )
            )
        else:
            parts.append(
                claims.say(
                    t,
                    "play_inferior",
                    "why_play_fail",
                    play_evidence(g.detail),
                    r.rows.runtime_id,
                    mean=signed(g.value),
                    high=signed(g.high),
                    margin=f"{g.detail['margin']:.2f}",
                )
            )
    return t("sep").join(parts)
