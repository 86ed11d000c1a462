"""Twins (``collect.play.twins``): a runtime's decisions in play computed by its CUDA-graph capture. On the CPU the
pairs are declared by test runtimes: a second instance of PyTorch FP32 (the same kernels, so the same bits) and a
nudged runtime that claims to be another's twin (other bits). The engine must play exactly the games it plays
without twins, count every checked decision, and catch a twin whose bits differ."""

import json
import shutil
from dataclasses import replace

import duckdb
import numpy as np
import pytest

from collect import collect_command, collector
from collect.agent.protocol import make_eval_env
from collect.collect_command import run_collect
from collect.options import CollectOptions
from collect.play import Task
from collect.play import twins as twins_mod
from collect.play.engine import in_task_order, play_tasks
from collect.registry import Runtime, all_runtimes
from click.testing import CliRunner
from rtreport_cli.main import main
from test_engine import TASKS, _plain, prepared  # noqa: F401  (the module's prepared runners)
from test_play import Nudged, _nudged, _rows


class Counting:
    """A runner whose own ``submit`` calls are counted (the rest passes through)."""

    def __init__(self, runner):
        self._runner, self.submits = runner, 0

    def submit(self, slot, batch):
        self.submits += 1
        return self._runner.submit(slot, batch)

    def __getattr__(self, name):
        return getattr(self._runner, name)


def _play(runners, tasks):
    envs = [make_eval_env() for _ in range(3)]
    try:
        return [r for _, r in in_task_order(iter(list(play_tasks(runners, envs, tasks))), len(tasks))]
    finally:
        for env in envs:
            env.close()


@pytest.fixture(scope="module")
def with_twin(prepared):  # noqa: F811
    """The prepared runners plus a second PyTorch FP32 instance (its twin)."""
    runners, artifacts = prepared
    spec = next(s for s in all_runtimes() if s.id == "torch-cpu-fp32")
    from collect.model_input import load_model
    from collect import paths

    twin = spec.make(load_model(paths.AGENT_WEIGHTS), artifacts, 0)
    twin.prepare()
    yield {**runners, "torch-cpu-fp32-twin": twin}
    twin.close()


def test_a_twin_with_the_same_bits_plays_the_same_games_and_the_runtime_computes_one_decision_in_eight(with_twin):
    expected = [_plain(r) for r in _play(with_twin, TASKS)]
    pair = (("torch-cpu-fp32", "torch-cpu-fp32-twin"),)
    counted = {**with_twin, "torch-cpu-fp32": Counting(with_twin["torch-cpu-fp32"])}
    results = _play(counted, [replace(t, twins=pair) for t in TASKS])
    assert [_plain(r) for r in results] == expected
    rows = [r[4].get("torch-cpu-fp32") for r in results]
    decisions = checked = 0
    for task, (episode, _, tallies, _, _), row in zip(TASKS, results, rows):
        asked = task.driver == "torch-cpu-fp32" or "torch-cpu-fp32" in task.shadows
        assert (row is not None) == asked
        if row:
            twin, n, k, differing = row
            assert twin == "torch-cpu-fp32-twin" and differing == 0
            own = episode.steps if task.driver == "torch-cpu-fp32" else tallies["torch-cpu-fp32"].decisions
            assert n == own and k == -(-own // twins_mod.CHECK_EVERY)
            decisions, checked = decisions + n, checked + k
    assert decisions > 200
    assert counted["torch-cpu-fp32"].submits == checked  # the runtime itself computed only the checked ones


def test_a_twin_whose_bits_differ_is_caught_on_the_checked_decisions(with_twin):
    # the nudged runtime "stands in" for PyTorch FP32: its Q-values differ in some bit wherever its nudge is not 0
    pair = (("torch-cpu-fp32", "nudged-cpu-fp32"),)
    task = Task("ort-cpu-fp32", ("torch-cpu-fp32",), 1000, 60, twins=pair)
    ((episode, _, tallies, _, rows),) = _play(with_twin, [task])
    twin, n, k, differing = rows["torch-cpu-fp32"]
    assert (twin, n) == ("nudged-cpu-fp32", tallies["torch-cpu-fp32"].decisions) and k > 0
    assert 0 < differing <= k


def test_a_failing_twin_leaves_its_runtime_deciding_and_a_failing_runtime_is_charged_with_its_own_fault(with_twin):
    from test_engine import Breaks

    # the twin breaks at its 30th decision: the reference's game goes on with its own decisions, as without a twin
    twin = Breaks(_nudged("graph-cpu-fp32"), with_twin["torch-cpu-fp32"], after=30)
    twin.prepare()
    task = Task("torch-cpu-fp32", ("ort-cpu-fp32",), 1000, 80)
    [expected] = [_plain(r) for r in _play(with_twin, [task])]
    (result,) = _play(
        {**with_twin, "graph-cpu-fp32": twin}, [replace(task, twins=(("torch-cpu-fp32", "graph-cpu-fp32"),))]
    )
    assert _plain(result) == expected
    assert result[4]["torch-cpu-fp32"][1] == 29 and result[4]["torch-cpu-fp32"][3] == 0  # its 29 good answers
    # the runtime itself breaks: on its next checked decision it fails, not its twin
    broken = Breaks(_nudged("broken-cpu-fp32"), with_twin["torch-cpu-fp32"], after=3)  # its 3rd checked step
    broken.prepare()
    (fault,) = _play(
        {**with_twin, "broken-cpu-fp32": broken},
        [Task("broken-cpu-fp32", (), 1000, 80, twins=(("broken-cpu-fp32", "torch-cpu-fp32-twin"),))],
    )
    assert fault.runtime_id == "broken-cpu-fp32" and "simulated device fault" in fault.message


def test_a_pair_is_used_only_when_both_are_measured_and_their_fixed_states_agree_bit_for_bit():
    base, graph = _nudged("a-cpu-fp32"), replace(_nudged("a-graph-cpu-fp32"), same_kernels_as="a-cpu-fp32")
    q = np.random.default_rng(0).normal(size=(60, 4)).astype(np.float32)
    assert twins_mod.pairs(
        [base, graph], {"a-cpu-fp32", "a-graph-cpu-fp32"}, {"a-cpu-fp32": q, "a-graph-cpu-fp32": q.copy()}
    ) == {"a-cpu-fp32": "a-graph-cpu-fp32"}
    other = q.copy()
    other[7, 2] = np.nextafter(other[7, 2], np.float32(9))  # one bit on one state
    assert (
        twins_mod.pairs([base, graph], {"a-cpu-fp32", "a-graph-cpu-fp32"}, {"a-cpu-fp32": q, "a-graph-cpu-fp32": other})
        == {}
    )
    assert twins_mod.pairs([base, graph], {"a-graph-cpu-fp32"}, {"a-cpu-fp32": q, "a-graph-cpu-fp32": q}) == {}
    assert twins_mod.pairs([base, graph], {"a-cpu-fp32", "a-graph-cpu-fp32"}, {"a-cpu-fp32": q}) == {}
    # the built-in graph runtimes name their own runtime
    specs = {s.id: s for s in all_runtimes()}
    assert specs["torch-cuda-fp16-graph"].same_kernels_as == "torch-cuda-fp16"
    assert specs["ort-cuda-fp32-graph"].same_kernels_as == "ort-cuda-fp32"
    assert specs["torch-cuda-fp16-compile"].same_kernels_as == ""  # compiled: other kernels


def _torch_twin():
    from collect.runners.torch_runner import TorchRunner

    info = Runtime(
        "torch-cpu-fp32-twin",
        "PyTorch",
        "cpu",
        "fp32",
        "test twin",
        same_kernels_as="torch-cpu-fp32",
        make=lambda m, a, c: TorchRunner(info, m.torch_model, c, False, False),
    )
    return info


def _nudged_twin():
    info = Runtime(
        "nudged-twin-cpu-fp32",
        "Nudged",
        "cpu",
        "fp32",
        "test twin",
        same_kernels_as="nudged-cpu-fp32",
        make=lambda m, a, c: Nudged(info, m.torch_model),
    )
    return info


@pytest.fixture
def twin_runtimes(monkeypatch):
    real = all_runtimes()
    # a false twin: declared the ONNX Runtime's, but it is the nudged network (its fixed states differ)
    false = replace(_nudged("false-twin-cpu-fp32"), same_kernels_as="ort-cpu-fp32")
    extra = [*real, _torch_twin(), _nudged("nudged-cpu-fp32"), _nudged_twin(), false]
    monkeypatch.setattr(collector, "all_runtimes", lambda: extra)
    monkeypatch.setattr(collect_command, "all_runtimes", lambda: extra)
    monkeypatch.setattr(
        collect_command, "QUICK", replace(collector.QUICK, looks=(2, 4), check_seeds=1, episode_step_cap=200)
    )
    return "torch-cpu-fp32,ort-cpu-fp32,torch-cpu-fp32-twin,nudged-cpu-fp32,nudged-twin-cpu-fp32,false-twin-cpu-fp32"


@pytest.mark.slow  # two collects: python -m pytest -m slow (CI runs it)
def test_a_collect_with_twins_stores_the_games_a_collect_without_them_stores(tmp_path, twin_runtimes):
    files = {}
    for name, use in (("twins", True), ("plain", False)):
        files[name] = tmp_path / f"{name}.duckdb"
        assert (
            run_collect(
                CollectOptions(
                    runtime_list=twin_runtimes,
                    out=files[name],
                    label=name,
                    quick=True,
                    quiet=True,
                    artifacts=tmp_path / "a",
                    play_twins=use,
                )
            )
            == 0
        )
    settings = json.loads(_rows(files["twins"], "SELECT settings FROM runs")[0][0])
    assert settings["play_twins"] == {
        "torch-cpu-fp32": "torch-cpu-fp32-twin",
        "nudged-cpu-fp32": "nudged-twin-cpu-fp32",
    }  # not the false twin
    assert json.loads(_rows(files["plain"], "SELECT settings FROM runs")[0][0])["play_twins"] == {}
    games = "SELECT runtime_id, seed, score, steps, actions, source FROM episodes ORDER BY ALL"
    shadows = "SELECT runtime_id, seed, driver, decisions, same, first_flip FROM shadow ORDER BY ALL"
    assert _rows(files["twins"], games) == _rows(files["plain"], games)
    assert _rows(files["twins"], shadows) == _rows(files["plain"], shadows)
    rows = _rows(
        files["twins"],
        "SELECT runtime_id, twin, seed, sum(decisions), sum(checked), sum(differing) "
        "FROM twins GROUP BY ALL ORDER BY ALL",
    )
    assert {(r, t) for r, t, *_ in rows} == {
        ("torch-cpu-fp32", "torch-cpu-fp32-twin"),
        ("nudged-cpu-fp32", "nudged-twin-cpu-fp32"),
    }
    assert all(k > 0 and d == 0 for *_, k, d in rows)
    first_seed = settings["seeds"][0]  # the check seed: every runtime computed every decision itself
    assert not [r for r in rows if r[2] == first_seed]
    # the reference's twin stood in for it only once it was no longer under test (decided at look 1: 2 seeds)
    assert {r[2] for r in rows if r[0] == "torch-cpu-fp32"} == set(settings["seeds"][2:4])
    assert _rows(files["plain"], "SELECT count(*) FROM twins") == [(0,)]
    _the_site_says_so_and_a_twin_that_differed_decides_nothing(files["twins"], tmp_path)


def _the_site_says_so_and_a_twin_that_differed_decides_nothing(db, tmp_path):
    from site_gen import analysis, load
    from site_gen.verdict import Gates

    gates = Gates.load()

    def judged(path):  # a --quick run withholds its verdicts: judged here as a full one would be
        rows = load.load_file(path)[0]
        rows.run["profile"] = "full"
        return analysis.analyse(rows, gates)

    res = judged(db)
    ref, nudged = res.runtime("torch-cpu-fp32"), res.runtime("nudged-cpu-fp32")
    assert ref.twin["twins"] == ["torch-cpu-fp32-twin"] and ref.twin["differing"] == 0 and ref.twin["every"] == 8
    assert nudged.twin["checked"] > 0 and not any(g.detail.get("twin_differed") for g in nudged.verdict.gates)
    out = tmp_path / "site"
    assert CliRunner().invoke(main, ["build", str(db), "--out", str(out)]).exit_code == 0
    for lang, words in (("en", "all bit-identical"), ("zh-tw", "全部逐位元相同")):
        page = "".join(p.read_text() for p in (out / lang).rglob("*.html"))
        assert words in page, lang
    # one checked decision of the nudged runtime differs: its agreement and play are undecided, its speed is not
    one_differs = (
        "UPDATE twins SET differing = 1 WHERE rowid = (SELECT min(rowid) FROM twins "
        "WHERE runtime_id = '{}' AND checked > 0)"
    )
    bad = _edited(db, tmp_path / "bad.duckdb", one_differs.format("nudged-cpu-fp32"))
    res = judged(bad)
    states = {
        g.gate: (g.state, bool(g.detail.get("twin_differed"))) for g in res.runtime("nudged-cpu-fp32").verdict.gates
    }
    assert states["agreement"] == ("undecided", True) and states["play"] == ("undecided", True)
    assert not states["faster"][1]
    assert not any(g.detail.get("twin_differed") for g in res.runtime("ort-cpu-fp32").verdict.gates)
    # and the site says so: built as a full run's file would be (a --quick run's verdicts are withheld); the play
    # table and chart summary read the outcome as the verdict does (no "non-inferior" beside it)
    full = _edited(bad, tmp_path / "full.duckdb", "UPDATE runs SET profile = 'full'")
    result = CliRunner().invoke(main, ["build", str(full), "--out", str(tmp_path / "bad-site")])
    assert result.exit_code == 0, result.output
    page = "".join(p.read_text() for p in (tmp_path / "bad-site" / "en").rglob("*.html"))
    assert "play undecided: in play a CUDA-graph capture" in page
    from site_gen.twin_view import play_outcome

    assert play_outcome(analysis.analyse(load.load_file(full)[0], gates).runtime("nudged-cpu-fp32")) == "undecided"
    # a row whose counts cannot be (more differing than checked) fails validation, in one clear line
    broken = _edited(
        bad,
        tmp_path / "broken.duckdb",
        "UPDATE twins SET differing = checked + 1 WHERE rowid = (SELECT min(rowid) FROM twins)",
    )
    refused = CliRunner().invoke(main, ["build", str(broken), "--out", str(tmp_path / "broken-site")])
    assert refused.exit_code != 0 and "not 0 ≤ differing ≤ checked ≤ decisions" in refused.output
    # the reference's twin differed: no candidate's agreement or play can be judged
    res = judged(_edited(bad, tmp_path / "bad-ref.duckdb", one_differs.format("torch-cpu-fp32")))
    for r in res.runtimes:
        if r.verdict:
            assert {g.gate for g in r.verdict.gates if g.detail.get("twin_differed")} == {"agreement", "play"}


def _edited(source, dest, sql: str):
    """A copy of a run file with ``sql`` applied and its integrity checksums recorded again (sealed as collect
    would, so that the edit is read as data, not as damage)."""
    from rtreport import integrity

    shutil.copy(source, dest)
    con = duckdb.connect(str(dest))
    try:
        con.execute(sql)
        integrity.record(con, con.execute("SELECT run_id FROM runs").fetchone()[0])
    finally:
        con.close()
    return dest


def test_the_method_page_says_the_check_rate_the_code_uses():
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "templates" / "content"
    assert twins_mod.CHECK_EVERY == 8
    assert "one decision in eight" in (root / "en" / "method.html").read_text()
    assert "八分之一" in (root / "zh-tw" / "method.html").read_text()


def test_where_a_candidate_made_the_references_decisions_only_the_references_own_recomputed_ones_count():
    """A file made before the rule: the reference's twin, itself under test, computed the reference's decisions in
    some games; there its agreement counts only the decisions the reference recomputed itself."""
    from site_gen.analysis import shadow_agreement
    from site_gen.load import RuntimeRows
    from site_gen.twin_view import stood_in

    graph = RuntimeRows("g", 1, "g", "t", "cuda", "fp32", "", "available", None, None, None)
    ref = RuntimeRows("r", 0, "r", "t", "cuda", "fp32", "", "available", None, None, None)
    graph.shadow = {
        1: {"decisions": 800, "same": 800, "first_flip": None},  # a check seed: all its own
        2: {"decisions": 1600, "same": 1600, "first_flip": None},
    }  # it made the reference's decisions
    ref.twin_games = {2: ("g", 200, 0)}
    stood = stood_in(graph, ref)
    assert stood == {2: (200, 200)}
    agreement = shadow_agreement(graph, stood)
    assert agreement["decisions"] == 1000 and agreement["same"] == 1000
    assert agreement["stood_in"] == {"games": 1, "checked": 200}
    assert shadow_agreement(graph)["decisions"] == 2400  # without the rule, every decision counted
