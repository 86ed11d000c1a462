"""Page models: analysis results turned into already formatted, already translated values.

Templates only place these values; nothing is computed in them.
"""
from __future__ import annotations

import json

from collect.protocol import ACTION_MEANINGS
from collect.runtimes import all_runtimes

from rtreport.labels import slug as slug_of

from .analysis import RunResult
from .charts import Chart, agreement_chart, cross_hardware_chart, latency_chart, play_chart, throughput_chart
from .i18n import LANGUAGES, Translator
from .verdict import Gates

OUTCOME_CSS = {"deployment-worthy": "ok", "not-adopted": "bad", "reference": "ref", "no-verdict": "none"}


def slugify(label: str, taken: set) -> str:
    """The label's slug (``rtreport.labels.slug``), made unique among the site's machines."""
    base = slug_of(label)
    slug, i = base, 2
    while slug in taken:
        slug, i = f"{base}-{i}", i + 1
    taken.add(slug)
    return slug


def pct(x: float, digits: int = 1) -> str:
    return f"{x * 100:.{digits}f} %"


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
                      t("gate_play", threshold=pct(gates.min_ci_low_fraction_of_reference_mean, 0))],
            "source": t("gates_source", source=gates.source)}


def gate_reason(g, t: Translator) -> str:
    state = "pass" if g.passed else "fail" if g.passed is False else "missing"
    key = f"gate_{g.gate}_{state}"
    if state == "missing":
        return t(key)
    if g.gate == "faster":
        return t(key, value=pct(g.value), threshold=pct(g.threshold, 0))
    if g.gate == "agreement":
        return t(key, same=g.detail["same"], states=g.detail["states"], value=pct(g.value, 2),
                 threshold=pct(g.threshold, 0))
    return t(key, ci_low=f"{g.detail['ci_low']:+.2f}", ref_mean=f"{g.detail['reference_mean']:.2f}",
             value=pct(g.value), threshold=pct(g.threshold, 0))


WITHHELD_REASON = {"no-reference": "reason_no_reference", "reference-not-measured": "reason_no_reference",
                   "invalid": "reason_invalid_file"}


def verdict_cell(r, res: RunResult, t: Translator) -> dict:
    """The badge for one runtime on one machine, with its reasons."""
    run_profile = res.rows.run.get("profile")
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
    if run_profile == "quick":
        outcome, reasons = "no-verdict", [t("reason_smoke_profile")] + reasons
    return {"css": OUTCOME_CSS[outcome], "text": t(f"outcome_{outcome}"), "title": "; ".join(reasons),
            "reasons": reasons}


def machine_description(res: RunResult) -> str:
    run = res.rows.run
    return " · ".join(x for x in (run.get("gpu_name") or run.get("cpu"), run.get("os"), run.get("started_at")
                                  and str(run["started_at"])[:19]) if x)


def scope_text(res: RunResult, t: Translator) -> str:
    run = res.rows.run
    versions = ", ".join(f"{name} {run[key]}" for name, key in (
        ("PyTorch", "torch_version"), ("ONNX Runtime", "onnxruntime_version"), ("TensorRT", "tensorrt_version"),
        ("CUDA", "cuda_version"), ("driver", "gpu_driver")) if run.get(key))
    return t("scope", model=f"{run['model_path'].rsplit('/', 1)[-1]} (sha256 {run['model_sha256'][:12]})",
             machine=run.get("gpu_name") or run.get("cpu") or "?", versions=versions,
             workload=workload_text(res, t))


def workload_text(res: RunResult, t: Translator) -> str:
    settings = res.rows.run.get("settings", {})
    return t("workload_text", states=settings.get("states", "?"), seeds=len(settings.get("seeds", [])),
             epsilon=res.rows.run.get("eval_epsilon"))


def banners(res: RunResult, t: Translator) -> list[str]:
    """What a reader must know before reading this machine's numbers: how the run ended, what it lacks."""
    run = res.rows.run
    out = []
    if run["status"] == "running":
        out.append(t("stopped_banner"))
    elif run["status"] != "complete":
        out.append(t("partial_banner", status=t(f"status_word_{run['status']}") if run["status"] == "incomplete"
                     else run["status"], detail=run.get("status_detail") or t("none")))
    if run.get("profile") == "quick":
        out.append(t("smoke_banner"))
    if res.rows.problems:
        out.append(t("invalid_banner", problems="; ".join(str(p) for p in res.rows.problems)))
    ref = res.runtime(res.reference_id)
    if res.withheld == "no-reference":
        out.append(t("no_reference_banner"))
    elif res.withheld == "reference-not-measured":
        out.append(t("reference_failed_banner", ref=res.reference_id,
                     status=t(f"status_{ref.rows.status}") if ref else t("status_not_run")))
    elif ref and not res.reference_id.startswith("torch-"):
        why = "why_onnx_model" if run.get("model_format") == "onnx" else "why_not_measured"
        out.append(t("other_reference_banner", ref=ref.rows.title, why=t(why)))
    return out


def contents_text(res: RunResult, t: Translator) -> list[str]:
    """What the file holds, in words (a run cut short or limited to a few runtimes says so plainly)."""
    measured = [r for r in res.runtimes if r.latency or r.agreement or r.scores]
    lines = [t("contents_none") if not measured else
             t("contents", measured=len(measured), listed=len(res.runtimes),
               ids=", ".join(r.rows.runtime_id for r in measured))]
    if measured and all(r.is_reference for r in measured) and not res.withheld:
        lines.append(t("only_reference"))
    return lines


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
    for r in res.runtimes:
        for f in (r.agreement or {}).get("flips", []):
            flips.append(f"{r.rows.title} — " + t("flip_row", state=f["state"],
                                                   ref_action=ACTION_MEANINGS[f["reference_action"]],
                                                   action=ACTION_MEANINGS[f["action"]],
                                                   margin=f"{f['reference_margin']:.4f}", dq=f"{f['max_abs_dq']:.2e}"))
    comparisons = [t("comparison_row", candidate=c["candidate"].title, baseline=c["baseline"].title,
                     mean=f"{c['paired']['mean']:+.2f}", low=f"{c['paired']['ci_low']:+.2f}",
                     high=f"{c['paired']['ci_high']:+.2f}", identical=c["paired"]["identical"], n=c["paired"]["n"])
                   for c in res.comparisons]
    paired = [r for r in res.runtimes if r.paired_vs_reference and "first_divergence" in r.paired_vs_reference]
    divergence_rows = []
    if paired:
        seeds = paired[0].paired_vs_reference["seeds"]
        for i, seed in enumerate(seeds):
            row = [str(seed)]
            for r in paired:
                p = r.paired_vs_reference
                part = p["first_divergence"][i] if i < len(p["first_divergence"]) else None
                row.append(t("identical_episode") if part is None else str(part))
            divergence_rows.append(row)
    verdicts = [{"title": r.rows.title, "cell": (cell := verdict_cell(r, res, t)),
                 "reasons": cell["reasons"]} for r in res.runtimes]
    lat_n = max((r.latency["n"] for r in res.runtimes if r.latency), default=0)
    provenance = [(t("prov_label"), run["label"]), (t("prov_run"), run["run_id"]),
                  (t("prov_started"), str(run["started_at"])[:19]),
                  (t("prov_finished"), str(run["finished_at"])[:19] if run.get("finished_at") else t("none")),
                  (t("prov_status"), t(f"status_word_{run['status']}") if run["status"] in
                   ("running", "incomplete", "complete") else run["status"]), (t("prov_profile"), run.get("profile")),
                  (t("prov_host"), run.get("host")), (t("prov_os"), run.get("os")),
                  (t("prov_cpu"), f"{run.get('cpu')} ({run.get('cpu_count')})"),
                  (t("prov_gpu"), run.get("gpu_name") or t("none")), (t("prov_driver"), run.get("gpu_driver") or t("none")),
                  (t("prov_cuda"), run.get("cuda_version") or t("none")),
                  (t("prov_versions"), ", ".join(f"{k.removesuffix('_version')} {run[k]}" for k in (
                      "python_version", "torch_version", "onnxruntime_version", "tensorrt_version", "ale_py_version",
                      "gymnasium_version", "numpy_version", "rtreport_version", "code_version") if run.get(k))),
                  (t("prov_model"), f"{run['model_path']} ({run['model_format']}, sha256 {run['model_sha256']})"),
                  (t("prov_reference"), ref_title),
                  (t("prov_tf32"), json.dumps(run.get("torch_tf32_reference"), sort_keys=True)),
                  (t("prov_source"), res.rows.source.name)]
    return {
        "heading": t("hardware_heading", label=run.get("display_label", run["label"])), "banners": banners(res, t),
        "contents": contents_text(res, t), "scope": scope_text(res, t),
        "verdicts": verdicts, "charts": charts, "flips": flips, "comparisons": comparisons,
        "speed_intro": t("speed_intro", n=f"{lat_n:,}"),
        "agreement_intro": t("agreement_intro", states=run.get("settings", {}).get("states", "?"), ref=ref_title),
        "play_intro": t("play_intro", n=len(run.get("settings", {}).get("seeds", [])), ref=ref_title),
        "divergence_head": ["seed"] + [r.rows.title for r in paired], "divergence_rows": divergence_rows,
        "artifacts": [{"title": r.rows.title, "size": f"{r.rows.artifact_bytes / 1e6:.2f} MB",
                       "prepare": f"{r.rows.prepare_seconds:.2f}" if r.rows.prepare_seconds is not None else t("none"),
                       "tf32": tf32_text(r.rows.details, t)}
                      for r in res.runtimes if r.rows.artifact_bytes and r.rows.status == "available"],
        "not_run": [{"title": r.rows.title, "status": t(f"status_{r.rows.status}"), "reason": r.rows.reason}
                    for r in res.runtimes if r.rows.status in ("unavailable", "failed")],
        "provenance": [{"label": k, "value": v} for k, v in provenance],
    }


def tf32_text(details: dict, t) -> str:
    """A runtime's recorded TF32 state (``details["tf32"]``, as each runner describes it) in the reader's language."""
    tf32 = (details or {}).get("tf32")
    if isinstance(tf32, dict) and "use_tf32" in tf32:  # ONNX Runtime's CUDA EP option
        return t("tf32_on" if str(tf32["use_tf32"]) == "1" else "tf32_off") + f" (use_tf32={tf32['use_tf32']})"
    if isinstance(tf32, dict) and {"matmul", "cudnn"} <= set(tf32):  # PyTorch's two allow_tf32 switches
        state = "tf32_on" if tf32["matmul"] or tf32["cudnn"] else "tf32_off"
        return t(state) + (f" (matmul {t('tf32_on' if tf32['matmul'] else 'tf32_off')}, "
                           f"cuDNN {t('tf32_on' if tf32['cudnn'] else 'tf32_off')})")
    if isinstance(tf32, str) and "CPU" in tf32:
        return t("tf32_cpu")
    if isinstance(tf32, str) and tf32.startswith("off"):  # TensorRT 10: BuilderFlag.TF32 cleared
        return t("tf32_off") + " (BuilderFlag.TF32)"
    if isinstance(tf32, str) and tf32.startswith("strongly typed"):  # TensorRT 11: the ONNX's types decide
        return t("tf32_typed")
    if isinstance(tf32, str) and "default" in tf32:
        return t("tf32_default")
    if isinstance(tf32, str) and tf32:
        return tf32
    return t("none")


def home_page(results: list[RunResult], slugs: list[str], t: Translator) -> dict:
    known = [s.info.runtime_id for s in all_runtimes()]
    seen = {r.rows.runtime_id: r.rows.title for res in results for r in res.runtimes}
    order = [rid for rid in known if rid in seen] + sorted(rid for rid in seen if rid not in known)
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
    return {"machines": machines, "matrix": matrix, "facts": facts}


def compare_page(results: list[RunResult], slugs: list[str], t: Translator) -> dict:
    chart = cross_hardware_chart(results, t)
    return {"chart": chart_view(chart, t, "../../data/cross-hardware.csv") if chart else None,
            "machines": [{"href": f"../hardware/{slug}/index.html", "link_text": t("open_machine", label=_label(res)),
                          "description": machine_description(res)} for res, slug in zip(results, slugs)]}


def _label(res: RunResult) -> str:
    return res.rows.run.get("display_label", res.rows.run["label"])
