"""Decisions that reproduce (#25 item 7): the fixed states' Q-values of every repeat (a fresh process) against the
run's first measurement, bit for bit, shown with each runtime's verdict and, for a recommended runtime that does
not reproduce, beside the recommendation; the claim refuses counts its evidence does not carry."""
import json

import numpy as np
import pytest

from site_gen import claims
from site_gen.analysis import reproduction
from site_gen.load import RuntimeRows


def _rows(first: dict, again: list) -> RuntimeRows:
    rt = RuntimeRows("x", 0, "X", "torch", "cuda", "fp16", None, "available", None, None, None)
    rt.first_q, rt.repeat_q = first, again
    return rt


def test_one_bit_in_one_repeat_makes_a_runtime_not_reproducible():
    q = {i: list(np.float32([0.5, 0.25, i, 1.0])) for i in range(3)}
    assert reproduction(_rows(q, [])) is None                                     # no repeat: nothing to say
    same = [(k, i, v) for k in (1, 2) for i, v in q.items()]
    assert reproduction(_rows(q, same)) == {
        "reproducible": True, "repeats": 2, "differing_repeats": 0, "states": 3, "q_differ": 0, "action_differ": 0,
        "per_repeat": {1: {"states": 3, "q_differ": 0, "action_differ": 0}, 2: {"states": 3, "q_differ": 0,
                                                                               "action_differ": 0}}}
    nudged = np.float32(0.25)
    nudged = float(np.nextafter(nudged, np.float32(1)))                           # the next float32 up: one bit
    other = [(k, i, [v[0], nudged if (k, i) == (2, 1) else v[1], *v[2:]]) for k, i, v in same]
    r = reproduction(_rows(q, other))
    assert (r["reproducible"], r["differing_repeats"], r["q_differ"], r["action_differ"]) == (False, 1, 1, 0)
    flipped = [(k, i, [v[0], 9.0, *v[2:]] if (k, i) == (1, 0) else v) for k, i, v in same]
    r = reproduction(_rows(q, flipped))
    assert (r["q_differ"], r["action_differ"]) == (1, 1)


def test_the_claim_refuses_what_its_counts_do_not_carry():
    ok = {"reproducible": True, "repeats": 2, "differing_repeats": 0, "states": 60, "q_differ": 0, "action_differ": 0}
    assert claims.check("reproducible", ok) and not claims.check("not_reproducible", ok)
    bad = {**ok, "reproducible": False, "differing_repeats": 1, "q_differ": 1}
    assert claims.check("not_reproducible", bad) and not claims.check("reproducible", bad)
    with pytest.raises(claims.Unlicensed):
        claims.say(lambda key, **kw: key, "reproducible", "repro_same_other", bad)
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
    differ = {rid for rid, v in labelled.items() if not v["reproducible"]}
    assert differ == {r.rows.runtime_id for r in res.runtimes if r.reproduction and not r.reproduction["reproducible"]}
    warned = rec is not None and rec["runtime"].rows.runtime_id in differ
    for lang, label, warn in (("en", "not reproducible", "Mind one thing before deploying it"),
                              ("zh-tw", "不可重現", "部署前請留意")):
        page = (published_site / lang / "hardware" / "nvidia-h200" / "index.html").read_text()
        assert page.count(label) >= len(differ) and (warn in page) == warned


def test_a_compiled_runtime_records_whether_it_found_an_inductor_cache(monkeypatch, tmp_path):
    from collect.runners.torch_runner import inductor_cache_state
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "none"))
    assert inductor_cache_state() == {"set_by_environment": True, "files_before_compile": 0}
    (tmp_path / "c" / "fx").mkdir(parents=True)
    for name in ("a", "b"):
        (tmp_path / "c" / "fx" / name).write_text("x")
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "c"))
    assert inductor_cache_state() == {"set_by_environment": True, "files_before_compile": 2}
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR")
    assert inductor_cache_state()["set_by_environment"] is False
