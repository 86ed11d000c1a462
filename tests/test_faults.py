"""Faults and bad input on every path a user can reach: runs cut short, one runtime only, damaged files,
two runs at once, stop signals, labels in any script. Real collect runs, real DuckDB files, real pages."""

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest
import torch
from click.testing import CliRunner

from collect import paths
from collect.options import CollectOptions
from rtreport_cli.main import main
from collect.agent.network import QNetwork
from rtreport.labels import check_label, slug
from rtreport.errors import UserError

ROOT = Path(__file__).resolve().parents[1]  # the checkout


def _tree(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _copy(src, dst, *sql):
    """A copy of a run file changed by ``sql`` into one collect could leave (its integrity record made again,
    as collect makes it when a session ends)."""
    from rtreport import integrity

    shutil.copyfile(src, dst)
    con = duckdb.connect(str(dst))
    for statement in sql:
        con.execute(statement)
    for (run_id,) in con.execute("SELECT run_id FROM runs").fetchall():
        integrity.record(con, run_id)
    con.close()
    return dst


def _build(*args):
    return CliRunner().invoke(main, ["build", *map(str, args)])


def _one_error_line(result, expected, code=2):
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and expected in lines[0], result.output


def _page(site, lang="en", slug_="ci-cpu"):
    return (site / lang / "hardware" / slug_ / "index.html").read_text()


# -- 1. a failing build leaves the previous site as it was ---------------------------------------------


def test_a_failing_build_leaves_the_previous_site_byte_identical(quick_run, tmp_path, monkeypatch):
    site = tmp_path / "site"
    assert _build(quick_run, "--out", site).exit_code == 0
    before = _tree(site)
    import site_gen.render

    def broken(*a, **k):
        raise RuntimeError("simulated template fault")

    monkeypatch.setattr(site_gen.render, "hardware_page", broken)
    result = _build(quick_run, "--out", site)
    _one_error_line(result, "simulated template fault")
    assert str(quick_run) in result.output and "unchanged" in result.output
    assert _tree(site) == before
    assert [p.name for p in tmp_path.iterdir()] == ["site"]  # no temporary folder left behind
    monkeypatch.undo()
    assert _build(quick_run, "--out", site).exit_code == 0  # and the next good build is not refused
    assert site_gen.pages  # (imported for the monkeypatch target's module)


def test_a_bad_file_among_several_is_named_and_nothing_is_lost(quick_run, tmp_path):
    site = tmp_path / "site"
    assert _build(quick_run, "--out", site).exit_code == 0
    before = _tree(site)
    bad = _copy(
        quick_run,
        tmp_path / "bad.duckdb",
        "UPDATE latency SET seconds = 'nan'::DOUBLE WHERE runtime_id = 'ort-cpu-fp32' AND iteration < 3 "
        "AND kind = 'decision' AND round = 0",
    )
    result = _build(quick_run, bad, "--out", site)
    _one_error_line(result, "bad.duckdb is refused")
    assert "table latency, runtime ort-cpu-fp32: 3 rows" in result.output
    assert _tree(site) == before and Path(quick_run).exists()


# -- 2. build reads whatever collect can leave behind ---------------------------------------------------


@pytest.mark.parametrize("case", ["zero", "one", "running", "incomplete", "no-reference", "reference-failed"])
def test_build_reads_any_file_collect_can_leave(quick_run, tmp_path, case):
    sql = {
        "zero": [
            "DELETE FROM latency",
            "DELETE FROM state_q",
            "DELETE FROM episodes",
            "UPDATE runs SET status = 'incomplete', status_detail = 'stopped by SIGINT during prepare of "
            "torch-cpu-fp32'",
        ],
        "one": [
            f"DELETE FROM {t} WHERE runtime_id = 'ort-cpu-fp32'" for t in ("latency", "state_q", "episodes", "runtimes")
        ],
        "running": [
            "UPDATE runs SET status = 'running', finished_at = NULL",
            "DELETE FROM episodes WHERE runtime_id = 'ort-cpu-fp32'",
        ],
        "incomplete": [
            "UPDATE runs SET status = 'incomplete', status_detail = 'stopped by SIGTERM during play of ort-cpu-fp32'",
            "DELETE FROM episodes WHERE runtime_id = 'ort-cpu-fp32' AND seed = 1001",
        ],
        "no-reference": ["UPDATE runs SET reference_runtime = NULL"],
        "reference-failed": [
            "UPDATE runtimes SET status = 'failed', reason = 'play: RuntimeError: boom' "
            "WHERE runtime_id = 'torch-cpu-fp32'"
        ],
    }[case]
    db = _copy(quick_run, tmp_path / f"{case}.duckdb", *sql)
    site = tmp_path / "site"
    result = _build(db, "--out", site)
    assert result.exit_code == 0, result.output
    en, zh = _page(site), _page(site, "zh-tw")
    expected = {
        "zero": ("Nothing was measured in this run", "沒有量到任何東西"),
        "one": ("measured 1 of them", "實際量測了其中 1 個"),
        "running": ("stopped unexpectedly", "意外中止"),
        "incomplete": ("stopped by SIGTERM during play of ort-cpu-fp32", "部分結果"),
        "no-reference": ("No reference runtime was measured", "沒有量測基準"),
        "reference-failed": ("did not complete its measurements", "沒有完成量測"),
    }[case]
    assert expected[0] in en and expected[1] in zh
    if case in ("one", "no-reference", "reference-failed", "zero"):
        assert "deployment-worthy" not in en.split("<main", 1)[1]
    if case == "one":
        assert "nothing to compare" in en


# -- 3. raw rows are validated -------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["'nan'::DOUBLE", "'inf'::DOUBLE", "-0.001"])
def test_non_finite_or_negative_latency_is_refused_unless_allowed(quick_run, tmp_path, value):
    db = _copy(
        quick_run,
        tmp_path / "lat.duckdb",
        f"UPDATE latency SET seconds = {value} WHERE runtime_id = 'ort-cpu-fp32' AND kind = 'decision'",
    )
    result = _build(db, "--out", tmp_path / "s")
    _one_error_line(result, "refused")
    con = duckdb.connect(str(db), read_only=True)
    n = con.execute("SELECT count(*) FROM latency WHERE runtime_id = 'ort-cpu-fp32' AND kind = 'decision'").fetchone()[
        0
    ]
    con.close()
    assert f"table latency, runtime ort-cpu-fp32: {n:,} rows latency not a finite, non-negative" in result.output
    assert not (tmp_path / "s").exists()
    result = _build(db, "--out", tmp_path / "s", "--allow-invalid")
    assert result.exit_code == 0, result.output
    en, zh = _page(tmp_path / "s"), _page(tmp_path / "s", "zh-tw")
    assert "failed validation" in en and "未通過資料檢查" in zh
    assert (
        "table latency, runtime ort-cpu-fp32: a latency that is not a finite, non-negative number of seconds, "
        f"in {n:,} of its rows" in en
    )
    assert f"延遲量測資料表、執行環境 ort-cpu-fp32：有 {n:,} 列的延遲不是有限且非負的秒數" in zh
    assert "deployment-worthy" not in en.split("<main", 1)[1] and "-1.000" not in en


def test_other_row_checks(quick_run, tmp_path):
    cases = {
        "UPDATE state_q SET q_values = [1.0, 2.0]::FLOAT[] WHERE state_index = 0 AND runtime_id = 'ort-cpu-fp32'": (
            "table state_q, runtime ort-cpu-fp32: 1 row Q-values not 4 finite numbers"
        ),
        "UPDATE episodes SET score = 'nan'::DOUBLE WHERE runtime_id = 'torch-cpu-fp32' AND seed = 1000": (
            "table episodes, runtime torch-cpu-fp32: 1 row score not a finite number"
        ),
        "UPDATE episodes SET seed = 77 WHERE runtime_id = 'torch-cpu-fp32' AND seed = 1000": (
            "1 row seed not in the run's pre-registered seeds"
        ),
        # a file edited by hand: the table re-made without its key, then rows repeated
        "CREATE TABLE l2 AS SELECT * FROM latency; DROP TABLE latency; ALTER TABLE l2 RENAME TO latency; "
        "INSERT INTO latency SELECT * FROM latency WHERE runtime_id = 'torch-cpu-fp32' AND kind = 'decision' "
        "AND iteration < 2 AND round = 0": "table latency, runtime torch-cpu-fp32: 2 rows repeating a key",
        "UPDATE episodes SET actions = [0, 1, 9]::UTINYINT[] WHERE runtime_id = 'ort-cpu-fp32' AND seed = 1001": (
            "table episodes, runtime ort-cpu-fp32: 1 row action trace not one action in 0–3 per step"
        ),
    }
    for i, (sql, expected) in enumerate(cases.items()):
        db = _copy(quick_run, tmp_path / f"c{i}.duckdb", *sql.split("; "))
        result = _build(db, "--out", tmp_path / f"s{i}")
        _one_error_line(result, expected)


def test_damaged_files_get_one_line_each(quick_run, tmp_path):
    data = Path(quick_run).read_bytes()
    (tmp_path / "cut.duckdb").write_bytes(data[:100])
    _one_error_line(_build(tmp_path / "cut.duckdb", "--out", tmp_path / "s"), "damaged or truncated")
    (tmp_path / "empty.duckdb").write_bytes(b"")
    _one_error_line(_build(tmp_path / "empty.duckdb", "--out", tmp_path / "s"), "not a DuckDB database file")
    db = _copy(quick_run, tmp_path / "norun.duckdb", "DROP TABLE runtimes")
    _one_error_line(_build(db, "--out", tmp_path / "s"), "without its runtimes table")


def test_the_same_run_twice_is_refused_and_a_shared_label_is_told_apart(quick_run, tmp_path):
    copy = _copy(quick_run, tmp_path / "copy.duckdb")
    _one_error_line(_build(quick_run, copy, "--out", tmp_path / "s"), "the same run")
    other = _copy(
        quick_run,
        tmp_path / "other.duckdb",
        "UPDATE runs SET run_id = 'another'",
        *[f"UPDATE {t} SET run_id = 'another'" for t in ("runtimes", "latency", "state_q", "episodes")],
    )
    result = _build(quick_run, other, "--out", tmp_path / "s")
    assert result.exit_code == 0, result.output
    home = (tmp_path / "s" / "en" / "index.html").read_text()
    assert "ci-cpu (" in home and "other.duckdb" in home
    # the label's answer at its own URL, and each run at a URL of its own (its day; a second run that day gets -2)
    pages = sorted(p.name for p in (tmp_path / "s" / "en" / "hardware").iterdir())
    assert len(pages) == 3 and pages[0] == "ci-cpu" and re.fullmatch(r"ci-cpu-\d{4}-\d\d-\d\d", pages[1])
    assert pages[2] == pages[1] + "-2"


# -- 4. collect writes atomically; two at once -----------------------------------------------------------


def _collect_cmd(out, *extra):
    return [
        sys.executable,
        "-m",
        "rtreport",
        "collect",
        "--quick",
        "--out",
        str(out),
        "--artifacts",
        str(Path(out).parent / "artifacts"),
        *extra,
    ]


def _run_status(db):
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute("SELECT status, status_detail FROM runs").fetchone()
    finally:
        con.close()


@pytest.mark.slow  # a long end-to-end run: python -m pytest -m slow (CI runs it)
def test_two_collects_at_once_leave_one_valid_file_and_one_clear_line(quick_run, tmp_path):
    out = tmp_path / "same.duckdb"
    shutil.copyfile(quick_run, out)  # an older run: --overwrite must not remove it before the new one is done
    procs = [
        subprocess.Popen(
            _collect_cmd(out, "--overwrite", "--runtimes", "ort-cpu-fp32", "--label", f"r{i}"),
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(2)
    ]
    seen = set()
    while any(p.poll() is None for p in procs):
        assert out.exists()  # never removed meanwhile
        seen.add(_run_status(out)[0] if out.exists() else None)
        time.sleep(0.2)
    results = [(p.returncode, p.stdout.read() + p.stderr.read()) for p in procs]
    assert sorted(code for code, _ in results) in ([0, 0], [0, 2]), results
    for code, output in results:
        assert "Traceback" not in output
        if code == 2:
            assert "another rtreport collect" in output and "is writing" in output
    assert _run_status(out)[0] == "complete" and seen == {"complete"}
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_overwrite_keeps_the_old_file_until_the_new_run_ends(tmp_path, monkeypatch):
    from collect import collect_command

    out = tmp_path / "o.duckdb"
    out.write_bytes(b"the old run")
    seen = {}
    real = collect_command.Collector.run

    def run(self):
        seen["during"] = out.read_bytes()
        return real(self)

    monkeypatch.setattr(collect_command.Collector, "run", run)
    code = collect_command.run_collect(
        CollectOptions(
            runtime_list="ort-cpu-fp32",
            out=out,
            overwrite=True,
            label="o",
            artifacts=tmp_path / "a",
            quick=True,
            quiet=True,
        )
    )
    assert code == 0 and seen["during"] == b"the old run" and _run_status(out)[0] == "complete"


# -- 5. every stop signal leaves a truthful status ---------------------------------------------------------


@pytest.mark.slow  # a long end-to-end run: python -m pytest -m slow (CI runs it)
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_leave_an_incomplete_run(tmp_path, sig):
    out = tmp_path / "sig.duckdb"
    proc = subprocess.Popen(
        _collect_cmd(out, "--runtimes", "torch-cpu-fp32,ort-cpu-fp32", "--label", "sig"),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines = []
    for line in proc.stderr:
        lines.append(line)
        if "latency round 2/3" in line:  # a first round is stored by now: stop it
            proc.send_signal(sig)
            break
    rest = proc.communicate(timeout=60)
    output = "".join(lines) + rest[0] + rest[1]
    name = signal.Signals(sig).name
    assert proc.returncode == 128 + sig, output
    assert "Traceback" not in output
    assert f"stopped by {name}" in output and "marked incomplete" in output
    assert (
        output.strip()
        .splitlines()[-1]
        .endswith(f"rtreport collect --resume {out} continues it; rtreport build {tmp_path} publishes what is there")
    )  # what to run next
    status, detail = _run_status(out)
    assert status == "incomplete" and detail.startswith(f"stopped by {name} during")
    con = duckdb.connect(str(out), read_only=True)
    assert con.execute("SELECT count(*) FROM latency WHERE kind = 'decision'").fetchone()[0] >= 300
    con.close()
    assert not list(tmp_path.glob(".sig.duckdb*"))


@pytest.mark.slow  # a long end-to-end run: python -m pytest -m slow (CI runs it)
def test_a_killed_run_keeps_its_partial_file_and_builds_as_stopped_unexpectedly(tmp_path):
    out = tmp_path / "k.duckdb"
    proc = subprocess.Popen(
        _collect_cmd(out, "--runtimes", "torch-cpu-fp32,ort-cpu-fp32", "--label", "killed"),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    for line in proc.stderr:
        if "batch sweep" in line:
            proc.kill()
            break
    proc.communicate(timeout=60)
    assert not out.exists()
    (partial,) = tmp_path.glob(".k.duckdb.*.partial")
    assert _run_status(partial)[0] == "running"
    result = _build(partial, "--out", tmp_path / "s")
    assert result.exit_code == 0, result.output
    assert "stopped unexpectedly" in _page(tmp_path / "s", slug_="killed")
    again = subprocess.run(
        _collect_cmd(out, "--runtimes", "ort-cpu-fp32", "--label", "killed"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert again.returncode == 0 and f"{partial} holds an earlier run" in again.stderr


# -- 6. labels keep the user's text ------------------------------------------------------------------------


def test_labels_in_any_script():
    assert check_label("  實驗室 ") == "實驗室"
    assert slug("實驗室") == slug("實驗室") != slug("研究室") and slug("實驗室").startswith("run-")
    assert slug("My 中文 GPU").startswith("my-gpu-") and slug("My 中文 GPU") != slug("My GPU") == "my-gpu"
    assert slug("nvidia-h200") == "nvidia-h200"
    for bad in ("", "   ", "two\nlines", "x" * 81):
        with pytest.raises(UserError):
            check_label(bad)


def test_a_cjk_label_round_trips_to_the_pages(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    label = "實驗室 <RTX> & 4090"
    result = CliRunner().invoke(
        main,
        [
            "collect",
            "--quick",
            "--quiet",
            "--runtimes",
            "ort-cpu-fp32",
            "--label",
            label,
            "--artifacts",
            str(tmp_path / "a"),
        ],
    )
    assert result.exit_code == 0, result.output
    (db,) = (tmp_path / "data").glob("*.duckdb")
    assert db.name == f"{slug(label)}.duckdb"
    assert CliRunner().invoke(main, ["build"]).exit_code == 0
    page = tmp_path / "site" / "zh-tw" / "hardware" / slug(label) / "index.html"  # the machine's answer
    html = page.read_text()
    assert re.search(r"<h1>實驗室 &lt;RTX&gt; &amp; 4090（[^<]*）：[^<]*</h1>", html)
    assert "實驗室 &lt;RTX&gt; &amp; 4090" in (tmp_path / "site" / "en" / "index.html").read_text()


# -- 7. the reference rule ------------------------------------------------------------------------------


def test_collect_says_which_runtime_is_the_reference(tmp_path):
    result = CliRunner().invoke(
        main,
        [
            "collect",
            "--quick",
            "--runtimes",
            "ort-cpu-fp32",
            "--out",
            str(tmp_path / "o.duckdb"),
            "--artifacts",
            str(tmp_path / "a"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "reference: ort-cpu-fp32, the only runtime measured here" in result.output
    from collect.collect_command import reference_notice

    note = reference_notice("ort-cpu-fp32", ["ort-cpu-fp32", "ort-cuda-fp32"], ["ort-cpu-fp32", "ort-cuda-fp32"], {})
    assert "instead of PyTorch FP32" in note and "torch-cpu-fp32 is not among --runtimes" in note
    assert "no verdicts" in reference_notice(None, ["ort-cuda-fp16"], ["ort-cuda-fp16"], {})


def test_nothing_to_measure_is_one_line_and_no_file(tmp_path):
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    result = CliRunner().invoke(
        main, ["collect", "--quick", "--runtimes", "torch-cuda-fp32", "--out", str(tmp_path / "x.duckdb")]
    )
    _one_error_line(result, "nothing to measure")
    assert list(tmp_path.iterdir()) == []


# -- 8. paths are relative to where the command runs -------------------------------------------------------


def test_build_reads_dot_data_and_writes_dot_site(quick_run, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _one_error_line(CliRunner().invoke(main, ["build"]), "no ./data folder here")
    (tmp_path / "data").mkdir()
    _one_error_line(CliRunner().invoke(main, ["build"]), "holds no .duckdb files")
    (tmp_path / "runs").mkdir()
    shutil.copyfile(quick_run, tmp_path / "runs" / "a.duckdb")
    result = CliRunner().invoke(main, ["build", "runs"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "site" / "en" / "hardware" / "ci-cpu" / "index.html").exists()


# -- 9. unreadable model files ---------------------------------------------------------------------------


def test_each_unreadable_model_kind_gets_its_own_line(tmp_path):
    torch.save(QNetwork(), tmp_path / "whole.pt")
    (tmp_path / "random.pt").write_bytes(os.urandom(2000))
    (tmp_path / "zero.pt").write_bytes(b"")
    (tmp_path / "text.pt").write_text("weights, honestly\n")
    good = (paths.AGENT_WEIGHTS).read_bytes()
    (tmp_path / "cut.pt").write_bytes(good[: len(good) // 2])
    (tmp_path / "zero.onnx").write_bytes(b"")
    expected = {
        "whole.pt": "pickled collect.agent.network.QNetwork",
        "random.pt": "not a PyTorch checkpoint",
        "zero.pt": "is empty (0 bytes)",
        "text.pt": "is a text file",
        "cut.pt": "damaged or truncated",
        "zero.onnx": "is empty (0 bytes)",
    }
    for name, text in expected.items():
        result = CliRunner().invoke(
            main, ["collect", "--quiet", "--model", str(tmp_path / name), "--out", str(tmp_path / "x.duckdb")]
        )
        _one_error_line(result, text)
        assert name in result.output
        if name.endswith(".pt"):
            assert "state_dict()" in result.output


# -- 10. the terminal --------------------------------------------------------------------------------------


@pytest.mark.slow  # a long end-to-end run: python -m pytest -m slow (CI runs it)
def test_piped_progress_is_plain_lines_and_quiet_is_silent(tmp_path):
    out = tmp_path / "p.duckdb"
    loud = subprocess.run(
        _collect_cmd(out, "--runtimes", "ort-cpu-fp32", "--repeats", "0"), cwd=tmp_path, capture_output=True, text=True
    )
    assert loud.returncode == 0, loud.stderr
    assert "A.L.E" not in loud.stderr and "Stella" not in loud.stderr
    phases = [line.split("] ", 1)[1] for line in loud.stderr.splitlines() if line.startswith("[")]
    expected = [
        "ort-cpu-fp32: prepare",
        "ort-cpu-fp32: fixed states",
        "ort-cpu-fp32: batch sweep",
        "ort-cpu-fp32: latency round 1/3",
        "ort-cpu-fp32: latency round 2/3",  # before play, one after
        "play look 1: ort-cpu-fp32",
        "ort-cpu-fp32: latency round 3/3",
    ]
    assert [p.split(": ", 2)[0] + ": " + p.split(": ", 2)[1] for p in phases] == expected, phases
    quiet = subprocess.run(
        _collect_cmd(tmp_path / "q.duckdb", "--runtimes", "ort-cpu-fp32", "--repeats", "0", "--quiet"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert quiet.returncode == 0 and quiet.stdout == "" and quiet.stderr == "", quiet.stderr


def test_a_closed_pipe_silences_the_stream_instead_of_raising():
    """What ``collect | head`` does to the next progress line: a bare stream raises, the guarded one points its
    descriptor at /dev/null and goes on."""
    import io

    from collect.pipes import _QuietOnClose

    streams = []
    for _ in range(2):
        r, w = os.pipe()
        os.close(r)  # the reader is gone
        streams.append((w, io.TextIOWrapper(io.FileIO(w, "w"), line_buffering=True)))
    (_, bare), (fd, guarded) = streams[0], streams[1]
    with pytest.raises(BrokenPipeError):
        bare.write("progress\n")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, streams[0][0])  # so that closing it flushes into nothing instead of raising again
    os.close(devnull)
    bare.close()
    quiet = _QuietOnClose(guarded)
    assert quiet.write("progress\n") == len("progress\n")
    quiet.write("more\n")
    quiet.flush()
    assert os.readlink(f"/proc/self/fd/{fd}") == os.devnull
    quiet.close()


@pytest.mark.slow  # a long end-to-end run: python -m pytest -m slow (CI runs it)
def test_a_reader_that_closes_the_pipe_costs_no_run(tmp_path):
    """``rtreport collect 2>&1 | head -1``: the reader leaves after one line; the run and its repeat still end
    complete, and collect exits 0."""
    out = tmp_path / "h.duckdb"
    proc = subprocess.Popen(
        _collect_cmd(out, "--runtimes", "ort-cpu-fp32", "--repeats", "1"),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    assert proc.stdout.readline()
    proc.stdout.close()
    assert proc.wait(timeout=900) == 0
    assert _run_status(out)[0] == "complete"
    con = duckdb.connect(str(out), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM repeats").fetchone()[0] == 1
    finally:
        con.close()


def test_the_summary_never_cuts_a_number_at_80_columns(quick_run):
    from collect.registry import all_runtimes
    from collect.summary import summary_lines
    from site_gen.load import load_file
    from site_gen.speed_analysis import keyed_rounds, latency_summary

    con = duckdb.connect(str(quick_run), read_only=True)
    run_id = con.execute("SELECT run_id FROM runs").fetchone()[0]
    lines = summary_lines(con, run_id, "torch-cpu-fp32", [s.id for s in all_runtimes()], 80)
    con.close()
    assert all(len(line) <= 80 for line in lines), lines
    ort = next(line for line in lines if line.startswith("ort-cpu-fp32"))
    assert ort.split()[3:5] == ["8/8", "100.00"] and "4.0 (2)" in ort  # every number whole
    # P50 and P95 as the site publishes them (round by round, then their geometric mean), not pooled samples
    [run] = load_file(quick_run)
    for rt in (rt for rt in run.runtimes if rt.decision_seconds.size):
        row = next(line for line in lines if line.startswith(rt.runtime_id + " "))
        published = latency_summary(rt, keyed_rounds(rt))
        assert row.split()[1:3] == [f"{published['p50']:.3f}", f"{published['p95']:.3f}"], row
    # the unavailable GPU runtimes are grouped: one entry per distinct reason, not one line per runtime
    flat = " ".join(line.strip() for line in lines)
    assert flat.count("no CUDA device visible") == 1 and "torch-cuda-fp32, torch-cuda-fp32-graph" in flat


def test_list_runtimes_groups_reasons_and_keeps_words_whole():
    result = CliRunner().invoke(main, ["collect", "--list-runtimes"])
    assert result.exit_code == 0
    assert "runs on this machine:" in result.output and "torch-cpu-fp32" in result.output
    if not torch.cuda.is_available():
        assert " ".join(result.output.split()).count("no CUDA device visible") == 1
