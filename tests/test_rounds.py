"""Latency rounds spread over the run (before play, between looks with no game in flight, after play), resumed
where the run is; the host's conditions of each round; repeats in a fresh process (rounds, fixed-state Q-values
compared bit for bit with the first measurement), refused for another model, keeping every earlier row."""

import inspect
import json
import shutil
import subprocess
import sys
from dataclasses import replace

import duckdb
import numpy as np
import pytest
import torch
from click.testing import CliRunner

from collect import collect_command, collector, measure as measure_module, paths, play, rounds
from collect.conditions import cpu_jiffies, decayed_load, first_readings, flags, mean_mhz
from collect.play import Players
from collect.collect_command import run_collect
from collect.options import CollectOptions
from collect.store import RunStore
from conftest import ctrl_c_at_game, without_repeats
from rtreport import integrity, migrations, schema
from rtreport_cli.main import main
from rtreport.reproducibility import Reproduction, by_repeat, compare

RUNTIMES = "torch-cpu-fp32,ort-cpu-fp32"


# -- pure parts -------------------------------------------------------------------------------------------
def test_the_plan_puts_rounds_before_play_after_looks_and_after_play():
    assert rounds.plan(10, 5) == [0, 0, 1, 1, 2, 2, 3, 4, 5, 5]  # the GPU protocol: 5 looks
    assert rounds.plan(3, 1) == [0, 0, 1]  # --quick: one look
    assert rounds.plan(2, 5) == [0, 5]  # any two rounds span the play
    assert rounds.plan(4, 2) == [0, 0, 1, 2]
    assert [rounds.phase_name(s, 5) for s in (0, 1, 4, 5)] == ["before-play", "look-1", "look-4", "after-play"]
    # play through MPS: the two ends only, half each (the daemon time-slices with the measuring process)
    assert rounds.plan(10, 5, between=False) == [0] * 5 + [5] * 5
    assert rounds.plan(3, 5, between=False) == [0, 0, 5]
    assert rounds.ends_only_reason(False) is None and "MPS" in rounds.ends_only_reason(True)


def test_host_readings_are_parsed_from_proc_and_sys():
    stat = "cpu  100 5 50 800 40 3 2 10 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n"
    assert cpu_jiffies(stat) == (170, 1010)  # busy: all but idle (800) and iowait (40)
    assert cpu_jiffies("intr 1 2\n") is None
    assert mean_mhz(["2000000\n", "3000000\n"], "cpu MHz : 1.0") == 2500.0  # cpufreq first, in kHz
    assert mean_mhz([], "cpu MHz\t\t: 2400.000\ncpu MHz\t\t: 2600.000\n") == 2500.0
    assert mean_mhz([], "model name : x\n") is None
    # one core busy for 60 s that ended just now adds 1 - e^-1 to a load average that decays over 60 s
    assert decayed_load([(0.0, 0.0), (60.0, 60.0)], 60.0) == pytest.approx(1 - np.exp(-1))
    assert decayed_load([(0.0, 0.0), (60.0, 60.0)], 120.0) == pytest.approx(np.exp(-1) - np.exp(-2))
    assert decayed_load([(0.0, 0.0)], 10.0) == 0.0


def test_a_round_under_host_load_or_a_changed_clock_is_flagged():
    quiet = {
        "host_load": 0.9,
        "host_load_own": 0.5,
        "cpu_busy": 0.7,
        "cpu_busy_own": 0.5,
        "cpu_mhz": 2500.0,
        "after": {"sm_clock_mhz": 1980},
    }
    first = first_readings([{"cpu_mhz": None}, {"cpu_mhz": 2450.0, "before": {"sm_clock_mhz": 1950}}])
    assert first == {"cpu_mhz": 2450.0, "sm_clock_mhz": 1950.0}
    assert flags(quiet, first) == ["other processes used 20% of the CPU during the round"]
    own = {**quiet, "host_load": 1.9, "cpu_busy": 1.0, "cpu_busy_own": 0.97}
    assert flags(own, first) == []  # a load average this run's own threads raised is not other processes' load
    loaded = {**quiet, "host_load": 1.2, "cpu_busy": 1.0, "cpu_busy_own": 0.2}
    assert flags(loaded, first) == ["other processes used 80% of the CPU during the round"]
    clocks = {**quiet, "cpu_busy_own": 0.7, "cpu_mhz": 2000.0, "after": {"sm_clock_mhz": 1500}}  # no other load
    assert flags(clocks, first) == [
        "CPU clock 2000 MHz, -18% from the first round",
        "GPU SM clock 1500 MHz, -23% from the first round",
    ]
    assert flags({"host_load": None, "cpu_busy": None, "cpu_mhz": None}, {}) == []


def test_reproduction_is_bit_for_bit():
    q = {0: [1.0, 2.0, 3.0, 0.5], 1: [0.0, 0.25, 0.25, 0.0]}
    assert compare(q, {k: list(v) for k, v in q.items()}) == Reproduction(2, 0, 0)
    nudged = {0: [1.0, 2.0, np.nextafter(np.float32(3.0), np.float32(0)), 0.5], 1: [-0.0, 0.25, 0.25, 0.0]}
    assert compare(q, nudged) == Reproduction(2, 2, 0)  # one ulp, and -0.0 against 0.0: other bits, same action
    assert compare(q, {1: [0.0, 0.25, 0.5, 0.0], 7: [0.0] * 4}) == Reproduction(1, 1, 1)
    assert not compare(q, {}).identical and compare(q, q).identical
    got = by_repeat([("a", 0, q[0]), ("a", 1, q[1])], [("a", 1, 0, q[0]), ("a", 2, 1, [9.0, 0, 0, 0])])
    assert got == {("a", 1): Reproduction(1, 0, 0), ("a", 2): Reproduction(1, 1, 1)}


def test_schema_2_files_are_read_and_continued_with_the_repeat_tables_added(tmp_path):
    committed = paths.DATA / "cpu-epyc-2core.duckdb"
    mem = migrations.upgrade(str(committed), 2)
    con = duckdb.connect(str(committed), read_only=True)
    for table in schema.V2_TABLES[1:]:
        assert (
            mem.execute(f"SELECT count(*) FROM {table}").fetchone()
            == con.execute(f"SELECT count(*) FROM {table}").fetchone()
        ), table
    run_id = con.execute("SELECT run_id FROM runs").fetchone()[0]
    con.close()
    assert mem.execute("SELECT count(*) FROM repeat_state_q").fetchone() == (0,)
    copy = tmp_path / "old.duckdb"  # a copy: a test never writes to the committed data files
    shutil.copyfile(committed, copy)
    store = RunStore(copy, run_id, existing=True)
    assert dict(store.con.execute("SELECT * FROM meta").fetchall())["schema_version"] == str(schema.SCHEMA_VERSION)
    assert store.con.execute("SELECT count(*) FROM repeats").fetchone() == (0,)
    store.close()


# -- a real run on the CPU -------------------------------------------------------------------------------
def _rows(db, sql, params=()):
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql, list(params)).fetchall()
    finally:
        con.close()


@pytest.fixture
def two_looks(monkeypatch):
    """Two looks of 2 and 3 seeds, 4 short rounds, and no candidate ever decided, so both looks are played."""
    monkeypatch.setattr(
        collect_command,
        "QUICK",
        replace(
            collector.QUICK,
            looks=(2, 3),
            check_seeds=1,
            episode_step_cap=60,
            rounds=4,
            latency_warmup=10,
            latency_samples=100,
            batch_sizes=(1,),
            batch_iterations=3,
        ),
    )
    monkeypatch.setattr(play.PlayPhase, "decided", lambda self, rid, reference_scores: None)
    pools, seen = [], []
    real_enter, real_exit, real_measure = Players.__enter__, Players.__exit__, rounds.measure_round

    def enter(self):
        pools.append(self)
        return real_enter(self)

    def leave(self, *exc):
        pools.remove(self)
        return real_exit(self, *exc)

    def measure(store, rid, runner, r, position, *args, **kwargs):
        episodes = store.con.execute("SELECT count(*) FROM episodes WHERE runtime_id = 'torch-cpu-fp32'").fetchone()[0]
        phase = (
            inspect.signature(real_measure).bind(store, rid, runner, r, position, *args, **kwargs).arguments["phase"]
        )
        seen.append((rid, r, phase, episodes, sum(p.outstanding for p in pools)))
        return real_measure(store, rid, runner, r, position, *args, **kwargs)

    monkeypatch.setattr(Players, "__enter__", enter)
    monkeypatch.setattr(Players, "__exit__", leave)
    monkeypatch.setattr(rounds, "measure_round", measure)
    return seen


def _phases(db):
    return _rows(db, "SELECT runtime_id, round, conditions->>'phase' FROM rounds ORDER BY started_at")


def test_rounds_are_spread_over_the_run_and_never_taken_while_games_are_in_flight(tmp_path, two_looks):
    out = tmp_path / "r.duckdb"
    assert (
        run_collect(
            CollectOptions(
                runtime_list=RUNTIMES,
                out=out,
                label="r",
                artifacts=tmp_path / "a",
                quick=True,
                quiet=True,
                play_workers=1,
                play_slots=2,
                repeats=0,
            )
        )
        == 0
    )
    phases = {(rid, r): phase for rid, r, phase in _phases(out)}
    assert phases == {
        (rid, r): phase
        for rid in RUNTIMES.split(",")
        for r, phase in enumerate(["before-play", "before-play", "look-1", "after-play"])
    }
    # before play no game, after look 1 its 2 reference games and none in flight, after play all 3
    assert {(phase, episodes, busy) for _, _, phase, episodes, busy in two_looks} == {
        ("before-play", 0, 0),
        ("look-1", 2, 0),
        ("after-play", 3, 0),
    }
    # each round: every runtime once, in its own seeded order; started in the order of the phases
    positions = _rows(
        out,
        "SELECT round, list(position ORDER BY position), list(runtime_id ORDER BY position) "
        "FROM rounds GROUP BY round ORDER BY round",
    )
    assert all(p == [0, 1] and ids == rounds.order_of(RUNTIMES.split(","), r) for r, p, ids in positions)
    starts = _rows(out, "SELECT conditions->>'phase', min(started_at), max(started_at) FROM rounds GROUP BY 1")
    by = {phase: (lo, hi) for phase, lo, hi in starts}
    assert by["before-play"][1] < by["look-1"][0] <= by["look-1"][1] < by["after-play"][0]
    # the host's conditions of every round
    for (text,) in _rows(out, "SELECT conditions FROM rounds"):
        c = json.loads(text)
        assert c["repeat"] == 0 and 0 <= c["cpu_busy"] <= 1 and 0 <= c["cpu_busy_own"] <= 1
        assert c["host_load"] >= 0 and c["host_load_own"] >= 0
        assert c["cpu_mhz"] is None or c["cpu_mhz"] > 0
        assert c.get("flagged", ["x"]) and "before" not in c  # no empty flag list; no GPU readings on the CPU
        assert c["boot"] == open("/proc/sys/kernel/random/boot_id").read().strip()  # which boot of the machine


def test_resume_continues_the_round_schedule_where_the_run_is(tmp_path, two_looks, monkeypatch):
    out = tmp_path / "cut.duckdb"
    real = ctrl_c_at_game(monkeypatch, 2)  # stopped in look 1, after the rounds before play
    assert (
        run_collect(
            CollectOptions(
                runtime_list=RUNTIMES,
                out=out,
                label="c",
                artifacts=tmp_path / "a",
                quick=True,
                quiet=True,
                play_workers=1,
                repeats=0,
            )
        )
        == 130
    )
    assert {phase for _, _, phase in _phases(out)} == {"before-play"}
    monkeypatch.setattr(measure_module, "ShadowedGame", real)
    assert run_collect(CollectOptions(artifacts=tmp_path / "a", quiet=True, resume=out)) == 0
    assert [(r, phase) for rid, r, phase in _phases(out) if rid == "ort-cpu-fp32"] == [
        (0, "before-play"),
        (1, "before-play"),
        (2, "look-1"),
        (3, "after-play"),
    ]
    # three more rounds for a finished run (planned after look 1, after play, after play): the slots before play
    # and between looks are past, so all three come after play
    assert rounds.plan(7, 2)[4:] == [1, 2, 2]
    assert run_collect(CollectOptions(artifacts=tmp_path / "a", quiet=True, resume=out, rounds=7)) == 0
    assert [(r, phase) for rid, r, phase in _phases(out) if rid == "ort-cpu-fp32"][4:] == [
        (4, "after-play"),
        (5, "after-play"),
        (6, "after-play"),
    ]
    assert all(busy == 0 for *_, busy in two_looks)


# -- repeats -----------------------------------------------------------------------------------------------
@pytest.mark.slow  # a long end-to-end run: python -m pytest -m slow (CI runs it)
def test_a_repeat_in_a_fresh_process_adds_rounds_and_q_values_and_keeps_every_row(quick_run, tmp_path):
    before = without_repeats(quick_run, tmp_path / "before.duckdb")
    copy = tmp_path / "run.duckdb"
    shutil.copyfile(before, copy)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "rtreport",
            "collect",
            "--repeat",
            str(copy),
            "--rounds",
            "2",
            "--artifacts",
            str(tmp_path / "a"),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert (
        "repeat 1: 2 latency rounds (rounds 4-5) of 2 runtimes; fixed states reproduced bit for bit by 2 of 2"
        in done.stdout
    )
    con = duckdb.connect(str(copy), read_only=True)
    con.execute(f"ATTACH '{before}' AS old (READ_ONLY)")
    for table in schema.V2_TABLES:  # every earlier row kept
        if table not in ("meta", "sessions"):
            assert con.execute(f"SELECT * FROM old.{table} EXCEPT ALL SELECT * FROM {table}").fetchall() == [], table
    assert con.execute(
        "SELECT runtime_id, round, conditions->>'phase', conditions->>'repeat' FROM rounds "
        "WHERE round >= 3 ORDER BY 2, 1"
    ).fetchall() == [(rid, r, "repeat", "1") for r in (3, 4) for rid in sorted(RUNTIMES.split(","))]
    assert con.execute("SELECT count(*) FROM latency WHERE round >= 3").fetchone() == (2 * 2 * 300,)
    assert con.execute("SELECT session, status, detail FROM sessions ORDER BY 1").fetchall()[-1] == (
        1,
        "complete",
        "repeat 1: 2 latency rounds of 2 runtimes",
    )
    assert (
        con.execute("SELECT status, finished_at FROM runs").fetchall()
        == con.execute("SELECT status, finished_at FROM old.runs").fetchall()
    )  # the run itself is as it was
    assert con.execute("SELECT repeat, session FROM repeats").fetchall() == [(1, 1)]
    # CPU runtimes reproduce bit for bit across processes
    found = by_repeat(
        con.execute("SELECT runtime_id, state_index, q_values FROM state_q").fetchall(),
        con.execute("SELECT runtime_id, repeat, state_index, q_values FROM repeat_state_q").fetchall(),
    )
    con.close()
    assert found == {(rid, 1): Reproduction(8, 0, 0) for rid in RUNTIMES.split(",")}
    # one process, or two: the page says its speed is not confirmed and how to take more; the collect's own file,
    # with its two repeats, is three measurements, and does not
    for file, said in ((before, True), (copy, True), (quick_run, False)):
        site = tmp_path / f"site-{file.stem}"
        assert CliRunner().invoke(main, ["build", str(file), "--out", str(site)]).exit_code == 0
        for lang, words in (
            ("en", "Not confirmed: these speed figures come from"),
            ("zh-tw", "尚未確認：這些速度數字只來自"),
        ):
            page = next((site / lang / "hardware").rglob("index.html")).read_text()
            assert (words in page) is said, (file.name, lang)
            assert (f"rtreport collect --repeat {file.name}" in page) is said


def test_a_repeat_refuses_another_model_an_unfinished_run_and_options_it_cannot_take(quick_run, tmp_path):
    from collect.agent.network import QNetwork

    copy = tmp_path / "run.duckdb"
    shutil.copyfile(quick_run, copy)
    other = tmp_path / "other.pt"
    torch.manual_seed(3)
    torch.save(QNetwork().state_dict(), other)
    original = copy.read_bytes()
    result = CliRunner().invoke(main, ["collect", "--repeat", str(copy), "--model", str(other)])
    assert result.exit_code == 2 and "the run measured another model" in result.output, result.output
    result = CliRunner().invoke(main, ["collect", "--repeat", str(copy), "--out", str(tmp_path / "x.duckdb")])
    assert result.exit_code == 2 and "--repeat adds to the file's own run" in result.output
    assert copy.read_bytes() == original
    con = duckdb.connect(str(copy))
    con.execute("UPDATE runs SET status = 'incomplete'")
    integrity.record(con, con.execute("SELECT run_id FROM runs").fetchone()[0])  # sealed as collect would
    con.close()
    result = CliRunner().invoke(main, ["collect", "--repeat", str(copy)])
    assert result.exit_code == 2 and "a repeat adds to a complete run" in result.output


def test_rounds_through_mps_are_never_due_between_looks():
    """Even a round owed from before play (a resumed run) waits for the end of play, not the next look."""
    between, ends = rounds.Rounds(None, (100, 300), tuple(range(300))), rounds.Rounds(None, (100, 300), (), False)
    between.owed = ends.owed = lambda slot: [(0, ["torch-cpu-fp32"])]
    assert between.due(1) and not ends.due(1)
