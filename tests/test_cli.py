from pathlib import Path

from click.testing import CliRunner

from rtreport_cli.main import main


def test_help_lists_the_commands():
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0
    for command in ("train", "agent"):
        assert command in result.output


def test_train_help():
    result = CliRunner().invoke(main, ["train", "--help"])
    assert result.exit_code == 0 and "--checkpoint-dir" in result.output and "--max-minutes" in result.output


def test_the_readme_command_run_again_writes_beside_the_earlier_run(tmp_path, monkeypatch):
    """`rtreport collect` without --out, run a second time, neither refuses nor replaces the first run."""
    import pytest
    from collect.collect_command import default_out
    from rtreport.errors import UserError

    monkeypatch.chdir(tmp_path)
    assert default_out("vm-cpu") == (Path("data/vm-cpu.duckdb"), None)
    Path("data/vm-cpu.duckdb").write_bytes(b"an earlier run")
    out, note = default_out("vm-cpu")
    assert out == Path("data/vm-cpu-2.duckdb") and "data/vm-cpu.duckdb holds an earlier run" in note
    out.write_bytes(b"a second run")
    assert default_out("vm-cpu")[0] == Path("data/vm-cpu-3.duckdb")
    assert Path("data/vm-cpu.duckdb").read_bytes() == b"an earlier run"
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    Path("data").write_text("not a folder")
    with pytest.raises(UserError, match="./data is a file"):
        default_out("vm-cpu")
