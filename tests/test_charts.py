"""The charts read at a glance (pure figure specs, from the committed H200 file): wherever colour tells runtimes
apart there is a legend or a name on each row; a gate's chart draws the reference's line and the gate's, both
labelled; legends sit below the plot; hover texts come on short lines."""

import re
import unicodedata

import pytest

from conftest import COMMITTED_RUNS
from site_gen.charts import hover_lines
from site_gen.i18n import Translator
from site_gen.pages import MACHINE_CHARTS

t = Translator("en")


@pytest.fixture(scope="module")
def h200():
    from site_gen.analysis import analyse
    from site_gen.load import load_file
    from site_gen.verdict import Gates

    return analyse(load_file(next(p for p in COMMITTED_RUNS if p.name == "nvidia-h200.duckdb"))[0], Gates.load(None))


@pytest.fixture(scope="module")
def charts(h200):
    return {c.chart_id: c for c in (make(h200, t) for make in MACHINE_CHARTS) if c}


def _colours(trace):
    c = trace.get("marker", {}).get("color")
    return set(c) if isinstance(c, list) else {c}


def test_colour_always_has_a_key(charts):
    """A chart whose marks have several colours names them: a legend, or each row's name written above it."""
    assert {"speed", "latency", "throughput", "agreement", "fixed-states", "play", "breakdown"} <= set(charts)
    for chart_id, chart in charts.items():
        layout = chart.figure["layout"]
        colours = set().union(*(_colours(tr) for tr in chart.figure["data"]))
        if len(colours) < 2:
            continue
        rows = layout["yaxis"].get("categoryarray") or []
        named = {a["y"] for a in layout.get("annotations", []) if a.get("yref") == "y"}
        assert layout.get("showlegend") or (rows and named == set(rows)), chart_id
        if layout.get("showlegend"):  # below the plot, where it covers neither data nor names
            assert layout["legend"]["yref"] == "container" and layout["legend"]["y"] == 0, chart_id


def test_the_fixed_states_chart_has_a_legend_for_its_runtimes(charts, h200):
    chart = charts["fixed-states"]
    assert chart.figure["layout"]["showlegend"] is True
    shown = {
        tr["name"].split(" — ")[0].replace("<br>", " ").replace(", ", ",").replace(",", ", ")
        for tr in chart.figure["data"]
    }
    assert shown == {r.rows.title for r in h200.runtimes if r.agreement and not r.is_reference}


def _lines(chart):
    layout = chart.figure["layout"]
    log = layout["xaxis"].get("type") == "log"  # plotly.js places an annotation on a log axis by its logarithm
    notes = {
        round(10 ** a["x"] if log else a["x"], 6): a["text"] for a in layout["annotations"] if a.get("xref") == "x"
    }
    return {round(s["x0"], 6): notes.get(round(s["x0"], 6)) for s in layout["shapes"]}


def test_the_speed_chart_draws_the_reference_and_the_gate_both_labelled(charts, h200):
    gate = round(1 / (1 - h200.gates.min_p95_reduction), 6)
    assert _lines(charts["speed"]) == {1.0: t("ref_line_speed"), gate: t("gate_line_speed", x=f"{gate:.2f}")}
    tops = sorted(a["yshift"] for a in charts["speed"].figure["layout"]["annotations"] if a.get("xref") == "x")
    assert tops[1] - tops[0] >= 16  # one label above the other: the lines are close on the axis


def test_the_play_chart_draws_the_reference_and_the_margin_both_labelled(charts):
    margin = next(tr for tr in charts["play"].figure["data"] if "hovertemplate" in tr)  # the mean and its CI
    lines = _lines(charts["play"])
    assert lines[0.0] == t("ref_line_play") and len(lines) == 2
    assert [x for x in lines if x < 0] and all(lines.values())
    assert margin["hovertemplate"].count("<br>") >= 2
    # drawn where the test decides: every interval, margin and zero inside the axis, and no wider than the test
    # needs (each seed's own difference, hundreds of points apart in Breakout, would shrink them to pixels)
    low, high = charts["play"].figure["layout"]["xaxis"]["range"]
    ends = [*lines, *(m - e for m, e in zip(margin["x"], margin["error_x"]["arrayminus"]))]
    ends += [m + e for m, e in zip(margin["x"], margin["error_x"]["array"])]
    assert low < min(ends) and max(ends) < high and high - low <= 1.5 * (max(ends) - min(ends)) + 1e-6
    assert len(charts["play"].figure["data"]) == 1
    for note in (a for a in charts["play"].figure["layout"]["annotations"] if a.get("xref") == "x"):
        assert note["xanchor"] == ("left" if note["x"] < (low + high) / 2 else "right")  # its label reaches inwards


def test_hover_texts_come_on_short_lines():
    assert hover_lines("a (b c) d") == "a<br>(b c)<br>d"
    assert hover_lines("甲（乙）丙") == "甲<br>（乙）<br>丙"
    for key in ("hover_speed", "hover_agreement", "hover_play"):
        for lang in ("en", "zh-tw"):
            text = re.sub(r"%\{[^}]*\}", "1,234.56", hover_lines(Translator(lang)(key)))  # a figure's width
            columns = max(
                sum(1 + (unicodedata.east_asian_width(c) in "WF") for c in line) for line in text.split("<br>")
            )
            assert columns <= 50, (lang, key, text)  # about 330 px at the hover's 12 px


def test_a_wide_speed_axis_keeps_few_whole_labels():
    """A log ratio axis holds at most six labels (more, and a phone's plot tilts them over the axis title): 1-2-5
    where they fit, then 1-3, then whole decades."""
    from site_gen.speed_charts import MAX_TICKS, ratio_ticks

    assert ratio_ticks(0.4, 12) == [0.5, 1, 2, 5, 10]  # the H200's axis, as it always was
    assert ratio_ticks(0.8, 2.5) == [1, 2]
    assert ratio_ticks(0.4, 40) == [0.5, 1, 2, 5, 10, 20]
    assert ratio_ticks(0.25, 120) == [0.3, 1, 3, 10, 30, 100]
    assert ratio_ticks(0.04, 2300) == [0.1, 1, 10, 100, 1000]  # a quick run on a loaded machine
    wide = ratio_ticks(1e-6, 1e6)
    assert len(wide) <= MAX_TICKS and all(w < v for w, v in zip(wide, wide[1:]))
