"""Runs and runtimes described in words, in the reader's language: banners, scope, provenance, TF32 states.
Everything here is read from the run's file (``load.RunRows``); nothing is computed beyond formatting."""

from __future__ import annotations

from .analysis import RunResult
from .i18n import Translator

# How the libraries runners report (``libraries`` of a runtime row) are named on the pages.
LIBRARY_NAMES = {
    "torch": "PyTorch",
    "onnxruntime": "ONNX Runtime",
    "tensorrt": "TensorRT",
    "tensorrt_rtx": "TensorRT-RTX",
    "triton": "Triton",
    "cudnn": "cuDNN",
    "cuda": "CUDA",
    "openvino": "OpenVINO",
    "nncf": "NNCF",
}
# every library a runtime that ran was built on: a verdict is scoped to their versions
SCOPE_LIBRARIES = ("torch", "onnxruntime", "tensorrt", "tensorrt_rtx", "openvino", "nncf")
SWITCH_ORDER = ("matmul", "cudnn")
# Provenance lists the environment in this order (the runtimes' libraries first), then the rest by name.
ENVIRONMENT_ORDER = (
    "torch",
    "onnxruntime",
    "onnxruntime-gpu",
    "tensorrt",
    "tensorrt-rtx",
    "ale-py",
    "gymnasium",
    "numpy",
)


def libraries_used(res: RunResult) -> dict:
    """{library: version} over the runtimes that ran (the first version seen of each)."""
    seen: dict = {}
    for r in res.runtimes:
        for name, v in (r.rows.libraries or {}).items():
            if v is not None:
                seen.setdefault(name, str(v))
    return seen


def machine_description(res: RunResult) -> str:
    run = res.rows.run
    return " · ".join(
        x
        for x in (
            run.get("gpu_name") or run.get("cpu"),
            run.get("os"),
            run.get("started_at") and str(run["started_at"])[:19],
        )
        if x
    )


def scope_text(res: RunResult, t: Translator, key: str = "scope") -> str:
    """What a verdict is scoped to (model, machine, library versions, workload); ``key``: "scope" begins with its
    own label, "scope_bare" is the text alone (beside a label of its own)."""
    run = res.rows.run
    used = libraries_used(res)
    versions = t("sep").join(
        [f"{LIBRARY_NAMES[k]} {used[k]}" for k in SCOPE_LIBRARIES if k in used]
        + [
            f"{name} {run[key]}"
            for name, key in (("CUDA", "cuda_version"), (t("driver"), "gpu_driver"))
            if run.get(key)
        ]
    )
    return t(
        key,
        model=run["model_path"].rsplit("/", 1)[-1],
        sha=run["model_sha256"][:12],
        machine=run.get("gpu_name") or run.get("cpu") or "?",
        versions=versions,
        workload=workload_text(res, t),
    )


def workload_text(res: RunResult, t: Translator) -> str:
    """The workload a verdict is scoped to: the seeds the reference has played, of the pre-registered list."""
    settings = res.rows.run.get("settings", {})
    listed = len(settings.get("seeds", []))
    ref = res.runtime(res.reference_id) if res.reference_id else None
    played = len(ref.rows.episodes) if ref is not None else 0
    greedy = (res.rows.run.get("protocol") or {}).get("outputs", "q-values") != "q-values"
    return t(
        "workload_text_greedy" if greedy else "workload_text",  # ε is a Q-network's; logits and actions have none
        states=settings.get("states", "?"),
        played=f"{played:,}",
        seeds=f"{listed:,}",
        epsilon=res.rows.run.get("eval_epsilon"),
    )


TF32_KEYS = {
    "off": "tf32_off",
    "on": "tf32_on",
    "not-applicable": "tf32_cpu",
    "by-types": "tf32_typed",
    "default": "tf32_default",
}


def tf32_text(numerics: dict, t) -> str:
    """A runtime's recorded TF32 state (``numerics`` of its row) in the reader's language, with the switches
    that set it as the library names them."""
    state = (numerics or {}).get("tf32")
    if state not in TF32_KEYS:
        return t("none")
    switches = (numerics or {}).get("switches") or {}
    words = {True: t("tf32_on"), False: t("tf32_off")}
    order = sorted(switches, key=lambda k: (SWITCH_ORDER.index(k) if k in SWITCH_ORDER else len(SWITCH_ORDER), k))
    shown = t("sep").join(
        f"{LIBRARY_NAMES.get(k, k)} {words[v]}" if isinstance(v, bool) else f"{k}={v}"
        for k in order
        for v in (switches[k],)
    )
    return t("paren", a=t(TF32_KEYS[state]), b=shown) if shown else t(TF32_KEYS[state])


def table_name(table: str, t: Translator) -> str:
    """A table of the run file, as the reader's language names it (a table rtreport does not know, as named)."""
    return t(f"table_{table}") if t.has(f"table_{table}") else table


def problem_text(p, t: Translator) -> str:
    """Rows that failed a check (``validate.Problem``), in the reader's words."""
    what = t(f"wrong_{p.wrong}", **dict(p.params))
    return t("problem_rows", table=table_name(p.table, t), runtime=p.runtime_id, rows=f"{p.rows:,}", what=what)


def damage_text(d, t: Translator) -> str:
    """What no longer matches the rows recorded at the run's end (``integrity.Damage``), in the reader's words."""
    return t(f"damage_{d.kind}", table=table_name(d.table, t), rows=f"{d.rows:,}", recorded=f"{d.recorded:,}")


def banners(res: RunResult, t: Translator) -> list[str]:
    """What a reader must know before reading this machine's numbers: how the run ended, what it lacks."""
    run = res.rows.run
    out = []
    if run["status"] == "running":
        out.append(t("stopped_banner"))
    elif run["status"] != "complete":
        out.append(
            t(
                "partial_banner",
                status=t(f"status_word_{run['status']}") if run["status"] == "incomplete" else run["status"],
                detail=status_detail_text(run.get("status_detail"), t),
            )
        )
    if run.get("profile") == "quick":
        cap = (run.get("settings") or {}).get("episode_step_cap")
        out.append(t("smoke_banner_cap", cap=f"{int(cap):,}") if cap else t("smoke_banner"))
    if res.drift:
        out.append(t("drift_banner"))
    out += provenance_banners(run, t)
    if res.rows.problems:
        out.append(t("invalid_banner", problems=t("semi").join(problem_text(p, t) for p in res.rows.problems)))
    if res.rows.damaged:
        out.append(t("damaged_banner", problems=t("semi").join(damage_text(d, t) for d in res.rows.damaged)))
    ref = res.runtime(res.reference_id)
    if res.withheld == "no-reference":
        out.append(t("no_reference_banner"))
    elif res.withheld == "reference-not-measured":
        out.append(
            t(
                "reference_failed_banner",
                ref=res.reference_id,
                status=t(f"status_{ref.rows.status}") if ref else t("status_not_run"),
            )
        )
    elif ref and not res.reference_id.startswith("torch-"):
        why = "why_onnx_model" if run.get("model_format") == "onnx" else "why_not_measured"
        out.append(t("other_reference_banner", ref=ref.rows.title, why=t(why)))
    return out


MIXED_ONNXRUNTIME = "mixed-onnxruntime"  # the key collect.provenance records it under


def provenance_banners(run: dict, t: Translator) -> list[str]:
    """An environment with both ONNX Runtime distributions (they overwrite each other's files), and code measured
    from a checkout with uncommitted changes: said before any number."""
    out = []
    env = run.get("environment") or {}
    if env.get("onnxruntime") and env.get("onnxruntime-gpu"):
        out.append(t("mixed_onnxruntime_banner", cpu=env["onnxruntime"], gpu=env["onnxruntime-gpu"]))
    if str(run.get("code_version") or "").endswith("-dirty"):
        out.append(t("dirty_banner", version=run["code_version"], hash=(run.get("code_hash") or "?")[:12]))
    return out


def plugin_packages(res: RunResult, t: Translator) -> str | None:
    """Runtimes from other packages: each with its package, version and the hash of the package's files."""
    named = [
        t("plugin_package", runtime=r.rows.title, name=p["name"], version=p["version"], sha=p["sha256"])
        for r in res.runtimes
        for p in [(r.rows.details or {}).get("package")]
        if p
    ]
    return t("semi").join(named) or None


def contents_text(res: RunResult, t: Translator) -> list[str]:
    """What the file holds, in words (a run cut short or limited to a few runtimes says so plainly)."""
    measured = [r for r in res.runtimes if r.latency or r.agreement or r.scores]
    lines = [
        t("contents_none")
        if not measured
        else t(
            "contents",
            measured=len(measured),
            listed=len(res.runtimes),
            ids=t("sep").join(r.rows.runtime_id for r in measured),
        )
    ]
    if (
        measured
        and all(r.is_reference for r in measured)
        and res.withheld not in ("no-reference", "reference-not-measured")
    ):
        lines.append(t("only_reference"))
    return lines


def provenance_rows(res: RunResult, t: Translator) -> list[tuple[str, str]]:
    run = res.rows.run
    ref = res.runtime(res.reference_id)
    status = run["status"]
    versions = [f"python {run['python_version']}"] if run.get("python_version") else []
    env = run.get("environment") or {}
    names = sorted(
        env, key=lambda k: (ENVIRONMENT_ORDER.index(k) if k in ENVIRONMENT_ORDER else len(ENVIRONMENT_ORDER), k)
    )
    versions += [f"{k} {env[k]}" for k in names if env[k] and k != MIXED_ONNXRUNTIME]
    versions += [f"rtreport {run['rtreport_version']}"] if run.get("rtreport_version") else []
    profile = run.get("profile")
    rows = [
        (t("prov_label"), run.get("machine_label", run["label"])),
        (t("prov_run"), run["run_id"]),
        (t("prov_started"), str(run["started_at"])[:19]),
        (t("prov_finished"), str(run["finished_at"])[:19] if run.get("finished_at") else t("none")),
        (t("prov_status"), t(f"status_word_{status}") if status in ("running", "incomplete", "complete") else status),
        (t("prov_profile"), t(f"profile_{profile}") if f"profile_{profile}" in t.strings else profile),
        (t("prov_host"), run.get("host")),
        (t("prov_os"), run.get("os")),
        (t("prov_cpu"), f"{run.get('cpu')} ({run.get('cpu_count')})"),
        (t("prov_gpu"), run.get("gpu_name") or t("none")),
        (t("prov_driver"), run.get("gpu_driver") or t("none")),
        (t("prov_cuda"), run.get("cuda_version") or t("none")),
        (t("prov_versions"), ", ".join(versions)),
    ]
    if run.get("code_version"):
        dirty = run["code_version"].endswith("-dirty")
        rows.append(
            (t("prov_code_version"), t("code_dirty", version=run["code_version"]) if dirty else run["code_version"])
        )
    if run.get("code_hash"):
        rows.append((t("prov_code_hash"), run["code_hash"]))
    if plugins := plugin_packages(res, t):
        rows.append((t("prov_plugins"), plugins))
    if res.rows.sessions:
        rows.append((t("prov_sessions"), sessions_text(res.rows.sessions, t, res.rows.repeat_sessions)))
    rows += [(t("prov_model"), f"{run['model_path']} ({run['model_format']}, sha256 {run['model_sha256']})")]
    for key, label in (("fixed_states_sha256", "prov_fixed_states"), ("seeds_sha256", "prov_seeds")):
        if run.get(key):
            rows.append((t(label), f"sha256 {run[key]}"))
    rows += [
        (t("prov_reference"), ref.rows.title if ref else t("none")),
        (t("prov_tf32"), tf32_text(ref.rows.numerics, t) if ref else t("none")),
        (t("prov_source"), res.rows.source.name),
    ]
    return rows


def sessions_text(sessions: list[dict], t: Translator, repeat_sessions: dict | None = None) -> str:
    """Each command that wrote the run (the first, then every --resume or fresh-process repeat; ``repeat_sessions``:
    session -> its repeat), and whether the measurement code changed. The run's own "finished" is the protocol's end;
    this says when its repeats ran."""
    repeat_sessions = repeat_sessions or {}

    def status(s):
        st = s.get("status")
        return t(f"status_word_{st}") if st in ("running", "incomplete", "complete") else str(st)

    def item(s):
        repeat = repeat_sessions.get(s["session"])
        return t(
            "session_item" if repeat is None else "session_item_repeat",
            n=s["session"],
            k=repeat,
            start=str(s["started_at"])[:16],
            end=str(s["finished_at"])[11:16] if s.get("finished_at") else "?",
            status=status(s),
        )

    parts = [item(s) for s in sessions]
    text = t("sep").join(parts)
    hashes = sorted({s["code_hash"] for s in sessions if s.get("code_hash")})
    if len(hashes) > 1:
        text += t("sep") + t("session_code_changed", hashes=t("sep").join(h[:12] for h in hashes))
    return text


PHASES = ("prepare", "fixed states", "batch sweep", "kernels", "energy", "copy floor", "starting")


def status_detail_text(detail: str | None, t: Translator) -> str:
    """How a run stopped ("stopped by SIGTERM during play, look 2 of 5") in the reader's language; the recorded
    text itself when it has another shape (a fault's message)."""
    import re

    if not detail:
        return t("none")
    m = re.fullmatch(r"stopped by (SIG[A-Z]+) during (.+)", detail)
    if not m:
        return detail
    return t("stopped_by", signal=m.group(1), where=where_text(m.group(2), t))


def where_text(where: str, t: Translator) -> str:
    import re

    if m := re.fullmatch(r"play, look (\d+) of (\d+)", where):
        return t("where_play_look", k=m.group(1), n=m.group(2))
    if m := re.fullmatch(r"latency round (\d+) of (.+)", where):
        return t("where_round", k=m.group(1), runtime=m.group(2))
    if m := re.fullmatch(r"(.+) of (.+)", where):
        if m.group(1) in PHASES:
            return t("where_phase", phase=t("phase_" + m.group(1).replace(" ", "_")), runtime=m.group(2))
    if where in PHASES:
        return t("phase_" + where.replace(" ", "_"))
    return where
