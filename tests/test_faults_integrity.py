"""Integrity: a run records every table's row count and a checksum of its rows when its session ends; build and
``rtreport check`` find a file that no longer matches."""

import shutil

import duckdb
import pytest
from click.testing import CliRunner

from collect import paths
from rtreport_cli.main import main


def _edited(src, dst, sql):
    shutil.copyfile(src, dst)
    con = duckdb.connect(str(dst))
    con.execute(sql)
    con.close()
    return dst


def test_a_finished_run_records_counts_and_checksums_and_checks_ok(quick_run):
    con = duckdb.connect(str(quick_run), read_only=True)
    recorded = dict(con.execute("SELECT table_name, row_count FROM integrity").fetchall())
    latency = con.execute("SELECT count(*) FROM latency").fetchone()[0]
    con.close()
    assert recorded["latency"] == latency > 0 and "runs" in recorded and "integrity" not in recorded
    result = CliRunner().invoke(main, ["check", str(quick_run)])
    assert result.exit_code == 0, result.output
    assert (
        result.output.strip() == f"{quick_run}: ci-cpu (complete): every table holds the rows recorded at the run's end"
    )


@pytest.mark.parametrize(
    "sql, problem",
    [
        ("DELETE FROM episodes WHERE seed = (SELECT min(seed) FROM episodes)", "table episodes holds "),
        ("UPDATE latency SET seconds = seconds * 0.5 WHERE iteration = 7", "table latency holds "),
    ],
)
def test_a_file_edited_after_its_run_is_damaged(quick_run, tmp_path, sql, problem):
    bad = _edited(quick_run, tmp_path / "bad.duckdb", sql)
    result = CliRunner().invoke(main, ["check", str(bad)])
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    assert result.output.startswith(f"{bad}: ci-cpu (complete): damaged: {problem}")
    built = CliRunner().invoke(main, ["build", str(bad), "--out", str(tmp_path / "s")])
    assert built.exit_code == 2 and not (tmp_path / "s").exists()
    assert built.output.startswith(f"Error: {bad} is refused: it no longer holds the rows recorded at its run's end")


def test_allow_invalid_publishes_it_marked_damaged_in_both_languages(quick_run, tmp_path):
    bad = _edited(quick_run, tmp_path / "bad.duckdb", "DELETE FROM state_q WHERE state_index = 0")
    built = CliRunner().invoke(main, ["build", str(bad), "--out", str(tmp_path / "s"), "--allow-invalid"])
    assert built.exit_code == 0, built.output
    en = (tmp_path / "s" / "en" / "hardware" / "ci-cpu" / "index.html").read_text()
    zh = (tmp_path / "s" / "zh-tw" / "hardware" / "ci-cpu" / "index.html").read_text()
    assert "no longer holds the rows recorded when its run ended" in en and "table state_q holds" in en
    assert "已與執行結束時記錄的不符" in zh and "固定狀態輸出資料表現在有" in zh  # what differs, said in Chinese
    assert "state_q" not in zh.split("<main", 1)[1] and "recorded at the run" not in zh


def test_files_made_before_checksums_say_so_and_are_not_damaged():
    result = CliRunner().invoke(main, ["check", str(paths.DATA / "cpu-epyc-2core.duckdb")])
    assert result.exit_code == 0, result.output
    assert "cpu-epyc-2core (complete): no checksum recorded" in result.output


def test_check_of_something_unreadable_is_one_line(tmp_path):
    (tmp_path / "x.duckdb").write_text("not a database")
    result = CliRunner().invoke(main, ["check", str(tmp_path / "x.duckdb")])
    assert (
        result.exit_code == 2
        and result.output.strip()
        == f"Error: {tmp_path / 'x.duckdb'} is not a DuckDB database file (or its header is damaged)"
    )


def test_the_large_tables_carry_no_index_and_a_repacked_file_keeps_every_row_and_checksum(quick_run, tmp_path):
    """Latency and flips are checked for repeated keys when read (site_gen.validate), not by an index that took
    more room than their rows; tools/repack_run.py rewrites an older file that has one, rows and checksums kept."""
    import subprocess
    import sys
    from pathlib import Path

    from rtreport import schema

    con = duckdb.connect(str(quick_run), read_only=True)
    keyed = {
        t
        for (t,) in con.execute(
            "SELECT table_name FROM duckdb_constraints() WHERE constraint_type = 'PRIMARY KEY'"
        ).fetchall()
    }
    counts = dict(con.execute("SELECT table_name, estimated_size FROM duckdb_tables()").fetchall())
    con.close()
    assert keyed.isdisjoint(schema.UNINDEXED) and {"episodes", "runs", "state_q", "integrity"} <= keyed
    # an older file: latency with its index, as files were written before
    old = _edited(
        quick_run,
        tmp_path / "old.duckdb",
        "CREATE TABLE l2 (run_id VARCHAR, runtime_id VARCHAR, "
        "kind VARCHAR, batch_size INTEGER, round INTEGER, iteration INTEGER, seconds DOUBLE, PRIMARY KEY "
        "(run_id, runtime_id, kind, batch_size, round, iteration)); INSERT INTO l2 SELECT * FROM latency; "
        "DROP TABLE latency; ALTER TABLE l2 RENAME TO latency",
    )
    tool = Path(__file__).resolve().parents[1] / "tools" / "repack_run.py"
    done = subprocess.run([sys.executable, str(tool), str(old)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "every table holds the rows recorded at the run's end" in done.stdout
    con = duckdb.connect(str(old), read_only=True)
    assert dict(con.execute("SELECT table_name, estimated_size FROM duckdb_tables()").fetchall()) == counts
    assert not con.execute(
        "SELECT * FROM duckdb_constraints() WHERE table_name = 'latency' AND constraint_type = 'PRIMARY KEY'"
    ).fetchall()
    con.close()
    result = CliRunner().invoke(main, ["check", str(old)])
    assert result.exit_code == 0 and "every table holds the rows recorded" in result.output, result.output
    # a repeated flip is refused when the file is read, as a repeated latency sample is
    dup = _edited(
        quick_run,
        tmp_path / "dup.duckdb",
        "INSERT INTO flips VALUES ('x', 'ort-cpu-fp32', 1000, 5, 0, 1, 0.1, 0.1), "
        "('x', 'ort-cpu-fp32', 1000, 5, 0, 1, 0.1, 0.1)",
    )
    con = duckdb.connect(str(dup))
    run_id = con.execute("SELECT run_id FROM runs").fetchone()[0]
    con.execute("UPDATE flips SET run_id = ? WHERE run_id = 'x'", [run_id])
    con.close()
    from site_gen import validate

    con = duckdb.connect(str(dup), read_only=True)
    found = [str(p) for p in validate.problems(con, run_id, 4, [1000])]
    con.close()
    assert (
        "table flips, runtime ort-cpu-fp32: 1 row repeating a key (runtime_id, seed, step) already present" in found
    ), found
