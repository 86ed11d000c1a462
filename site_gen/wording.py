"""Verdicts and gate results in words, in the reader's language: exactly what was shown, with its interval."""
from __future__ import annotations

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


def speed_change(ratio: float, t: Translator, digits: int = 1) -> str:
    """A P95 ratio as the reader says it: "31.0 % faster", "12.6 % slower"."""
    if abs(ratio - 1) < 0.5 * 10 ** -(digits + 2):
        return t("same_speed")
    return t("faster_by", value=pct(1 - ratio, digits)) if ratio < 1 else t("slower_by", value=pct(ratio - 1, digits))


def stat_name(res) -> str:
    """The latency statistic every speed claim of a run names and pairs ("P95" or "P50": the faster gate's)."""
    return res.gates.speed_statistic.upper()


def gate_reason(g, t: Translator) -> str:
    key = f"gate_{g.gate}_{g.state}"
    if g.state == "missing":
        return t(key)
    if g.gate == "faster":
        # the interval of the ratio, read from the faster end to the slower one
        d = g.detail
        if g.state == "fail" and d.get("slower"):
            key = "gate_faster_slower"
        needed = "" if g.state != "undecided" else (t(f"needs_{d['level']}", n=d["needed"]) if d.get("needed")
                                                    else t("needs_speed_unknown"))
        return t(key, stat=d["statistic"].upper(), change=speed_change(g.value, t), low=speed_change(g.low, t),
                 high=speed_change(g.high, t), threshold=pct(1 - g.threshold, 0), rounds=d["rounds"],
                 needed=needed)
    if g.gate == "agreement":
        return t(key, value=pct(g.value, 2), low=pct(g.low, 2), high=pct(g.high, 2), threshold=pct(g.threshold, 0),
                 decisions=f"{g.detail['decisions']:,}", episodes=f"{g.detail['episodes']:,}")
    d = g.detail
    needed = "" if g.state != "undecided" else conditional_power(d, t)
    return t(key, mean=f"{d['mean']:+.2f}", low=f"{d['low']:+.2f}", high=f"{d['high']:+.2f}", n=f"{d['n']:,}",
             margin=f"{-d['margin']:.2f}", needed=needed)
