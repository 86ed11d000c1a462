"""The machine page's tables of the verdict's evidence: latency rounds, agreement on every played decision, the
play test. Each is {"head": [...], "rows": [[...]]} of formatted, translated cells (templates only place them)."""

from __future__ import annotations

import numpy as np

from rtreport import host_load, latency_stats
from rtreport.stats import MARGIN_BINS

from .analysis import RunResult
from .twin_view import play_outcome
from .i18n import Translator
from .wording import conditional_power, pct, signed, stat_name, times


def _margin_bin_label(i: int) -> str:
    lo, hi = MARGIN_BINS[i], MARGIN_BINS[i + 1]
    return f"< {hi:g}" if lo == 0 else f"≥ {lo:g}" if hi == float("inf") else f"{lo:g}–{hi:g}"


def rounds_table(res: RunResult, t: Translator) -> dict | None:
    """Per runtime: how many rounds, the lowest and highest of its per-round P50 and P95, their spread, the GPU
    during them and the gate's ratio with its interval. One column per round stopped fitting a desktop page at 15
    rounds (the protocol's and the repeats'); each round is still a dot on the speed chart and a row of
    latency.csv."""
    ran = [r for r in res.runtimes if r.latency and r.latency["rounds"]]
    if not ran:
        return None
    rows = []
    for r in ran:
        rounds = r.latency["rounds"]
        conditions = [i["conditions"].get("after") or {} for i in r.rows.round_info if i.get("conditions")]
        clocks = sorted({c["sm_clock_mhz"] for c in conditions if "sm_clock_mhz" in c})
        temps = [c["temperature_c"] for c in conditions if "temperature_c" in c]
        gpu = (
            t(
                "round_gpu",
                clock=f"{clocks[0]}–{clocks[-1]}" if len(clocks) > 1 else clocks[0],
                temp=f"{min(temps)}–{max(temps)}",
            )
            if clocks and temps
            else t("none")
        )
        spread = r.latency["spread"]
        rows.append(
            [
                r.rows.title,
                str(len(rounds)),
                _span([s["p50"] for s in rounds], lambda x: f"{x:.3f}"),
                _span([s["p95"] for s in rounds], lambda x: f"{x:.3f}"),
                f"{spread:.2f}×" + (" ⚠" if spread > 1.10 else ""),
                gpu,
                f"{times(r.ratio[0])}×" if r.ratio else t("none"),  # one scale: × the reference's speed
                f"{times(r.ratio[2])}×–{times(r.ratio[1])}×" if r.ratio else t("none"),
            ]
        )
    head = [
        t("col_runtime"),
        t("col_rounds"),
        t("col_round_p50s"),
        t("col_round_p95s"),
        t("col_round_spread"),
        t("col_round_gpu"),
        t("col_vs_reference", stat=stat_name(res)),
        t("col_vs_reference_ci"),
    ]
    return {"head": head, "rows": rows}


def _span(values, fmt) -> str:
    values = sorted(v for v in values if v is not None)
    if not values:
        return "—"
    low, high = fmt(values[0]), fmt(values[-1])
    return low if low == high else f"{low}–{high}"


def repeats_tables(res: RunResult, t: Translator) -> dict | None:
    """Where the file has later repeats: per runtime its ratio to the reference in each repeat (the gate's
    statistic, geometric mean of that repeat's rounds), and per repeat what the machine was doing then."""
    ref = res.runtime(res.reference_id)
    groups = sorted({rep for r in res.runtimes for rep, _ in r.keyed.values()})
    if ref is None or len(groups) < 2:
        return None
    q = res.gates.speed_statistic

    def name(g):
        return t("col_protocol_rounds") if g == 0 else t("col_repeat", n=g)

    rows = []
    for r in res.runtimes:
        if not r.ratios or r.is_reference:
            continue
        per = dict(
            (g, v) for g, v, _ in latency_stats.repeat_values(latency_stats.paired_ratios(r.keyed, ref.keyed, q))
        )
        interval = r.ratios.get(q)
        rows.append(
            [
                r.rows.title,
                *[f"{times(per[g])}×" if g in per else t("none") for g in groups],
                f"{times(interval['high'])}×–{times(interval['low'])}×" if interval else t("none"),
                f"{times(interval['next_high'])}×–{times(interval['next_low'])}×"
                if interval and interval["next_low"]
                else t("none"),
            ]
        )
    ratios = {
        "head": [t("col_runtime"), *[name(g) for g in groups], t("col_vs_reference_ci"), t("col_vs_reference_next")],
        "rows": rows,
    }
    again: dict = {}
    repeat_of = {
        (r.rows.runtime_id, i["round"]): int((i.get("conditions") or {}).get("repeat") or 0)
        for r in res.runtimes
        for i in r.rows.round_info
    }
    for rid, round_, _ in res.rows.retaken:
        g = repeat_of.get((rid, round_), 0)
        again.setdefault(g, set()).add((rid, round_))
    info: dict = {}
    for r in res.runtimes:
        for i in r.rows.round_info:
            c = i.get("conditions") or {}
            info.setdefault(int(c.get("repeat") or 0), {}).setdefault(i["round"], []).append((i["started_at"], c))
    conditions = []
    for g in groups:
        rounds = info.get(g, {})
        cs = [c for entries in rounds.values() for _, c in entries]
        started = sorted(s for entries in rounds.values() for s, _ in entries if s)
        conditions.append(
            [
                name(g),
                str(len(rounds)),
                started[0][:19] if started else "—",
                _span([c.get("host_load") for c in cs], lambda x: f"{x:.2f}"),
                _span([c.get("cpu_busy") for c in cs], lambda x: pct(x, 0)),
                _span([c.get("cpu_mhz") for c in cs], lambda x: f"{x:.0f}"),
                _span([(c.get("after") or {}).get("sm_clock_mhz") for c in cs], lambda x: f"{x:.0f}"),
                _span([host_load.foreign_share(c) for c in cs], lambda x: pct(x, 0)),
                str(len(again.get(g, ()))),
                str(sum(1 for entries in rounds.values() if any(host_load.loaded(c) for _, c in entries))),
            ]
        )
    head = [
        t(k)
        for k in (
            "col_measurement",
            "col_rounds",
            "col_started",
            "col_host_load",
            "col_cpu_busy",
            "col_cpu_mhz",
            "col_gpu_clock",
            "col_foreign",
            "col_retaken",
            "col_loaded",
        )
    ]
    return {
        "intro": t("repeats_intro", stat=stat_name(res)),
        "ratios": ratios,
        "conditions": {"head": head, "rows": conditions},
    }


def played_agreement_table(res: RunResult, t: Translator) -> dict | None:
    ran = [r for r in res.runtimes if r.shadow]
    if not ran:
        return None
    meanings = res.rows.run.get("protocol", {}).get("action_meanings") or []

    def name(a):
        return meanings[a] if a < len(meanings) else str(a)

    if (res.rows.run.get("protocol") or {}).get("action_kind") == "continuous":
        return _continuous_agreement_table(ran, t)
    rows = []
    for r in ran:
        s = r.shadow
        where = _first_steps(s["first_flip_steps"], t)
        pairs = t("sep").join(
            f"{name(a)}→{name(b)} ×{n}" for (a, b), n in sorted(s["pairs"].items(), key=lambda kv: -kv[1])[:3]
        ) or t("none")
        bins = t("sep").join(f"{_margin_bin_label(i)}: {f}/{d:,}" for i, (d, f) in enumerate(s["by_margin"]) if f) or t(
            "none"
        )
        same = pct(s["fraction"], 3)
        if s["zero_upper"] is not None:
            same = t("paren", a=same, b=t("zero_upper", rate=pct(s["zero_upper"], 4)))
        rows.append(
            [
                r.rows.title,
                f"{s['decisions']:,}",
                same,
                f"{pct(s['low'], 3)} – {pct(s['high'], 3)}",
                f"{s['flips']:,}",
                f"{s['episodes_with_flip']:,}/{s['episodes']:,}",
                where,
                pairs,
                bins,
            ]
        )
    head = [
        t(k)
        for k in (
            "col_runtime",
            "col_decisions",
            "col_same_share",
            "col_ci95",
            "col_flips",
            "col_episodes_flipped",
            "col_first_flip",
            "col_pairs",
            "col_flips_by_margin",
        )
    ]
    return {"head": head, "rows": rows}


def _first_steps(steps: list, t: Translator) -> str:
    """The median and range of the steps where each game's first change came."""
    return t("first_flip_at", median=f"{np.median(steps):.0f}", low=min(steps), high=max(steps)) if steps else t("none")


def _continuous_agreement_table(ran: list, t: Translator) -> dict:
    """Continuous actions: decisions within the tolerance, those outside it and the games they fell in, and the
    games where the runtime's action first differed in some bit from the reference's (where it stopped playing
    the reference's very game: it plays those seeds itself)."""
    rows = []
    for r in ran:
        s = r.shadow
        firsts = s["first_unequal_steps"] or []
        where = _first_steps(firsts, t)
        same = pct(s["fraction"], 3)
        if s["zero_upper"] is not None:
            same = t("paren", a=same, b=t("zero_upper_continuous", rate=pct(s["zero_upper"], 4)))
        rows.append(
            [
                r.rows.title,
                f"{s['decisions']:,}",
                same,
                f"{pct(s['low'], 3)} – {pct(s['high'], 3)}",
                f"{s['flips']:,}",
                f"{s['episodes_with_flip']:,}/{s['episodes']:,}",
                f"{len(firsts):,}/{s['episodes']:,}",
                where,
            ]
        )
    head = [
        t(k)
        for k in (
            "col_runtime",
            "col_decisions",
            "col_within_share",
            "col_ci95",
            "col_outside",
            "col_episodes_outside",
            "col_episodes_unequal",
            "col_first_unequal",
        )
    ]
    return {"head": head, "rows": rows}


def play_test_table(res: RunResult, t: Translator) -> dict | None:
    ran = [r for r in res.runtimes if r.play]
    if not ran:
        return None
    rows = []
    for r in ran:
        p, sec = r.play, r.secondary or {}
        played = sum(1 for e in r.rows.episodes if e["source"] is None)
        outcome = t(f"play_{play_outcome(r)}")
        if p["outcome"] == "undecided":
            outcome = t("paren", a=outcome, b=conditional_power(p, t))
        adj = p.get("adjusted")
        adjusted = f"{signed(adj['estimate'])} [{signed(adj['low'])}, {signed(adj['high'])}]" if adj else t("none")
        iqm = (
            f"{sec['iqm']:.1f} [{sec['iqm_ci'][0]:.1f}, {sec['iqm_ci'][1]:.1f}] / {sec['iqm_reference']:.1f}"
            if sec
            else t("none")
        )
        poi = f"{sec['poi']:.3f} [{sec['poi_ci'][0]:.3f}, {sec['poi_ci'][1]:.3f}]" if sec else t("none")
        check = t("check_result", matched=r.check["matched"], tested=r.check["tested"]) if r.check else t("none")
        identical = p["sd"] == 0 and p["mean"] == 0
        rows.append(
            [
                r.rows.title,
                t("paren", a=f"{p['n']:,}", b=f"{p['look'] + 1}/{p['looks']}"),
                t("play_identical_cell", n=f"{p['n']:,}") if identical else signed(p["mean"]),
                adjusted,
                t("none") if identical else f"{signed(p['low'])} … {signed(p['high'])}",
                signed(-p["margin"]),
                outcome,
                f"{p['up']}↑ {p['down']}↓",
                f"{played:,} / {len(r.rows.episodes) - played:,}",
                iqm,
                poi,
                check,
            ]
        )
    head = [
        t(k)
        for k in (
            "col_seeds_look",
            "col_mean_diff",
            "col_mean_adjusted",
            "col_rci",
            "col_margin",
            "col_outcome",
            "col_up_down",
            "col_played_established",
            "col_iqm_vs_ref",
            "col_poi",
            "col_check",
        )
    ]
    return {"head": [t("col_runtime")] + head, "rows": rows}
