"""The concurrent play engine (``collect.engine``) on the CPU with real games: many games in flight in one
process, or in worker processes, play exactly the episodes that one game at a time through ``infer`` plays —
the same actions, scores, shadow tallies and margins — and a runtime that fails in one slot fails only its own
task. (On a GPU, benchmarks/play_throughput.py checks the same identity for the CUDA runtimes.)"""

import os
from dataclasses import asdict

import pytest

from collect import measure, paths
from collect.agent.protocol import make_eval_env
from collect.artifacts import Artifacts
from collect.play.engine import in_task_order, open_slots, overlap_differences, play_tasks
from collect.model_input import load_model
from collect.play import Players, Task
from collect.play.worker import core_sets
from collect.registry import all_runtimes
from collect.runners.base import Runner
from test_play import Nudged, _nudged


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    model = load_model(paths.AGENT_WEIGHTS)
    artifacts = Artifacts(tmp_path_factory.mktemp("artifacts"), model.onnx_source())
    specs = {s.id: s for s in all_runtimes()}
    runners = {rid: specs[rid].make(model, artifacts, 0) for rid in ("torch-cpu-fp32", "ort-cpu-fp32")}
    info = _nudged("nudged-cpu-fp32")
    runners["nudged-cpu-fp32"] = Nudged(info, model.torch_model)
    for r in runners.values():
        r.prepare()
    yield runners, artifacts
    for r in runners.values():
        r.close()


TASKS = [
    Task("torch-cpu-fp32", ("ort-cpu-fp32", "nudged-cpu-fp32"), 1000, 120),
    Task("nudged-cpu-fp32", ("torch-cpu-fp32",), 1001, 90, until_first_flip=True),
    Task("torch-cpu-fp32", ("nudged-cpu-fp32",), 1002, 150),
    Task("ort-cpu-fp32", (), 1003, 60),
    Task("torch-cpu-fp32", ("ort-cpu-fp32", "nudged-cpu-fp32"), 1004, 100, until_first_flip=True),
]


def _plain(result):
    episode, _seconds, tallies, margins = result[:4]
    return asdict(episode), {rid: asdict(t) for rid, t in tallies.items()}, margins


def _one_at_a_time(runners, tasks):
    """The oracle: each task's ``ShadowedGame`` to its end, every runtime asked through ``infer`` in turn."""
    env = make_eval_env()
    results = []
    try:
        for t in tasks:
            game = measure.ShadowedGame(env, t.driver, t.shadows, t.seed, t.step_cap, t.until_first_flip)
            while not game.done:
                q = {}
                for rid in game.wanted():
                    try:
                        q[rid] = runners[rid].infer(game.observation[None])[0]
                    except Exception as e:
                        q[rid] = e
                game.advance(q)
            results.append(_plain(game.result()))
        return results
    finally:
        env.close()


def test_games_in_flight_together_are_the_games_played_one_at_a_time(prepared):
    runners, _ = prepared
    expected = _one_at_a_time(runners, TASKS)
    assert any(t["flips"] for _, tallies, _ in expected for t in tallies.values())  # the nudge does flip
    envs = [make_eval_env() for _ in range(3)]
    try:
        ended = list(play_tasks(runners, envs, TASKS))
    finally:
        for env in envs:
            env.close()
    assert [p for p, _ in ended] != list(range(len(TASKS)))  # games ended out of order: the slots interleaved
    assert [_plain(r) for _, r in in_task_order(iter(ended), len(TASKS))] == expected


class Breaks(Runner):
    """Fails at its ``after``-th decision, as a runtime whose device fails in play would."""

    def __init__(self, info, inner, after):
        super().__init__(info)
        self.inner, self.after, self.calls = inner, after, 0

    def prepare_impl(self):
        pass

    def infer_impl(self, batch):
        self.calls += 1
        if self.calls >= self.after:
            raise RuntimeError("simulated device fault")
        return self.inner.infer(batch)

    def describe_impl(self):
        return {}


def test_a_runtime_that_fails_in_one_slot_fails_only_what_it_plays(prepared):
    runners, _ = prepared
    broken = Breaks(_nudged("broken-cpu-fp32"), runners["torch-cpu-fp32"], after=30)
    broken.prepare()
    tasks = [
        Task("broken-cpu-fp32", (), 1000, 80),
        Task("torch-cpu-fp32", ("broken-cpu-fp32",), 1001, 80),
        Task("torch-cpu-fp32", (), 1002, 40),
    ]
    envs = [make_eval_env() for _ in range(3)]
    try:
        results = dict(
            play_tasks(
                {**runners, "broken-cpu-fp32": broken, "gone-cpu-fp32": "could not prepare"},
                envs,
                [*tasks, Task("gone-cpu-fp32", (), 1003, 10)],
            )
        )
    finally:
        for env in envs:
            env.close()
    assert results[0].runtime_id == "broken-cpu-fp32" and "simulated device fault" in results[0].message
    episode, _, tallies, *_ = results[1]
    assert episode.steps == 80 and "simulated device fault" in tallies["broken-cpu-fp32"].error
    assert results[2][0].steps == 40
    assert results[3].runtime_id == "gone-cpu-fp32" and results[3].message == "could not prepare"


@pytest.mark.slow  # a long end-to-end run: python -m pytest -m slow (CI runs it)
def test_worker_processes_with_slots_play_the_same_games(prepared):
    runners, artifacts = prepared
    tasks = [t for t in TASKS if "nudged-cpu-fp32" not in (t.driver, *t.shadows)] + [
        Task("ort-cpu-fp32", ("torch-cpu-fp32",), s, 70) for s in (1005, 1006, 1007)
    ]
    expected = _one_at_a_time(runners, tasks)
    used = {"torch-cpu-fp32": runners["torch-cpu-fp32"], "ort-cpu-fp32": runners["ort-cpu-fp32"]}
    with Players(used, 2, paths.AGENT_WEIGHTS, artifacts, 0, slots=2) as players:
        results = list(players.run(tasks))
        times = players.timings()
    assert [t for t, _, _ in results] == tasks and all(f is None for _, _, f in results)
    assert [_plain(r) for _, r, _ in results] == expected
    # CPU runtimes in two processes: each process on its own share of the cores (one thread a core), together all
    cores = sorted(os.sched_getaffinity(0))
    assert sorted(c for cpus in players.cpus for c in cpus) == cores if len(cores) >= 2 else players.cpus == [cores] * 2
    assert core_sets(2, gpu=True) == [None, None] and core_sets(1, gpu=False) == [None]
    # where the time went (collect.play.timing): every game step of the play processes counted, by the time of the
    # last result (a process sends its totals with each game it ends: one that the other beat to every task, as can
    # happen when it starts later, sends none)
    assert 0 in times and len(times) >= 2 and set(times) <= {0, 1, 2}
    assert times[0]["waiting for results"][0] == len(tasks)
    assert sum(t["emulator step"][0] for p, t in times.items() if p) == sum(r[0].steps for _, r, _ in results)
    assert sum(t["ort-cpu-fp32 fetch"][0] for p, t in times.items() if p) >= sum(
        r[0].steps for _, r, _ in results if r[0].steps
    )


def test_progress_lines_wait_for_the_first_wave_of_games_before_estimating():
    from collect.progress import Lines

    now, said = [0.0], []
    ui = Lines(said.append, every=10, clock=lambda: now[0])
    with ui.phase("play", 100, in_flight=32) as tick:
        now[0] = 60
        tick(1)  # one game of the first 32 in flight ended: 1/100 in 60 s says nothing about the rest
        now[0] = 75
        tick(31)  # the first wave is in: 32 games in 75 s, so 68 more in about 160 s
    assert said[0] == "[1 min 00 s] play: 1/100, the first 32 in flight together"
    assert said[1] == "[1 min 15 s] play: 32/100, about 2 min 39 s left"


class SharedBuffer(Runner):
    """Overlaps its slots' decisions through one shared output buffer, as concurrent kernels that share scratch
    memory would: every fetch returns the Q-values of the last state submitted by any slot."""

    def __init__(self, info, inner):
        super().__init__(info)
        self.inner, self.opened = inner, []

    def prepare_impl(self):
        pass

    def infer_impl(self, batch):
        return self.inner.infer(batch)

    def open_slots(self, n):
        self.opened.append(n)
        return not (self.overlap or "").startswith("off")

    def close_slots(self, reason):
        self.overlap = f"off: {reason}"

    def submit(self, slot, batch):
        if (self.overlap or "").startswith("off"):
            return super().submit(slot, batch)
        self.last = self.inner.infer(batch)[0]

    def fetch(self, slot):
        if (self.overlap or "").startswith("off"):
            return super().fetch(slot)
        return self.last


def test_the_self_check_finds_overlapped_decisions_that_differ_from_one_at_a_time(prepared):
    runners, _ = prepared
    racy = SharedBuffer(_nudged("racy-cpu-fp32"), runners["torch-cpu-fp32"])
    racy.prepare()
    exact = {"ort-cpu-fp32": runners["ort-cpu-fp32"]}  # in turn: exact by construction
    # 4 slots x 3 rounds: only the last slot submitted in each round gets its own Q-values back
    assert overlap_differences({"racy-cpu-fp32": racy, **exact}, 4, rounds=3) == {"racy-cpu-fp32": 9, "ort-cpu-fp32": 0}
    assert overlap_differences({"racy-cpu-fp32": racy}, 1, rounds=3) == {"racy-cpu-fp32": 0}


def test_the_engine_overlaps_nothing_that_fails_the_self_check_and_plays_the_same_games(prepared, capsys):
    runners, _ = prepared
    racy = SharedBuffer(_nudged("racy-cpu-fp32"), runners["torch-cpu-fp32"])
    racy.prepare()
    tasks = [Task("torch-cpu-fp32", ("racy-cpu-fp32",), 1000, 40), Task("racy-cpu-fp32", (), 1001, 30)]
    expected = _one_at_a_time({**runners, "racy-cpu-fp32": racy}, tasks)
    envs = [make_eval_env() for _ in range(3)]
    try:
        ended = list(play_tasks({**runners, "racy-cpu-fp32": racy}, envs, tasks))
    finally:
        for env in envs:
            env.close()
    assert racy.opened == [3]
    assert racy.overlap.startswith("off: the self-check failed (racy-cpu-fp32: ") and "of 192" in racy.overlap
    assert "concurrent decisions off for racy-cpu-fp32" in capsys.readouterr().err
    assert [_plain(r) for _, r in in_task_order(iter(ended), len(tasks))] == expected
    assert open_slots({"racy-cpu-fp32": racy}, 3) == {"racy-cpu-fp32": racy.overlap}  # closed stays closed
    assert racy.opened == [3, 3]
    assert open_slots(runners, 3) == {}  # PyTorch and ONNX Runtime on the CPU overlap nothing: each slot in turn


class NoSlots(SharedBuffer):
    """Its slots cannot be made (e.g. a library refuses the per-slot resources)."""

    def open_slots(self, n):
        if (self.overlap or "").startswith("off"):
            return False
        raise RuntimeError("out of streams")


def test_a_runtime_whose_slots_cannot_be_made_plays_in_turn_and_the_others_still_overlap(prepared, capsys):
    runners, _ = prepared
    broken = NoSlots(_nudged("noslots-cpu-fp32"), runners["torch-cpu-fp32"])
    good = SharedBuffer(_nudged("good-cpu-fp32"), runners["torch-cpu-fp32"])
    for r in (broken, good):
        r.prepare()
    tasks = [Task("noslots-cpu-fp32", ("torch-cpu-fp32",), 1000, 30)]
    expected = _one_at_a_time({**runners, "noslots-cpu-fp32": broken}, tasks)
    envs = [make_eval_env()]
    try:
        ended = list(play_tasks({**runners, "noslots-cpu-fp32": broken}, envs, tasks))
    finally:
        envs[0].close()
    assert broken.overlap == "off: its game slots could not be made (RuntimeError: out of streams)"
    assert "concurrent decisions off for noslots-cpu-fp32" in capsys.readouterr().err
    assert [_plain(r) for _, r in ended] == expected
    # one slot only: the shared buffer is exact, so the runtime that could make its slots overlaps
    assert set(open_slots({"noslots-cpu-fp32": broken, "good-cpu-fp32": good}, 1)) == {
        "noslots-cpu-fp32",
        "good-cpu-fp32",
    }
    assert good.overlap.startswith("on: 1 slots, overlapped")
