"""Page models: analysis results turned into already formatted, already translated values.

Templates only place these values; nothing is computed in them.
"""
from __future__ import annotations

import json

from rtreport.labels import slug as slug_of

from .analysis import RunResult
from .comparability import differences
from .charts import Chart, agreement_chart, cross_hardware_chart, latency_chart, play_chart, throughput_chart
from .describe import (banners, contents_text, machine_description, provenance_rows, scope_text, tf32_text,
                       workload_text)
from .i18n import LANGUAGES, Translator
from .tables import played_agreement_table, play_test_table, rounds_table
from .verdict import Gates
from .wording import gate_reason, pct

OUTCOME_CSS = {"deployment-worthy": "ok", "not-adopted": "bad", "reference": "ref", "no-verdict": "none",
               "undecided": "warn"}


def slugify(label: str, taken: set) -> str:
    """The label's slug (``rtreport.labels.slug``), made unique among the site's machines."""
    base = slug_of(label)
    slug, i = base, 2
    while slug in taken:
        slug, i = f"{base}-{i}", i + 1
    taken.add(slug)
    return slug


def page_frame(lang: str, path: str, title: str, has_charts: bool) -> dict:
    """Common page fields: ``path`` is the page's path below the language folder ('' for its home)."""
    depth = 1 + path.count("/") + (1 if path else 0)
    root = "../" * depth
    alternates = [{"lang": code, "hreflang": tag, "name": name,
                   "href": f"{root}{code}/{path + '/' if path else ''}index.html"} for code, tag, name in LANGUAGES]
    tag = next(t for c, t, _ in LANGUAGES if c == lang)
    return {"lang": lang, "html_lang": tag, "root": root, "title": title, "alternates": alternates,
            "charts": has_charts}


def chart_view(chart: Chart, t: Translator, csv_href: str) -> dict:
    def heading(col):
        if col.startswith("batch:"):
            return t("col_batch_n", b=col.split(":", 1)[1])
        return t(col)
    spec = json.dumps(chart.figure, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    # Inside <script type="application/json"> only "</script" could end the block early; escape <, > and &.
    spec = spec.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
    key, params = chart.summary
    return {"id": chart.chart_id, "spec_json": spec, "caption": t(chart.caption),
            "summary": t(key, **params) if key else "", "columns": [heading(c) for c in chart.columns],
            "rows": chart.rows, "csv_href": csv_href}


def gates_view(gates: Gates, t: Translator) -> dict:
    return {"lines": [t("gate_faster", threshold=pct(gates.min_p95_reduction, 0)),
                      t("gate_agreement", threshold=pct(gates.min_same_action_fraction, 0)),
                      t("gate_play", threshold=pct(gates.play_margin, 0))],
            "source": t("gates_source", source=gates.source)}


WITHHELD_REASON = {"no-reference": "reason_no_reference", "reference-not-measured": "reason_no_reference",
                   "invalid": "reason_invalid_file", "smoke": "reason_smoke_profile"}


def verdict_cell(r, res: RunResult, t: Translator) -> dict:
    """The badge for one runtime on one machine, with its reasons."""
    if r.rows.status in ("unavailable", "failed"):
        return {"css": "none", "text": t(f"status_{r.rows.status}"), "title": r.rows.reason or "",
                "reasons": [r.rows.reason or ""]}
    if r.is_reference and not res.withheld == "reference-not-measured":
        return {"css": "ref", "text": t("outcome_reference"), "title": "", "reasons": [t("reason_reference")]}
    if r.verdict is None:
        reasons = [t(WITHHELD_REASON[res.withheld])] if res.withheld else []
        return {"css": "none", "text": t("outcome_no-verdict"), "title": "; ".join(reasons), "reasons": reasons}
    reasons = [gate_reason(g, t) for g in r.verdict.gates]
    outcome = r.verdict.outcome
    return {"css": OUTCOME_CSS[outcome], "text": t(f"outcome_{outcome}"), "title": "; ".join(reasons),
            "reasons": reasons}


def hardware_page(res: RunResult, slug: str, t: Translator) -> dict:
    run = res.rows.run
    ref = res.runtime(res.reference_id)
    ref_title = ref.rows.title if ref else t("none")
    charts = {"latency": None, "throughput": None, "agreement": None, "play": None}
    for make in (latency_chart, throughput_chart, agreement_chart, play_chart):
        chart = make(res, t)
        if chart:
            charts[chart.chart_id] = chart_view(chart, t, f"../../../data/{slug}/{chart.chart_id}.csv")
    flips = []
    meanings = run.get("protocol", {}).get("action_meanings") or []
    action_name = (lambda a: meanings[a] if a < len(meanings) else str(a))
    for r in res.runtimes:
        for f in (r.agreement or {}).get("flips", []):
            flips.append(f"{r.rows.title} — " + t("flip_row", state=f["state"],
                                                   ref_action=action_name(f["reference_action"]),
                                                   action=action_name(f["action"]),
                                                   margin=f"{f['reference_margin']:.4f}", dq=f"{f['max_abs_dq']:.2e}"))
    comparisons = [t("comparison_row", candidate=c["candidate"].title, baseline=c["baseline"].title,
                     mean=f"{c['paired']['mean']:+.2f}", low=f"{c['paired']['ci_low']:+.2f}",
                     high=f"{c['paired']['ci_high']:+.2f}", identical=c["paired"]["identical"], n=c["paired"]["n"])
                   for c in res.comparisons]
    verdicts = [{"title": r.rows.title, "cell": (cell := verdict_cell(r, res, t)),
                 "reasons": cell["reasons"]} for r in res.runtimes]
    lat_n = max((r.latency["n"] for r in res.runtimes if r.latency), default=0)
    return {
        "heading": t("hardware_heading", label=run.get("display_label", run["label"])), "banners": banners(res, t),
        "contents": contents_text(res, t), "scope": scope_text(res, t),
        "verdicts": verdicts, "charts": charts, "flips": flips, "comparisons": comparisons,
        "speed_intro": t("speed_intro", n=f"{lat_n:,}"),
        "agreement_intro": t("agreement_intro", states=run.get("settings", {}).get("states", "?"), ref=ref_title),
        "play_intro": t("play_intro", n=len(run.get("settings", {}).get("seeds", [])), ref=ref_title),
        "rounds": rounds_table(res, t), "played_agreement": played_agreement_table(res, t),
        "play_test": play_test_table(res, t), "verdicts_href": f"../../../data/{slug}/verdicts.json",
        "artifacts": [{"title": r.rows.title, "size": f"{r.rows.artifact_bytes / 1e6:.2f} MB",
                       "prepare": f"{r.rows.prepare_seconds:.2f}" if r.rows.prepare_seconds is not None else t("none"),
                       "tf32": tf32_text(r.rows.numerics, t)}
                      for r in res.runtimes if r.rows.artifact_bytes and r.rows.status == "available"],
        "not_run": [{"title": r.rows.title, "status": t(f"status_{r.rows.status}"), "reason": r.rows.reason}
                    for r in res.runtimes if r.rows.status in ("unavailable", "failed")],
        "provenance": [{"label": k, "value": v} for k, v in provenance_rows(res, t)],
    }


def runtime_order(results: list[RunResult]) -> list[str]:
    """Every runtime of any run, in report order: as the runs' files place them (``position``)."""
    place: dict[str, int] = {}
    for res in results:
        for r in res.runtimes:
            place[r.rows.runtime_id] = min(place.get(r.rows.runtime_id, r.rows.position), r.rows.position)
    return sorted(place, key=lambda rid: (place[rid], rid))


def home_page(results: list[RunResult], slugs: list[str], t: Translator) -> dict:
    seen = {r.rows.runtime_id: r.rows.title for res in results for r in res.runtimes}
    order = runtime_order(results)
    machines = [{"label": _label(res), "href": f"hardware/{slug}/index.html",
                 "link_text": t("open_machine", label=_label(res)),
                 "description": machine_description(res)} for res, slug in zip(results, slugs)]
    matrix = []
    for rid in order:
        cells = []
        for res in results:
            r = res.runtime(rid)
            cells.append(verdict_cell(r, res, t) if r else
                         {"css": "none", "text": t("status_not_run"), "title": "", "reasons": []})
        matrix.append({"title": seen[rid], "cells": cells})
    facts = []
    models = sorted({(res.rows.run["model_path"].rsplit("/", 1)[-1], res.rows.run["model_sha256"]) for res in results})
    for name, sha in models:
        facts.append({"label": t("model"), "value": f"{name} — sha256 {sha}"})
    workloads = sorted({workload_text(res, t) for res in results})
    for w in workloads:
        facts.append({"label": t("workload"), "value": w})
    return {"machines": machines, "groups": machine_groups(results, slugs, t), "matrix": matrix, "facts": facts,
            "notices": alike_notices(results, t)}


def machine_groups(results: list[RunResult], slugs: list[str], t: Translator, prefix: str = "") -> list[dict]:
    """Runs grouped by machine (the label its user gave), machines in order of first appearance, runs newest first."""
    groups: dict[str, list] = {}
    for res, slug in zip(results, slugs):
        groups.setdefault(res.rows.run["label"], []).append((res, slug))
    return [{"label": label if len(runs) == 1 else t("machine_runs", label=label, n=len(runs)),
             "runs": [{"href": f"{prefix}hardware/{slug}/index.html", "link_text": t("open_machine", label=_label(res)),
                       "description": machine_description(res)}
                      for res, slug in sorted(runs, key=lambda x: str(x[0].rows.run["started_at"]), reverse=True)]}
            for label, runs in groups.items()]


def compare_page(results: list[RunResult], slugs: list[str], t: Translator) -> dict:
    chart = cross_hardware_chart(results, t)
    return {"chart": chart_view(chart, t, "../../data/cross-hardware.csv") if chart else None,
            "notices": alike_notices(results, t),
            "groups": machine_groups(results, slugs, t, "../"),
            "machines": [{"href": f"../hardware/{slug}/index.html", "link_text": t("open_machine", label=_label(res)),
                          "description": machine_description(res)} for res, slug in zip(results, slugs)]}


def _label(res: RunResult) -> str:
    return res.rows.run.get("display_label", res.rows.run["label"])


def alike_notices(results: list[RunResult], t: Translator) -> list[str]:
    """One notice per basis (model, fixed states, seeds, protocol) on which the runs shown together differ."""
    notices = []
    for key, values in differences([res.rows.run for res in results]):
        if key == "basis_protocol":
            protocols = [res.rows.run.get("protocol") or {} for res in results]
            keys = sorted({k for p in protocols for k in p if len({json.dumps(q.get(k)) for q in protocols}) > 1})
            shown = t("protocol_keys", keys=", ".join(keys))
        else:
            shown = "; ".join(f"{label}: {v[:12] if v else t('not_recorded')}" for label, v in values.items())
        notices.append(t("not_alike", what=t(key), values=shown))
    return notices
