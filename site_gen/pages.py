"""Page models: analysis results turned into already formatted, already translated values.

Templates only place these values; nothing is computed in them. ``home`` holds the overview, comparison and study
pages; this module the machine page and what every page shares.
"""

from __future__ import annotations

import json

from rtreport import host_load, play_margin
from rtreport.labels import slug as slug_of

from . import claims, reasons, wording
from .agent_view import agent_text, atari_protocol_text, continuous_view
from .analysis import RunResult
from .answer import answer_lines
from .charts import Chart, agreement_chart, fixed_states_chart, throughput_chart
from .play_charts import play_chart, scores_chart
from .costs_view import breakdown_chart, kernels_table, resources_table
from .describe import banners, contents_text, provenance_rows, scope_text, tf32_text
from .findings import sentences
from .i18n import LANGUAGES, Translator
from .multiplicity import family_text
from .speed_charts import latency_chart, speed_chart
from .tables_page import machine_tables
from .tables import played_agreement_table, play_test_table, repeats_tables, rounds_table
from .verdict import Gates
from .verdict_why import gate_tables, short_why
from .wording import WITHHELD_REASON, gate_reason, pct, signed

OUTCOME_CSS = {
    "deployment-worthy": "ok",
    "not-adopted": "bad",
    "reference": "ref",
    "no-verdict": "none",
    "undecided": "warn",
}
MACHINE_CHARTS = (
    speed_chart,
    latency_chart,
    throughput_chart,
    agreement_chart,
    fixed_states_chart,
    play_chart,
    scores_chart,
    breakdown_chart,
)


def slugify(label: str, taken: set) -> str:
    """The label's slug (``rtreport.labels.slug``), made unique among the site's machines."""
    base = slug_of(label)
    slug, i = base, 2
    while slug in taken:
        slug, i = f"{base}-{i}", i + 1
    taken.add(slug)
    return slug


def page_frame(
    lang: str,
    path: str,
    title: str,
    has_charts: bool,
    description: str = "",
    base_url: str | None = None,
    kind: str = "website",
    image: str = "",
) -> dict:
    """Common page fields: ``path`` is the page's path below the language folder ('' for its home). Absolute
    canonical and hreflang links (with x-default) only with a base URL: relative ones are invalid there.
    ``image``: the page's share picture, relative to the site's root (absolute with a base URL)."""
    depth = 1 + path.count("/") + (1 if path else 0)
    root = "../" * depth
    rel = f"{path + '/' if path else ''}index.html"
    alternates = [
        {
            "lang": code,
            "hreflang": tag,
            "name": name,
            "href": f"{root}{code}/{rel}",
            "url": f"{base_url}{code}/{rel}" if base_url else None,
        }
        for code, tag, name in LANGUAGES
    ]
    tag = next(t for c, t, _ in LANGUAGES if c == lang)
    return {
        "lang": lang,
        "html_lang": tag,
        "root": root,
        "title": title,
        "alternates": alternates,
        "charts": has_charts,
        "description": description,
        "base_url": base_url,
        "kind": kind,
        "url": f"{base_url}{lang}/{rel}" if base_url else None,
        "x_default": f"{base_url}{LANGUAGES[1][0]}/{rel}" if base_url else None,
        "og_locale": "zh_TW" if lang == "zh-tw" else "en_US",
        "image": image and (f"{base_url}{image}" if base_url else f"{root}{image}"),
    }


def chart_view(chart: Chart, t: Translator, csv_href: str) -> dict:
    def heading(col):
        if col.startswith("batch:"):
            return t("col_batch_n", b=col.split(":", 1)[1])
        return t(col)

    spec = json.dumps(chart.figure, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    # Inside <script type="application/json"> only "</script" could end the block early; escape <, > and &.
    spec = spec.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
    key, params, kind, evidence = chart.summary
    return {
        "id": chart.chart_id,
        "spec_json": spec,
        "title": t(chart.title, **chart.title_params),
        "caption": t(chart.caption, **chart.caption_params),
        "summary": (claims.say(t, kind, key, evidence, chart.chart_id, **params) if kind else t(key, **params))
        if key
        else "",
        "table": {"head": [heading(c) for c in chart.columns], "rows": chart.rows},
        "csv_href": csv_href,
        "table_href": None,  # where the data table stands when not beside the chart (a machine's tables page)
        "height": chart.figure["layout"].get("height", 400),
    }


def gates_view(
    gates: Gates, t: Translator, root: str = "../", rules=("reference-mean",), tolerances=(), discrete: bool = True
) -> dict:
    """The gates' lines for the runs a page shows: ``rules``, the play margin's rules they were judged by
    (``rtreport.play_margin``: Breakout's "reference-mean", every other agent's "gain-over-random"); ``tolerances``,
    the continuous-action tolerances of those with continuous actions; ``discrete``: whether some have discrete
    actions."""
    limit = 1 - gates.min_p95_reduction
    rules, tolerances = set(rules), sorted(set(tolerances))
    agreement = pct(gates.min_same_action_fraction, 0)
    within = t("agent_actions_sep").join(f"{x * 100:g} %" for x in tolerances)
    if tolerances and not discrete:
        agreement_lines = [t("gate_agreement_within", threshold=agreement, tolerance=within)]
    else:
        agreement_lines = [t("gate_agreement", threshold=agreement)]
        agreement_lines += [t("gate_agreement_tolerance", tolerance=within)] if tolerances else []
    reference_mean = t("gate_play", threshold=pct(gates.play_margin, 0))
    over_random = pct(gates.play_margin_over_random, 0)
    if rules == {"gain-over-random"}:
        play_lines = [t("gate_play_over_random", threshold=over_random)]
    elif "gain-over-random" in rules:
        play_lines = [reference_mean, t("gate_play_random", threshold=over_random)]
    else:
        play_lines = [reference_mean]
    return {
        "lines": [
            t(
                "gate_faster",
                stat=gates.speed_statistic.upper(),
                gate=f"{1 / limit:.2f}",
                limit=f"{limit:.2f}",
                least=gates.min_measurements,
            ),
            *agreement_lines,
            *play_lines,
        ],
        "source": t("gates_source", source=t("gate_source_default") if gates.source == "default" else gates.source),
        "href": f"{root}gates.toml",
    }


def gate_rules(results) -> dict:
    """``gates_view``'s ``rules`` and ``tolerances`` for the runs of ``results``."""
    protocols = [res.rows.run.get("protocol") or {} for res in results]
    return {
        "rules": {play_margin.rule_of(res.rows.run.get("settings", {})) for res in results} or {"reference-mean"},
        "tolerances": {
            float(p.get("action_tolerance") or 0) for p in protocols if p.get("action_kind") == "continuous"
        },
        "discrete": any(p.get("action_kind") != "continuous" for p in protocols) or not protocols,
    }


def verdict_cell(r, res: RunResult, t: Translator) -> dict:
    """The badge for one runtime on one machine, with its reasons."""
    if r.rows.status in ("unavailable", "failed"):
        kind = reasons.kind(r.rows.status, r.rows.reason)
        return {
            "css": "none",  # a runtime left out by choice (opt-in) was not measured, not unable to run
            "text": t("status_not_measured" if kind == "opt_in" else f"status_{r.rows.status}"),
            "badge": None,
            "title": "",
            "reasons": [t(f"reason_kind_{kind}")],
            "raw": r.rows.reason,
        }
    repro = [wording.reproduction(r.reproduction, t, r.rows.runtime_id)] if r.reproduction else []
    repro += [wording.twin(r.twin, t, r.rows.runtime_id)] if r.twin else []
    repro += (
        [wording.stood_in(r.shadow["stood_in"], t, r.rows.runtime_id)] if r.shadow and r.shadow.get("stood_in") else []
    )
    # its own pill beside the outcome's, so that a narrow column wraps between the two, never inside one
    badge = t("badge_not_reproducible") if r.reproduction and r.reproduction["reproducible"] is False else None
    if r.is_reference and not res.withheld == "reference-not-measured":
        return {
            "css": "ref",
            "text": t("outcome_reference"),
            "badge": badge,
            "title": "",
            "reasons": [t("reason_reference"), *repro],
            "raw": None,
        }
    if r.verdict is None:
        why = [t(WITHHELD_REASON[res.withheld])] if res.withheld else []
        return {"css": "none", "text": t("outcome_no-verdict"), "badge": None, "title": "", "reasons": why, "raw": None}
    outcome = r.verdict.outcome
    return {
        "css": OUTCOME_CSS[outcome],
        "text": t(f"outcome_{outcome}"),
        "badge": badge,
        "title": "",
        "reasons": [gate_reason(g, t, r.rows.runtime_id) for g in r.verdict.gates] + repro,
        "raw": None,
    }


def comparison_text(c: dict, t: Translator) -> str:
    """An extra same-seed comparison of two runtimes: the same score on every seed, or the mean paired difference
    beside its interval (no direction claimed: no test decides one here)."""
    p, pair = c["paired"], f"{c['candidate'].runtime_id}/{c['baseline'].runtime_id}"
    names = {"candidate": c["candidate"].title, "baseline": c["baseline"].title}
    if p["identical"] == p["n"]:
        return claims.say(t, "scores_identical", "comparison_identical", p, pair, **names, n=p["n"])
    return claims.say(
        t,
        "score_difference",
        "comparison_row",
        {"mean": p["mean"], "low": p["ci_low"], "high": p["ci_high"]},
        pair,
        **names,
        mean=signed(p["mean"]),
        low=signed(p["ci_low"]),
        high=signed(p["ci_high"]),
        identical=p["identical"],
        n=p["n"],
    )


def machine_title(res: RunResult, t: Translator) -> str:
    """The machine's name (the label its user gave) and its device; which run a page shows is said below it."""
    run = res.rows.run
    return t("machine_title", label=run["label"], device=run.get("gpu_name") or run.get("cpu") or "?")


def hardware_page(res: RunResult, slug: str, t: Translator) -> dict:
    run = res.rows.run
    charts = dict.fromkeys(
        ("speed", "latency", "throughput", "agreement", "fixed-states", "play", "scores", "breakdown")
    )
    for make in MACHINE_CHARTS:
        chart = make(res, t)
        if chart:
            charts[chart.chart_id] = chart_view(chart, t, f"../../../data/{slug}/{chart.chart_id}.csv")
    meanings = run.get("protocol", {}).get("action_meanings") or []

    def name(a):
        return meanings[a] if a < len(meanings) else str(a)

    flips = [
        f"{r.rows.title} — "
        + t(
            "flip_row",
            state=f["state"],
            ref_action=name(f["reference_action"]),
            action=name(f["action"]),
            margin=f"{f['reference_margin']:.4f}",
            dq=f"{f['max_abs_dq']:.2e}",
        )
        for r in res.runtimes
        for f in (r.agreement or {}).get("flips", [])
    ]
    comparisons = [comparison_text(c, t) for c in res.comparisons]
    measured = [r for r in res.runtimes if r.rows.status not in ("unavailable", "failed")]
    verdicts = [
        {
            "title": r.rows.title,
            "cell": verdict_cell(r, res, t),
            "why": t("reason_reference") if r.is_reference else short_why(r, res, t),
        }
        for r in measured
    ]
    lat_n = max((r.latency["n"] for r in res.runtimes if r.latency), default=0)
    not_run = reasons.grouped(
        [
            (r.rows.title, r.rows.status, r.rows.reason)
            for r in res.runtimes
            if r.rows.status in ("unavailable", "failed")
        ],
        t,
    )
    date = str(run.get("started_at") or "")[:10]
    seeds = len(run.get("settings", {}).get("seeds", []))
    page = {
        "heading": machine_title(res, t),
        "machine": t("machine_name", label=run["label"], device=run.get("gpu_name") or run.get("cpu") or "?"),
        "date": t(
            "measured_on",
            date=date,
            status=t(f"status_word_{run['status']}")
            if run["status"] in ("running", "incomplete", "complete")
            else run["status"],
        ),
        "agent": agent_text(res, t),
        "atari_protocol": None if agent_text(res, t) else atari_protocol_text(res, t),  # else in the agent's line
        "continuous": continuous_view(res, t),
        "banners": banners(res, t),
        "contents": contents_text(res, t),
        "found": sentences(res, t),
        "answer": answer_lines(res, t),
        "scope": scope_text(res, t),
        "verdicts": verdicts,
        "gate_tables": gate_tables(res, t),
        "family": family_text(res, t),
        "charts": charts,
        "flips": flips,
        "comparisons": comparisons,
        "speed_intro": t("speed_intro", n=f"{lat_n:,}"),
        # fewer independent measurements than the speed gate needs: no speed verdict, and how to take more
        "speed_unconfirmed": t(
            claims.count_key("speed_unconfirmed", res.measurements),
            have=res.measurements,
            least=res.gates.min_measurements,
        )
        if lat_n and res.measurements < res.gates.min_measurements
        else None,
        "speed_notes": speed_notes(res, t) if lat_n else [],
        "run_file": res.rows.source.name,
        "played_intro": t("played_intro"),
        "agreement_intro": t(
            "agreement_intro",
            states=run.get("settings", {}).get("states", "?"),
            ref=(res.runtime(res.reference_id).rows.title if res.runtime(res.reference_id) else t("none")),
        ),
        "play_intro": t(
            "play_intro",
            n=f"{seeds:,}",
            ref=(res.runtime(res.reference_id).rows.title if res.runtime(res.reference_id) else t("none")),
        ),
        "rounds": rounds_table(res, t),
        "repeats": repeats_tables(res, t),
        "played_agreement": played_agreement_table(res, t),
        "play_test": play_test_table(res, t),
        "verdicts_href": f"../../../data/{slug}/verdicts.json",
        "kernels": kernels_table(res, t),
        "resources": resources_table(res, t),
        "costs_intro": t("costs_intro")
        if charts.get("breakdown") or any(r.rows.kernels for r in res.runtimes)
        else t("costs_gpu_only"),
        "artifacts": [
            {"title": r.rows.title, "tf32": tf32_text(r.rows.numerics, t)}
            for r in res.runtimes
            if r.rows.status == "available"
        ],
        "not_run": not_run,
        "provenance": [{"label": k, "value": v} for k, v in provenance_rows(res, t)],
    }
    page["tables"] = machine_tables(page, t)  # the long tables on a page of their own, linked from each part
    return page


def speed_notes(res: RunResult, t: Translator) -> list[str]:
    """What the speed figures rest on, beside them: rounds under other processes' load (measured again, still
    loaded), and whether the speed gate's rule was written after the file was made."""
    load, out = res.load, []
    if load and load["rounds"]:
        limit = pct(host_load.FOREIGN_LIMIT, 0)
        if load["retaking"]:
            out.append(
                t(
                    "speed_load_retaking",
                    rounds=f"{load['rounds']:,}",
                    retaken=load["retaken"],
                    loaded=load["loaded"],
                    limit=limit,
                    retakes=load["retakes"],
                )
            )
        else:
            out.append(t("speed_load_before", rounds=f"{load['rounds']:,}", loaded=load["loaded"], limit=limit))
    if res.rejudged:
        out.append(t("speed_rejudged", date=res.gates.rule_written, least=res.gates.min_measurements))
    return out


def runtime_order(results: list[RunResult]) -> list[str]:
    """Every runtime of any run, in report order: as the runs' files place them (``position``)."""
    place: dict[str, int] = {}
    for res in results:
        for r in res.runtimes:
            place[r.rows.runtime_id] = min(place.get(r.rows.runtime_id, r.rows.position), r.rows.position)
    return sorted(place, key=lambda rid: (place[rid], rid))


def label_of(res: RunResult) -> str:
    return res.rows.run.get("display_label", res.rows.run["label"])
