"""Multiplicity stated: the family is one run's candidates, each verdict its own one-sided 2.5 %,
runtimes that played the same games one test, counted once, and the Bonferroni bound over the distinct tests."""

from types import SimpleNamespace as NS

from site_gen.analysis import analyse
from site_gen.build import load_runs
from site_gen.i18n import Translator
from site_gen.multiplicity import family, family_text, play_tests
from site_gen.verdict import Gates
from tests.conftest import COMMITTED_RUNS


def _runtime(title, scores):
    return NS(
        rows=NS(title=title, episodes=[{"seed": s, "score": v} for s, v in scores.items()]),
        verdict=NS(outcome="undecided"),
        play={"n": len(scores)},
    )


def test_twins_that_played_the_same_games_are_one_test():
    a = _runtime("A", {1: 10, 2: 20, 3: 30})
    twin = _runtime("A, CUDA graph", {1: 10, 2: 20})  # stopped a look earlier: same games where both played
    b = _runtime("B", {1: 10, 2: 21, 3: 30})
    res = NS(runtimes=[a, twin, b])
    assert [[r.rows.title for r in g] for g in play_tests(res)] == [["A", "A, CUDA graph"], ["B"]]
    f = family(res)
    assert (f["candidates"], f["tests"], round(f["bound"], 6)) == (3, 2, 0.05)
    en, zh = family_text(res, Translator("en")), family_text(res, Translator("zh-tw"))
    assert "3 candidates make 2 distinct play tests" in en and "5.0 %" in en and "A, CUDA graph" in en
    assert "2 個不同的實戰檢定" in zh and "5.0%" in zh


def test_the_committed_runs_count_each_shared_set_of_games_once():
    for run in load_runs(list(COMMITTED_RUNS)):
        res = analyse(run, Gates.load(None))
        groups = play_tests(res)
        scores = [{e["seed"]: e["score"] for e in r.rows.episodes} for g in groups for r in g]
        for g in groups:  # within a test: the same score on every seed in common
            s = [{e["seed"]: e["score"] for e in r.rows.episodes} for r in g]
            assert all(s[0][k] == x[k] for x in s[1:] for k in s[0].keys() & x.keys())
        heads = [{e["seed"]: e["score"] for e in g[0].rows.episodes} for g in groups]
        for i, x in enumerate(heads):  # between tests: some seed in common differs
            for y in heads[i + 1 :]:
                assert any(x[k] != y[k] for k in x.keys() & y.keys())
        judged = [r for r in res.runtimes if r.verdict and r.play]
        assert len(scores) == len(judged)
        if len(judged) > 1:
            text = family_text(res, Translator("en"))
            assert f"{len(groups)} distinct play tests" in text
            if any(len(g) > 1 for g in groups):  # each test listed, numbered, as many as it says
                assert f"test {len(groups)}:" in text and f"test {len(groups) + 1}:" not in text
