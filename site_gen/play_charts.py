"""The play figures: each runtime's same-seed score difference from the reference (the play test's mean and
repeated CI against the margin, drawn at the scale where the test decides), and its score distribution beside the
reference's on the same seeds."""

from __future__ import annotations

import functools

import numpy as np

from .analysis import RunResult, design
from .chart_margins import legend_room, set_margins
from .charts import GATE_LINE, LEGEND_BELOW, ZERO_LINE, Chart, _color, _r, _rows_layout, _vline, _wrap, hover_lines
from .claims import count_key, titles
from .twin_view import play_outcome
from .wording import WITHHELD_REASON, signed


def _judged_seeds(res: RunResult, r) -> list[int]:
    """The seeds a runtime's play test was judged on: the first ``n`` of the pre-registered list that it shares with
    the reference."""
    p = r.paired_vs_reference
    if not p or not r.play:
        return []
    shared = set(p["seeds"])
    return [s for s in design(res.rows.run)[0] if s in shared][: r.play["n"]]


def scores_chart(res: RunResult, t) -> Chart | None:
    """The study's other figure: each runtime's score distribution beside the reference's on the same seeds (the
    seeds its play test was judged on): median, the middle half and P10–P90, one row each."""
    tested = [r for r in res.runtimes if r.play and r.paired_vs_reference]
    if not tested:
        return None
    rows, csv, traces, names = [], [], [], []
    ref_title = res.runtime(res.reference_id).rows.title
    for who, colour_of in (("it", lambda r: _color(res, r.rows.runtime_id)), ("reference", lambda r: "#8c959f")):
        ys, xs, lo, hi, q1, q3, colours = [], [], [], [], [], [], []
        for r in tested:
            d = _same_seed_scores(res, r)
            v = np.asarray(d[who], dtype=float)
            p10, p25, med, p75, p90 = (float(np.percentile(v, q)) for q in (10, 25, 50, 75, 90))
            ys.append(r.rows.title)
            xs.append(_r(med, 1))
            lo.append(_r(med - p10, 1))
            hi.append(_r(p90 - med, 1))
            q1.append(p25)
            q3.append(p75)
            colours.append(colour_of(r))
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "orientation": "h",  # the groups side by side along the rows (one above the other), not the scores
                "y": ys,
                "x": xs,
                "offsetgroup": who,
                "name": t("scores_it") if who == "it" else t("scores_reference", ref=ref_title),
                "marker": {
                    "symbol": "line-ns-open" if who == "reference" else "diamond",
                    "size": 12,
                    "color": colours,
                    "line": {"width": 2},
                },
                "error_x": {
                    "type": "data",
                    "symmetric": False,
                    "array": hi,
                    "arrayminus": lo,
                    "color": "#57606a" if who == "reference" else "#1b1f24",
                },
                "customdata": [[f"{a:.0f}", f"{b:.0f}"] for a, b in zip(q1, q3)],
                "text": [_wrap(n) for n in ys],
                "hovertemplate": "%{text}<br>" + hover_lines(t("hover_scores")) + "<extra></extra>",
            }
        )
    for r in tested:
        d = _same_seed_scores(res, r)
        a, b = (np.asarray(d[k], dtype=float) for k in ("it", "reference"))
        names.append(r.rows.title)
        rows.append(
            [
                r.rows.title,
                f"{a.size:,}",
                f"{np.median(a):g} / {np.median(b):g}",
                f"{np.percentile(a, 10):.1f} / {np.percentile(b, 10):.1f}",
                f"{np.percentile(a, 90):.1f} / {np.percentile(b, 90):.1f}",
                f"{a.min():g} / {b.min():g}",
                f"{a.max():g} / {b.max():g}",
            ]
        )
        csv.append(
            [
                r.rows.runtime_id,
                a.size,
                float(np.median(a)),
                float(np.median(b)),
                float(np.percentile(a, 10)),
                float(np.percentile(b, 10)),
                float(np.percentile(a, 90)),
                float(np.percentile(b, 90)),
            ]
        )
    layout = _rows_layout(  # the upper of a row's two markers (the runtime's diamond) stands above the band
        t,
        len(tested),
        t("axis_score"),
        names,
        marker_room=3,
        showlegend=True,
        legend=LEGEND_BELOW,
        scattermode="group",
    )
    layout["height"] += legend_room(tr["name"] for tr in traces)
    fig = {"data": traces, "layout": layout}
    set_margins(fig, legend=[tr["name"] for tr in traces])
    return Chart(
        "scores",
        fig,
        [
            "col_runtime",
            "col_games",
            "col_median_vs_ref",
            "col_p10_vs_ref",
            "col_p90_vs_ref",
            "col_min_vs_ref",
            "col_max_vs_ref",
        ],
        rows,
        "title_scores",
        "cap_scores",
        (count_key("sum_scores", len(tested)), {"n": len(tested), "ref": ref_title}, None, None),
        csv,
    )


def _same_seed_scores(res: RunResult, r) -> dict:
    """The runtime's and the reference's scores on the seeds its play test was judged on (same seeds, same order)."""
    p = r.paired_vs_reference
    seeds = _judged_seeds(res, r)
    mine = {e["seed"]: e["score"] for e in r.rows.episodes}
    diffs = dict(zip(p["seeds"], p["differences"]))
    return {"it": [mine[s] for s in seeds], "reference": [mine[s] - diffs[s] for s in seeds]}


def decision_range(tested) -> list[float]:
    """The x range where the test decides: every interval, every margin and zero, with room on both sides. Each
    seed's own difference (hundreds of points in Breakout, where the intervals span a few) is the CSV's: drawn
    here it set the axis, and on a phone the intervals and the margin shrank to a few pixels beside zero."""
    xs = [0.0] + [-r.play["margin"] for r in tested] + [x for r in tested for x in (r.play["low"], r.play["high"])]
    low, high = min(xs), max(xs)
    pad = 0.2 * max(high - low, 1e-6)
    return [_r(low - pad, 3), _r(high + pad, 3)]


def play_chart(res: RunResult, t) -> Chart | None:
    """The play test: mean same-seed difference with its repeated CI, against the margin."""
    tested = [r for r in res.runtimes if r.play]
    if not tested:
        return None
    names = [r.rows.title for r in tested]
    margin = tested[0].play["margin"]
    trace = {
        "type": "scatter",
        "mode": "markers",
        "y": names,
        "x": [_r(r.play["mean"], 3) for r in tested],
        "marker": {"size": 12, "symbol": "diamond", "color": [_color(res, r.rows.runtime_id) for r in tested]},
        "error_x": {
            "type": "data",
            "symmetric": False,
            "color": "#1b1f24",
            "array": [_r(r.play["high"] - r.play["mean"], 3) for r in tested],
            "arrayminus": [_r(r.play["mean"] - r.play["low"], 3) for r in tested],
        },
        "customdata": [
            [
                t("play_identical_cell", n=f"{r.play['n']:,}")
                if r.play["sd"] == 0 and r.play["mean"] == 0
                else t("hover_play_ci", low=signed(r.play["low"], 1), high=signed(r.play["high"], 1)),
                f"{r.play['n']:,}",
                t(f"play_{r.play['outcome']}"),
            ]
            for r in tested
        ],
        "text": [_wrap(n) for n in names],
        "hovertemplate": "%{text}<br>" + hover_lines(t("hover_play")) + "<extra></extra>",
    }
    # each runtime's margin comes from the reference's mean on its own seeds: one line, labelled with their span
    margins = sorted({round(r.play["margin"], 1) for r in tested})
    x = (
        signed(-margins[-1], 1)
        if len(margins) == 1
        else t("range_to", low=signed(-margins[-1], 1), high=signed(-margins[0], 1))
    )
    g, note = _vline(-margin, GATE_LINE, t("gate_line_play", x=x))
    zero, same = _vline(0, ZERO_LINE, t("ref_line_play"))
    layout = _rows_layout(t, len(tested), t("axis_paired_diff"), names, shapes=[zero, g], annotations=same + note)
    low, high = layout["xaxis"]["range"] = decision_range(tested)
    for note in layout["annotations"]:  # a line's label reaches into the plot, never out past its edge
        if note.get("xref") == "x":
            note["xanchor"] = "left" if note["x"] - low < (high - low) / 2 else "right"
    fig = set_margins({"data": [trace], "layout": layout})
    rows, csv = [], []
    for r in tested:
        s, p, ref = r.scores, r.play, r.scores_reference or {}
        same = p["sd"] == 0 and p["mean"] == 0  # identical on every seed: no interval to give

        def both(key, fmt):
            return f"{fmt(s[key])} / {fmt(ref[key])}" if key in ref else fmt(s[key])

        rows.append(
            [
                r.rows.title,
                f"{p['n']:,}",
                t("play_identical_cell", n=f"{p['n']:,}") if same else signed(p["mean"]),
                t("none") if same else f"{signed(p['low'])} … {signed(p['high'])}",
                t(f"play_{play_outcome(r)}"),
                f"{s['n']:,}",
                both("mean", lambda x: f"{x:.2f}"),
                both("median", lambda x: f"{x:g}"),
                both("std", lambda x: f"{x:.2f}"),
                both("p10", lambda x: f"{x:.1f}"),
                both("p90", lambda x: f"{x:.1f}"),
                both("iqm", lambda x: f"{x:.2f}"),
            ]
        )
    for r in res.runtimes:
        p = r.paired_vs_reference
        for e in r.rows.episodes:
            diff = p["differences"][p["seeds"].index(e["seed"])] if p and e["seed"] in p["seeds"] else None
            csv.append([r.rows.runtime_id, e["seed"], e["score"], e["steps"], e["truncated"], e["source"] or "", diff])
    decided = {
        o: [r.rows.title for r in tested if play_outcome(r) == o] for o in ("non-inferior", "inferior", "undecided")
    }
    return Chart(
        "play",
        fig,
        [
            "col_runtime",
            "col_seeds",
            "col_mean_diff",
            "col_rci",
            "col_outcome",
            "col_games",
            "col_mean_vs_ref",
            "col_median_vs_ref",
            "col_std_vs_ref",
            "col_p10_vs_ref",
            "col_p90_vs_ref",
            "col_iqm_vs_ref_seeds",
        ],
        rows,
        "title_play",
        "cap_play",
        ("sum_play_withheld", {"why": t(WITHHELD_REASON[res.withheld])}, None, None)
        if res.withheld
        else (
            "sum_play",
            {
                "groups": functools.reduce(
                    lambda a, b: t("two_sentences", a=a, b=b),
                    [t(f"sum_play_{k.replace('-', '_')}", runtimes=titles(v, t)) for k, v in decided.items() if v],
                )
            },
            "outcome_lists",
            {"lists": {o: [play_outcome(r) for r in tested if r.rows.title in v] for o, v in decided.items()}},
        ),
        csv,
    )
