"""The comparison across machines: the runs of one agent side by side (each machine's headline, the verdicts'
notices of what differs between runs) and their batch=1 latency on one chart. Page models only: formatted,
translated values."""

from __future__ import annotations

from . import claims
from .agents import agent_key
from .analysis import RunResult
from .chart_margins import legend_room, set_margins
from .charts import LEGEND_BELOW, PALETTE, Chart, _r, _rows_layout, _wrap
from .claims import count_key
from .findings import recommendation
from .home import alike_notices, machine_groups, newest_first
from .i18n import Translator
from .pages import chart_view
from .wording import signed


def compare_lead(results: list[RunResult], slugs: list[str], t: Translator) -> list[dict]:
    """Per machine, newest first: its fastest runtime by P95, and the one recommended there (if another)."""
    lead = []
    for res, slug in newest_first(results, slugs):
        timed = [r for r in res.runtimes if r.latency]
        if not timed:
            continue
        fast = min(timed, key=lambda r: r.latency["p95"])
        rec = recommendation(res)
        text = claims.say(
            t,
            "fastest_point",
            "cross_fastest",
            {"value": fast.latency["p95"], "others": [r.latency["p95"] for r in timed]},
            fast.rows.runtime_id,
            runtime=fast.rows.title,
            p95=f"{fast.latency['p95']:.3f}",
        )
        if rec:
            r = rec["runtime"]
            e = {
                "outcome": r.verdict.outcome,
                "ratio": r.ratio[0],
                "others": [
                    x.ratio[0]
                    for x in res.runtimes
                    if x.verdict and x.verdict.outcome == "deployment-worthy" and x.ratio
                ],
            }
            text += t("semi") + (
                claims.say(t, "recommend", "cross_recommended_same", e, r.rows.runtime_id)
                if r is fast
                else claims.say(
                    t,
                    "recommend",
                    "cross_recommended",
                    e,
                    r.rows.runtime_id,
                    runtime=r.rows.title,
                    p95=f"{r.latency['p95']:.3f}",
                )
            )
        else:
            text += t("semi") + t("cross_recommended_none")
        # one run per machine here (its answer, at its label's own URL): the label alone names it
        lead.append({"label": res.rows.run["label"], "href": f"../hardware/{slug}/index.html", "text": text})
    return lead


def compare_page(results: list[RunResult], slugs: list[str], t: Translator) -> dict:
    newest = [res for res, _ in newest_first(results, slugs)]  # each machine's answer
    # like with like: the machines that judged the agent most of them judged (Breakout's when it is there)
    keys = [agent_key(res.rows.run) for res in newest]
    first = max(dict.fromkeys(keys), key=lambda k: (keys.count(k), k == "ALE/Breakout-v5")) if keys else None
    others = [res.rows.run["label"] for res, k in zip(newest, keys) if k != first]
    chart = cross_hardware_chart([res for res, k in zip(newest, keys) if k == first], t)
    notices = alike_notices(results, t)  # one statement: what differs, or that nothing does
    kept = [(res, slug) for res, slug in zip(results, slugs) if agent_key(res.rows.run) == first]
    view = chart and {**chart_view(chart, t, "../../data/cross-hardware.csv"), "table_href": "#t-cross-hardware"}
    return {
        "lead": compare_lead([res for res, _ in kept], [slug for _, slug in kept], t),
        "chart": view,
        "tables": machine_tables(view["table"], t) if view else [],
        "notices": notices + ([t("compare_other_agents", labels="; ".join(others))] if others else []),
        "alike": None if notices else t("compare_intro"),
        "groups": machine_groups(results, slugs, t, "../", answers_only=True),
    }


def machine_tables(table: dict, t: Translator) -> list[dict]:
    """The chart's numbers, one section per machine (its heading names the machine), so that no section grows
    with the number of machines; the first keeps the id the chart's "data table" link points to."""
    machines = list(dict.fromkeys(row[0] for row in table["rows"]))
    return [
        {
            "id": "t-cross-hardware" if i == 0 else f"t-cross-hardware-{i + 1}",
            "heading": t("compare_table_machine_heading", label=label),
            "table": {"head": table["head"][1:], "rows": [row[1:] for row in table["rows"] if row[0] == label]},
        }
        for i, label in enumerate(machines)
    ]


def paired_cell(x, t: Translator) -> str:
    """The play test's paired difference (same seeds as the reference, the test's own interval), never an unpaired
    mean over whichever seeds a runtime happened to play."""
    if x.is_reference:
        return t("reference_short")
    p = x.play
    if not p:
        return "—"
    if p["sd"] == 0 and p["mean"] == 0:
        return t("play_identical_cell", n=f"{p['n']:,}")
    return f"{signed(p['mean'])} [{signed(p['low'])}, {signed(p['high'])}], {p['n']:,}"


def cross_hardware_chart(results: list[RunResult], t) -> Chart | None:
    """P95 of every runtime on every machine: one row per runtime, one marker per machine (log axis)."""
    have = [r for r in results if any(x.latency for x in r.runtimes)]
    if not have:
        return None
    traces, rows, csv, names = [], [], [], []
    for i, res in enumerate(have):
        ran = [x for x in res.runtimes if x.latency]
        label = res.rows.run["label"]  # one run per machine here (its answer), so the label alone names it
        names += [x.rows.title for x in ran if x.rows.title not in names]
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": label,
                "y": [x.rows.title for x in ran],
                "x": [_r(x.latency["p95"]) for x in ran],
                "marker": {
                    "size": 11,
                    "color": PALETTE[i % len(PALETTE)],
                    "symbol": ["circle", "diamond", "square"][i % 3],
                },
                "text": [_wrap(x.rows.title) for x in ran],
                "hovertemplate": label.replace("%", "%%")
                + "<br>%{text}<br>P95 %{x:.3f} "
                + t("unit_ms")
                + "<extra></extra>",
            }
        )
        for x in ran:
            mean = paired_cell(x, t)
            agree = f"{100 * x.shadow['fraction']:.3f} %" if x.shadow else "—"
            rows.append([label, x.rows.title, f"{x.latency['p50']:.3f}", f"{x.latency['p95']:.3f}", agree, mean])
            csv.append(
                [
                    label,
                    x.rows.runtime_id,
                    x.latency["p50"],
                    x.latency["p95"],
                    x.shadow["fraction"] if x.shadow else None,
                    x.play["mean"] if x.play else None,
                ]
            )
    layout = _rows_layout(t, len(names), t("p95_ms"), names, showlegend=True, legend=LEGEND_BELOW)
    layout["height"] += legend_room(tr["name"] for tr in traces)
    layout["xaxis"].update(type="log", dtick="D2", tickformat="~r")
    fig = set_margins({"data": traces, "layout": layout}, legend=[tr["name"] for tr in traces])
    return Chart(
        "cross-hardware",
        fig,
        ["col_machine", "col_runtime", "col_p50_ms", "col_p95_ms", "col_same_share", "col_paired_play"],
        rows,
        "title_cross",
        "cap_cross",
        (count_key("sum_cross", len(have)), {"machines": len(have)}, None, None),
        csv,
    )
