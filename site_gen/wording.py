"""Verdicts and gate results in words, in the reader's language: exactly what was shown, with its interval."""
from __future__ import annotations

from . import claims
from .i18n import Translator


def pct(x: float, digits: int = 1) -> str:
    """A share as a percentage with ``digits`` decimals, and more where those would round a share that is not all
    (or not none) to 100 (or 0): 181,294 of 181,295 is "99.999 %", never "100.00 %"."""
    text = f"{x * 100:.{digits}f}"
    while (0 < x < 1) and float(text) in (0.0, 100.0) and digits < 12:
        digits += 1
        text = f"{x * 100:.{digits}f}"
    return f"{text} %"


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
    """How many rounds an interval comes from, and, where it is the two-level one, that they are the run's and its
    repeats' ("15 rounds of the run and 2 repeats")."""
    if e.get("level") == "boots":
        return t("n_rounds_boots", n=e["rounds"], groups=e["repeats"] + 1, boots=e["boots"])
    if e.get("level") == "repeats" and e.get("repeats"):
        return t(claims.count_key("n_rounds_repeats", e["repeats"]), n=e["rounds"], repeats=e["repeats"],
                 groups=e["repeats"] + 1)
    return t("n_rounds", n=e["rounds"])


def speed(e: dict, t: Translator, subject: str | None = None) -> str:
    """A latency ratio (``value``, ``low``, ``high``) with its 95 % interval as the reader says it: "31.0 % faster"
    only when the whole interval is faster, "slower" only when all of it is slower, otherwise no direction."""
    kind = claims.speed_kind(e)
    if kind == "speed_unresolved":
        return claims.say(t, kind, kind, e, subject, ratio=f"{e['value']:.3f}", low=f"{e['low']:.3f}",
                          high=f"{e['high']:.3f}")
    if kind == "speed_faster":
        return claims.say(t, kind, kind, e, subject, value=pct(1 - e["value"]), low=pct(1 - e["high"]),
                          high=pct(1 - e["low"]))
    return claims.say(t, kind, kind, e, subject, value=pct(e["value"] - 1), low=pct(e["low"] - 1),
                      high=pct(e["high"] - 1))


def interval(low, high, value=None) -> dict:
    return {"value": value, "low": low, "high": high}


FASTER_KINDS = {"pass": "gate_faster_pass", "undecided": "gate_faster_straddles"}
AGREEMENT_KINDS = {"pass": "agreement_pass", "fail": "agreement_fail", "undecided": "agreement_straddles"}
PLAY_KINDS = {"pass": "play_non_inferior", "fail": "play_inferior", "undecided": "play_undecided"}


def faster_kind(g) -> str:
    if g.state == "fail":
        return "gate_faster_slower" if g.detail.get("slower") else "gate_faster_short"
    return FASTER_KINDS[g.state]


def play_evidence(d: dict) -> dict:
    return {k: d[k] for k in ("outcome", "mean", "low", "high", "margin", "sd", "n")}


def play_claim(d: dict, t: Translator, subject: str | None = None, prefix: str = "gate_play") -> str:
    """The play test's result as its outcome licenses it; a pair identical on every seed says so, not "+0.00 to
    +0.00"."""
    e = play_evidence(d)
    state = {"non-inferior": "pass", "inferior": "fail", "undecided": "undecided"}[d["outcome"]]
    if state == "pass" and claims.check("play_identical", e):
        return claims.say(t, "play_identical", f"{prefix}_identical", e, subject, n=f"{d['n']:,}",
                          margin=f"{d['margin']:.2f}")
    needed = "" if state != "undecided" else conditional_power(d, t)
    return claims.say(t, PLAY_KINDS[state], f"{prefix}_{state}", e, subject, mean=f"{d['mean']:+.2f}",
                      low=f"{d['low']:+.2f}", high=f"{d['high']:+.2f}", n=f"{d['n']:,}", margin=f"{d['margin']:.2f}",
                      needed=needed)


def gate_reason(g, t: Translator, subject: str | None = None) -> str:
    key = f"gate_{g.gate}_{g.state}"
    if g.state == "missing":
        return t(key)
    if g.detail.get("twin_differed"):
        d = g.detail["twin_differed"]
        return claims.say(t, "twin_differed", f"gate_{g.gate}_twin_differed", _twin_evidence(d), subject,
                          twin=claims.titles(d["titles"], t), differing=f"{d['differing']:,}",
                          checked=f"{d['checked']:,}")
    if g.gate == "faster":
        d = g.detail
        kind = faster_kind(g)
        needed = "" if g.state != "undecided" else (t(f"needs_{d['level']}", n=d["needed"], have=d[d["level"]])
                                                    if d.get("needed")
                                                    else t("needs_speed_unknown"))
        e = {"value": g.value, "low": g.low, "high": g.high, "gate": g.threshold}
        return claims.say(t, kind, kind, e, subject, stat=d["statistic"].upper(), speed=speed(e, t, subject),
                          threshold=pct(1 - g.threshold, 0), rounds=rounds_text(d, t), needed=needed)
    if g.gate == "agreement":
        e = {"low": g.low, "high": g.high, "gate": g.threshold}
        return claims.say(t, AGREEMENT_KINDS[g.state], key, e, subject, value=pct(g.value, 2), low=pct(g.low, 2),
                          high=pct(g.high, 2), threshold=pct(g.threshold, 0),
                          decisions=f"{g.detail['decisions']:,}", episodes=f"{g.detail['episodes']:,}")
    return play_claim(g.detail, t, subject)


def reproduction(d: dict, t: Translator, subject: str | None = None) -> str:
    """The fixed states again in fresh processes: the same bits every time, or the worst repeat's counts."""
    e = {k: d[k] for k in ("reproducible", "repeats", "differing_repeats", "states", "q_differ", "action_differ")}
    if d["reproducible"]:
        return claims.say(t, "reproducible", claims.count_key("repro_same", d["repeats"]), e, subject,
                          states=d["states"], repeats=d["repeats"])
    actions = t("repro_no_action") if not d["action_differ"] else t("repro_actions", n=d["action_differ"])
    return claims.say(t, "not_reproducible", claims.count_key("repro_differ", d["repeats"]), e, subject,
                      q=d["q_differ"], states=d["states"], actions=actions, bad=d["differing_repeats"],
                      repeats=d["repeats"])


def _twin_evidence(d: dict) -> dict:
    return {k: d[k] for k in ("decisions", "checked", "differing")}


def twin(d: dict, t: Translator, subject: str | None = None) -> str:
    """In play, its CUDA-graph twin computed its decisions: how many, and what the runtime's own recomputation of
    one in ``every`` found."""
    kind = "twin_differed" if d["differing"] else "twin_checked"
    return claims.say(t, kind, kind, _twin_evidence(d), subject, twin=claims.titles(d["titles"], t),
                      decisions=f"{d['decisions']:,}", checked=f"{d['checked']:,}", differing=f"{d['differing']:,}",
                      every=d["every"] or "?")


def stood_in(d: dict, t: Translator, subject: str | None = None) -> str:
    """It computed the reference's decisions in some of the reference's games (its CUDA-graph capture): what of
    those games counts for its agreement."""
    return claims.say(t, "twin_stood_in", "twin_stood_in", d, subject, games=f"{d['games']:,}",
                      checked=f"{d['checked']:,}")
