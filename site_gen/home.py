"""The overview: an answer card per machine, newest first, then the verdict matrix, and which agents the answers
are about (the comparison across machines is ``site_gen.compare``). Page models only: formatted, translated
values."""

from __future__ import annotations

import json

from . import claims, reasons
from .analysis import RunResult
from .comparability import differences
from .describe import machine_description, status_detail_text, workload_text
from .agents import agent_key
from .answer import answer_lines
from .findings import recommendation
from .i18n import Translator, for_task
from .pages import label_of, runtime_order, verdict_cell
from .wording import pct, stat_name

CARD_LEAVES_OUT = ("answer", "use", "speed", "decision", "scope", "not_run")  # the page lists what did not run
TENSORRT = ("trt-", "trtrtx-", "ort-trt")
FAMILIES = (("trtrtx-", "family_tensorrt_rtx"), ("trt-", "family_tensorrt"), ("ort-trt", "family_ort_tensorrt"))


def newest_first(results, slugs, answers_only: bool = True):
    """Runs newest first; ``answers_only``: each machine's answer only (its newest complete run, history.answers)."""
    from .history import answers

    keep = answers(results, slugs) if answers_only else set(slugs)
    return sorted(
        ((r, s) for r, s in zip(results, slugs) if s in keep),
        key=lambda x: str(x[0].rows.run.get("started_at") or ""),
        reverse=True,
    )


def tensorrt_note(res: RunResult, t: Translator) -> str | None:
    """Why TensorRT was not measured on this machine, in one sentence (None if some TensorRT runtime ran)."""
    rows = [r for r in res.runtimes if r.rows.runtime_id.startswith(TENSORRT)]
    if not rows or any(r.latency for r in rows):
        return None
    why: dict = {}  # each family of TensorRT runtimes with its own reasons: a refusal is never lent to another
    for r in rows:
        family = next(f for p, f in FAMILIES if r.rows.runtime_id.startswith(p))
        kind = reasons.kind(r.rows.status, r.rows.reason)
        if kind not in why.setdefault(family, []):
            why[family].append(kind)
    # which GPUs TensorRT for RTX serves: said where the machine has a GPU, moot on a machine without one
    return t(
        "card_tensorrt" if res.rows.run.get("gpu_name") else "card_tensorrt_no_gpu",
        why=t("semi").join(
            t("family_reason", family=t(f), why=t("sep").join(t(f"reason_kind_{k}") for k in kinds))
            for f, kinds in why.items()
        ),
    )


def _speed(r, res: RunResult) -> dict:
    """A headline's speed claim: one statistic (the gate's), its per-round ratio as "× the reference's speed" with
    that ratio's interval, and the runtime's own value of the same statistic."""
    return {
        "stat": stat_name(res),
        "times": f"{1 / r.ratio[0]:.2f}",
        "low": f"{1 / r.ratio[2]:.2f}",
        "high": f"{1 / r.ratio[1]:.2f}",
        "value": f"{r.latency[res.gates.speed_statistic]:.3f}",
    }


def headline(res: RunResult, t: Translator) -> str:
    """The answer in one line, with its number: the runtime to use, or the fastest one still in question."""
    rec = recommendation(res)
    if rec:
        r = rec["runtime"]
        others = [
            x.ratio[0] for x in res.runtimes if x.verdict and x.verdict.outcome == "deployment-worthy" and x.ratio
        ]
        said = claims.say(
            t,
            "recommend",
            "card_use",
            {"outcome": r.verdict.outcome, "ratio": r.ratio[0], "others": others},
            r.rows.runtime_id,
            runtime=r.rows.title,
            **_speed(r, res),
        )
        if (
            r.reproduction and r.reproduction["reproducible"] is False
        ):  # the short answer keeps what a deployer must know
            said += t("card_not_reproducible")
        return said
    timed = [r for r in res.runtimes if r.ratio]
    if not timed:
        if not any(not r.is_reference and r.rows.status == "available" for r in res.runtimes):
            return t("card_only_reference")  # nothing ran beside the reference: nothing was judged
        return t("card_withheld") if res.withheld else t("card_none")
    if res.withheld == "smoke":  # a smoke run's speeds decide nothing: no figure of them leads the home page
        return t("card_withheld_smoke")
    r = min(timed, key=lambda x: x.ratio[0])
    e = {"value": r.ratio[0], "others": [x.ratio[0] for x in timed]}  # by point estimate, its interval beside it
    if res.withheld:  # no verdicts here at all: say why, not that the fastest runtime "has no verdict"
        return claims.say(
            t, "fastest_point", "card_withheld_fastest", e, r.rows.runtime_id, runtime=r.rows.title, **_speed(r, res)
        )
    return claims.say(
        t,
        "fastest_point",
        "card_none_fastest",
        e,
        r.rows.runtime_id,
        runtime=r.rows.title,
        **_speed(r, res),
        outcome=t(f"outcome_{r.verdict.outcome}") if r.verdict else t("outcome_no-verdict"),
    )


def card(res: RunResult, slug: str, t: Translator) -> dict:
    rec = recommendation(res)
    r = rec["runtime"] if rec else None
    run = res.rows.run
    return {
        "title": t("card_title", label=res.rows.run["label"], device=run.get("gpu_name") or run.get("cpu") or "?"),
        "short": res.rows.run["label"],
        "date": str(res.rows.run.get("started_at") or "")[:10],
        "href": f"hardware/{slug}/index.html",
        "link_text": t("open_machine", label=res.rows.run["label"]),
        "headline": headline(res, t),
        # the machine page's summary, less what the headline says and the scope its page gives
        "lines": [line for line in answer_lines(res, t, brief=True) if line["key"] not in CARD_LEAVES_OUT],
        "tensorrt": tensorrt_note(res, t),
        "css": "ok" if r else "none",
        **run_state(run, t),
    }


def run_state(run: dict, t: Translator) -> dict:
    """A run that is not complete says so on the home page: its word in the glance list, a line on its card."""
    status = run.get("status")
    if status == "complete":
        return {"state": None, "state_line": None}
    word = t(f"status_word_{status}") if status in ("running", "incomplete") else str(status)
    detail = t("card_running") if status == "running" else status_detail_text(run.get("status_detail"), t)
    return {"state": word, "state_line": t("card_not_complete", status=word, detail=detail)}


def home_page(results: list[RunResult], slugs: list[str], t: Translator) -> dict:
    ordered = newest_first(results, slugs)
    machines = [{"label": res.rows.run["label"], "href": f"hardware/{slug}/index.html"} for res, slug in ordered]
    seen = {r.rows.runtime_id: r.rows.title for res in results for r in res.runtimes}
    ran_somewhere = {
        r.rows.runtime_id for res in results for r in res.runtimes if r.rows.status not in ("unavailable",)
    }
    matrix = []
    for rid in runtime_order(results):
        if rid not in ran_somewhere:
            continue
        cells = []
        for res, _ in ordered:
            r = res.runtime(rid)
            if r:  # one that could not run on that machine is left out on a phone, as one not run there
                cells.append({**verdict_cell(r, res, t), "absent": r.rows.status == "unavailable"})
            else:  # not run on that machine: left out on a phone
                cells.append(
                    {
                        "css": "none",
                        "text": t("status_not_run"),
                        "badge": None,
                        "title": "",
                        "reasons": [],
                        "raw": None,
                        "absent": True,
                    }
                )
        # measured on no machine shown: a phone shows why on each, not an empty card
        matrix.append({"title": seen[rid], "cells": cells, "nowhere": all(c["absent"] for c in cells)})
    not_run = reasons.grouped(
        [
            (f"{r.rows.runtime_id} ({res.rows.run['label']})", r.rows.status, r.rows.reason)
            for res, _ in ordered
            for r in res.runtimes
            if r.rows.status == "unavailable"
        ],
        t,
    )
    facts = []
    for name, sha in sorted(
        {(res.rows.run["model_path"].rsplit("/", 1)[-1], res.rows.run["model_sha256"]) for res in results}
    ):
        facts.append({"label": t("model"), "value": f"{name} — sha256 {sha[:12]}…"})
    workloads: dict[str, list] = {}  # runs differ in how many seeds they played: say whose workload is whose
    for res, _ in ordered:
        workloads.setdefault(workload_text(res, for_task(t, res.rows.run.get("protocol"))), []).append(
            res.rows.run["label"]
        )
    for w, labels in sorted(workloads.items()):
        facts.append(
            {
                "label": t("workload"),
                "value": w
                if len(workloads) == 1
                else t("workload_of", workload=w, labels=t("agent_actions_sep").join(labels)),
            }
        )
    return {
        "cards": [card(res, slug, for_task(t, res.rows.run.get("protocol"))) for res, slug in ordered],
        "machines": machines,
        "matrix": matrix,
        "not_run": not_run,
        "facts": facts,
        "groups": machine_groups(results, slugs, t),
        "notices": alike_notices(results, t),
        **agents_lede(ordered, t),
    }


def agents_lede(ordered, t: Translator) -> dict:
    """Which agents the answers are about: the page's Breakout introduction where every answer is Breakout's; a
    line naming the others where some are not; an introduction of its own where none is."""
    others = [res.rows.run["label"] for res, _ in ordered if (res.rows.run.get("protocol") or {}).get("family")]
    breakout = len(others) < len(ordered)
    if not others:
        return {
            "breakout": True,
            "agents_line": None,
            "matrix_heading": t("verdict_matrix"),
            "matrix_note": t("verdict_matrix_note"),
        }
    names = t("agent_actions_sep").join(others)
    share = pct(ordered[0][0].gates.min_same_action_fraction, 0)
    return {  # the matrix's columns are machines and agents: each cell holds for both
        "matrix_heading": t("verdict_matrix_agents"),
        "matrix_note": t("verdict_matrix_note_agents"),
        "breakout": breakout,
        "agents_line": t("home_other_agents" if breakout else "home_agents_lede", labels=names, share=share),
    }


def machine_groups(
    results: list[RunResult], slugs: list[str], t: Translator, prefix: str = "", answers_only: bool = False
) -> list[dict]:
    """Runs grouped by machine (the label its user gave), newest machine first, runs newest first; ``answers_only``:
    each machine's answer alone (its earlier runs are on its history page)."""
    groups: dict[str, list] = {}
    for res, slug in newest_first(results, slugs, answers_only=answers_only):
        groups.setdefault(res.rows.run["label"], []).append((res, slug))
    return [
        {
            "label": label if len(runs) == 1 else t("machine_runs", label=label, n=len(runs)),
            "runs": [
                {
                    "href": f"{prefix}hardware/{slug}/index.html",
                    "link_text": t("open_machine", label=label if answers_only else label_of(res)),
                    "description": machine_description(res),
                }
                for res, slug in runs
            ],
        }
        for label, runs in groups.items()
    ]


def alike_notices(results: list[RunResult], t: Translator) -> list[str]:
    """One notice per basis (model, fixed states, seeds, protocol) on which the runs shown together differ: the
    runs of one agent (the one most runs judged); another agent's runs differ by design, and each page names its
    agent."""
    keys = [agent_key(res.rows.run) for res in results]
    first = max(dict.fromkeys(keys), key=lambda k: (keys.count(k), k == "ALE/Breakout-v5")) if keys else None
    results = [res for res, k in zip(results, keys) if k == first]
    notices = []
    for key, values in differences([res.rows.run for res in results]):
        if key == "basis_protocol":
            protocols = [res.rows.run.get("protocol") or {} for res in results]
            keys = sorted({k for p in protocols for k in p if len({json.dumps(q.get(k)) for q in protocols}) > 1})
            shown = t("protocol_keys", keys=t("sep").join(keys))
        else:
            shown = t("semi").join(f"{label}: {v[:12] if v else t('not_recorded')}" for label, v in values.items())
        notices.append(t("not_alike", what=t(key), values=shown))
    return notices
