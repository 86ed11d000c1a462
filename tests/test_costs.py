"""What a decision costs: the stored rows, what the pages derive from them, and the GPU-only parts."""

import re

import duckdb
import numpy as np
import pytest

from collect import costs, paths
from site_gen.analysis import analyse
from site_gen.costs_view import breakdown, breakdown_chart, kernels_table, resources_table
from site_gen.i18n import Translator
from site_gen.load import load_file
from site_gen.verdict import Gates

H200 = paths.DATA / "nvidia-h200.duckdb"


def _no_cuda() -> str | None:
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    return (
        None
        if torch.cuda.is_available()
        else "no CUDA GPU on this machine: kernels, energy and the copy floor are measured only on a GPU"
    )


def test_a_cpu_run_stores_what_preparing_each_runtime_added_and_no_gpu_rows(quick_run):
    con = duckdb.connect(str(quick_run), read_only=True)
    available = {r for (r,) in con.execute("SELECT runtime_id FROM runtimes WHERE status = 'available'").fetchall()}
    rss = dict(
        con.execute(
            "SELECT runtime_id, value FROM resources WHERE kind = 'rss_increase' AND unit = 'bytes' "
            "AND method LIKE '/proc/self/statm%'"
        ).fetchall()
    )
    sizes = dict(con.execute("SELECT runtime_id, artifact_bytes FROM runtimes WHERE status = 'available'").fetchall())
    prepared = dict(
        con.execute("SELECT runtime_id, prepare_seconds FROM runtimes WHERE status = 'available'").fetchall()
    )
    gpu_rows = [
        con.execute(f"SELECT count(*) FROM {q}").fetchone()[0]
        for q in ("kernels", "floors", "resources WHERE kind LIKE 'energy%' OR kind LIKE 'gpu_%'")
    ]
    con.close()
    assert available >= {"torch-cpu-fp32", "ort-cpu-fp32"} and set(rss) == available
    assert all(np.isfinite(v) for v in rss.values())
    # the ONNX file's size and the PyTorch parameters' bytes (1,729,444 float32 parameters)
    assert sizes["ort-cpu-fp32"] == (paths.DATA / "agent" / "model.onnx").stat().st_size
    assert sizes["torch-cpu-fp32"] == 1_729_444 * 4
    assert all(s is not None and s >= 0 for s in prepared.values())
    assert gpu_rows == [0, 0, 0]


def test_the_cpu_page_shows_memory_artifacts_and_says_why_no_gpu_costs(built_site):
    for lang, note in (
        ("en", "no runtime on this machine ran on a GPU"),
        ("zh-tw", "這台機器沒有任何執行環境在 GPU 上執行"),
    ):
        page = (built_site / lang / "hardware" / "ci-cpu" / "index.html").read_text()
        section = re.search(
            r'<details class="part" id="part-costs">(.*?)<details class="part" id="part-not-run">', page, re.S
        ).group(1)
        assert note in section and 'href="tables/index.html#t-resources"' in section
        assert 'id="chart-breakdown"' not in page
        tables = (built_site / lang / "hardware" / "ci-cpu" / "tables" / "index.html").read_text()
        own = re.search(r'<h2 id="t-resources">.*?</section>', tables, re.S).group(0)
        table = re.search(r"<table.*?</table>", own, re.S).group(0)
        rows = re.findall(r"<tr>(.*?)</tr>", table, re.S)[1:]
        assert len(rows) == 2  # torch-cpu-fp32 and ort-cpu-fp32
        for row in rows:
            cells = re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S)
            assert re.fullmatch(r"\d+\.\d\d MB", cells[1]), cells  # artifact
            assert re.fullmatch(r"\d+\.\d\d", cells[2]), cells  # preparation seconds
            assert re.fullmatch(r"-?\d+ MiB", cells[4]), cells  # host memory added


def test_the_h200_file_holds_every_cost_for_every_gpu_runtime_it_ran():
    con = duckdb.connect(str(H200), read_only=True)
    ran = {r for (r,) in con.execute("SELECT runtime_id FROM runtimes WHERE status = 'available'").fetchall()}
    have = {
        kind: {r for (r,) in con.execute(q).fetchall()}
        for kind, q in {
            "kernels": "SELECT DISTINCT runtime_id FROM kernels WHERE kind = 'kernel'",
            "h2d": "SELECT DISTINCT runtime_id FROM kernels WHERE kind = 'memcpy_htod'",
            "energy": "SELECT runtime_id FROM resources WHERE kind = 'energy_per_decision'",
            "idle": "SELECT runtime_id FROM resources WHERE kind = 'idle_power'",
            "gpu memory": "SELECT runtime_id FROM resources WHERE kind = 'gpu_memory_increase'",
            "rss": "SELECT runtime_id FROM resources WHERE kind = 'rss_increase'",
        }.items()
    }
    floor = con.execute("SELECT count(*) FROM floors WHERE kind = 'copy'").fetchone()[0]
    con.close()
    assert len(ran) == 10 and all(v == ran for v in have.values()), have
    assert floor == 2000


def test_the_breakdown_adds_up_to_the_decision_and_the_tables_name_their_sources():
    res = analyse(load_file(H200)[0], Gates.load(None))
    t = Translator("en")
    for r in res.runtimes:
        b = breakdown(r)
        if not r.latency:
            assert b is None
            continue
        kernels = [k for k in r.rows.kernels if k["kind"] == "kernel"]
        n = kernels[0]["decisions"]
        assert b["compute"] == pytest.approx(sum(k["seconds"] for k in kernels) / n * 1e6)
        assert b["kernels"] == pytest.approx(sum(k["calls"] for k in kernels) / n)
        assert b["h2d"] + b["compute"] + b["d2h"] + b["host"] == pytest.approx(r.latency["p50"] * 1e3)
        assert 0 < b["compute"] < b["decision"]
    chart = breakdown_chart(res, t)
    assert [s["line"]["dash"] for s in chart.figure["layout"]["shapes"]] == ["dot"]  # the copy floor
    assert len(chart.rows) == 10 and len(kernels_table(res, t)["rows"]) == 10
    table = resources_table(res, t)
    memory = [row[3] for row in table["rows"]]
    assert all(m.endswith("MiB (NVML)") for m in memory if m != t("none")) and len(memory) >= 10
    assert all(re.fullmatch(r"\d+\.\d\d mJ", row[5]) for row in table["rows"] if row[5] != t("none"))


@pytest.mark.skipif(_no_cuda() is not None, reason=_no_cuda() or "")
def test_on_a_gpu_the_profiler_sees_the_kernels_and_the_floor_is_measured(fixed_states, tmp_path):
    from collect.artifacts import Artifacts
    from collect.model_input import load_model
    from collect.registry import all_runtimes

    model = load_model(paths.AGENT_WEIGHTS)
    spec = next(s for s in all_runtimes() if s.id == "torch-cuda-fp32-graph")
    runner = spec.make(model, Artifacts(tmp_path, model.onnx_source()), 0)
    runner.prepare()
    rows, n = costs.kernel_rows(runner, fixed_states, decisions=20)
    assert n == 20 and any(kind == "kernel" and calls >= 20 for _, kind, calls, _ in rows)
    floor = costs.copy_floor(samples=50)
    assert len(floor) == 50 and all(0 < s < 0.01 for s in floor)


def test_without_a_gpu_the_gpu_cost_probes_say_so_instead_of_failing():
    if _no_cuda() is None:
        pytest.skip("this machine has a GPU; the probes measure instead")
    assert costs.copy_floor(samples=5) is None
    assert costs.gpu_process_bytes(0) is None or costs.gpu_process_bytes(0) >= 0
