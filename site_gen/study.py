"""The original study's figures, quoted, beside this project's for the same runtimes: the study page's model."""

from __future__ import annotations

import json
from pathlib import Path

from .analysis import RunResult
from .home import newest_first
from .i18n import Translator
from .pages import verdict_cell
from .wording import pct

STUDY = json.loads(Path(__file__).with_name("original_study.json").read_text(encoding="utf-8"))


def study_page(results: list[RunResult], slugs: list[str], t: Translator) -> dict:
    """The original study's figures, quoted, beside this project's for the same runtimes where they exist."""
    lang = t.lang
    cited = [
        {
            "runtime": row["runtime"][lang],
            **{k: row[k] for k in ("p95_ms", "fixed_states", "mean_score", "paired_vs_pytorch", "engine_mb")},
            "verdict": row["verdict"][lang],
        }
        for row in STUDY["rows"]
    ]
    ours = []
    for res, slug in newest_first(results, slugs):
        if not res.rows.run.get("gpu_name"):  # the study measured a GPU: a CPU machine has no row to match
            continue
        for match in STUDY["matches"]:
            r = next((x for x in (res.runtime(rid) for rid in match["runtime_ids"]) if x), None)
            if r is None:
                continue
            measured = bool(r.latency)
            ours.append(
                {
                    "machine": res.rows.run["label"],
                    "href": f"../hardware/{slug}/index.html",
                    "study_runtime": match["study"][lang],
                    "runtime": r.rows.title,
                    "p95": f"{r.latency['p95']:.3f}" if measured else t("none"),
                    "fixed": (
                        f"{r.agreement['same_actions']}/{r.agreement['states']}"
                        if r.agreement
                        else t("reference_short")
                        if r.is_reference and measured
                        else t("none")
                    ),
                    "played": pct(r.shadow["fraction"], 2) if r.shadow else t("none"),
                    "mean": _mean_same_seeds(r, t),
                    "engine": f"{r.rows.artifact_bytes / 1e6:.2f}" if r.rows.artifact_bytes else t("none"),
                    "verdict": verdict_cell(r, res, t),
                    "why": t("semi").join(verdict_cell(r, res, t)["reasons"]) if not measured else "",
                }
            )
    return {"source": STUDY["source"][lang], "cited": cited, "ours": ours}


def _mean_same_seeds(r, t: Translator) -> str:
    """A runtime's mean score beside the reference's over the same seeds (never two means over different seeds)."""
    if not r.scores:
        return t("none")
    p = r.paired_vs_reference
    if r.is_reference or not p:
        return t("mean_own", mean=f"{r.scores['mean']:.1f}", n=f"{r.scores['n']:,}")
    return t("mean_vs_reference", mean=f"{p['mean_candidate']:.1f}", ref=f"{p['mean_baseline']:.1f}", n=f"{p['n']:,}")
