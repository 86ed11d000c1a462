from click.testing import CliRunner

from rtreport.cli import main


def test_help_lists_the_commands():
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0
    for command in ("train", "agent"):
        assert command in result.output


def test_train_help():
    result = CliRunner().invoke(main, ["train", "--help"])
    assert result.exit_code == 0 and "--checkpoint-dir" in result.output and "--max-minutes" in result.output
