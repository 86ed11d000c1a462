"""Where a decision's time and energy go, per runtime (derived from the file's profiler, NVML and memory rows):
the breakdown of a decision into copies, GPU work and host overhead next to the copy floor; the kernels; memory,
energy and artifacts. Pure; the tables come formatted and translated."""

from __future__ import annotations

import numpy as np

from .analysis import RunResult
from .chart_margins import legend_room, set_margins
from .charts import LEGEND_BELOW, Chart, _rows_layout, _r, _vline, _wrap
from .i18n import Translator


def breakdown(r) -> dict | None:
    """Per decision (µs): host→device copies, GPU kernels, device→host copies, and the rest of the wall-clock
    decision (the P50 of the latency rounds) — host work and waiting: Python, the runtime's own calls, launches."""
    if not r.rows.kernels or not r.latency:
        return None
    n = r.rows.kernels[0]["decisions"]
    total = {"memcpy_htod": 0.0, "memcpy_dtoh": 0.0, "kernel": 0.0, "memcpy_other": 0.0}
    calls = 0
    for k in r.rows.kernels:
        total[k["kind"]] = total.get(k["kind"], 0.0) + k["seconds"]
        calls += k["calls"] if k["kind"] == "kernel" else 0
    per = {k: v / n * 1e6 for k, v in total.items()}
    decision = r.latency["p50"] * 1e3
    device = per["memcpy_htod"] + per["kernel"] + per["memcpy_dtoh"] + per["memcpy_other"]
    return {
        "h2d": per["memcpy_htod"],
        "compute": per["kernel"],
        "d2h": per["memcpy_dtoh"] + per["memcpy_other"],
        "host": max(0.0, decision - device),
        "decision": decision,
        "kernels": calls / n,
        "decisions": n,
    }


def breakdown_chart(res: RunResult, t: Translator) -> Chart | None:
    ran = [(r, b) for r in res.runtimes if (b := breakdown(r))]
    if not ran:
        return None
    names = [r.rows.title for r, _ in ran]
    parts = (("h2d", "#0969da"), ("compute", "#1a7f37"), ("d2h", "#9a6700"), ("host", "#afb8c1"))
    traces = [
        {
            "type": "bar",
            "orientation": "h",
            "name": t(f"part_{p}"),
            "y": names,
            "x": [_r(b[p], 2) for _, b in ran],
            "marker": {"color": c},
            "text": [_wrap(n) for n in names],
            "textposition": "none",
            "hovertemplate": "%{text}<br>" + t(f"part_{p}") + ": %{x:.1f} µs<extra></extra>",
        }
        for p, c in parts
    ]
    floor = res.rows.floors.get("copy")
    shapes, notes = [], []
    if floor is not None and floor.size:  # the copy floor's label above the first row's name, as a gate's is
        shape, notes = _vline(
            float(np.percentile(floor, 50)) * 1e6,
            {"color": "#cf222e", "width": 2, "dash": "dot"},
            t("floor_line", us=f"{np.percentile(floor, 50) * 1e6:.1f}"),
            "left",
        )
        shapes = [shape]
    layout = _rows_layout(
        t,
        len(ran),
        t("axis_microseconds"),
        names,
        barmode="stack",
        showlegend=True,
        legend=LEGEND_BELOW,
        shapes=shapes,
        annotations=notes,
    )
    layout["height"] += legend_room(tr["name"] for tr in traces)
    fig = set_margins({"data": traces, "layout": layout}, legend=[tr["name"] for tr in traces])
    rows = [
        [
            r.rows.title,
            f"{b['decision']:.1f}",
            f"{b['h2d']:.1f}",
            f"{b['compute']:.1f}",
            f"{b['d2h']:.1f}",
            f"{b['host']:.1f}",
            f"{b['kernels']:.1f}",
        ]
        for r, b in ran
    ]
    csv = [
        [r.rows.runtime_id, b["decision"], b["h2d"], b["compute"], b["d2h"], b["host"], b["kernels"], b["decisions"]]
        for r, b in ran
    ]
    fastest_gpu = min(ran, key=lambda x: x[1]["compute"])
    return Chart(
        "breakdown",
        fig,
        [
            "col_runtime",
            "col_decision_us",
            "col_h2d_us",
            "col_compute_us",
            "col_d2h_us",
            "col_host_us",
            "col_kernels_per_decision",
        ],
        rows,
        "title_breakdown",
        "cap_breakdown",
        (
            "sum_breakdown",
            {"runtime": fastest_gpu[0].rows.title, "us": f"{fastest_gpu[1]['compute']:.1f}"},
            "lowest_of",
            {"value": fastest_gpu[1]["compute"], "others": [b["compute"] for _, b in ran]},
        ),
        csv,
    )


def kernels_table(res: RunResult, t: Translator, top: int = 3) -> dict | None:
    rows = []
    for r in res.runtimes:
        ks = [k for k in r.rows.kernels if k["kind"] == "kernel"]
        if not ks:
            continue
        n = ks[0]["decisions"]
        named = {
            "code": "; ".join(
                f"{_short(k['name'])} ×{k['calls'] / n:g} ({k['seconds'] / n * 1e6:.1f} µs)" for k in ks[:top]
            )
        }
        rows.append(
            [
                r.rows.title,
                f"{sum(k['calls'] for k in ks) / n:.1f}",
                f"{sum(k['seconds'] for k in ks) / n * 1e6:.1f}",
                named,
            ]
        )
    return (
        {
            "head": [t("col_runtime"), t("col_kernels_per_decision"), t("col_compute_us"), t("col_top_kernels")],
            "rows": rows,
        }
        if rows
        else None
    )


def resources_table(res: RunResult, t: Translator) -> dict | None:
    rows = []
    for r in res.runtimes:
        got = r.rows.resources
        # one that did not run has no preparation of its own to show (an ONNX file it was handed is not its artifact)
        if r.rows.status in ("unavailable", "failed") or (not got and not r.rows.artifact_bytes):
            continue
        mem, how = (
            (got["gpu_memory_increase"], "NVML")
            if "gpu_memory_increase" in got
            else (got["torch_allocator_increase"], t("allocator_short"))
            if "torch_allocator_increase" in got
            else (None, "")
        )
        rows.append(
            [
                r.rows.title,
                f"{r.rows.artifact_bytes / 1e6:.2f} MB" if r.rows.artifact_bytes else t("none"),
                f"{r.rows.prepare_seconds:.2f}" if r.rows.prepare_seconds is not None else t("none"),
                f"{mem['value'] / 2**20:.0f} MiB ({how})" if mem else t("none"),
                f"{got['rss_increase']['value'] / 2**20:.0f} MiB" if "rss_increase" in got else t("none"),
                f"{got['energy_per_decision']['value'] * 1e3:.2f} mJ" if "energy_per_decision" in got else t("none"),
                f"{got['idle_power']['value']:.0f} / {got['busy_power']['value']:.0f} W"
                if "idle_power" in got
                else t("none"),
            ]
        )
    head = [
        t(k)
        for k in (
            "col_runtime",
            "col_artifact",
            "col_prepare_s",
            "col_gpu_memory",
            "col_rss",
            "col_energy",
            "col_power",
        )
    ]
    return {"head": head, "rows": rows} if rows else None


def _short(name: str, n: int = 60) -> str:
    return name if len(name) <= n else name[: n - 1] + "…"
