"""The output folder keeps what the user put there; one comparability statement per compare page; the home page
says which runs are incomplete or stopped."""

import shutil

import duckdb
from click.testing import CliRunner

from rtreport import integrity
from rtreport_cli.main import main


def _build(*args):
    return CliRunner().invoke(main, ["build", *map(str, args)])


def test_a_rebuild_keeps_files_rtreport_did_not_write(quick_run, tmp_path):
    site = tmp_path / "site"
    assert _build(quick_run, "--out", site).exit_code == 0
    (site / "CNAME").write_text("rt.example.org\n")
    (site / ".gitkeep").write_text("")  # a checkout's placeholder: kept without a word
    (site / "extra").mkdir()
    (site / "extra" / "notes.txt").write_text("mine")
    result = _build(quick_run, "--out", site)
    assert result.exit_code == 0, result.output
    assert (site / "CNAME").read_text() == "rt.example.org\n" and (site / "extra" / "notes.txt").read_text() == "mine"
    assert f"note: kept 2 files in {site} that rtreport did not write: CNAME, extra/notes.txt" in result.output
    assert (site / ".gitkeep").exists() and "CNAME" not in (site / ".rtreport-manifest").read_text().splitlines()
    (site / ".rtreport-manifest").unlink()  # a site built before manifests: top-level files not its own are kept
    assert _build(quick_run, "--out", site).exit_code == 0 and (site / "CNAME").exists()
    assert (site / "extra" / "notes.txt").exists()


def test_one_comparability_statement_and_incomplete_runs_on_the_home_page(quick_run, tmp_path):
    other = tmp_path / "other.duckdb"
    shutil.copyfile(quick_run, other)
    con = duckdb.connect(str(other))
    for table in ("runs", "runtimes", "latency", "state_q", "episodes"):
        con.execute(f"UPDATE {table} SET run_id = 'other'")
    con.execute(
        "UPDATE runs SET label = 'other machine', model_sha256 = repeat('f', 64), status = 'incomplete', "
        "status_detail = 'stopped by SIGTERM during play of ort-cpu-fp32'"
    )
    integrity.record(con, "other")
    con.close()
    site = tmp_path / "s"
    result = _build(quick_run, other, "--out", site)
    assert result.exit_code == 0, result.output
    assert f"note: published {other} as incomplete: stopped by SIGTERM during play of ort-cpu-fp32" in result.output
    en = (site / "en" / "compare" / "index.html").read_text()
    zh = (site / "zh-tw" / "compare" / "index.html").read_text()
    assert "Not measured alike" in en and "The same model and protocol on every machine" not in en
    assert "量測條件不一致" in zh and "每台機器都使用相同的模型與量測流程" not in zh
    home_en = (site / "en" / "index.html").read_text()
    home_zh = (site / "zh-tw" / "index.html").read_text()
    assert "other machine</a> (incomplete)" in home_en and "Not a complete run: incomplete (" in home_en
    assert "這不是完整的執行" in home_zh
    alike = _build(quick_run, "--out", tmp_path / "t")
    assert alike.exit_code == 0
    assert (
        "The same model and protocol on every machine."
        in (tmp_path / "t" / "en" / "compare" / "index.html").read_text()
    )
    assert "Not a complete run" not in (tmp_path / "t" / "en" / "index.html").read_text()
