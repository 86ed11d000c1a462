"""Stop signals leave nothing behind: a real ``rtreport build`` stopped by SIGINT or SIGTERM while it writes its
working folder removes it, keeps the previous site byte for byte, says one line and exits 128 + the signal; a
later build removes what builds killed outright left; a real collect killed outright (SIGKILL) takes its play
processes and its repeat's fresh process with it, and ``--resume`` right after is accepted."""

import hashlib
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from rtreport_cli.main import main

from conftest import COMMITTED_RUNS

RUN = COMMITTED_RUNS[0]  # the smallest committed run: a build of it writes its working folder for about a second


def _site(folder: Path) -> dict:
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in folder.rglob("*")
        if p.is_file()
    }


def _ended() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.fixture(scope="module")
def previous_site(tmp_path_factory):
    """A folder holding a site built from the committed run, and its files' digests."""
    folder = tmp_path_factory.mktemp("stopped-build")
    result = CliRunner().invoke(main, ["build", str(RUN), "--out", str(folder / "site")])
    assert result.exit_code == 0, result.output
    (folder / "site" / "CNAME").write_text("example.org\n")  # a file of the user's, kept by every build
    return folder, _site(folder / "site")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_stopped_build_removes_its_working_folder_and_keeps_the_site(previous_site, sig):
    folder, before = previous_site
    proc = subprocess.Popen(
        [sys.executable, "-m", "rtreport", "build", str(RUN), "--out", "site"],
        cwd=folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    working = folder / f".site.building-{proc.pid}"
    deadline = time.monotonic() + 60
    while not working.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.002)
    assert working.exists(), "the build ended before its working folder was seen"
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig, (out, err)
    name = signal.Signals(sig).name
    assert err.splitlines() == [
        f"build stopped by {name}: the site in site is unchanged, and nothing of this build is left"
    ], err
    assert out == ""
    assert sorted(p.name for p in folder.iterdir()) == ["site"]  # no working folder, no old site, no probe
    assert _site(folder / "site") == before


def test_a_later_build_removes_what_killed_builds_left(previous_site, tmp_path):
    folder = tmp_path / "f"
    subprocess.run(["cp", "-a", str(previous_site[0]), str(folder)], check=True)
    sleeper = subprocess.Popen(["sleep", "120"])  # a live process (the build runs in this test's own process)
    dead, live = _ended(), sleeper.pid
    for pid in (dead, live):
        (folder / f".site.building-{pid}" / "en").mkdir(parents=True)
        (folder / f".site.building-{pid}" / "en" / "index.html").write_text("half a page")
    (folder / f".site.probe-{dead}").mkdir()
    try:
        result = CliRunner().invoke(main, ["build", str(RUN), "--out", str(folder / "site")])
    finally:
        sleeper.kill()
        sleeper.wait()
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in folder.iterdir()) == [f".site.building-{live}", "site"]
    for what in (f".site.building-{dead}", f".site.probe-{dead}"):
        assert f"note: removed {folder / what}, left by a build (pid {dead}) that is no longer running" in result.output


def test_a_build_killed_between_its_renames_gets_its_site_back(previous_site, tmp_path):
    """Killed after moving the previous site aside and before moving the new one in: no ``site``, the previous
    one in ``.site.old-PID``. The next build puts it back first, so the user's files in it are kept."""
    folder = tmp_path / "f"
    subprocess.run(["cp", "-a", str(previous_site[0]), str(folder)], check=True)
    dead = _ended()
    os.replace(folder / "site", folder / f".site.old-{dead}")
    result = CliRunner().invoke(main, ["build", str(RUN), "--out", str(folder / "site")])
    assert result.exit_code == 0, result.output
    assert f"note: put back the site in {folder / 'site'}, left in .site.old-{dead} by a build (pid {dead})" in (
        result.output
    )
    assert "note: kept 1 file in" in result.output and (folder / "site" / "CNAME").read_text() == "example.org\n"
    assert sorted(p.name for p in folder.iterdir()) == ["site"]


# -- collect ---------------------------------------------------------------------------------------------------------


def _children() -> dict:
    """{pid: (parent pid, cmdline)} of every process on this machine."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        found[int(entry.name)] = (int(fields[1]), fields[0], cmdline)
    return found


def _descendants(pid: int) -> dict:
    table = _children()
    out, todo = {}, [pid]
    while todo:
        parent = todo.pop()
        for child, (ppid, _, cmdline) in table.items():
            if ppid == parent and child not in out:
                out[child] = cmdline
                todo.append(child)
    return out


def _running(pids) -> list:
    """Those of ``pids`` still running (a zombie has ended)."""
    table = _children()
    return [p for p in pids if p in table and table[p][1] != "Z"]


def _wait_gone(pids, seconds: float) -> list:
    end = time.monotonic() + seconds
    while _running(pids) and time.monotonic() < end:
        time.sleep(0.05)
    return _running(pids)


def _collect(folder: Path, *args, log: str):
    err = open(folder.parent / log, "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "rtreport", "collect", *args, "--artifacts", str(folder.parent / "art")],
        cwd=folder,
        stdout=subprocess.DEVNULL,
        stderr=err,
        text=True,
    )
    return proc, folder.parent / log


def _wait_for(proc, log: Path, pattern: str, seconds: float = 120):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        m = re.search(pattern, log.read_text())
        if m:
            return m
        assert proc.poll() is None, f"collect ended ({proc.returncode}) before {pattern!r}:\n{log.read_text()}"
        time.sleep(0.02)
    raise AssertionError(f"no {pattern!r} in {seconds} s:\n{log.read_text()}")


@pytest.mark.slow  # three real collects, one after another
def test_a_killed_collect_takes_its_children_with_it_and_resume_is_accepted(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    # 1. killed in play, where two play processes (multiprocessing, spawned) are working
    proc, log = _collect(
        folder, "--quick", "--runtimes", "ort-cpu-fp32", "--play-workers", "2", "--out", "k.duckdb", "--label", "k",
        log="first.log",
    )  # fmt: skip
    end = time.monotonic() + 120
    while True:
        workers = {p: c for p, c in _descendants(proc.pid).items() if "spawn_main" in c}
        if len(workers) == 2:
            break
        assert proc.poll() is None and time.monotonic() < end, log.read_text()
        time.sleep(0.02)
    time.sleep(0.5)  # they are preparing their runtimes, or playing
    everyone = list(_descendants(proc.pid))
    proc.kill()
    proc.wait()
    assert _wait_gone(workers, 1.5) == [], "play processes outlived the collect killed outright"
    assert _wait_gone(everyone, 10) == []
    names = sorted(p.name for p in folder.iterdir())
    assert names == [f".k.duckdb.{proc.pid}.partial", f".k.duckdb.{proc.pid}.partial.wal", ".k.duckdb.lock"], names

    # 2. --resume right after is accepted; killed in turn while its first repeat's fresh process measures
    proc, log = _collect(folder, "--resume", "k.duckdb", log="second.log")
    _wait_for(proc, log, r"resuming run \w+ of k")
    copy = _wait_for(proc, log, r"written as \.k\.duckdb\.(\d+)\.copy until the repeat ends")
    repeat = int(copy.group(1))
    assert repeat in _descendants(proc.pid)
    proc.kill()
    proc.wait()

    # 3. and --resume at once again (the repeat held the file's lock): every repeat is taken, nothing else is left
    proc, log = _collect(folder, "--resume", "k.duckdb", log="third.log")
    assert _wait_gone([repeat], 1.5) == [], "the repeat's process outlived the collect killed outright"
    assert proc.wait(timeout=300) == 0, log.read_text()
    said = log.read_text()
    assert "another rtreport collect" not in said
    assert "repeat 1 of 2 in a fresh process" in said and "wrote repeat 2 into" in said, said
    assert sorted(p.name for p in folder.iterdir()) == ["k.duckdb"]
    con = duckdb.connect(str(folder / "k.duckdb"), read_only=True)
    assert con.execute("SELECT status FROM runs").fetchone() == ("complete",)
    assert con.execute("SELECT count(*) FROM repeats").fetchone() == (2,)
    con.close()
    assert not list((tmp_path / "art").rglob(".*.making"))


def test_an_artifact_stopped_while_made_leaves_none_of_its_files(tmp_path):
    from collect.artifacts import Artifacts

    def export(path):  # writes part of the model and its side file, then Ctrl-C comes
        path.write_bytes(b"half a model")
        path.with_name(path.name + ".data").write_bytes(b"half its weights")
        raise KeyboardInterrupt

    artifacts = Artifacts(tmp_path / "art", export)
    with pytest.raises(KeyboardInterrupt):
        artifacts.onnx_fp32()
    assert list((tmp_path / "art").iterdir()) == []


def test_a_later_collect_removes_the_artifacts_a_killed_one_was_making(tmp_path):
    from collect.artifacts import Artifacts

    folder = tmp_path / "art"
    folder.mkdir()
    sleeper = subprocess.Popen(["sleep", "120"])
    dead, live = _ended(), sleeper.pid
    files = {
        f".openvino_fp32.xml.{dead}.making": "",
        "openvino_fp32.xml": "<half",
        "openvino_fp32.bin": "half",
        f".calibration-ab12.npy.{live}.making": "",
        "calibration-ab12.tmp": "being written",
        "model.onnx": "a whole model, made before",
    }
    for name, text in files.items():
        (folder / name).write_text(text)
    try:
        path, _ = Artifacts(folder, lambda p: p.write_text("fp32")).make("other.onnx", lambda p: p.write_text("x"))
    finally:
        sleeper.kill()
        sleeper.wait()
    assert path.read_text() == "x"
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [f".calibration-ab12.npy.{live}.making", "calibration-ab12.tmp", "model.onnx", "other.onnx"]
    )


def test_a_later_collect_removes_a_killed_repeats_working_copy_and_keeps_a_stopped_run(tmp_path):
    from collect.outfile import OutputFile

    out = tmp_path / "k.duckdb"
    out.write_bytes(b"the run")
    sleeper = subprocess.Popen(["sleep", "120"])
    dead, live = _ended(), sleeper.pid
    names = [
        f".k.duckdb.{dead}.copy",
        f".k.duckdb.{dead}.copy.wal",
        f".k.duckdb.{dead}.partial.compact",
        f".k.duckdb.{live}.copy",
        f".k.duckdb.{dead}.partial",  # a stopped run: --resume continues it
        f".k.duckdb.{dead}.partial.wal",
    ]
    for name in names:
        (tmp_path / name).write_bytes(b"x")
    said = []
    try:
        with OutputFile(out, overwrite=True, say=said.append, copy=True) as target:
            assert target.partial.name == f".k.duckdb.{os.getpid()}.copy"
            left = sorted(p.name for p in tmp_path.iterdir())
    finally:
        sleeper.kill()
        sleeper.wait()
    assert left == sorted([*names[3:], "k.duckdb", ".k.duckdb.lock"])
    assert said == [
        f"note: removed {tmp_path / names[0]}, a working file of a collect (pid {dead}) that was killed",
        f"note: removed {tmp_path / names[2]}, a working file of a collect (pid {dead}) that was killed",
    ]
