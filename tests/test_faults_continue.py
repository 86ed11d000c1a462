"""What ``collect --resume`` and ``--repeat`` continue: a file whose rows still hold the checksums its last session
recorded (one edited or damaged since is refused, and no session seals such rows as its own), made on a machine of
this kind (another host name or boot of the kind is one, recorded as its own session and boot). One real run of a
tiny CartPole policy on the CPU runtimes, stopped by Ctrl-C in play, then resumed and repeated."""

import json
import shutil
import socket

import duckdb
import pytest
import torch
from click.testing import CliRunner

from collect import provenance
from collect.conditions import Host
from collect.store import RunStore
from conftest import ctrl_c_at_game
from rtreport import integrity
from rtreport_cli.main import main

# one row of each table that holds a run's rows, changed as a hand edit would change it
EDITS = {
    "runs": "label = label || ' (edited)'",
    "runtimes": "title = title || ' (edited)'",
    "sessions": "host = 'elsewhere'",
    "latency": "seconds = seconds * 0.5",
    "rounds": "position = position + 1",
    "retaken": "attempt = attempt + 1",
    "state_q": "action = action + 1",
    "task_states": "step = step + 1",
    "baseline_episodes": "score = score + 1",
    "episodes": "score = score + 1",
    "resources": "value = value * 2 + 1",  # a resource may measure 0 (no resident memory added)
    "play_time": "seconds = seconds + 1",
    "shadow": "same = same - 1",
    "repeats": "finished_at = finished_at + INTERVAL 1 SECOND",
    "repeat_state_q": "action = action + 1",
}
STOPPED_HAS_NONE = {"play_time", "shadow", "repeats", "repeat_state_q"}  # a run stopped in its first game of play


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """{"stopped": the file of a run stopped by Ctrl-C in play, "complete": it resumed to the end and repeated once},
    the model and the artifacts folder."""
    folder = tmp_path_factory.mktemp("continued")
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))
    model = folder / "mlp.pt"
    torch.jit.save(torch.jit.script(net), str(model))
    art, stopped, complete = folder / "a", folder / "stopped.duckdb", folder / "complete.duckdb"
    with pytest.MonkeyPatch.context() as mp:
        ctrl_c_at_game(mp, 2)
        result = CliRunner().invoke(
            main,
            [
                "collect",
                "--quick",
                "--repeats",
                "0",
                "--runtimes",
                "torch-cpu-fp32,ort-cpu-fp32",
                "--env",
                "CartPole-v1",
                "--model",
                str(model),
                "--out",
                str(stopped),
                "--artifacts",
                str(art),
                "--label",
                "tiny",
            ],
        )
    assert result.exit_code == 130, result.output
    shutil.copyfile(stopped, complete)
    for args in (["--resume", str(complete)], ["--repeat", str(complete), "--rounds", "1"]):
        result = CliRunner().invoke(main, ["collect", *args, "--model", str(model), "--artifacts", str(art), "--quiet"])
        assert result.exit_code == 0, result.output
    return {"stopped": stopped, "complete": complete, "model": model, "artifacts": art}


def _copy(made, which, tmp_path):
    copy = tmp_path / f"{which}.duckdb"
    shutil.copyfile(made[which], copy)
    return copy


def _edit(path, *sql, seal=False):
    con = duckdb.connect(str(path))
    for statement in sql:
        con.execute(*statement) if isinstance(statement, tuple) else con.execute(statement)
    if seal:  # as collect would have recorded it: the file's checksums hold, its rows say what the test says
        integrity.record(con, con.execute("SELECT run_id FROM runs").fetchone()[0])
    con.close()


def _continue(made, *args):
    return CliRunner().invoke(
        main, ["collect", *args, "--model", str(made["model"]), "--artifacts", str(made["artifacts"])]
    )


def _refused(made, path, args, *expected):
    before = path.read_bytes()
    result = _continue(made, *args)
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"Error: {args[0]} {path}: "), result.output
    for words in expected:
        assert words in lines[0], lines[0]
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # no partial, log or lock left
    return lines[0]


def test_the_files_are_sound_and_every_table_with_rows_has_an_edit(made):
    for which in ("stopped", "complete"):
        result = CliRunner().invoke(main, ["check", str(made[which])])
        assert result.exit_code == 0 and "every table holds the rows recorded" in result.output, result.output
        con = duckdb.connect(str(made[which]), read_only=True)
        held = {t for t, n in con.execute("SELECT table_name, row_count FROM integrity").fetchall() if n}
        con.close()
        assert held <= set(EDITS), held - set(EDITS)
        assert held >= set(EDITS) - {"retaken"} - (STOPPED_HAS_NONE if which == "stopped" else set()), held


@pytest.mark.parametrize(
    "which, table",
    [("complete", t) for t in sorted(EDITS)] + [("stopped", t) for t in sorted(EDITS) if t not in STOPPED_HAS_NONE],
)
def test_an_edited_row_is_refused_by_resume_and_repeat_and_the_file_stays_as_it_was(made, tmp_path, which, table):
    path = _copy(made, which, tmp_path)
    con = duckdb.connect(str(path), read_only=True)
    rows = con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    con.close()
    if not rows:  # a latency round is taken again only when other processes loaded the host during it
        pytest.skip(f"no {table} rows in this machine's run")
    _edit(path, f"UPDATE {table} SET {EDITS[table]} WHERE rowid = (SELECT min(rowid) FROM {table})")
    said = f"the rows of {table} fail their checksum (edited or damaged since its last session ended)"
    hint = f"rtreport check {path} shows what differs; restore the file"
    for args in (["--resume", str(path)], ["--resume", str(path), "--rounds", "9"], ["--repeat", str(path)]):
        _refused(made, path, args, said, hint)


def test_a_deleted_row_is_refused_too(made, tmp_path):
    path = _copy(made, "complete", tmp_path)
    con = duckdb.connect(str(path), read_only=True)
    n = con.execute("SELECT count(*) FROM episodes").fetchone()[0]
    con.close()
    _edit(path, "DELETE FROM episodes WHERE rowid = (SELECT min(rowid) FROM episodes)")
    said = f"table episodes holds {n - 1:,} rows, {n:,} recorded at the run's end (edited or damaged"
    for option in ("--resume", "--repeat"):
        _refused(made, path, [option, str(path)], said)


def test_a_session_never_seals_rows_it_neither_wrote_nor_verified(made, tmp_path):
    """A store opened on a damaged file ends its session with no checksum, not one over the edited rows; a file
    with no checksum to check (a run killed before its session ended) is continued, said so, and stays unsealed."""
    path = _copy(made, "complete", tmp_path)
    _edit(path, "UPDATE latency SET seconds = seconds * 0.5 WHERE rowid = 0")
    con = duckdb.connect(str(path), read_only=True)
    run_id = con.execute("SELECT run_id FROM runs").fetchone()[0]
    con.close()
    store = RunStore(path, run_id, existing=True)
    assert not store.verified
    store.start_session("x", "x", "x")
    store.finish_run("complete")
    store.close()
    result = CliRunner().invoke(main, ["check", str(path)])
    assert result.exit_code == 0 and "no checksum recorded" in result.output, result.output

    (tmp_path / "killed").mkdir()
    path = _copy(made, "complete", tmp_path / "killed")
    _edit(path, "DELETE FROM integrity", "UPDATE runs SET status = 'running'")  # as a killed session leaves it
    result = _continue(made, "--resume", str(path))
    assert result.exit_code == 0, result.output
    assert (
        f"note: {path}: it records no checksum of its rows (a run killed before its session ended, or a file made "
        "before checksums were recorded); its rows cannot be verified, so this session records no checksum over them"
    ) in result.output
    result = CliRunner().invoke(main, ["check", str(path)])
    assert result.exit_code == 0 and "(complete): no checksum recorded" in result.output, result.output


def _kind_edit(field, value):
    if field in ("cpu", "cpu_count", "gpu_name"):
        return (f"UPDATE runs SET {field} = ?", [value])
    return (
        f"UPDATE runs SET settings = json_merge_patch(settings, json_object('hardware', json_object('{field}', ?)))",
        [value],
    )


HERE = provenance.kind(0)
OTHER_KIND = {
    "cpu": ("AMD EPYC 9654 96-Core Processor", "the CPU model differs"),
    "cpu_count": (HERE["cpu_count"] + 14, "the logical core count differs"),
    "gpu_name": ("NVIDIA H100 80GB HBM3" if HERE["gpu_name"] is None else None, "the GPU model differs"),
    "gpu_count": (HERE["gpu_count"] + 1, "the GPU count differs"),
    "memory_bytes": (int(HERE["memory_bytes"] * 1.05), "the memory size differs by more than 2 %"),
}


SHOWN = {
    "cpu": str,
    "cpu_count": lambda n: f"{n} logical cores",
    "gpu_name": lambda name: name or "no GPU",
    "gpu_count": lambda n: f"{n} GPUs" if n else "no GPU",
    "memory_bytes": lambda n: f"{n / 2**30:.1f} GiB of memory",
}


@pytest.mark.parametrize("field", sorted(OTHER_KIND))
def test_a_file_made_on_another_kind_of_machine_is_refused(made, tmp_path, field):
    value, differs = OTHER_KIND[field]
    path = _copy(made, "complete", tmp_path)
    _edit(path, _kind_edit(field, value), seal=True)
    for option in ("--resume", "--repeat"):
        line = _refused(made, path, [option, str(path)], f"({differs}): continue it on a machine of its kind")
        was, here = line.split("the run was made on ", 1)[1].split("; this machine has ", 1)
        assert SHOWN[field](value) in was and SHOWN[field](HERE[field]) in here  # both machines said


def test_the_same_kind_on_another_host_and_boot_is_continued_as_a_new_session_and_boot(made, tmp_path):
    """A fresh lease of the same cloud machine: another host name and boot id, memory a little different."""
    path = _copy(made, "complete", tmp_path)
    _edit(
        path,
        "UPDATE runs SET host = 'lease-1'",
        "UPDATE sessions SET host = 'lease-1'",
        'UPDATE rounds SET conditions = json_merge_patch(conditions, \'{"boot": "boot-of-lease-1"}\')',
        _kind_edit("memory_bytes", int(HERE["memory_bytes"] * 1.01)),  # within 2 %
        seal=True,
    )
    result = _continue(made, "--repeat", str(path), "--rounds", "1", "--quiet")
    assert result.exit_code == 0, result.output
    result = _continue(made, "--resume", str(path), "--quiet")
    assert result.exit_code == 0, result.output
    con = duckdb.connect(str(path), read_only=True)
    hosts = [h for (h,) in con.execute("SELECT host FROM sessions ORDER BY session").fetchall()]
    boots = {
        json.loads(c).get("boot")
        for (c,) in con.execute("SELECT conditions FROM rounds WHERE conditions IS NOT NULL").fetchall()
    }
    repeat_machine = json.loads(con.execute("SELECT machine FROM repeats ORDER BY repeat DESC").fetchone()[0])
    con.close()
    here = socket.gethostname()
    assert hosts == ["lease-1"] * 3 + [here] * 2
    assert boots == {"boot-of-lease-1", Host().boot}
    assert repeat_machine["host"] == here and repeat_machine["memory_bytes"] == HERE["memory_bytes"]
    result = CliRunner().invoke(main, ["check", str(path)])
    assert result.exit_code == 0 and "every table holds the rows recorded" in result.output, result.output
