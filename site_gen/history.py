"""A machine's history: the runs of one label (in one file or several), oldest first, per runtime its speed ratio,
P95 and verdict in each, what changed between consecutive runs (libraries, driver, model, code), and a change
flagged only where the two runs' typical values differ at 95 % over their independent measurements (as asv flags a
regression); "≈" where they do not; and said to rest on one process where either run has a single measurement.

``shift`` and ``changes`` are pure; ``history_page`` turns them into a translated page model (templates place it).
"""

from __future__ import annotations

from rtreport import latency_stats

from . import claims
from .comparability import BASIS, _value
from .i18n import Translator
from .pages import label_of, runtime_order, slugify, verdict_cell
from .wording import speed

# (runs column, i18n key): what of the machine's software and hardware may change between runs
RUN_FIELDS = (
    ("gpu_name", "hist_gpu"),
    ("gpu_driver", "hist_driver"),
    ("cuda_version", "hist_cuda"),
    ("cpu", "hist_cpu"),
    ("cpu_count", "hist_cores"),
    ("os", "hist_os"),
    ("python_version", "hist_python"),
    ("rtreport_version", "hist_rtreport"),
    ("code_hash", "hist_code"),
    ("model_sha256", "hist_model"),
    ("profile", "hist_profile"),
)


def groups(results, slugs) -> list[tuple[str, list]]:
    """Labels with two or more runs: (label, [(result, slug), …] oldest first), in the order labels first appear."""
    by_label: dict[str, list] = {}
    for res, slug in zip(results, slugs):
        by_label.setdefault(res.rows.run["label"], []).append((res, slug))
    return [
        (label, sorted(runs, key=lambda x: (str(x[0].rows.run.get("started_at") or ""), x[0].rows.run["run_id"])))
        for label, runs in by_label.items()
        if len(runs) > 1
    ]


def answer(runs) -> int:
    """Index of the machine's answer: the newest complete run, else the newest run."""
    complete = [i for i, (res, _) in enumerate(runs) if res.rows.complete]
    return complete[-1] if complete else len(runs) - 1


def _by_label(results, key: str = "label") -> dict:
    """label -> [(result, index)], oldest first (by start, then run id); ``key``: the run's field to group by."""
    by_label: dict[str, list] = {}
    for i, res in enumerate(results):
        by_label.setdefault(res.rows.run.get(key, res.rows.run["label"]), []).append((res, i))
    return {
        label: sorted(runs, key=lambda x: (str(x[0].rows.run.get("started_at") or ""), x[0].rows.run["run_id"]))
        for label, runs in by_label.items()
    }


def run_slugs(results) -> list[str]:
    """Each run's own page slug, which later runs never change: the label's slug and the day the run started
    (``cpu-epyc-2core-2026-12-03``), a count after it for a second run that started the same day. Agents told apart
    under a shared label (``agents.tell_apart``) count their runs together, as when they were one."""
    taken: set = set()
    slugs = [""] * len(results)
    for label, runs in _by_label(results, "agent_base").items():
        for res, i in runs:
            day = str(res.rows.run.get("started_at") or "")[:10] or "undated"
            slugs[i] = slugify(f"{label}-{day}", taken)
    return slugs


def page_slugs(results) -> list[str]:
    """The slug each run is linked by: a machine's answer (``answer``: its newest complete run) at its label's own
    slug, whatever its file is called; every other run at its own (``run_slugs``), which later runs never change.
    The answer's run is also published at its own slug (``render``), so that its address outlives its being the
    answer."""
    own = run_slugs(results)
    taken = set(own)
    slugs = list(own)
    for label, runs in _by_label(results).items():
        slugs[runs[answer(runs)][1]] = slugify(address(label, runs), taken)
    return slugs


def answers(results, slugs) -> set[str]:
    """The slugs of each machine's answer (``answer`` of the label's runs; a label's only run is its answer): the
    home page, the root page and the feed show these; a label's earlier runs keep their pages and its history."""
    by_label: dict[str, list] = {}
    for res, slug in zip(results, slugs):
        by_label.setdefault(res.rows.run["label"], []).append((res, slug))
    keep = set()
    for runs in by_label.values():
        runs = sorted(runs, key=lambda x: (str(x[0].rows.run.get("started_at") or ""), x[0].rows.run["run_id"]))
        keep.add(runs[answer(runs)][1])
    return keep


def not_alike(a: dict, b: dict) -> list[str]:
    """The basis keys (model, fixed states, seeds, protocol) and profile on which two runs differ."""
    keys = [key for column, key in BASIS if _value(a, column) != _value(b, column)]
    return keys + (["hist_profile"] if a.get("profile") != b.get("profile") else [])


def shift(before: dict | None, after: dict | None) -> str | None:
    """``before``/``after``: a runtime's interval in two runs (``latency_stats.interval``), lower is faster:
    "slower" or "faster" only when the two runs' typical values differ at 95 % (a Welch t interval over their
    measurements, ``latency_stats.shift``); "same" (≈) when they do not; None when either rests on one measurement
    (one process says nothing of the next) or is missing."""
    return latency_stats.shift(before, after)


def changes(before: dict, after: dict) -> list[tuple[str, str, object, object]]:
    """What differs between two runs' rows: (i18n key, name, before, after), run fields then libraries."""
    out = [(key, "", before.get(col), after.get(col)) for col, key in RUN_FIELDS if before.get(col) != after.get(col)]
    env_a, env_b = before.get("environment") or {}, after.get("environment") or {}
    out += [
        ("hist_library", name, env_a.get(name), env_b.get(name))
        for name in sorted(set(env_a) | set(env_b))
        if env_a.get(name) != env_b.get(name)
    ]
    return out


def _p95(r):
    return r.latency["est"].get("p95") if r and r.latency else None


def _ratio(r, q: str):
    return r.ratios.get(q) if r and r.ratios else None


def _shown(value, key: str, t: Translator) -> str:
    if value is None:
        return t("not_recorded")
    text = str(value)
    return text[:12] if key in ("hist_code", "hist_model") else text


def _ms(x) -> str:
    return f"{x:.3f}"


def history_page(label: str, runs: list, t: Translator) -> dict:
    """The page model: runs, per-runtime cells across runs, and each step's changes and flags."""
    best = answer(runs)
    head_runs = [t("hist_run_n", n=i + 1) for i in range(len(runs))]
    run_rows = []
    for i, (res, slug) in enumerate(runs):
        run = res.rows.run
        run_rows.append(
            {
                "name": head_runs[i],
                "href": f"../../hardware/{slug}/index.html",
                "link": label_of(res),
                "date": str(run.get("started_at") or "")[:16],
                "status": t(f"status_word_{run['status']}")
                if run["status"] in ("running", "incomplete", "complete")
                else run["status"],
                "profile": t(f"hist_profile_{run['profile']}")
                if run.get("profile") in ("full", "quick")
                else run.get("profile") or t("not_recorded"),
                "code": _shown(run.get("code_version") or run.get("code_hash"), "hist_code", t),
                "answer": i == best,
            }
        )
    order = [
        rid
        for rid in runtime_order([res for res, _ in runs])  # runtimes measured in any of the runs
        if any(res.runtime(rid) and res.runtime(rid).latency for res, _ in runs)
    ]
    table = []
    for rid in order:
        cells, title = [], rid
        for res, _ in runs:
            r = res.runtime(rid)
            if r is None:
                cells.append(t("hist_absent"))
                continue
            title = r.rows.title
            cell = verdict_cell(r, res, t)
            parts = [cell["text"], *([cell["badge"]] if cell.get("badge") else [])]
            if r.ratio:
                parts.append(t("hist_ratio", speed=speed(r.ratios[res.gates.speed_statistic], t, r.rows.runtime_id)))
            if r.latency:
                parts.append(
                    t(
                        "hist_p95",
                        p95=_ms(r.latency["p95"]),
                        low=_ms(r.latency["p95_ci_low"]),
                        high=_ms(r.latency["p95_ci_high"]),
                    )
                )
            cells.append(" · ".join(parts))
        table.append([title, *cells])
    steps = []
    for i in range(1, len(runs)):
        (prev, _), (cur, _) = runs[i - 1], runs[i]
        differ = not_alike(prev.rows.run, cur.rows.run)
        lines = [
            t(key, name=name, before=_shown(a, key, t), after=_shown(b, key, t))
            if key == "hist_library"
            else t("hist_changed", what=t(key), before=_shown(a, key, t), after=_shown(b, key, t))
            for key, name, a, b in changes(prev.rows.run, cur.rows.run)
        ]
        for rid in order:
            a, b = prev.runtime(rid), cur.runtime(rid)
            if a and b and a.rows.libraries != b.rows.libraries:
                lines.append(
                    t(
                        "hist_runtime_libraries",
                        runtime=b.rows.title,
                        before=_libs(a.rows.libraries, t),
                        after=_libs(b.rows.libraries, t),
                    )
                )
        flags, same, moves, single = [], 0, [], 0
        q = cur.gates.speed_statistic
        for rid in order if not differ else []:
            a, b = prev.runtime(rid), cur.runtime(rid)
            for what, x, y in (("hist_flag_p95", _p95(a), _p95(b)), ("hist_flag_ratio", _ratio(a, q), _ratio(b, q))):
                moved = shift(x, y)
                moves.append(moved)
                if moved in ("slower", "faster"):
                    flags.append(_flag(what, moved, b.rows.title, x, y, t))
                elif moved == "same":
                    same += 1
                elif x and y:
                    single += 1
        steps.append(
            {
                "heading": t("hist_step", a=head_runs[i - 1], b=head_runs[i]),
                "changes": lines or [t("hist_nothing_changed")],
                "not_alike": t("hist_not_alike", what=t("semi").join(t(k) for k in differ)) if differ else None,
                "flags": flags,
                "calm": claims.say(t, "within_spread", "hist_calm", {"moves": moves, "n": same}, None, n=same)
                if not differ and not flags and same
                else None,
                "single": t("hist_single_process", n=single) if single and not differ else None,
            }
        )
    return {
        "heading": t("hist_heading", label=label),
        "intro": t("hist_intro", n=len(runs)),
        "answer": t("hist_answer", run=head_runs[best]),
        "runs": run_rows,
        "runs_head": head_runs,
        "table": {"head": [t("runtime"), *head_runs], "rows": table},
        "steps": steps,
    }


def _libs(libs: dict, t: Translator) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(libs.items())) or t("not_recorded")


def _flag(what: str, moved: str, title: str, x, y, t: Translator) -> str:
    if what == "hist_flag_p95":
        values = {
            "before": _ms(x["value"]),
            "after": _ms(y["value"]),
            "b_low": _ms(x["low"]),
            "b_high": _ms(x["high"]),
            "a_low": _ms(y["low"]),
            "a_high": _ms(y["high"]),
        }
    else:
        # ratios as numbers: a point read as "faster" or "slower" would claim what its own interval may not
        values = dict(
            zip(
                ("before", "b_low", "b_high", "after", "a_low", "a_high"),
                (f"{v:.3f}" for v in (x["value"], x["low"], x["high"], y["value"], y["low"], y["high"])),
            )
        )
    return t(what, runtime=title, moved=t(f"hist_{moved}"), **values)


def history_link(label: str, runs: list, res, slug: str, t: Translator) -> dict:
    """What a machine page of a label with a history says: the link, and for an earlier run which run answers."""
    best = answer(runs)
    mine = next(i for i, (r, _) in enumerate(runs) if r is res)
    newer = runs[best]
    return {
        "href": f"../../history/{slug}/index.html",
        "text": t("hist_link", n=len(runs)),
        "superseded": None
        if mine == best
        else {
            "text": t("hist_superseded", run=t("hist_run_n", n=best + 1)),
            "href": f"../{newer[1]}/index.html",
            "link": label_of(newer[0]),
        },
    }


def history_slugs(histories) -> dict:
    """Each history's page slug (the label's, unique among histories)."""
    taken: set = set()
    return {label: slugify(address(label, runs), taken) for label, runs in histories}


def address(label: str, runs: list) -> str:
    """What the slugs of a label's answer and history are made from: the label, or the one its agent kept
    (``agents.tell_apart``)."""
    return runs[0][0].rows.run.get("slug_label", label)
