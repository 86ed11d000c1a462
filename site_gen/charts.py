"""Plotly figure specs (plain dicts for rtreport's partial plotly.js bundle: scatter and bar traces) and their data
tables; pure, no I/O.

Every chart answers one question and draws the decision into it: a gate's threshold is a line, an interval is an
error bar, runtimes are rows of horizontal bars (long names read on a phone), one colour per runtime across charts.
Each is a ``Chart``: the figure, the table of the numbers it draws (the page's fallback and CSV), its title,
caption and screen-reader summary keys in the i18n catalogs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field


from .analysis import RunResult
from .chart_margins import legend_room, set_margins
from .claims import count_key, titles

# Sixteen distinguishable colours (Plotly's ten, then six darker ones): one per runtime, the same in every chart.
PALETTE = [
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
    "#393b79",
    "#ad494a",
    "#637939",
    "#7b4173",
    "#e7ba52",
    "#3182bd",
]
FONT = {
    "family": "system-ui, -apple-system, 'Noto Sans TC', 'PingFang TC', 'Microsoft JhengHei', sans-serif",
    "size": 13,
}
GATE_LINE = {"color": "#cf222e", "width": 2, "dash": "dash"}
ZERO_LINE = {"color": "#57606a", "width": 1}
# Legends sit below the plot, under the axis title (the figure's bottom edge, "container"), never over the data or
# the rows' names; each entry may take a line of its own on a phone, so a chart grows by ``legend_room`` of them.
LEGEND_BELOW = {
    "orientation": "h",
    "x": 0,
    "xanchor": "left",
    "y": 0,
    "yref": "container",
    "yanchor": "bottom",
    "traceorder": "normal",
    "font": {"size": 12},
    "maxheight": 1,
}


# Hover boxes in a smaller font, their text on short lines, so that a box fits beside its point on a phone.
HOVER_LABEL = {"font": {"size": 12}, "align": "left", "namelength": -1}


@dataclass
class Chart:
    chart_id: str
    figure: dict
    columns: list[str]  # i18n keys of the table's column headings
    rows: list[list]  # already formatted cells
    title: str  # i18n key
    caption: str  # i18n key
    # the screen-reader summary, a claim: (i18n key, its parameters, claim kind, evidence) (``claims.say``)
    summary: tuple = ("", {}, None, None)
    csv_rows: list[list] = field(default_factory=list)  # unformatted values for the CSV
    title_params: dict = field(default_factory=dict)  # the title's figures ("the 60 fixed states")
    caption_params: dict = field(default_factory=dict)  # the caption's ("measured at batch 1 only")


def _r(x, digits=4):
    return None if x is None else round(float(x), digits)


BAR_GAP = 0.55  # a row's bar takes 45 % of its height; its name is written in the rest
ROW_NAME_WIDTH = 46  # characters of a row's name that fit above its row on a 390 px phone (12 px font)


def _wrap(name: str, width: int = 30) -> str:
    """A long runtime name on two lines (at its comma) where a legend or a row name must fit a phone's width."""
    head, sep, tail = name.partition(", ")
    return f"{head},<br>{tail}" if sep and len(name) > width else name


def hover_lines(text: str) -> str:
    """A hover text on short lines: a parenthesis opens a line, and what follows one closes it."""
    for a, b in ((" (", "<br>("), ("（", "<br>（"), (") ", ")<br>"), ("）", "）<br>"), ("，", "，<br>")):
        text = text.replace(a, b)
    lines = [line.strip(" ").lstrip("，") for line in text.split("<br>")]
    return "<br>".join(line for line in lines if line)


def _color(res: RunResult, runtime_id: str) -> str:
    """A runtime's colour on one machine's page: by its place among the runtimes that were measured."""
    measured = [r.rows.runtime_id for r in res.runtimes if r.latency or r.agreement or r.scores]
    return PALETTE[measured.index(runtime_id) % len(PALETTE)] if runtime_id in measured else PALETTE[-1]


def _rows_layout(t, n: int, x_title: str, names=None, marker_room: int = 0, **extra) -> dict:
    """A horizontal chart of ``n`` runtimes, one row each. Each row's name is written above it across the whole
    width (``names``), not beside it as a tick label, so long names never squeeze the plot on a phone.
    ``marker_room``: px more between a name and its row, and between it and the row above, for markers that reach
    out of the bar's band (two groups of markers side by side)."""
    shown = [_wrap(name, ROW_NAME_WIDTH) for name in names or []]
    two = any("<br>" in s for s in shown)
    # px per row: room for its name, on one line or two, above its bar, and the markers' room on both sides of it
    pitch = (70 if two else 52) + 2 * marker_room
    lift = round(pitch * (1 - BAR_GAP) / 2) + 3 + marker_room  # a name sits just above its row's bar or marker
    layout = {
        "font": FONT,
        "height": 100 + pitch * max(n, 1),
        "margin": {"l": 12, "r": 16, "t": 16, "b": 48},
        "paper_bgcolor": "white",
        "plot_bgcolor": "white",
        "showlegend": False,
        "hovermode": "closest",
        "bargap": BAR_GAP,
        "hoverlabel": HOVER_LABEL,
        "xaxis": {"title": {"text": x_title}, "zeroline": False, "gridcolor": "#eaeef2"},
        "yaxis": {
            "autorange": "reversed",
            "type": "category",
            "showticklabels": False,
            "categoryorder": "array",
            "categoryarray": list(names or []),
        },
    }
    notes = [
        {
            "xref": "paper",
            "yref": "y",
            "x": 0,
            "y": name,
            "xanchor": "left",
            "yanchor": "bottom",
            "yshift": lift,
            "align": "left",
            "text": text,
            "showarrow": False,
            "font": {"size": 12, "color": "#1b1f24"},
            "bgcolor": "rgba(255,255,255,0.9)",
        }  # a gate or reference line passes behind the name, not through it
        for name, text in zip(names or [], shown)
    ]
    extra_notes = extra.pop("annotations", [])
    layout.update(extra)
    # px the first row's name reaches above the plot: its box is a 12 px font's lines (about 16 px each) and the
    # annotation's padding (1 px around, 1 px of border)
    reach = max(0, lift + 16 * (2 if two else 1) + 4 - pitch // 2)
    top = [note for note in extra_notes if note.get("yref") == "paper" and note.get("y") == 1]
    for i, note in enumerate(top):  # a line's label goes above the first row's name, not over it; two lines'
        note["yshift"] = reach + 2 + 18 * i  # labels (the reference's and the gate's) one above the other
    need = reach + 2 + 18 * len(top)
    if two or top:
        grow = max(need, 16 if two else 0)
        layout["margin"] = {**layout["margin"], "t": layout["margin"]["t"] + grow}
        layout["height"] += grow
    layout["annotations"] = notes + extra_notes
    return layout


def _vline(x, line, label=None, anchor="center", log: bool = False) -> tuple[dict, list]:
    """A vertical line at ``x`` with its label above the plot. On a log axis (``log``) plotly.js places a shape by
    its data value and an annotation by the value's logarithm."""
    shape = {"type": "line", "xref": "x", "yref": "paper", "x0": x, "x1": x, "y0": 0, "y1": 1, "line": line}
    note = (
        [
            {
                "xref": "x",
                "yref": "paper",
                "x": math.log10(x) if log else x,
                "y": 1,
                "yanchor": "bottom",
                "xanchor": anchor,
                "text": label,
                "showarrow": False,
                "font": {"size": 11, "color": line["color"]},
            }
        ]
        if label
        else []
    )
    return shape, note


def throughput_chart(res: RunResult, t) -> Chart | None:
    ran = [r for r in res.runtimes if r.throughput]
    if not ran:
        return None
    sizes = sorted({b for r in ran for b in r.throughput})
    traces = [
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": _wrap(r.rows.title),
            "x": list(r.throughput),
            "y": [_r(v, 1) for v in r.throughput.values()],
            "line": {"color": _color(res, r.rows.runtime_id)},
            "marker": {"color": _color(res, r.rows.runtime_id)},
            "hovertemplate": _wrap(r.rows.title).replace("%", "%%")
            + "<br>"
            + t("hover_throughput")
            + "<extra></extra>",
        }
        for r in ran
    ]
    fig = {
        "data": traces,
        "layout": {
            "font": FONT,
            "height": 380 + legend_room(tr["name"] for tr in traces),
            "margin": {"l": 10, "r": 16, "t": 16, "b": 48},
            "paper_bgcolor": "white",
            "plot_bgcolor": "white",
            "showlegend": True,
            "hovermode": "closest",
            "legend": LEGEND_BELOW,
            "hoverlabel": HOVER_LABEL,
            "xaxis": {
                "title": {"text": t("batch_size")},
                "type": "log",
                "tickvals": sizes,
                "ticktext": [str(b) for b in sizes],
                "gridcolor": "#eaeef2",
            },
            "yaxis": {
                "title": {"text": t("decisions_per_s")},
                "type": "log",
                "dtick": "D2",
                "tickformat": "~s",
                "gridcolor": "#eaeef2",
            },
        },
    }
    set_margins(fig, legend=[tr["name"] for tr in traces], y_labels=True)
    rows = [[r.rows.title] + [f"{r.throughput[b]:,.0f}" if b in r.throughput else "—" for b in sizes] for r in ran]
    csv = [[r.rows.runtime_id, b, r.throughput[b]] for r in ran for b in sizes if b in r.throughput]
    best = max(ran, key=lambda r: max(r.throughput.values()))
    best_b = max(best.throughput, key=best.throughput.get)
    e = {"value": best.throughput[best_b], "others": [v for r in ran for v in r.throughput.values()]}
    # a model whose input fixes the batch size is measured at that size only; the run's file says so
    limit = (res.rows.run.get("settings") or {}).get("batch_sweep_limit")
    return Chart(
        "throughput",
        fig,
        ["col_runtime"] + [f"batch:{b}" for b in sizes],
        rows,
        "title_throughput",
        "cap_throughput_fixed_batch" if limit else "cap_throughput",
        (
            "sum_throughput",
            {"best": best.rows.title, "rate": f"{best.throughput[best_b]:,.0f}", "batch": best_b},
            "highest_of",
            e,
        ),
        csv,
        caption_params={"batch": limit["batch"]} if limit else {},
    )


def agreement_chart(res: RunResult, t) -> Chart | None:
    """Share of the reference's played decisions with the same action, with its CI and the gate's line."""
    ran = [r for r in res.runtimes if r.shadow]
    if not ran:
        return None
    names = [r.rows.title for r in ran]
    pct = [100 * r.shadow["fraction"] for r in ran]
    trace = {
        "type": "scatter",
        "mode": "markers",
        "y": names,
        "x": [_r(p, 4) for p in pct],
        "marker": {"size": 12, "color": [_color(res, r.rows.runtime_id) for r in ran]},
        "error_x": {
            "type": "data",
            "symmetric": False,
            "color": "#57606a",
            "array": [_r(100 * r.shadow["high"] - p, 4) for r, p in zip(ran, pct)],
            "arrayminus": [_r(p - 100 * r.shadow["low"], 4) for r, p in zip(ran, pct)],
        },
        "customdata": [
            [f"{r.shadow['same']:,}", f"{r.shadow['decisions']:,}", f"{r.shadow['episodes']:,}"] for r in ran
        ],
        "text": [_wrap(n) for n in names],
        "hovertemplate": "%{text}<br>" + hover_lines(t("hover_agreement")) + "<extra></extra>",
    }
    gate = 100 * res.gates.min_same_action_fraction
    g, note = _vline(gate, GATE_LINE, t("gate_line_agreement", x=f"{gate:g} %"))
    low = min([gate] + [100 * r.shadow["low"] for r in ran])
    fig = {
        "data": [trace],
        "layout": _rows_layout(t, len(ran), t("axis_same_action_pct"), names, shapes=[g], annotations=note),
    }
    fig["layout"]["xaxis"]["range"] = [max(0.0, low - (100 - low) * 0.15 - 0.05), 100.05]
    set_margins(fig)
    rows = [
        [
            r.rows.title,
            f"{r.shadow['same']:,}/{r.shadow['decisions']:,}",
            f"{p:.3f} %",
            f"{100 * r.shadow['low']:.3f} – {100 * r.shadow['high']:.3f} %",
        ]
        for r, p in zip(ran, pct)
    ]
    csv = [
        [
            r.rows.runtime_id,
            r.shadow["decisions"],
            r.shadow["same"],
            r.shadow["fraction"],
            r.shadow["low"],
            r.shadow["high"],
        ]
        for r in ran
    ]
    fewest = min(p for p in pct)
    worst = [r.rows.title for r, p in zip(ran, pct) if p == fewest]
    summary = (
        (
            count_key("sum_agreement_tie", len(ran)),
            {"n": len(ran), "value": f"{fewest:.3f}"},
            "all_equal",
            {"values": pct},
        )
        if len(worst) == len(ran)
        else (
            "sum_agreement",
            {"runtime": titles(worst, t), "value": f"{fewest:.3f}"},
            "lowest_of",
            {"value": fewest, "others": pct},
        )
    )
    return Chart(
        "agreement",
        fig,
        ["col_runtime", "col_same_actions", "col_same_share", "col_ci95"],
        rows,
        "title_agreement",
        "cap_agreement",
        summary,
        csv,
    )


def fixed_states_chart(res: RunResult, t) -> Chart | None:
    """The diagnostic: each fixed state's |ΔQ| against how close the reference's choice was (log–log)."""
    ran = [r for r in res.runtimes if r.agreement and not r.is_reference]
    if not ran or ran[0].agreement.get("continuous"):  # no top-two margin: the action-difference table says it
        return None
    traces = []
    for r in ran:
        a = r.agreement
        flipped = {f["state"] for f in a["flips"]}
        for label, idx, symbol in (
            (r.rows.title, [s for s in range(a["states"]) if s not in flipped], "circle"),
            (f"{r.rows.title} — {t('flipped')}", sorted(flipped), "x"),
        ):
            if idx:
                traces.append(
                    {
                        "type": "scatter",
                        "mode": "markers",
                        "name": _wrap(label, 40),
                        "legendgroup": r.rows.runtime_id,
                        "x": [max(_r(a["reference_margin"][s], 9), 1e-9) for s in idx],
                        "y": [max(_r(a["per_state_max_abs_dq"][s], 12), 1e-9) for s in idx],
                        "text": [t("state_n", n=s) for s in idx],
                        "marker": {
                            "color": _color(res, r.rows.runtime_id),
                            "symbol": symbol,
                            "size": 10 if symbol == "x" else 7,
                            "opacity": 0.8,
                        },
                        "hovertemplate": _wrap(label).replace("%", "%%")
                        + "<br>%{text}<br>"
                        + t("hover_fixed")
                        + "<extra></extra>",
                    }
                )
    axis = {"type": "log", "dtick": 1, "exponentformat": "power", "gridcolor": "#eaeef2"}
    fig = {
        "data": traces,
        "layout": {
            "font": FONT,
            "height": 400 + legend_room(tr["name"] for tr in traces),
            "margin": {"l": 10, "r": 16, "t": 16, "b": 48},
            "paper_bgcolor": "white",
            "plot_bgcolor": "white",
            "showlegend": True,
            "legend": LEGEND_BELOW,
            "hoverlabel": HOVER_LABEL,
            "hovermode": "closest",
            "xaxis": {**axis, "title": {"text": t("reference_margin")}},
            "yaxis": {**axis, "title": {"text": t("max_abs_dq")}},
        },
    }
    set_margins(fig, legend=[tr["name"] for tr in traces], y_labels=True)
    rows = [
        [
            r.rows.title,
            f"{r.agreement['same_actions']}/{r.agreement['states']}",
            f"{r.agreement['max_abs_dq']:.2e}",
            f"{r.agreement['mean_abs_dq']:.2e}",
            str(len(r.agreement["flips"])),
        ]
        for r in ran
    ]
    csv = [
        [
            r.rows.runtime_id,
            s,
            r.agreement["reference_margin"][s],
            r.agreement["per_state_max_abs_dq"][s],
            int(s in {f["state"] for f in r.agreement["flips"]}),
        ]
        for r in ran
        for s in range(r.agreement["states"])
    ]
    fewest = min(r.agreement["same_actions"] for r in ran)
    worst = [r for r in ran if r.agreement["same_actions"] == fewest]
    states = ran[0].agreement["states"]
    same = [r.agreement["same_actions"] for r in ran]
    summary = (
        (
            count_key("sum_fixed_tie", len(ran)),
            {"n": len(ran), "same": fewest, "states": states},
            "all_equal",
            {"values": same},
        )
        if len(worst) == len(ran)
        else (
            "sum_fixed",
            {"runtime": titles([r.rows.title for r in worst], t), "same": fewest, "states": states},
            "lowest_of",
            {"value": fewest, "others": same},
        )
    )
    return Chart(
        "fixed-states",
        fig,
        ["col_runtime", "col_same_actions", "col_max_dq", "col_mean_dq", "col_flips"],
        rows,
        "title_fixed",
        "cap_fixed",
        summary,
        csv,
        {"states": states},
    )
