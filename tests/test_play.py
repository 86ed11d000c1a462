"""The play phase on the CPU with real games: shadow agreement, the reuse rule (an episode established by
construction is the episode really replayed), resume after Ctrl-C, and the machine-readable verdicts."""

import json
import shutil
from dataclasses import replace

import duckdb
import numpy as np
import pytest
from click.testing import CliRunner

from collect import collect_command, collector, measure, paths
from collect.agent.protocol import make_eval_env
from collect.artifacts import Artifacts
from collect.collect_command import run_collect
from collect.options import CollectOptions
from collect.model_input import load_model
from collect.registry import Runtime, all_runtimes
from collect.runners.base import Runner
from conftest import ctrl_c_at_game
from rtreport import integrity
from rtreport_cli.main import main


class Nudged(Runner):
    """PyTorch FP32 on the CPU with one Q-value nudged by a deterministic function of the observation: it takes
    another action than the reference at some near-ties, as a lower precision would."""

    def __init__(self, info, model_loader):
        super().__init__(info)
        self.loader = model_loader

    def prepare_impl(self):
        import torch

        self.torch, self.model = torch, self.loader()

    def infer_impl(self, batch):
        with self.torch.inference_mode():
            q = self.model(self.torch.from_numpy(batch)).numpy().copy()
        q[:, 0] += 0.05 * ((batch.reshape(len(batch), -1).sum(axis=1).astype(np.int64) % 5) - 2) / 2
        return q

    def describe_impl(self):
        return {"numerics": {"tf32": "not-applicable"}}


def _nudged(rid):
    info = Runtime(rid, "Nudged", "cpu", "fp32", "test", make=lambda m, a, c: Nudged(info, m.torch_model))
    return info


@pytest.fixture
def nudged_runtimes(monkeypatch):
    real = all_runtimes()
    extra = [*real, _nudged("nudged-cpu-fp32"), _nudged("nudged-twin-cpu-fp32")]
    monkeypatch.setattr(collector, "all_runtimes", lambda: extra)
    monkeypatch.setattr(collect_command, "all_runtimes", lambda: extra)
    monkeypatch.setattr(
        collect_command, "QUICK", replace(collector.QUICK, looks=(4,), check_seeds=1, episode_step_cap=300)
    )
    return "torch-cpu-fp32,ort-cpu-fp32,nudged-cpu-fp32,nudged-twin-cpu-fp32"


def _rows(db, sql):
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


@pytest.mark.slow  # a long end-to-end run: python -m pytest -m slow (CI runs it)
def test_episodes_established_by_the_shadow_rule_equal_really_replayed_ones(tmp_path, nudged_runtimes):
    out = tmp_path / "n.duckdb"
    assert (
        run_collect(
            CollectOptions(
                runtime_list=nudged_runtimes, out=out, label="n", artifacts=tmp_path / "a", quick=True, quiet=True
            )
        )
        == 0
    )
    episodes = _rows(out, "SELECT runtime_id, seed, score, steps, source, actions FROM episodes ORDER BY ALL")
    by = {(r, s): (score, steps, src, acts) for r, s, score, steps, src, acts in episodes}
    established = [(r, s, src) for (r, s), (_, _, src, _) in by.items() if src]
    assert {src for _, _, src in established} == {"torch-cpu-fp32", "nudged-cpu-fp32"}  # both rules were used
    nudged_played = [s for (r, s), v in by.items() if r == "nudged-cpu-fp32" and v[2] is None]
    assert len(nudged_played) >= 2  # it flipped, so it played its own games where it could differ
    model = load_model(paths.AGENT_WEIGHTS)
    specs = {s.id: s for s in collector.all_runtimes()}
    env = make_eval_env()
    try:
        for rid, seed, source in established:
            with specs[rid].make(model, Artifacts(tmp_path / "b", model.onnx_source()), 0) as runner:
                replay, _ = measure.play(runner, seed, 300, env)
            score, steps, _, actions = by[(source, seed)]
            assert (replay.score, replay.steps, replay.actions) == (score, steps, list(actions)), (rid, seed, source)
    finally:
        env.close()
    # every decision of the reference's games was compared, and the nudged runtime's flips are all near-ties
    shadow = _rows(
        out,
        "SELECT runtime_id, sum(decisions), sum(same) FROM shadow WHERE driver = 'torch-cpu-fp32' "
        "GROUP BY ALL ORDER BY ALL",
    )
    steps = sum(v[1] for (r, _), v in by.items() if r == "torch-cpu-fp32")
    assert {r: d for r, d, _ in shadow} == {
        r: steps for r in ("nudged-cpu-fp32", "nudged-twin-cpu-fp32", "ort-cpu-fp32")
    }
    flips = _rows(out, "SELECT reference_margin FROM flips WHERE runtime_id = 'nudged-cpu-fp32'")
    assert flips and max(m for (m,) in flips) <= 0.05 + 1e-6


@pytest.mark.slow  # a long end-to-end run: python -m pytest -m slow (CI runs it)
def test_resume_after_ctrl_c_finishes_the_run_without_repeating_it(tmp_path, nudged_runtimes, monkeypatch):
    whole = tmp_path / "whole.duckdb"
    assert (
        run_collect(
            CollectOptions(
                runtime_list=nudged_runtimes, out=whole, label="r", artifacts=tmp_path / "a", quick=True, quiet=True
            )
        )
        == 0
    )
    real = ctrl_c_at_game(monkeypatch, 3)
    cut = tmp_path / "cut.duckdb"
    assert (
        run_collect(
            CollectOptions(
                runtime_list=nudged_runtimes, out=cut, label="r", artifacts=tmp_path / "a", quick=True, quiet=True
            )
        )
        == 130
    )
    assert _rows(cut, "SELECT status FROM runs") == [("incomplete",)]
    monkeypatch.setattr(measure, "ShadowedGame", real)
    stored = _rows(cut, "SELECT count(*) FROM latency")[0][0]
    cut.with_name(cut.name + ".wal").write_bytes(b"a log left by a run killed earlier")  # must not be replayed
    assert run_collect(CollectOptions(artifacts=tmp_path / "a", quiet=True, resume=cut, rounds=4)) == 0
    assert _rows(cut, "SELECT status FROM runs") == [("complete",)] and not cut.with_name(cut.name + ".wal").exists()
    # the cut session, the resumed one, then the run's two repeats in fresh processes
    assert _rows(cut, "SELECT session, status FROM sessions ORDER BY 1") == [
        (0, "incomplete"),
        (1, "complete"),
        (2, "complete"),
        (3, "complete"),
    ]
    # the interrupted run's rows are kept, its after-play round and one more were added (4 runtimes), and the
    # games are the same games
    protocol = "SELECT * FROM rounds WHERE coalesce(conditions->>'repeat', '0') = '0'"
    in_protocol = f"SELECT count(*) FROM latency JOIN ({protocol}) USING (run_id, runtime_id, round)"
    assert _rows(cut, in_protocol)[0][0] == stored + 2 * 4 * 300
    # a repeat runs in a fresh process, which knows only the runtimes installed, not those patched into this one
    repeated = "SELECT DISTINCT runtime_id FROM rounds WHERE coalesce(conditions->>'repeat', '0') <> '0' ORDER BY 1"
    assert _rows(cut, repeated) == [("ort-cpu-fp32",), ("torch-cpu-fp32",)]
    assert _rows(cut, f"SELECT DISTINCT round, conditions->>'phase' FROM ({protocol}) ORDER BY 1") == [
        (0, "before-play"),
        (1, "before-play"),
        (2, "after-play"),
        (3, "after-play"),
    ]
    same = "SELECT runtime_id, seed, score, steps, source, actions FROM episodes ORDER BY ALL"
    assert _rows(cut, same) == _rows(whole, same)
    shadow = "SELECT runtime_id, seed, driver, decisions, same, first_flip FROM shadow ORDER BY ALL"
    assert _rows(cut, shadow) == _rows(whole, shadow)


def test_resume_refuses_what_it_cannot_continue(quick_run, tmp_path):
    result = CliRunner().invoke(main, ["collect", "--resume", str(tmp_path / "none.duckdb")])
    assert result.exit_code == 2 and "no such file" in result.output
    result = CliRunner().invoke(main, ["collect", "--resume", str(quick_run), "--label", "x"])
    assert result.exit_code == 2 and "takes no --out, --label or --quick" in result.output
    from test_architecture import _schema_1_file

    old = _schema_1_file(tmp_path)  # a copy: a test never writes to the committed data files
    before = old.read_bytes()
    result = CliRunner().invoke(main, ["collect", "--resume", str(old)])
    assert result.exit_code == 2 and "schema version 1 cannot be continued" in result.output
    assert old.read_bytes() == before


@pytest.mark.slow  # a long end-to-end run: python -m pytest -m slow (CI runs it)
def test_verdicts_json_holds_every_gates_statistic(tmp_path, nudged_runtimes):
    out = tmp_path / "v.duckdb"
    assert (
        run_collect(
            CollectOptions(
                runtime_list=nudged_runtimes, out=out, label="v", artifacts=tmp_path / "a", quick=True, quiet=True
            )
        )
        == 0
    )
    con = duckdb.connect(str(out))
    con.execute("UPDATE runs SET profile = 'full'")  # the smoke profile withholds verdicts
    integrity.record(con, con.execute("SELECT run_id FROM runs").fetchone()[0])  # sealed as collect would
    con.close()
    assert CliRunner().invoke(main, ["build", str(out), "--out", str(tmp_path / "s")]).exit_code == 0
    doc = json.loads((tmp_path / "s" / "data" / "v" / "verdicts.json").read_text())
    assert doc["reference"] == "torch-cpu-fp32" and doc["gates"]["play_margin_fraction_of_reference_mean"] == 0.05
    by = {r["runtime_id"]: r for r in doc["runtimes"]}
    assert by["torch-cpu-fp32"]["outcome"] == "reference"
    for rid in ("ort-cpu-fp32", "nudged-cpu-fp32", "nudged-twin-cpu-fp32"):
        gates = by[rid]["gates"]
        assert set(gates) == {"faster", "agreement", "play"}
        for g in gates.values():
            assert g["state"] in ("pass", "fail", "undecided") and g["ci_low"] <= g["value"] <= g["ci_high"]
        assert gates["play"]["n"] == 4 and gates["agreement"]["n"] > 0
    assert by["ort-cpu-fp32"]["gates"]["agreement"]["value"] == 1.0
    assert by["nudged-cpu-fp32"]["gates"]["agreement"]["value"] < 1.0
    np.testing.assert_equal(
        by["nudged-cpu-fp32"]["gates"]["agreement"]["value"], by["nudged-twin-cpu-fp32"]["gates"]["agreement"]["value"]
    )


@pytest.mark.slow  # a long end-to-end run: python -m pytest -m slow (CI runs it)
def test_the_pipelined_looks_store_the_same_games_whatever_order_they_end_in(tmp_path, nudged_runtimes, monkeypatch):
    """A seed's own games start as soon as its reference game ends, while other seeds are still played, so games
    end in another order with more slots in flight: the file must not depend on that order (two looks, so a look
    boundary is crossed too)."""
    monkeypatch.setattr(
        collect_command, "QUICK", replace(collector.QUICK, looks=(3, 6), check_seeds=1, episode_step_cap=300)
    )
    files = {}
    for slots in (1, 4):
        files[slots] = tmp_path / f"s{slots}.duckdb"
        assert (
            run_collect(
                CollectOptions(
                    runtime_list=nudged_runtimes,
                    out=files[slots],
                    label=f"s{slots}",
                    artifacts=tmp_path / "a",
                    quick=True,
                    quiet=True,
                    play_workers=1,
                    play_slots=slots,
                )
            )
            == 0
        )
    for sql in (
        "SELECT runtime_id, seed, score, steps, truncated, source, actions, margin_counts FROM episodes",
        "SELECT runtime_id, seed, driver, decisions, same, first_flip, complete FROM shadow",
        "SELECT * EXCLUDE (run_id) FROM flips",
    ):
        assert _rows(files[1], sql + " ORDER BY ALL") == _rows(files[4], sql + " ORDER BY ALL"), sql
    played = _rows(files[4], "SELECT runtime_id, count(*) FROM episodes WHERE source IS NULL GROUP BY ALL ORDER BY ALL")
    assert dict(played)["torch-cpu-fp32"] == 6 and dict(played).get("nudged-cpu-fp32", 0) >= 2


@pytest.mark.slow  # a long end-to-end run: python -m pytest -m slow (CI runs it)
def test_the_check_seeds_own_games_start_with_the_look(tmp_path, nudged_runtimes, monkeypatch):
    """Nobody shadows a candidate on the first check_seeds seeds, so its own game there waits for no other game:
    all of them start before any game of the look has ended (before, they ran one candidate after another)."""
    from collect.play import Players

    real_put, real_next, log = Players.put, Players.next_result, []
    monkeypatch.setattr(Players, "put", lambda self, key, task: (log.append(("put", task)), real_put(self, key, task)))
    monkeypatch.setattr(Players, "next_result", lambda self: (log.append(("end", None)), real_next(self))[1])
    out = tmp_path / "c.duckdb"
    assert (
        run_collect(
            CollectOptions(
                runtime_list=nudged_runtimes,
                out=out,
                label="c",
                artifacts=tmp_path / "a",
                quick=True,
                quiet=True,
                play_workers=1,
                play_slots=6,
            )
        )
        == 0
    )
    first_seed = _rows(out, "SELECT settings->'seeds'->>0 FROM runs")[0][0]
    before_any_end = [task for kind, task in log[: next(i for i, (k, _) in enumerate(log) if k == "end")]]
    own_on_first = {t.driver for t in before_any_end if t.seed == int(first_seed) and t.driver != "torch-cpu-fp32"}
    assert own_on_first == {"ort-cpu-fp32", "nudged-cpu-fp32", "nudged-twin-cpu-fp32"}, before_any_end


class BreaksInPlay(Nudged):
    """PyTorch FP32 on the CPU that raises at its ``at``-th decision of play (``submit``), as a runtime's native
    code may fail mid-run; every other call (fixed states, latency) works."""

    at = 400
    nudge = True

    def submit(self, slot, batch):
        self.__dict__["played"] = self.__dict__.get("played", 0) + 1
        if self.played == self.at:
            raise RuntimeError("boom in play")
        return super().submit(slot, batch)

    def infer_impl(self, batch):
        if self.nudge:
            return super().infer_impl(batch)
        with self.torch.inference_mode():
            return self.model(self.torch.from_numpy(batch)).numpy()


@pytest.mark.slow  # a long end-to-end run: python -m pytest -m slow (CI runs it)
@pytest.mark.parametrize("who", ["candidate", "reference"])
def test_a_runtime_failing_in_play_is_recorded_and_its_progress_line_says_so(
    tmp_path, nudged_runtimes, monkeypatch, capsys, who
):
    extra = collector.all_runtimes()
    if who == "candidate":
        info = Runtime(
            "breaks-cpu-fp32", "Breaks", "cpu", "fp32", "test", make=lambda m, a, c: BreaksInPlay(info, m.torch_model)
        )
        extra = [*extra, info]
        runtimes = nudged_runtimes + ",breaks-cpu-fp32"
    else:  # the reference itself, exact (no nudge) until it breaks

        def broken_reference(m, a, c):
            runner = BreaksInPlay(spec, m.torch_model)
            runner.nudge = False
            return runner

        spec = next(s for s in extra if s.id == "torch-cpu-fp32")
        spec = replace(spec, make=broken_reference)
        extra = [spec if s.id == "torch-cpu-fp32" else s for s in extra]
        runtimes = nudged_runtimes
    monkeypatch.setattr(collector, "all_runtimes", lambda: extra)
    monkeypatch.setattr(collect_command, "all_runtimes", lambda: extra)
    out = tmp_path / "f.duckdb"
    assert (
        run_collect(
            CollectOptions(
                runtime_list=runtimes,
                out=out,
                label="f",
                artifacts=tmp_path / "a",
                quick=True,
                quiet=False,
                play_slots=3,
                repeats=0,  # the runtimes are patched into this process: a fresh process would not know them
            )
        )
        == 5  # the failing runtime was named by --runtimes: the run is kept, and the exit says so
    )
    rid = "breaks-cpu-fp32" if who == "candidate" else "torch-cpu-fp32"
    status, reason = _rows(out, f"SELECT status, reason FROM runtimes WHERE runtime_id = '{rid}'")[0]
    assert status == "failed" and reason.startswith("play: ") and "boom in play" in reason, reason
    assert _rows(out, "SELECT status FROM runs") == [("complete",)]
    lines = [line for line in capsys.readouterr().err.splitlines() if "play look" in line and "not done at" in line]
    if who == "candidate":  # the others play on; its own line ends saying why
        assert any(rid in line and "boom in play" in line for line in lines), lines
        assert _rows(out, "SELECT count(*) FROM episodes WHERE runtime_id = 'nudged-cpu-fp32'")[0][0] == 4
    else:  # the look stops, and no line claims what was not played
        assert lines and all("the reference failed" in line or "boom in play" in line for line in lines), lines


@pytest.mark.slow  # a long end-to-end run: python -m pytest -m slow (CI runs it)
def test_games_started_ahead_for_a_look_that_never_comes_are_not_stored(tmp_path, nudged_runtimes, monkeypatch):
    """ONNX Runtime FP32 agrees everywhere, so look 1 decides it and no look 2 is played: the reference games of
    look 2's seeds that idle slots started in look 1's tail are dropped, not stored."""
    monkeypatch.setattr(
        collect_command, "QUICK", replace(collector.QUICK, looks=(2, 5), check_seeds=1, episode_step_cap=200)
    )
    started = []
    from collect.play import Players

    real_put = Players.put
    monkeypatch.setattr(Players, "put", lambda self, key, task: (started.append(task), real_put(self, key, task)))
    out = tmp_path / "a.duckdb"
    assert (
        run_collect(
            CollectOptions(
                runtime_list="torch-cpu-fp32,ort-cpu-fp32",
                out=out,
                label="a",
                artifacts=tmp_path / "a",
                quick=True,
                quiet=True,
                play_workers=1,
                play_slots=4,
            )
        )
        == 0
    )
    seeds = [int(s) for (s,) in _rows(out, "SELECT unnest(json_extract_string(settings, '$.seeds[*]')) FROM runs")]
    assert {t.seed for t in started if t.driver == "torch-cpu-fp32"} > set(seeds[:2])  # some were started ahead
    assert sorted(s for (s,) in _rows(out, "SELECT seed FROM episodes WHERE runtime_id = 'torch-cpu-fp32'")) == sorted(
        seeds[:2]
    )
    assert {s for (s,) in _rows(out, "SELECT seed FROM shadow")} <= set(seeds[:2])


def test_resume_keeps_a_stored_unavailable_reason(quick_run, tmp_path):
    """A run resumed on a machine with fewer libraries keeps what the machine that started it said about a runtime
    it could not run: here the stored reason of a TensorRT runtime against this machine's "not
    installed"."""
    copy = tmp_path / "resumed.duckdb"
    shutil.copy(quick_run, copy)
    con = duckdb.connect(str(copy))
    run_id = con.execute("SELECT run_id FROM runs").fetchone()[0]
    rid, here = con.execute(
        "SELECT runtime_id, reason FROM runtimes WHERE status = 'unavailable' "
        "AND runtime_id LIKE 'trt-%' ORDER BY runtime_id LIMIT 1"
    ).fetchone()
    said = "TensorRT-RTX cannot execute this plan on compute capability 9.0 (the machine that started the run)"
    con.execute("UPDATE runtimes SET reason = ? WHERE runtime_id = ?", [said, rid])
    con.execute("UPDATE runs SET status = 'incomplete'")
    integrity.record(con, run_id)
    con.close()
    result = CliRunner().invoke(main, ["collect", "--resume", str(copy), "--artifacts", str(tmp_path / "a")])
    assert result.exit_code == 0, result.output
    con = duckdb.connect(str(copy), read_only=True)
    assert con.execute("SELECT reason FROM runtimes WHERE runtime_id = ?", [rid]).fetchone() == (said,) != (here,)
    assert con.execute("SELECT status FROM runs").fetchone() == ("complete",)
