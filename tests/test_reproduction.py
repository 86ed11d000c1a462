"""Decisions that reproduce: the fixed states' Q-values of every repeat (a fresh process) against the
run's first measurement, bit for bit, shown with each runtime's verdict and, for a recommended runtime that does
not reproduce, beside the recommendation; the claim refuses counts its evidence does not carry."""

import json

import numpy as np
import pytest

from pathlib import Path

from site_gen import claims, wording
from site_gen.analysis import reproduction
from site_gen.i18n import Translator
from site_gen.load import RunRows, RuntimeRows


def _rows(first: dict, again: list, compiled: bool = False) -> RuntimeRows:
    rt = RuntimeRows("x", 0, "X", "torch", "cuda", "fp16", None, "available", None, None, None)
    rt.first_q, rt.repeat_q = first, again
    if compiled:
        rt.details = {"inductor_cache": {"files_before_compile": 0, "files_at_process_start": 0}}
    return rt


def _run(cache_at_start: dict | None = None) -> RunRows:
    """A run whose repeat k's process found ``cache_at_start[k]`` files in the compile cache (None: not compiled)."""
    details = {
        k: {"x": {"inductor_cache": {"files_before_compile": n, "files_at_process_start": n}}}
        for k, n in (cache_at_start or {}).items()
    }
    return RunRows(Path("x.duckdb"), {"run_id": "r"}, [], repeat_details=details)


def test_one_bit_in_one_repeat_makes_a_runtime_not_reproducible():
    q = {i: list(np.float32([0.5, 0.25, i, 1.0])) for i in range(3)}
    assert reproduction(_rows(q, []), _run()) is None  # no repeat: nothing to say
    same = [(k, i, v) for k in (1, 2) for i, v in q.items()]
    r = reproduction(_rows(q, same), _run())
    assert (r["reproducible"], r["repeats"], r["fresh"], r["differing_repeats"], r["states"]) == (True, 2, 2, 0, 3)
    nudged = np.float32(0.25)
    nudged = float(np.nextafter(nudged, np.float32(1)))  # the next float32 up: one bit
    other = [(k, i, [v[0], nudged if (k, i) == (2, 1) else v[1], *v[2:]]) for k, i, v in same]
    r = reproduction(_rows(q, other), _run())
    assert (r["reproducible"], r["differing_repeats"], r["q_differ"], r["action_differ"]) == (False, 1, 1, 0)
    flipped = [(k, i, [v[0], 9.0, *v[2:]] if (k, i) == (1, 0) else v) for k, i, v in same]
    r = reproduction(_rows(q, flipped), _run())
    assert (r["q_differ"], r["action_differ"]) == (1, 1)


def test_one_repeat_that_agreed_shows_nothing():
    """One fresh process that happened to agree is not evidence: "not shown", with the counts."""
    q = {i: list(np.float32([0.5, 0.25, i, 1.0])) for i in range(3)}
    r = reproduction(_rows(q, [(1, i, v) for i, v in q.items()]), _run())
    assert r["reproducible"] is None and (r["repeats"], r["fresh"], r["needed"]) == (1, 1, 2)
    for lang, words in (("en", "reproducibility not shown"), ("zh-tw", "可重現性尚未證實")):
        assert wording.reproduction(r, Translator(lang), "x").startswith(words)


def test_a_compiled_runtime_counts_only_processes_that_compiled_from_an_empty_cache():
    """torch.compile in a process that found the run's compiled kernels (a carried cache) only loads them: the
    same bits say nothing of whether compiling again gives them. Two repeats that agree, one of them with a carried
    cache: not shown. Two that compiled from an empty cache and agree: reproducible. Any that differs: not."""
    q = {i: list(np.float32([0.5, 0.25, i, 1.0])) for i in range(3)}
    same = [(k, i, v) for k in (1, 2, 3) for i, v in q.items()]
    r = reproduction(_rows(q, same[:6], compiled=True), _run({1: 456, 2: 0}))
    assert r["reproducible"] is None and (r["repeats"], r["fresh"]) == (2, 1)
    assert wording.reproduction(r, Translator("en"), "x").startswith("reproducibility not shown")
    r = reproduction(_rows(q, same, compiled=True), _run({1: 456, 2: 0, 3: 0}))
    assert r["reproducible"] is True and (r["repeats"], r["fresh"]) == (3, 2)
    # the run's own files did not record the process's start: the least count of its compiled runtimes stands in
    old = RunRows(
        Path("x.duckdb"),
        {"run_id": "r"},
        [],
        repeat_details={
            k: {
                "fp32": {"inductor_cache": {"files_before_compile": 0}},
                "fp16": {"inductor_cache": {"files_before_compile": 228}},
            }
            for k in (1, 2)
        },
    )
    assert reproduction(_rows(q, same[:6], compiled=True), old)["fresh"] == 2
    nudged = [(k, i, [v[0] + 1e-3, *v[1:]] if (k, i) == (1, 0) else v) for k, i, v in same]
    r = reproduction(_rows(q, nudged, compiled=True), _run({1: 456, 2: 0, 3: 0}))
    assert r["reproducible"] is False  # a carried cache that differed still shows it differs


def test_the_claim_refuses_what_its_counts_do_not_carry():
    ok = {
        "reproducible": True,
        "repeats": 2,
        "fresh": 2,
        "needed": 2,
        "differing_repeats": 0,
        "states": 60,
        "q_differ": 0,
        "action_differ": 0,
    }
    assert claims.check("reproducible", ok) and not claims.check("not_reproducible", ok)
    assert not claims.check("reproducible", {**ok, "fresh": 1})  # too few processes that count
    assert claims.check("reproducibility_not_shown", {**ok, "reproducible": None, "fresh": 1})
    bad = {**ok, "reproducible": False, "differing_repeats": 1, "q_differ": 1}
    assert claims.check("not_reproducible", bad) and not claims.check("reproducible", bad)
    with pytest.raises(claims.Unlicensed):
        claims.say(lambda key, **kw: key, "reproducible", "repro_same", bad)
    assert not claims.check("not_reproducible", {**bad, "q_differ": 61})


def test_the_h200_page_labels_each_runtime_and_warns_beside_the_recommendation(published_site):
    from site_gen.analysis import analyse
    from site_gen.build import load_runs
    from site_gen.findings import recommendation
    from site_gen.verdict import Gates
    from tests.conftest import COMMITTED_RUNS

    res = analyse(load_runs([COMMITTED_RUNS[-1]])[0], Gates.load())
    rec = recommendation(res)
    doc = json.loads((published_site / "data" / "nvidia-h200" / "verdicts.json").read_text())
    labelled = {r["runtime_id"]: r["reproducibility"] for r in doc["runtimes"] if "reproducibility" in r}
    assert len(labelled) == 10 and all(v["states"] == 60 and v["repeats"] >= 1 for v in labelled.values())
    differ = {rid for rid, v in labelled.items() if v["reproducible"] is False}
    assert differ == {
        r.rows.runtime_id for r in res.runtimes if r.reproduction and r.reproduction["reproducible"] is False
    }
    warned = rec is not None and rec["runtime"].rows.runtime_id in differ
    for lang, label, warn in (
        ("en", "not reproducible", "Mind one thing before deploying it"),
        ("zh-tw", "不可重現", "部署前請留意"),
    ):
        page = (published_site / lang / "hardware" / "nvidia-h200" / "index.html").read_text()
        assert page.count(label) >= len(differ) and (warn in page) == warned


def test_a_compiled_runtime_records_whether_it_found_an_inductor_cache(monkeypatch, tmp_path):
    from collect.runners.torch_runner import inductor_cache_state

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "none"))
    from collect.runners import torch_runner

    monkeypatch.setattr(torch_runner, "_FILES_AT_PROCESS_START", [])  # as a fresh process
    assert inductor_cache_state() == {
        "set_by_environment": True,
        "files_before_compile": 0,
        "files_at_process_start": 0,
    }
    (tmp_path / "c" / "fx").mkdir(parents=True)
    for name in ("a", "b"):
        (tmp_path / "c" / "fx" / name).write_text("x")
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "c"))
    # a second compiled runtime of the same process finds files: the process itself started with none
    assert inductor_cache_state() == {
        "set_by_environment": True,
        "files_before_compile": 2,
        "files_at_process_start": 0,
    }
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR")
    assert inductor_cache_state()["set_by_environment"] is False
