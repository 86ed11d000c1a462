"""Multiplicity stated: the family is one run's candidates, each verdict its own one-sided 2.5 %,
runtimes that played the same games one test, counted once, and the Bonferroni bound over the distinct tests."""

from types import SimpleNamespace as NS

from site_gen.analysis import analyse
from site_gen.build import load_runs
from site_gen.i18n import Translator
from site_gen.multiplicity import family, family_text, play_tests
from site_gen.verdict import Gates
from tests.conftest import COMMITTED_RUNS


def _runtime(title, games):
    """games: seed -> (score, actions); actions None where no trace was stored."""
    return NS(
        rows=NS(
            title=title,
            episodes=[{"seed": s, "score": v} for s, (v, _) in games.items()],
            traces={s: list(a) for s, (_, a) in games.items() if a is not None},
        ),
        verdict=NS(outcome="undecided"),
        play={"n": len(games)},
    )


def test_twins_that_played_the_same_games_are_one_test():
    a = _runtime("A", {1: (10, [0, 1]), 2: (20, [1, 1]), 3: (30, [2, 0])})
    twin = _runtime("A, CUDA graph", {1: (10, [0, 1]), 2: (20, [1, 1])})  # stopped a look earlier: same games
    b = _runtime("B", {1: (10, [0, 1]), 2: (21, [1, 2]), 3: (30, [2, 0])})
    res = NS(runtimes=[a, twin, b])
    assert [[r.rows.title for r in g] for g in play_tests(res)] == [["A", "A, CUDA graph"], ["B"]]
    f = family(res)
    assert (f["candidates"], f["tests"], round(f["bound"], 6)) == (3, 2, 0.05)
    en, zh = family_text(res, Translator("en")), family_text(res, Translator("zh-tw"))
    assert "3 candidates make 2 distinct play tests" in en and "5.0 %" in en and "A, CUDA graph" in en
    assert "2 個不同的實戰檢定" in zh and "5.0%" in zh


def test_equal_scores_from_different_games_are_different_tests():
    """CartPole's capped 500 (or a flip that happens to end on the same score) is reached by different games: each
    runtime is then its own test; so is one whose games were not stored."""
    a = _runtime("A", {1: (500, [0, 1, 0]), 2: (500, [1, 0, 1])})
    b = _runtime("B", {1: (500, [0, 1, 1]), 2: (500, [1, 0, 1])})
    c = _runtime("C", {1: (500, None), 2: (500, None)})
    d = _runtime("D", {1: (500, None), 2: (500, None)})
    assert [len(g) for g in play_tests(NS(runtimes=[a, b, c, d]))] == [1, 1, 1, 1]


def test_the_committed_runs_count_each_shared_set_of_games_once():
    for run in load_runs(list(COMMITTED_RUNS)):
        res = analyse(run, Gates.load(None))
        groups = play_tests(res)
        scores = [{e["seed"]: e["score"] for e in r.rows.episodes} for g in groups for r in g]
        for g in groups:  # within a test: the same game (actions) on every seed in common
            s = [r.rows.traces for r in g]
            assert all(s[0][k] == x[k] for x in s[1:] for k in s[0].keys() & x.keys())
        heads = [g[0].rows for g in groups]
        for i, x in enumerate(heads):  # between tests: some seed in common played differently, or not stored
            for y in heads[i + 1 :]:
                common = {e["seed"] for e in x.episodes} & {e["seed"] for e in y.episodes}
                assert any(k not in x.traces or x.traces[k] != y.traces.get(k) for k in common)
        judged = [r for r in res.runtimes if r.verdict and r.play]
        assert len(scores) == len(judged)
        if len(judged) > 1:
            text = family_text(res, Translator("en"))
            assert f"{len(groups)} distinct play tests" in text
            if any(len(g) > 1 for g in groups):  # each test listed, numbered, as many as it says
                assert f"test {len(groups)}:" in text and f"test {len(groups) + 1}:" not in text
