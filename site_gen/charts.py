"""Plotly figure specs (plain dicts for plotly.js) and their data tables; pure, no I/O.

Each chart is a ``Chart``: the figure, the table of the numbers it draws (shown on the page and
offered as CSV), and the keys of its caption and screen-reader summary in the i18n catalogs.
Trace types used: bar, box, scatter.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .analysis import RunResult

# Sixteen distinguishable colours (Plotly's ten, then six darker ones): one per runtime, the same in every chart.
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf", "#393b79", "#ad494a", "#637939", "#7b4173", "#e7ba52", "#3182bd"]
DQ_FLOOR = 1e-9
FONT = {"family": "system-ui, -apple-system, 'Noto Sans TC', 'PingFang TC', 'Microsoft JhengHei', sans-serif"}


@dataclass
class Chart:
    chart_id: str
    figure: dict
    columns: list[str]            # i18n keys of the table's column headings
    rows: list[list]              # already formatted cells
    caption: str                  # i18n key
    summary: tuple[str, dict] = ("", {})   # i18n key and its parameters
    csv_rows: list[list] = field(default_factory=list)   # unformatted values for the CSV


def _layout(t, **extra) -> dict:
    # Legend above the plot: runtime names are long and the x tick labels below need the room.
    layout = {"font": FONT, "margin": {"l": 60, "r": 20, "t": 70, "b": 40}, "height": 480,
              "legend": {"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0},
              "paper_bgcolor": "white", "plot_bgcolor": "white"}
    layout.update(extra)
    for axis in ("xaxis", "xaxis2", "yaxis", "yaxis2"):
        if axis in layout:
            layout[axis] = {"automargin": True, **layout[axis]}
    return layout


def _color(res: RunResult, runtime_id: str) -> str:
    """A runtime's colour on one machine's page: by its place among the runtimes that were measured."""
    measured = [r.rows.runtime_id for r in res.runtimes if r.latency or r.agreement or r.scores]
    return PALETTE[measured.index(runtime_id) % len(PALETTE)] if runtime_id in measured else PALETTE[-1]


def _r(x, digits=4):
    return None if x is None else round(float(x), digits)


def latency_chart(res: RunResult, t) -> Chart | None:
    """P50 and P95 per runtime (P95 with its bootstrap CI), beside the distribution of samples."""
    ran = [r for r in res.runtimes if r.latency]
    if not ran:
        return None
    names = [r.rows.title for r in ran]
    p95_err_plus = [_r(r.latency["p95_ci_high"] - r.latency["p95"]) for r in ran]
    p95_err_minus = [_r(r.latency["p95"] - r.latency["p95_ci_low"]) for r in ran]
    traces = [
        {"type": "bar", "name": "P50", "x": names, "y": [_r(r.latency["p50"]) for r in ran],
         "marker": {"color": PALETTE[0]}, "xaxis": "x", "yaxis": "y"},
        {"type": "bar", "name": t("p95_with_ci"), "x": names, "y": [_r(r.latency["p95"]) for r in ran],
         "error_y": {"type": "data", "symmetric": False, "array": p95_err_plus, "arrayminus": p95_err_minus},
         "marker": {"color": PALETTE[1]}, "xaxis": "x", "yaxis": "y"},
    ]
    for r in ran:
        ms = np.asarray(r.rows.decision_seconds) * 1e3
        # The box draws quartiles and whiskers from the samples; outliers beyond P99 are not shipped.
        clipped = ms[ms <= np.percentile(ms, 99)]
        traces.append({"type": "box", "name": r.rows.title, "y": [_r(v, 4) for v in clipped], "boxpoints": False,
                       "marker": {"color": _color(res, r.rows.runtime_id)}, "xaxis": "x2", "yaxis": "y2",
                       "showlegend": False})
    fig = {"data": traces, "layout": _layout(t, barmode="group",
           xaxis={"domain": [0, 0.48], "tickangle": -20}, xaxis2={"domain": [0.55, 1], "tickangle": -20},
           yaxis={"title": {"text": t("latency_ms")}, "rangemode": "tozero"},
           yaxis2={"title": {"text": t("latency_ms_to_p99")}, "anchor": "x2", "rangemode": "tozero"})}
    rows = [[r.rows.title, f"{r.latency['n']:,}", f"{r.latency['p50']:.3f}", f"{r.latency['p95']:.3f}",
             f"{r.latency['p95_ci_low']:.3f}–{r.latency['p95_ci_high']:.3f}", f"{r.latency['p99']:.3f}",
             f"{r.latency['mean']:.3f}", f"{r.latency['std']:.3f}"] for r in ran]
    csv = [[r.rows.runtime_id, r.latency["n"], r.latency["p50"], r.latency["p95"], r.latency["p95_ci_low"],
            r.latency["p95_ci_high"], r.latency["p99"], r.latency["mean"], r.latency["std"]] for r in ran]
    fastest = min(ran, key=lambda r: r.latency["p95"])
    return Chart("latency", fig, ["col_runtime", "col_samples", "col_p50_ms", "col_p95_ms", "col_p95_ci_ms",
                                  "col_p99_ms", "col_mean_ms", "col_std_ms"], rows, "cap_latency",
                 ("sum_latency", {"fastest": fastest.rows.title, "p95": f"{fastest.latency['p95']:.3f}",
                                  "n": len(ran)}), csv)


def throughput_chart(res: RunResult, t) -> Chart | None:
    ran = [r for r in res.runtimes if r.throughput]
    if not ran:
        return None
    traces = [{"type": "scatter", "mode": "lines+markers", "name": r.rows.title,
               "x": list(r.throughput), "y": [_r(v, 1) for v in r.throughput.values()],
               "marker": {"color": _color(res, r.rows.runtime_id)}, "line": {"color": _color(res, r.rows.runtime_id)}}
              for r in ran]
    fig = {"data": traces, "layout": _layout(t, xaxis={"title": {"text": t("batch_size")}, "type": "log"},
                                             yaxis={"title": {"text": t("decisions_per_s")}, "type": "log"})}
    sizes = sorted({b for r in ran for b in r.throughput})
    rows = [[r.rows.title] + [f"{r.throughput[b]:,.0f}" if b in r.throughput else "—" for b in sizes] for r in ran]
    csv = [[r.rows.runtime_id, b, r.throughput[b]] for r in ran for b in sizes if b in r.throughput]
    best = max(ran, key=lambda r: max(r.throughput.values()))
    best_b = max(best.throughput, key=best.throughput.get)
    return Chart("throughput", fig, ["col_runtime"] + [f"batch:{b}" for b in sizes], rows, "cap_throughput",
                 ("sum_throughput", {"best": best.rows.title, "rate": f"{best.throughput[best_b]:,.0f}",
                                     "batch": best_b}), csv)


def agreement_chart(res: RunResult, t) -> Chart | None:
    ran = [r for r in res.runtimes if r.agreement and not r.is_reference]
    if not ran:
        return None
    traces = []
    for r in ran:
        a = r.agreement
        flipped = {f["state"] for f in a["flips"]}
        color = _color(res, r.rows.runtime_id)
        for label, idx, symbol in ((r.rows.title, [s for s in range(a["states"]) if s not in flipped], "circle"),
                                   (f"{r.rows.title} — {t('flipped')}", sorted(flipped), "x")):
            if not idx:
                continue
            traces.append({"type": "scatter", "mode": "markers", "name": label,
                           "x": [_r(a["reference_margin"][s], 6) for s in idx],
                           # identical Q-values (|ΔQ| = 0) cannot sit on a log axis: drawn at its floor, 1e-9
                           "y": [max(_r(a["per_state_max_abs_dq"][s], 9), DQ_FLOOR) for s in idx],
                           "text": [f"state {s}" for s in idx],
                           "marker": {"color": color, "symbol": symbol, "size": 9 if symbol == "x" else 6}})
    fig = {"data": traces, "layout": _layout(t, xaxis={"title": {"text": t("reference_margin")}, "type": "log"},
                                             yaxis={"title": {"text": t("max_abs_dq")}, "type": "log"})}
    rows = [[r.rows.title, f"{r.agreement['same_actions']}/{r.agreement['states']}",
             f"{r.agreement['max_abs_dq']:.2e}", f"{r.agreement['mean_abs_dq']:.2e}", str(len(r.agreement["flips"]))]
            for r in ran]
    csv = [[r.rows.runtime_id, s, r.agreement["reference_margin"][s], r.agreement["per_state_max_abs_dq"][s],
            int(s in {f["state"] for f in r.agreement["flips"]})] for r in ran for s in range(r.agreement["states"])]
    worst = min(ran, key=lambda r: r.agreement["same_actions"])
    return Chart("agreement", fig, ["col_runtime", "col_same_actions", "col_max_dq", "col_mean_dq", "col_flips"],
                 rows, "cap_agreement",
                 ("sum_agreement", {"runtime": worst.rows.title, "same": worst.agreement["same_actions"],
                                    "states": worst.agreement["states"]}), csv)


def play_chart(res: RunResult, t) -> Chart | None:
    """Two panels, as in the original study: score distributions; paired differences vs the reference."""
    played = [r for r in res.runtimes if r.scores]
    if not played:
        return None
    traces = []
    for r in played:
        traces.append({"type": "box", "name": r.rows.title, "y": [e["score"] for e in r.rows.episodes],
                       "boxpoints": "all", "jitter": 0.4, "pointpos": 0, "boxmean": True,
                       "marker": {"color": _color(res, r.rows.runtime_id), "size": 4}, "xaxis": "x", "yaxis": "y",
                       "showlegend": False})
    paired = [r for r in played if r.paired_vs_reference]
    tested = [r for r in played if r.play]
    if tested:
        traces.append({
            "type": "scatter", "mode": "markers", "name": t("mean_diff_ci"), "xaxis": "x2", "yaxis": "y2",
            "x": [r.rows.title for r in tested], "y": [_r(r.play["mean"], 3) for r in tested],
            "error_y": {"type": "data", "symmetric": False,
                        "array": [_r(r.play["high"] - r.play["mean"], 3) for r in tested],
                        "arrayminus": [_r(r.play["mean"] - r.play["low"], 3) for r in tested]},
            "marker": {"color": "black", "size": 10, "symbol": "diamond"}})
        for r in paired:
            traces.append({"type": "box", "name": r.rows.title, "y": r.paired_vs_reference["differences"],
                           "boxpoints": "all", "jitter": 0.4, "pointpos": 0, "fillcolor": "rgba(0,0,0,0)",
                           "line": {"color": "rgba(0,0,0,0)"}, "xaxis": "x2", "yaxis": "y2", "showlegend": False,
                           "marker": {"color": _color(res, r.rows.runtime_id), "size": 4, "opacity": 0.6}})
    ref_title = res.runtime(res.reference_id).rows.title if res.runtime(res.reference_id) else "—"
    fig = {"data": traces, "layout": _layout(
        t, xaxis={"domain": [0, 0.48], "tickangle": -20}, xaxis2={"domain": [0.55, 1], "tickangle": -20},
        yaxis={"title": {"text": t("raw_score")}}, yaxis2={"title": {"text": t("paired_diff_vs", ref=ref_title)},
                                                           "anchor": "x2", "zeroline": True})}
    rows, csv = [], []
    for r in played:
        s, p = r.scores, r.paired_vs_reference
        rows.append([r.rows.title, str(s["n"]), f"{s['mean']:.2f}", f"{s['median']:g}", f"{s['std']:.2f}",
                     f"{s['p10']:.1f}", f"{s['p90']:.1f}", f"{s['min']:g}", f"{s['max']:g}", f"{s['iqm']:.2f}",
                     f"{p['mean']:+.2f} [{p['ci_low']:+.2f}, {p['ci_high']:+.2f}]" if p else "—",
                     f"{p['identical']}/{p['n']}" if p else "—"])
    for r in played:
        p = r.paired_vs_reference
        for j, e in enumerate(r.rows.episodes):
            diff = p["differences"][p["seeds"].index(e["seed"])] if p and e["seed"] in p["seeds"] else None
            csv.append([r.rows.runtime_id, e["seed"], e["score"], e["steps"], e["truncated"], diff])
    best = max(played, key=lambda r: r.scores["mean"])
    return Chart("play", fig, ["col_runtime", "col_episodes", "col_mean", "col_median", "col_std", "col_p10",
                               "col_p90", "col_min", "col_max", "col_iqm", "col_paired", "col_identical"],
                 rows, "cap_play", ("sum_play", {"best": best.rows.title, "mean": f"{best.scores['mean']:.2f}",
                                                 "ref": ref_title}), csv)


def cross_hardware_chart(results: list[RunResult], t) -> Chart | None:
    """P95 of every runtime on every machine (grouped by runtime, one bar per machine)."""
    have = [r for r in results if any(x.latency for x in r.runtimes)]
    if not have:
        return None
    traces, rows, csv = [], [], []
    for i, res in enumerate(have):
        ran = [x for x in res.runtimes if x.latency]
        label = res.rows.run.get("display_label", res.rows.run["label"])
        traces.append({"type": "bar", "name": label, "x": [x.rows.title for x in ran],
                       "y": [_r(x.latency["p95"]) for x in ran], "marker": {"color": PALETTE[i % len(PALETTE)]}})
        for x in ran:
            mean = f"{x.scores['mean']:.2f}" if x.scores else "—"
            agree = f"{x.agreement['same_actions']}/{x.agreement['states']}" if x.agreement else "—"
            rows.append([label, x.rows.title, f"{x.latency['p50']:.3f}", f"{x.latency['p95']:.3f}", agree, mean])
            csv.append([label, x.rows.runtime_id, x.latency["p50"], x.latency["p95"],
                        x.agreement["same_actions"] if x.agreement else None, x.scores["mean"] if x.scores else None])
    fig = {"data": traces, "layout": _layout(t, barmode="group", xaxis={"tickangle": -20},
                                             yaxis={"title": {"text": t("p95_ms")}, "type": "log"})}
    return Chart("cross-hardware", fig, ["col_machine", "col_runtime", "col_p50_ms", "col_p95_ms",
                                         "col_same_actions", "col_mean"], rows, "cap_cross",
                 ("sum_cross", {"machines": len(have)}), csv)
