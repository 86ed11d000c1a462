"""Verdicts and gate results in words, in the reader's language: exactly what was shown, with its interval."""

from __future__ import annotations

from rtreport.stats import percent as pct

from . import claims
from .i18n import Translator

# why a run draws no verdicts (``RunResult.withheld``), as the pages say it
WITHHELD_REASON = {
    "no-reference": "reason_no_reference",
    "reference-not-measured": "reason_no_reference",
    "invalid": "reason_invalid_file",
    "smoke": "reason_smoke_profile",
}


def signed(x: float, digits: int = 2) -> str:
    """A signed figure as typeset, with the minus sign (U+2212), not the hyphen: "+3.88", "−11.50"; a zero margin
    is "0", neither "+0.00" nor "−0.00"."""
    if x == 0:
        return "0"
    return f"{x:+.{digits}f}".replace("-", "\u2212")


def chance(x: float) -> str:
    """A probability as a whole percentage, never "0 %" or "100 %" for one that is neither: "< 1 %", "> 99 %"."""
    return "< 1 %" if x < 0.005 else "> 99 %" if x > 0.995 else f"{x * 100:.0f} %"


def conditional_power(d: dict, t: Translator) -> str:
    """While the play test is undecided: its chance of still ending non-inferior with the looks left, or that
    none is left."""
    cp = d.get("conditional_power")
    if not cp:
        return t("play_no_look_left")
    return t("play_cp", looks=cp["looks_left"], design=chance(cp["design"]), observed=chance(cp["observed"]))


def stat_name(res) -> str:
    """The latency statistic every speed claim of a run names and pairs ("P95" or "P50": the faster gate's)."""
    return res.gates.speed_statistic.upper()


def rounds_text(e: dict, t: Translator) -> str:
    """What an interval rests on: its rounds, and the independent measurements they come from (the machine's boots,
    or fresh processes: the run and its repeats), or that they come from one process."""
    if e.get("level") == "boots":
        return t("n_rounds_boots", n=e["rounds"], groups=e["measurements"], boots=e["boots"])
    if e.get("level") == "repeats":
        return t(
            claims.count_key("n_rounds_repeats", e["repeats"]),
            n=e["rounds"],
            repeats=e["repeats"],
            groups=e["measurements"],
        )
    return t("n_rounds", n=e["rounds"])


def times(ratio: float) -> str:
    """A latency ratio (candidate / reference) as a speed: "3.49" (× the reference's speed)."""
    return f"{1 / ratio:.2f}"


def speed(e: dict, t: Translator, subject: str | None = None, whose: str | None = None) -> str:
    """A latency ratio (``value``, ``low``, ``high``: its 95 % confidence interval; ``rounds``, ``below``, ``above``:
    its rounds and how many of them fell under / over 1) said on one scale, as a speed: "3.49× the reference's
    speed (95 % CI 2.10–5.80×)" (``whose``: whose speed, the reference's by default). An interval that holds 1×
    says so: "no difference shown" only where the rounds went both ways; where every round went one way it says
    that, and no tie."""
    kind = claims.speed_kind(e)
    params = {
        "times": times(e["value"]),
        "low": times(e["high"]),
        "high": times(e["low"]),
        "whose": whose or t("whose_reference"),
    }
    if kind == "speed_every_round":
        params.update(
            rounds=e["rounds"],
            measurements=e.get("measurements") or 1,
            direction=t("round_faster" if e["below"] == e["rounds"] else "round_slower"),
        )
    return claims.say(t, kind, kind, e, subject, **params)


def next_range(e: dict, t: Translator) -> str:
    """The range a next measurement of this machine will show (the 95 % prediction interval), as a speed; "" where
    there is none (one measurement)."""
    if e.get("next_low") is None or e.get("next_high") is None:
        return ""
    return t("speed_next", low=times(e["next_high"]), high=times(e["next_low"]))


def gate_speed(g) -> str:
    """The faster gate as a speed: a ratio of at most 0.90 is "1.11" (× the reference's speed)."""
    return times(g.threshold)


def interval(low, high, value=None) -> dict:
    return {"value": value, "low": low, "high": high}


FASTER_KINDS = {"pass": "gate_faster_pass", "undecided": "gate_faster_straddles"}
AGREEMENT_KINDS = {"pass": "agreement_pass", "fail": "agreement_fail", "undecided": "agreement_straddles"}
PLAY_KINDS = {"pass": "play_non_inferior", "fail": "play_inferior", "undecided": "play_undecided"}


def faster_kind(g) -> str:
    if not g.detail.get("confirmed", True):
        return "gate_faster_unconfirmed"
    if g.state == "fail":
        return "gate_faster_slower" if g.detail.get("slower") else "gate_faster_short"
    return FASTER_KINDS[g.state]


def speed_evidence(g) -> dict:
    """What a faster gate's sentence is checked against: its interval, the gate, its rounds' directions and its
    measurements."""
    d = g.detail
    return {
        "value": g.value,
        "low": g.low,
        "high": g.high,
        "gate": g.threshold,
        "rounds": d["rounds"],
        "below": d.get("below") or 0,
        "above": d.get("above") or 0,
        "measurements": d.get("measurements", 1),
        "min_measurements": d.get("min_measurements", 3),
    }


def load_text(load: dict | None, t: Translator) -> str:
    """Beside a speed verdict, where any of its rounds (or the reference's) ran under other processes' load: how
    many were measured again and how many still ran loaded; "" where none did."""
    if not load or not (load["retaken"] or load["loaded"]):
        return ""
    return t("gate_faster_load", retaken=load["retaken"], loaded=load["loaded"], rounds=load["rounds"])


def speed_needed(g, t: Translator) -> str:
    """For an undecided faster gate: how many measurements in all would decide it at the spread seen."""
    d = g.detail
    if g.state != "undecided":
        return ""
    if not d.get("needed"):
        return t("needs_speed_unknown")
    key = "needs_boots" if d.get("level") == "boots" else "needs_repeats"
    return t(key, n=d["needed"], have=d.get("measurements", 1))


def play_evidence(d: dict) -> dict:
    return {k: d[k] for k in ("outcome", "mean", "low", "high", "margin", "sd", "n")}


def play_claim(d: dict, t: Translator, subject: str | None = None, prefix: str = "gate_play") -> str:
    """The play test's result as its outcome licenses it; a pair identical on every seed says so, not "+0.00 to
    +0.00"."""
    e = play_evidence(d)
    state = {"non-inferior": "pass", "inferior": "fail", "undecided": "undecided"}[d["outcome"]]
    if state == "pass" and claims.check("play_identical", e):
        return claims.say(
            t,
            "play_identical",
            rule_key(d, t, f"{prefix}_identical"),
            e,
            subject,
            n=f"{d['n']:,}",
            margin=f"{d['margin']:.2f}",
            fraction=rule_fraction(d),
        )
    needed = "" if state != "undecided" else conditional_power(d, t)
    return claims.say(
        t,
        PLAY_KINDS[state],
        rule_key(d, t, f"{prefix}_{state}"),
        e,
        subject,
        mean=signed(d["mean"]),
        low=signed(d["low"]),
        high=signed(d["high"]),
        n=f"{d['n']:,}",
        margin=f"{d['margin']:.2f}",
        needed=needed,
        fraction=rule_fraction(d),
    )


def rule_key(d: dict, t: Translator, key: str) -> str:
    """The sentence ``key`` of the rule that set the play test's margin: the gain-over-random rule's sentences are
    their own messages (``<key>_random``, and ``<key>_nogain`` where the reference gained nothing over random play,
    so that the margin is zero); the reference-mean rule's (Breakout's, every earlier file) the plain ones."""
    if d.get("rule") != "gain-over-random":
        return key
    if d.get("margin") == 0 and t.has(key + "_nogain"):
        return key + "_nogain"
    return key + "_random" if t.has(key + "_random") else key


def rule_fraction(d: dict) -> str:
    return pct(d["fraction"], 0) if d.get("rule") == "gain-over-random" and d.get("fraction") is not None else ""


def gate_reason(g, t: Translator, subject: str | None = None) -> str:
    key = f"gate_{g.gate}_{g.state}"
    if g.state == "missing":
        return t(key)
    if g.detail.get("twin_differed"):
        d = g.detail["twin_differed"]
        return claims.say(
            t,
            "twin_differed",
            f"gate_{g.gate}_twin_differed",
            _twin_evidence(d),
            subject,
            twin=claims.titles(d["titles"], t),
            differing=f"{d['differing']:,}",
            checked=f"{d['checked']:,}",
        )
    if g.gate == "faster":
        d = g.detail
        kind = faster_kind(g)
        e = speed_evidence(g)
        return claims.say(
            t,
            kind,
            kind,
            e,
            subject,
            stat=d["statistic"].upper(),
            speed=speed(e, t, subject),
            gate=gate_speed(g),
            rounds=rounds_text(d, t),
            needed=speed_needed(g, t),
            least=d.get("min_measurements", 3),
            next=next_range(d, t),
        ) + load_text(d.get("load"), t)
    if g.gate == "agreement":
        e = {"low": g.low, "high": g.high, "gate": g.threshold}
        return claims.say(
            t,
            AGREEMENT_KINDS[g.state],
            key,
            e,
            subject,
            value=pct(g.value, 2),
            low=pct(g.low, 2),
            high=pct(g.high, 2),
            threshold=pct(g.threshold, 0),
            decisions=f"{g.detail['decisions']:,}",
            episodes=f"{g.detail['episodes']:,}",
        )
    return play_claim(g.detail, t, subject)


def reproduction(d: dict, t: Translator, subject: str | None = None) -> str:
    """The fixed states again in fresh processes: shown reproducible (enough repeats, the same bits every time),
    not reproducible (the worst repeat's counts), or not shown (too few repeats that count, with the counts)."""
    e = {
        k: d[k]
        for k in (
            "reproducible",
            "repeats",
            "fresh",
            "needed",
            "differing_repeats",
            "states",
            "q_differ",
            "action_differ",
        )
    }
    if d["reproducible"] is True:
        key = "repro_same_compiled" if d["compiled"] else "repro_same"
        return claims.say(
            t, "reproducible", key, e, subject, states=d["states"], repeats=d["repeats"], fresh=d["fresh"]
        )
    if d["reproducible"] is None:
        key = "repro_unshown_compiled" if d["compiled"] else claims.count_key("repro_unshown", d["repeats"])
        return claims.say(
            t,
            "reproducibility_not_shown",
            key,
            e,
            subject,
            states=d["states"],
            repeats=d["repeats"],
            fresh=d["fresh"],
            needed=d["needed"],
        )
    actions = t("repro_no_action") if not d["action_differ"] else t("repro_actions", n=d["action_differ"])
    return claims.say(
        t,
        "not_reproducible",
        claims.count_key("repro_differ", d["repeats"]),
        e,
        subject,
        q=d["q_differ"],
        states=d["states"],
        actions=actions,
        bad=d["differing_repeats"],
        repeats=d["repeats"],
    )


def _twin_evidence(d: dict) -> dict:
    return {k: d[k] for k in ("decisions", "checked", "differing")}


def twin(d: dict, t: Translator, subject: str | None = None) -> str:
    """In play, its CUDA-graph twin computed its decisions: how many, and what the runtime's own recomputation of
    one in ``every`` found."""
    kind = "twin_differed" if d["differing"] else "twin_checked"
    return claims.say(
        t,
        kind,
        kind,
        _twin_evidence(d),
        subject,
        twin=claims.titles(d["titles"], t),
        decisions=f"{d['decisions']:,}",
        checked=f"{d['checked']:,}",
        differing=f"{d['differing']:,}",
        every=d["every"] or "?",
    )


def stood_in(d: dict, t: Translator, subject: str | None = None) -> str:
    """It computed the reference's decisions in some of the reference's games (its CUDA-graph capture): what of
    those games counts for its agreement."""
    return claims.say(
        t, "twin_stood_in", "twin_stood_in", d, subject, games=f"{d['games']:,}", checked=f"{d['checked']:,}"
    )
