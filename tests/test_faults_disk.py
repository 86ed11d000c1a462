"""A full disk, a read-only folder, a killed run: one line naming the path and what is kept, a non-zero exit, the
previous file untouched, and what was measured resumable by the name the user gave.
The full disk is a small tmpfs (CI runs as root); without the right to mount, these tests are skipped."""

import os
import subprocess
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from rtreport_cli.main import main


@pytest.fixture
def disk(tmp_path):
    """A 64 MB tmpfs at tmp_path/disk, and a way to fill it (``fill()``) and free it again (``free()``)."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(mnt)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (needs root): the full-disk cases are not run")
    filler = tmp_path / "disk" / "filler"

    class Disk:
        path = mnt

        @staticmethod
        def fill():
            fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
            try:
                for size in (1 << 20, 4096, 1):  # down to the last byte
                    try:
                        while True:
                            os.write(fd, b"\0" * size)
                    except OSError:
                        pass
            finally:
                os.close(fd)

        @staticmethod
        def free():
            filler.unlink(missing_ok=True)

        @staticmethod
        def ro(folder):
            folder.mkdir()
            subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(folder)], check=True)
            mounted.append(folder)

    mounted = []
    yield Disk
    for m in [*mounted, mnt]:
        subprocess.run(["umount", "-l", str(m)], capture_output=True)


def _collect(*args):
    return CliRunner().invoke(main, ["collect", *map(str, args)])


def _status(db):
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute("SELECT run_id, status FROM runs").fetchone()
    finally:
        con.close()


def _hidden(folder):
    return sorted(p.name for p in Path(folder).iterdir() if p.name.startswith("."))


@pytest.mark.parametrize("phase", ["latency", "close"])
def test_a_full_disk_keeps_the_old_file_and_what_was_measured(disk, tmp_path, monkeypatch, phase):
    """Disk full as the latency rounds start (a commit fails) or as the run ends (its checkpoint fails, which
    DuckDB's close used to drop silently: 'wrote' and exit 0 with an empty file)."""
    from collect import rounds, store

    out = disk.path / "run.duckdb"
    out.write_bytes(b"the previous run")  # --overwrite must leave it as it is
    before = out.read_bytes()
    target = {"latency": (rounds.Rounds, "take"), "close": (store.RunStore, "close")}[phase]
    real = getattr(*target)

    def full_then(self, *a, **k):
        disk.fill()
        return real(self, *a, **k)

    monkeypatch.setattr(*target, full_then)
    result = _collect(
        "--quick",
        "--quiet",
        "--runtimes",
        "ort-cpu-fp32",
        "--out",
        out,
        "--overwrite",
        "--label",
        "full",
        "--artifacts",
        tmp_path / "a",
    )
    assert result.exit_code == 4, result.output
    last = result.output.strip().splitlines()[-1]
    assert "Traceback" not in result.output and last.startswith("Error: cannot write ")
    assert "no space left on the device (ENOSPC)" in last and f"{out} is untouched" in last
    assert f"rtreport collect --resume {out} continues it" in last
    assert out.read_bytes() == before
    (partial,) = [p for p in disk.path.glob(".run.duckdb.*.partial")]
    assert f"kept in {partial}" in last
    if phase == "latency":
        monkeypatch.undo()
        disk.free()
        again = _collect("--resume", out)
        assert again.exit_code == 0, again.output
        assert _status(out)[1] == "complete"  # the new run, resumed by --out's name
        assert _hidden(disk.path) == []  # no partial, no log, no lock left


def test_a_failing_start_on_a_full_disk_writes_nothing(disk, tmp_path):
    disk.fill()
    out = disk.path / "new.duckdb"
    result = _collect("--quick", "--runtimes", "ort-cpu-fp32", "--out", out, "--artifacts", tmp_path / "a")
    assert result.exit_code == 4, result.output
    assert "Traceback" not in result.output
    last = result.output.strip().splitlines()[-1]
    assert "no space left on the device (ENOSPC)" in last and "nothing was measured" in last, last
    assert [p.name for p in disk.path.iterdir()] == ["filler"]


def test_a_read_only_current_folder_is_one_line(disk, tmp_path, monkeypatch):
    """Collect's default ./data cannot be made; build's site cannot be written: one line each, no traceback."""
    ro = tmp_path / "ro"
    disk.ro(ro)
    monkeypatch.chdir(ro)
    result = _collect("--quick", "--runtimes", "ort-cpu-fp32", "--artifacts", tmp_path / "a")
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert result.output.strip() == (
        "Error: cannot create the folder ./data here: the file system is read-only "
        "(EROFS); run rtreport collect in a folder you can write, or give --out"
    )
    result = _collect("--quick", "--runtimes", "ort-cpu-fp32", "--out", ro / "x.duckdb")
    assert result.exit_code == 2 and "is not writable" in result.output, result.output


def test_every_runtime_failing_on_a_read_only_artifacts_folder_exits_3(disk, tmp_path):
    ro = tmp_path / "ro"
    disk.ro(ro)
    out = tmp_path / "none.duckdb"
    result = _collect("--quick", "--runtimes", "ort-cpu-fp32", "--out", out, "--artifacts", ro / "a")
    assert result.exit_code == 3, result.output
    last = result.output.strip().splitlines()[-1]
    assert last.startswith("Error: 0 of 1 runtime measured (ort-cpu-fp32: prepare: ") and "Read-only" in last
    assert last.endswith(f"nothing was written to {out}") and not out.exists()
    assert _hidden(tmp_path) == []


def test_some_runtimes_failing_says_how_many_on_the_last_line(disk, tmp_path):
    """ONNX Runtime cannot export into a read-only --artifacts folder; PyTorch needs none: one of two measured."""
    ro = tmp_path / "ro"
    disk.ro(ro)
    out = tmp_path / "some.duckdb"
    result = _collect("--quick", "--runtimes", "torch-cpu-fp32,ort-cpu-fp32", "--out", out, "--artifacts", ro / "a")
    assert result.exit_code == 5, result.output  # ort-cpu-fp32 was named by --runtimes
    *_, wrote, error = result.output.strip().splitlines()
    assert wrote == f"wrote {out}: 1 of 2 runtimes measured, 1 failed (listed above)"
    assert error.startswith("Error: 1 of the 2 runtimes named by --runtimes not measured (ort-cpu-fp32: prepare: ")
    assert error.endswith(f"{out} keeps the rest of the run")


def test_an_onnx_model_no_runtime_here_runs_exits_3(tmp_path):
    """A valid ONNX file with float64 inside: ONNX Runtime's CPU EP has no float64 convolution."""
    import onnx
    from onnx import TensorProto, numpy_helper

    from collect import paths

    m = onnx.load(str(paths.AGENT_ONNX))
    for i, init in enumerate(m.graph.initializer):
        m.graph.initializer[i].CopyFrom(
            numpy_helper.from_array(numpy_helper.to_array(init).astype("float64"), init.name)
        )
    for n in m.graph.node:
        for a in n.attribute:
            if n.op_type == "Cast" and a.name == "to":
                a.i = TensorProto.DOUBLE
            if n.op_type == "Constant" and a.name == "value":
                a.t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(a.t).astype("float64")))
    m.graph.output[0].type.tensor_type.elem_type = TensorProto.DOUBLE
    del m.graph.value_info[:]
    model = tmp_path / "f64.onnx"
    onnx.save(m, str(model))
    out = tmp_path / "f64.duckdb"
    result = _collect(
        "--quick", "--model", model, "--runtimes", "ort-cpu-fp32", "--out", out, "--artifacts", tmp_path / "a"
    )
    assert result.exit_code == 3, result.output
    last = result.output.strip().splitlines()[-1]
    assert last.startswith("Error: 0 of 1 runtime measured (ort-cpu-fp32: prepare: ") and "Conv" in last, last
    assert last.endswith(f"nothing was written to {out}") and not out.exists()
