"""The machine page's two speed charts (pure): how many times as fast as the reference, and each runtime's
latency with every round as a dot. Both name their statistic; the ratio is the faster gate's, taken per round."""

from __future__ import annotations

import math

from .analysis import RunResult, head_to_head
from .chart_margins import legend_room, set_margins
from .charts import GATE_LINE, LEGEND_BELOW, ZERO_LINE, Chart, _color, _r, _rows_layout, _vline, _wrap, hover_lines
from .claims import titles
from .findings import is_tie
from .wording import stat_name


MAX_TICKS = 6  # labels like "0.5×" that a phone's plot holds side by side (more, and plotly tilts them over the title)


def ratio_ticks(low: float, high: float) -> list[float]:
    """Tick values of a log ratio axis from ``low`` to ``high``: 1-2-5 in each decade, thinned to 1-3 and then to
    the decades themselves (every second, third, … where even those are many) to at most ``MAX_TICKS``."""
    decades = range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1)
    for mults in ((1, 2, 5), (1, 3), (1,)):
        ticks = [round(m * 10**e, 6) for e in decades for m in mults]
        ticks = [v for v in ticks if low <= v <= high]
        if len(ticks) <= MAX_TICKS:
            return ticks
    return ticks[:: math.ceil(len(ticks) / MAX_TICKS)]


def speed_chart(res: RunResult, t) -> Chart | None:
    """How many times as fast as the reference (the gate's statistic, per round), sorted, with the gate's line."""
    ran = sorted([r for r in res.runtimes if r.ratio], key=lambda r: r.ratio[0])
    if not ran:
        return None
    q, stat = res.gates.speed_statistic, stat_name(res)
    names = [r.rows.title for r in ran]
    speed = [1 / r.ratio[0] for r in ran]
    hi, lo = [1 / r.ratio[1] for r in ran], [1 / r.ratio[2] for r in ran]
    # the range the next measurement will show (prediction interval), where the file has two measurements or more
    nxt = [
        (1 / e["next_high"], 1 / e["next_low"]) if e and e.get("next_low") else None
        for e in (r.ratios.get(q) for r in ran)
    ]
    gate = 1 / (1 - res.gates.min_p95_reduction)
    custom = [
        [f"{r.latency[q]:.3f}", f"{a:.2f}", f"{b:.2f}", f"{n[0]:.2f}–{n[1]:.2f}×" if n else t("none")]
        for r, a, b, n in zip(ran, lo, hi, nxt)
    ]
    trace = {
        "type": "bar",
        "orientation": "h",
        "y": names,
        "x": [_r(s, 3) for s in speed],
        "marker": {"color": [_color(res, r.rows.runtime_id) for r in ran]},
        "name": t("legend_speed_ci"),
        "error_x": {
            "type": "data",
            "symmetric": False,
            "array": [_r(h - s, 3) for h, s in zip(hi, speed)],
            "arrayminus": [_r(s - low, 3) for s, low in zip(speed, lo)],
            "color": "#1b1f24",
            "thickness": 2.5,
        },
        "customdata": custom,
        "text": [_wrap(n) for n in names],
        "textposition": "none",
        "hovertemplate": "%{text}<br>" + stat + " " + hover_lines(t("hover_speed")) + "<extra></extra>",
    }
    data = [trace]
    shown = [(r.rows.title, s, n, _color(res, r.rows.runtime_id)) for r, s, n in zip(ran, speed, nxt) if n]
    if shown:  # thin whiskers beyond the bars: what the next measurement will show (no marker of their own)
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "y": [x[0] for x in shown],
                "x": [_r(x[1], 3) for x in shown],
                "name": t("legend_speed_next"),
                "marker": {"size": 1, "opacity": 0, "color": [x[3] for x in shown]},
                "error_x": {
                    "type": "data",
                    "symmetric": False,
                    "color": "#8c959f",
                    "thickness": 1,
                    "width": 0,
                    "array": [_r(x[2][1] - x[1], 3) for x in shown],
                    "arrayminus": [_r(x[1] - x[2][0], 3) for x in shown],
                },
                "hoverinfo": "skip",
            }
        )
    # a log axis: the reference (1×) and the gate (1.11×) stand apart, and 2× and 8× are as far from each other as
    # 1× and 4× (a ratio's interval is symmetric on it); both labels right of their lines, one above the other (the
    # axis starts just left of 1×: a label left of the reference's line would stick out of a phone's plot)
    g, note = _vline(gate, GATE_LINE, t("gate_line_speed", x=f"{gate:.2f}"), "left", log=True)
    one, ref = _vline(1, ZERO_LINE, t("ref_line_speed"), "left", log=True)
    layout = _rows_layout(
        t, len(ran), t("axis_times_reference", stat=stat), names, shapes=[one, g], annotations=ref + note
    )
    low_end = min([1.0, *lo, *(n[0] for n in nxt if n)])
    high_end = max([gate, *hi, *(n[1] for n in nxt if n)])
    low, high = low_end / 1.25, high_end * 1.15
    ticks = ratio_ticks(low, high)
    layout["xaxis"].update(  # 1-2-5 ticks, each a whole label ("0.5×"), not plotly's log digits ("5")
        type="log",
        range=[math.log10(low), math.log10(high)],
        tickvals=ticks,
        ticktext=[f"{v:g}×" for v in ticks],
    )
    fig = set_margins({"data": data, "layout": layout})
    rows = [
        [
            r.rows.title,
            f"{r.latency[q]:.3f}",
            f"{s:.2f}×",
            f"{a:.2f}× – {b:.2f}×",
            f"{n[0]:.2f}× – {n[1]:.2f}×" if n else t("none"),
        ]
        for r, s, a, b, n in zip(ran, speed, lo, hi, nxt)
    ]
    csv = [
        [r.rows.runtime_id, r.latency[q], s, a, b, n[0] if n else None, n[1] if n else None]
        for r, s, a, b, n in zip(ran, speed, lo, hi, nxt)
    ]
    best = ran[0]
    ties, pairs = [], []  # compared with the fastest directly, round by round (``findings.is_tie``)
    for r in ran[1:]:
        versus = head_to_head(best, r, q)
        pairs.append(versus)
        if is_tie(versus):
            ties.append(r.rows.title)
    said = {
        "stat": stat,
        "fastest": best.rows.title,
        "times": f"{speed[0]:.2f}",
        "low": f"{lo[0]:.2f}",
        "high": f"{hi[0]:.2f}",
    }
    e = {"value": best.ratio[0], "others": [r.ratio[0] for r in ran], "named": len(ties), "versus": pairs}
    summary = (
        ("sum_speed_ties", {**said, "ties": titles(ties, t)}, "fastest_paired", e)
        if ties
        else ("sum_speed", said, "fastest_paired", e)
    )
    return Chart(
        "speed",
        fig,
        ["col_runtime", f"col_{q}_ms", "col_times", "col_ci95", "col_next95"],
        rows,
        "title_speed",
        "cap_speed",
        summary,
        csv,
    )


def latency_chart(res: RunResult, t) -> Chart | None:
    """Each round's P95 (a dot), and the published P50 (circle) and P95 (diamond, with its interval), in ms."""
    ran = [r for r in res.runtimes if r.latency]
    if not ran:
        return None
    names = [r.rows.title for r in ran]
    colors = [_color(res, r.rows.runtime_id) for r in ran]
    dots = [(r.rows.title, _color(res, r.rows.runtime_id), x["p95"]) for r in ran for x in r.latency["per_round"]]
    rounds = {
        "type": "scatter",
        "mode": "markers",
        "name": t("rounds_dots"),
        "y": [d[0] for d in dots],
        "x": [_r(d[2]) for d in dots],
        "marker": {"symbol": "circle", "size": 5, "opacity": 0.55, "color": [d[1] for d in dots]},
        "text": [_wrap(d[0]) for d in dots],
        "hovertemplate": "%{text}<br>P95 %{x:.3f} " + t("unit_ms") + "<extra></extra>",
    }
    low = [r.latency["p95_ci_low"] if r.latency["p95_ci_low"] is not None else r.latency["p95"] for r in ran]
    high = [r.latency["p95_ci_high"] if r.latency["p95_ci_high"] is not None else r.latency["p95"] for r in ran]
    p50 = {
        "type": "scatter",
        "mode": "markers",
        "name": "P50",
        "y": names,
        "x": [_r(r.latency["p50"]) for r in ran],
        "marker": {"symbol": "circle-open", "size": 11, "color": colors, "line": {"width": 2}},
        "text": [_wrap(n) for n in names],
        "hovertemplate": "%{text}<br>P50 %{x:.3f} " + t("unit_ms") + "<extra></extra>",
    }
    p95 = {
        "type": "scatter",
        "mode": "markers",
        "name": "P95",
        "y": names,
        "x": [_r(r.latency["p95"]) for r in ran],
        "marker": {"symbol": "diamond", "size": 11, "color": colors},
        "error_x": {
            "type": "data",
            "symmetric": False,
            "color": "#57606a",
            "array": [_r(h - r.latency["p95"]) for r, h in zip(ran, high)],
            "arrayminus": [_r(r.latency["p95"] - lo) for r, lo in zip(ran, low)],
        },
        "customdata": [[f"{lo:.3f}", f"{h:.3f}"] for lo, h in zip(low, high)],
        "text": [_wrap(n) for n in names],
        "hovertemplate": "%{text}<br>P95 %{x:.3f} "
        + t("unit_ms")
        + "<br>("
        + t("col_interval95")
        + " %{customdata[0]}–%{customdata[1]})<extra></extra>",
    }
    fig = {
        "data": [rounds, p50, p95],
        "layout": _rows_layout(
            t,
            len(ran),
            t("latency_ms"),
            names,
            showlegend=True,
            legend=LEGEND_BELOW,
            xaxis={"title": {"text": t("latency_ms")}, "rangemode": "tozero", "gridcolor": "#eaeef2"},
        ),
    }
    fig["layout"]["height"] += legend_room(tr["name"] for tr in fig["data"])
    set_margins(fig, legend=[tr["name"] for tr in fig["data"]])
    rows = [
        [
            r.rows.title,
            f"{r.latency['n']:,}",
            f"{r.latency['p50']:.3f}",
            f"{r.latency['p95']:.3f}",
            f"{lo:.3f}–{h:.3f}",
            f"{r.latency['p99']:.3f}",
            f"{r.latency['mean']:.3f}",
            f"{r.latency['std']:.3f}",
        ]
        for r, lo, h in zip(ran, low, high)
    ]
    csv = [
        [
            r.rows.runtime_id,
            r.latency["n"],
            r.latency["p50"],
            r.latency["p95"],
            lo,
            h,
            r.latency["p99"],
            r.latency["mean"],
            r.latency["std"],
        ]
        for r, lo, h in zip(ran, low, high)
    ]
    fastest = min(ran, key=lambda r: r.latency["p95"])
    return Chart(
        "latency",
        fig,
        [
            "col_runtime",
            "col_samples",
            "col_p50_ms",
            "col_p95_ms",
            "col_p95_ci_ms",
            "col_p99_ms",
            "col_mean_ms",
            "col_std_ms",
        ],
        rows,
        "title_latency",
        "cap_latency",
        (
            "sum_latency",
            {"fastest": fastest.rows.title, "p95": f"{fastest.latency['p95']:.3f}", "n": len(ran)},
            "fastest_point",
            {"value": fastest.latency["p95"], "others": [r.latency["p95"] for r in ran]},
        ),
        csv,
    )
