"""A machine's history: runs of one label become one page per label, both languages, linked from its machine pages;
a change is flagged only where two runs' typical values differ over their independent measurements."""

import json
import shutil

import duckdb
import pytest
from click.testing import CliRunner

from conftest import COMMITTED_RUNS
from rtreport_cli.main import main
from site_gen.history import changes, shift

CPU = COMMITTED_RUNS[0]  # data/cpu-epyc-2core.duckdb, read only


def _measured(*means):
    return {"measurements": len(means), "group_values": list(means)}


def test_shift_flags_only_typical_values_that_differ():
    """Two runs differ only when their typical values do, over their independent measurements (a Welch t test);
    a run of one process is not compared at all: its rounds say nothing of the next process."""
    a = _measured(1.0, 1.1, 0.95)
    assert shift(a, _measured(2.0, 2.2, 1.9)) == "slower"
    assert shift(a, _measured(0.5, 0.55, 0.48)) == "faster"
    assert shift(a, _measured(1.2, 0.8, 1.4)) == "same"  # within the spread of either
    assert shift(a, _measured(3.0)) is None and shift(_measured(1.0), a) is None
    assert shift(None, a) is None


def test_changes_lists_run_fields_then_libraries():
    a = {"gpu_driver": "550.1", "code_hash": "a" * 64, "environment": {"onnxruntime": "1.32.0", "torch": "2.13.0"}}
    b = {"gpu_driver": "560.2", "code_hash": "a" * 64, "environment": {"onnxruntime": "1.33.0", "numpy": "2.4.6"}}
    assert changes(a, b) == [
        ("hist_driver", "", "550.1", "560.2"),
        ("hist_library", "numpy", None, "2.4.6"),
        ("hist_library", "onnxruntime", "1.32.0", "1.33.0"),
        ("hist_library", "torch", "2.13.0", None),
    ]
    assert changes(a, a) == []


def _processes(con):
    """Each of the file's rounds as if taken by a process of its own (the run and two repeats): three independent
    measurements of one round each, so that two runs can be compared."""
    con.execute(
        "UPDATE rounds SET conditions = json_merge_patch(coalesce(conditions, '{}'), json_object('repeat', round))"
    )


def _three_processes(src, dst):
    shutil.copyfile(src, dst)
    con = duckdb.connect(str(dst))
    _processes(con)
    con.close()
    return dst


def _next_run(src, dst, run_id, day, slower=1.0, **columns):
    """A copy of ``src`` as a later run of the same machine: ONNX Runtime upgraded, its latency scaled."""
    shutil.copyfile(src, dst)
    con = duckdb.connect(str(dst))
    _processes(con)
    for (table,) in con.execute(
        "SELECT table_name FROM information_schema.columns WHERE column_name = 'run_id'"
    ).fetchall():
        con.execute(f"UPDATE {table} SET run_id = ?", [run_id])
    env = json.loads(con.execute("SELECT environment FROM runs").fetchone()[0])
    env["onnxruntime"] = "9.9.9"
    con.execute(f"UPDATE runs SET started_at = started_at + INTERVAL {day} DAY, environment = ?", [json.dumps(env)])
    con.execute("UPDATE runtimes SET libraries = '{\"onnxruntime\": \"9.9.9\"}' WHERE runtime_id = 'ort-cpu-fp32'")
    con.execute("UPDATE latency SET seconds = seconds * ? WHERE runtime_id = 'ort-cpu-fp32'", [slower])
    for column, value in columns.items():
        con.execute(f"UPDATE runs SET {column} = ?", [value])
    con.close()
    return dst


@pytest.fixture(scope="module")
def history_site(tmp_path_factory):
    d = tmp_path_factory.mktemp("history")
    first = _three_processes(CPU, d / "a.duckdb")
    slower = _next_run(CPU, d / "b.duckdb", "second", 1, slower=100.0)
    other_model = _next_run(CPU, d / "c.duckdb", "third", 2, model_sha256="f" * 64)
    alone = _next_run(CPU, d / "d.duckdb", "fourth", 3, label="lonely")
    result = CliRunner().invoke(
        main, ["build", str(first), str(slower), str(other_model), str(alone), "--out", str(d / "s")]
    )
    assert result.exit_code == 0, result.output
    return d / "s"


def test_history_page_says_what_changed_and_flags_the_change_beyond_the_intervals(history_site):
    en = (history_site / "en" / "history" / "cpu-epyc-2core" / "index.html").read_text()
    zh = (history_site / "zh-tw" / "history" / "cpu-epyc-2core" / "index.html").read_text()
    assert "3 runs of this machine" in en and "This machine&#39;s answer is Run 3" in en
    assert "library onnxruntime: 1.32.0 → 9.9.9" in en
    first_step = en[en.index("Run 1 → Run 2") : en.index("Run 2 → Run 3")]
    assert "ONNX Runtime CPU FP32: P95 0.292 → 29.217 ms, slower: the two runs&#39; typical values differ" in first_step
    assert (
        "ONNX Runtime CPU FP32 against the reference: ratio 0.371 → 37.129, slower: the two runs&#39; typical"
        in first_step
    )
    assert "PyTorch CPU FP32: P95" not in first_step  # the same samples: no difference
    second_step = en[en.index("Run 2 → Run 3") :]
    assert "Not measured alike — the model: the changes are listed" in second_step
    assert (
        "runs&#39; typical values differ" not in second_step
        and "model (sha256): 41b8309b23fd → ffffffffffff" in second_step
    )
    assert "變慢：兩次執行的典型值在 95% 水準下不同" in zh and "函式庫 onnxruntime：1.32.0 → 9.9.9" in zh
    hardware = history_site / "en" / "hardware"
    pages = sorted(p.name for p in hardware.iterdir() if p.name.startswith("cpu-epyc-2core"))
    run_of = {
        slug: json.loads((history_site / "data" / slug / "verdicts.json").read_text())["run_id"] for slug in pages
    }
    assert run_of.pop("cpu-epyc-2core") == "third"  # the answer has the label's own URL
    assert len(run_of) == 3 and {"second", "third"} < set(run_of.values())  # and every run a URL of its own
    for slug in pages:
        page = (hardware / slug / "index.html").read_text()
        assert 'href="../../history/cpu-epyc-2core/index.html">This machine over time: 3 runs' in page
        superseded = "An earlier run: this machine&#39;s answer is Run 3, its newest complete run"
        assert (superseded in page) == (slug != "cpu-epyc-2core" and run_of[slug] != "third")


def test_a_label_with_one_run_has_no_history(history_site):
    assert sorted(p.name for p in (history_site / "en" / "history").iterdir()) == ["cpu-epyc-2core"]
    page = (history_site / "en" / "hardware" / "lonely" / "index.html").read_text()
    assert "This machine over time" not in page


def test_two_runs_in_one_file_make_a_history_and_a_change_within_the_spread_is_not_flagged(tmp_path):
    both = _three_processes(CPU, tmp_path / "both.duckdb")
    second = _next_run(CPU, tmp_path / "second.duckdb", "second", 1, slower=3.0)  # within three rounds' spread
    con = duckdb.connect(str(both))
    con.execute(f"ATTACH '{second}' AS b (READ_ONLY)")
    for (table,) in con.execute(
        "SELECT DISTINCT table_name FROM information_schema.columns WHERE column_name = "
        "'run_id' AND table_catalog = 'b'"
    ).fetchall():
        con.execute(f"INSERT INTO {table} SELECT * FROM b.{table}")
    con.close()
    result = CliRunner().invoke(main, ["build", str(both), "--out", str(tmp_path / "s")])
    assert result.exit_code == 0, result.output
    en = (tmp_path / "s" / "en" / "history" / "cpu-epyc-2core" / "index.html").read_text()
    assert "2 runs of this machine" in en and "runs&#39; typical values differ" not in en
    assert "No runtime&#39;s P95 or speed ratio moved between these runs at 95 % (3 comparisons, all ≈)" in en
    assert "P95 0.877 ms (" in en  # 3 × 0.292 ms, within what three rounds that disagree this much allow


def test_runs_of_one_process_are_not_compared(tmp_path):
    """The committed CPU runs each rest on one process: the history page says their comparisons are not made,
    instead of calling a 3.79× and a 2.98× "normal variation"."""
    second = _next_run(CPU, tmp_path / "second.duckdb", "second", 1, slower=1.0)
    con = duckdb.connect(str(second))
    con.execute("UPDATE rounds SET conditions = json_object('repeat', 0)")  # back to one process
    con.close()
    result = CliRunner().invoke(main, ["build", str(CPU), str(second), "--out", str(tmp_path / "s")])
    assert result.exit_code == 0, result.output
    en = (tmp_path / "s" / "en" / "history" / "cpu-epyc-2core" / "index.html").read_text()
    zh = (tmp_path / "s" / "zh-tw" / "history" / "cpu-epyc-2core" / "index.html").read_text()
    assert "3 comparisons are not made: one of the two runs rests on a single process" in en
    assert "No runtime&#39;s P95" not in en and "有 3 項比較無法進行" in zh


def test_the_chinese_history_page_shows_no_english_string(history_site):
    import re

    from site_gen.i18n import catalog

    en, zh = catalog("en"), catalog("zh-tw")
    english_only = [v for k, v in en.items() if v != zh[k] and "{" not in v and len(v) >= 12]
    for page in ("history/cpu-epyc-2core", "hardware/cpu-epyc-2core"):
        html = (history_site / "zh-tw" / page / "index.html").read_text()
        text = re.sub(r"<[^>]+>", " ", re.sub(r"<script.*?</script>", " ", html, flags=re.S))
        assert "歷次執行" in text
        assert not [s for s in english_only if s in text]
        assert not re.search(r"\b(slower|faster|runs of this machine|answer)\b", text)


def test_the_home_page_answers_with_each_machines_newest_complete_run(published_site):
    """The committed CPU machine has four runs: the home page, the root page and the feed give its answer once (the
    newest run, at the label's own URL); the machines list still names both runs."""
    import re

    home = (published_site / "en" / "index.html").read_text(encoding="utf-8")
    glance = re.search(r'<ul class="glance">(.*?)</ul>', home, re.S).group(1)
    assert glance.count("hardware/cpu-epyc-2core/index.html") == 1
    earlier = "hardware/cpu-epyc-2core-2026-12-02/index.html"  # an earlier run, at the URL of its own day
    assert earlier not in glance
    assert home.count('<article class="card') == 4  # the quick run, the CPU machine, the H100, the H200
    assert earlier in home  # under the machine's runs
    root = (published_site / "index.html").read_text(encoding="utf-8")
    assert "cpu-epyc-2core-2026-12-02/" not in root
    answer = json.loads((published_site / "data" / "cpu-epyc-2core" / "verdicts.json").read_text())
    assert answer["source"] == "cpu-epyc-2core-4.duckdb"
