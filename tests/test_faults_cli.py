"""No traceback and whole messages on the inputs a careless user tries; progress never silent for 30 s; the
closing table's header inside 80 columns."""

import threading
import time

import torch
from click.testing import CliRunner

from collect.agent.network import QNetwork
from rtreport_cli.main import main


def _one_line(result, code=2):
    assert result.exit_code == code and "Traceback" not in result.output, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    return lines[0]


def test_build_into_the_current_folder_is_refused_with_one_line(tmp_path, monkeypatch):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.duckdb").write_bytes(b"not read: refused before")
    (tmp_path / "empty").mkdir()
    monkeypatch.chdir(tmp_path / "empty")
    for out in (".", ".."):
        line = _one_line(CliRunner().invoke(main, ["build", "../data", "--out", out]))
        assert line == (
            f"Error: --out {out} is the folder you are in (or holds it), and a build replaces its --out "
            "folder as a whole; give a folder inside it, e.g. --out site"
        )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "empty"]


def test_a_folder_that_takes_no_new_file_is_one_line(tmp_path, monkeypatch):
    """/proc looks writable to root and takes no new file: collect's --out, build's --out, and a folder given to
    check are each one line that names the real problem, not a traceback or the input file."""
    from conftest import COMMITTED_RUNS

    monkeypatch.chdir(tmp_path)
    line = _one_line(CliRunner().invoke(main, ["collect", "--quick", "--out", "/proc/x.duckdb"]))
    assert line.startswith("Error: cannot write /proc/x.duckdb: folder /proc takes no new file (")
    line = _one_line(CliRunner().invoke(main, ["build", str(COMMITTED_RUNS[0]), "--out", "/proc/site"]))
    assert line.startswith("Error: cannot write --out /proc/site: folder /proc takes no new folder (")
    import torch

    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    line = _one_line(CliRunner().invoke(main, ["collect", "--quick", "--device", f"cuda:{gpus + 4}"]))
    assert line.startswith(f"Error: --device cuda:{gpus + 4} is not on this machine: ")
    line = _one_line(CliRunner().invoke(main, ["collect", "--runtimes", "--quick"]))
    assert line == (
        "Error: --runtimes takes a comma-separated list of runtime ids, not '--quick' "
        "(rtreport collect --list-runtimes lists them)"
    )
    if not gpus:  # cuda:0 named on a machine without one is refused; left to its default, it is not
        line = _one_line(CliRunner().invoke(main, ["collect", "--quick", "--device", "cuda:0"]))
        assert line == (
            "Error: --device cuda:0 is not on this machine: it has no CUDA GPU PyTorch can see "
            "(leave --device out to measure the CPU runtimes)"
        )
    line = _one_line(CliRunner().invoke(main, ["check", str(tmp_path)]))
    assert line == f"Error: {tmp_path} is a folder, not a run file (rtreport build takes a folder of them)"
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_an_empty_label_is_refused_not_replaced(tmp_path, monkeypatch):
    """--label "" (an unset shell variable, say) is a careless input, not a request for the default name."""
    monkeypatch.chdir(tmp_path)
    for extra in ([], ["--repeat", str(tmp_path / "x.duckdb")]):
        args = ["collect", *(["--quick"] if not extra else []), "--label", "", *extra]
        line = _one_line(CliRunner().invoke(main, args))
        assert ("--label is empty" in line) if not extra else ("--repeat adds to the file's own run" in line), line
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_data_being_a_file_is_one_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").write_text("a file, not a folder")
    line = _one_line(
        CliRunner().invoke(
            main, ["collect", "--quick", "--runtimes", "ort-cpu-fp32", "--artifacts", str(tmp_path / "a")]
        )
    )
    assert line == "Error: ./data is a file; collect writes its run into a folder ./data: move the file, or give --out"
    line = _one_line(CliRunner().invoke(main, ["build"]))
    assert "data is not a DuckDB database file" in line


def test_a_wrong_shape_state_dict_message_is_whole(tmp_path):
    state = QNetwork(4).state_dict()
    state["network.10.weight"] = torch.zeros(512, 6400)  # a first linear layer sized for 100x100 frames
    path = tmp_path / "wide.pt"
    torch.save(state, path)
    line = _one_line(CliRunner().invoke(main, ["collect", "--model", str(path), "--out", str(tmp_path / "x.duckdb")]))
    assert line.startswith(
        f"Error: {path} does not fit rtreport's Q-network (input (N, 4, 84, 84)): Error(s) in "
        "loading state_dict for QNetwork: size mismatch for network.10.weight:"
    )
    assert "torch.Size([512, 6400])" in line and "torch.Size([512, 3136])" in line


def test_progress_lines_are_at_most_every_seconds_apart_in_a_silent_phase():
    """Play waiting on its first games gave no line for minutes: the watcher speaks for a phase that makes no
    progress it can count, and between phases."""
    from collect.progress import Lines

    said, when = [], []
    ui = Lines(lambda line: (said.append(line), when.append(time.monotonic())), every=0.2)
    ui.start()
    try:
        with ui.phase("play look 1: torch-cpu-fp32", 100) as tick:
            time.sleep(0.9)
            tick(1)
        time.sleep(0.5)
    finally:
        ui.stop()
    assert sum("play look 1: torch-cpu-fp32: 0/100, still working" in line for line in said) >= 3, said
    assert any(line.endswith("still working (between phases)") for line in said), said
    gaps = [b - a for a, b in zip(when, when[1:])]
    assert max(gaps) < 0.2 + 0.1, gaps
    assert not [
        t for t in threading.enumerate() if t.name == "progress-watch" and t.is_alive() and (t.join(1) or t.is_alive())
    ]


def test_the_summary_header_wraps_whole_within_the_width(quick_run):
    import duckdb
    from collect.summary import summary_lines

    con = duckdb.connect(str(quick_run), read_only=True)
    run_id = con.execute("SELECT run_id FROM runs").fetchone()[0]
    reference = "torch-cuda-fp16-compile-graph"
    lines = summary_lines(con, run_id, reference, [], 80)
    con.close()
    assert all(len(line) <= 80 for line in lines), lines
    header = " ".join(lines[:2])
    assert header == f"first look, reference {reference}; same action on the fixed states and in play", lines[:3]
