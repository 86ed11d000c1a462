"""Statistics on tiny, hand-checkable inputs (after rliable's tests)."""
import numpy as np
import pytest

from rtreport import stats
from site_gen.verdict import Gates, judge


def test_percentiles_interpolate_linearly():
    assert stats.percentile([1, 2, 3, 4], 50) == 2.5
    assert stats.percentile([0, 10], 95) == 9.5
    s = stats.latency_summary([0.001, 0.002, 0.003, 0.004, 0.005])
    assert s["p50"] == pytest.approx(3.0) and s["p95"] == pytest.approx(4.8) and s["p99"] == pytest.approx(4.96)
    assert s["mean"] == pytest.approx(3.0) and s["std"] == pytest.approx(np.sqrt(2.5))


def test_throughput_uses_the_median_call():
    assert stats.throughput(8, [0.002, 0.004, 1.0]) == 2000.0


def test_interquartile_mean_drops_a_quarter_each_side():
    assert stats.interquartile_mean([1, 2, 3, 4, 5, 6, 7, 100]) == 4.5   # mean of 3, 4, 5, 6
    assert stats.interquartile_mean([0, 10, 20]) == 10.0


def test_score_summary():
    s = stats.score_summary([10, 20, 30, 40, 50])
    assert (s["mean"], s["median"], s["min"], s["max"]) == (30, 30, 10, 50)
    assert s["p10"] == pytest.approx(14) and s["p90"] == pytest.approx(46)
    assert s["std"] == pytest.approx(np.sqrt(250)) and s["iqm"] == 30


def test_bootstrap_of_a_constant_is_that_constant_and_is_deterministic():
    assert stats.mean_ci([3.0, 3.0, 3.0]) == (3.0, 3.0)
    a = stats.mean_ci([0, 1, 2, 10, -4])
    assert a == stats.mean_ci([0, 1, 2, 10, -4])
    assert a[0] < 1.8 < a[1] and a[0] >= -4 and a[1] <= 10


def test_bootstrap_interval_matches_the_normal_approximation_roughly():
    x = np.random.default_rng(1).normal(5, 2, size=400)
    low, high = stats.mean_ci(x)
    se = x.std(ddof=1) / np.sqrt(x.size)
    assert low == pytest.approx(x.mean() - 1.96 * se, abs=0.03)
    assert high == pytest.approx(x.mean() + 1.96 * se, abs=0.03)


def test_agreement_counts_flips_and_reports_the_reference_margin():
    ref = [[1.0, 2.0, 0.0, 0.0], [5.0, 1.0, 0.0, 0.0], [0.0, 0.0, 3.0, 2.99]]
    q = [[1.0, 2.0, 0.0, 0.0], [5.0, 1.5, 0.0, 0.0], [0.0, 0.0, 2.98, 2.99]]
    a = stats.agreement(ref, q)
    assert (a["states"], a["same_actions"]) == (3, 2)
    assert a["max_abs_dq"] == pytest.approx(0.5) and a["mean_abs_dq"] == pytest.approx(0.52 / 12)
    assert a["reference_margin"] == pytest.approx([1.0, 4.0, 0.01])
    (flip,) = a["flips"]
    assert (flip["state"], flip["reference_action"], flip["action"]) == (2, 2, 3)
    assert flip["reference_margin"] == pytest.approx(0.01)


def test_first_divergence():
    assert stats.first_divergence([1, 2, 3], [1, 2, 3]) is None
    assert stats.first_divergence([1, 2, 3], [1, 0, 3]) == 1
    assert stats.first_divergence([1, 2], [1, 2, 3]) == 2


def test_paired_difference():
    p = stats.paired_difference([10, 12, 8], [10, 10, 10], [[1, 2], [1, 3], [0]], [[1, 2], [1, 2], [1]])
    assert p["differences"] == [0, 2, -2] and p["mean"] == 0.0
    assert p["identical"] == 1 and p["first_divergence"] == [None, 1, 0]
    assert p["ci_low"] <= 0 <= p["ci_high"] and p["ci_low"] >= -2 and p["ci_high"] <= 2
    with pytest.raises(ValueError):
        stats.paired_difference([1, 2], [1])


GATES = Gates(0.10, 0.98, -0.05)


def test_verdict_all_gates_pass():
    v = judge(GATES, reference_p95=1.0, p95=0.69, same_actions=60, states=60, reference_mean_score=42.0,
              paired_ci_low=-1.0)
    assert v.outcome == "deployment-worthy" and [g.passed for g in v.gates] == [True, True, True]


def test_verdict_fails_on_any_gate_like_the_original_fp16():
    # Original study's TensorRT FP16: slower than FP32's P95, 56/60 actions, mean far below.
    v = judge(GATES, reference_p95=1.110, p95=1.162, same_actions=56, states=60, reference_mean_score=42.03,
              paired_ci_low=-9.0)
    assert v.outcome == "not-adopted" and [g.passed for g in v.gates] == [False, False, False]
    edge = judge(GATES, reference_p95=1.0, p95=0.9, same_actions=59, states=60, reference_mean_score=100.0,
                 paired_ci_low=-5.0)
    assert [g.passed for g in edge.gates] == [True, True, True]   # exactly on each threshold (59/60 = 98.3 %)
    below = judge(GATES, reference_p95=1.0, p95=0.91, same_actions=58, states=60, reference_mean_score=100.0,
                  paired_ci_low=-5.01)
    assert [g.passed for g in below.gates] == [False, False, False]   # 58/60 = 96.7 %


def test_verdict_without_data_is_no_verdict():
    v = judge(GATES, reference_p95=1.0, p95=None, same_actions=60, states=60, reference_mean_score=42.0,
              paired_ci_low=0.0)
    assert v.outcome == "no-verdict" and v.gates[0].passed is None
