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
    assert stats.interquartile_mean([1, 2, 3, 4, 5, 6, 7, 100]) == 4.5  # mean of 3, 4, 5, 6
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


GATES = Gates(0.10, 0.98, 0.05)


def _shadow(fraction, low, high):
    return {"fraction": fraction, "low": low, "high": high, "same": 990, "decisions": 1000, "episodes": 10}


def _ratio(value, low, high, rounds=16, measurements=3):
    """A faster-gate input: the per-round ratio's value and its CI over three boots (latency_stats.interval's
    fields)."""
    return {
        "value": value,
        "low": low,
        "high": high,
        "rounds": rounds,
        "repeats": measurements - 1,
        "level": "boots",
        "boots": measurements,
        "measurements": measurements,
        "sd": 0.05,
        "df": measurements - 1,
        "next_low": None,
        "next_high": None,
        "below": 0,
        "above": 0,
    }


def _play(outcome):
    return {"outcome": outcome, "mean": 0.0, "low": -1.0, "high": 1.0, "margin": 2.0, "n": 100, "look": 0, "looks": 1}


def test_verdict_all_gates_pass():
    v = judge(GATES, _ratio(0.69, 0.66, 0.72), _shadow(1.0, 1.0, 1.0), _play("non-inferior"))
    assert v.outcome == "deployment-worthy" and [g.state for g in v.gates] == ["pass", "pass", "pass"]


def test_verdict_reads_intervals_not_points():
    # the original study's TensorRT FP16: slower than the reference even at the fast end of its CI
    assert (
        judge(GATES, _ratio(1.047, 1.02, 1.08), _shadow(0.99, 0.985, 0.995), _play("non-inferior")).outcome
        == "not-adopted"
    )
    # 12 % faster at the point, but the CI reaches 5 % faster: undecided, not a pass
    v = judge(GATES, _ratio(0.88, 0.84, 0.95), _shadow(0.99, 0.985, 0.995), _play("non-inferior"))
    assert v.outcome == "undecided" and v.gates[0].state == "undecided"
    edge = judge(GATES, _ratio(0.85, 0.8, 0.9), _shadow(0.99, 0.98, 0.995), _play("non-inferior"))
    assert [g.state for g in edge.gates] == ["pass", "pass", "pass"]  # exactly on each threshold
    low = judge(GATES, _ratio(0.5, 0.4, 0.6), _shadow(0.975, 0.97, 0.979), _play("undecided"))
    assert [g.state for g in low.gates] == ["pass", "fail", "undecided"] and low.outcome == "not-adopted"
    assert judge(GATES, _ratio(0.5, 0.4, 0.6), _shadow(0.99, 0.97, 0.995), _play("inferior")).outcome == "not-adopted"


def test_verdict_without_data_is_no_verdict():
    v = judge(GATES, None, _shadow(1.0, 1.0, 1.0), _play("non-inferior"))
    assert v.outcome == "no-verdict" and v.gates[0].state == "missing"


# -- latency rounds, played-decision agreement, rliable's statistics ----------------------------------------


def test_round_resampling_widens_the_interval_when_rounds_disagree():
    rng = np.random.default_rng(3)
    steady = [rng.normal(1.0, 0.05, 2000) for _ in range(3)]
    shifted = [rng.normal(m, 0.05, 2000) for m in (0.8, 1.0, 1.2)]  # a level shift between rounds
    ref = [rng.normal(2.0, 0.05, 2000) for _ in range(3)]
    _, lo1, hi1 = stats.p95_ratio(steady, ref, resamples=500)
    _, lo2, hi2 = stats.p95_ratio(shifted, ref, resamples=500)
    assert hi2 - lo2 > 3 * (hi1 - lo1)
    assert stats.rounds_spread(shifted) == pytest.approx(1.5, rel=0.02) and stats.rounds_spread(steady) < 1.01


def test_clustered_agreement_and_the_zero_flip_bound():
    f, lo, hi = stats.clustered_fraction([10, 10, 9, 10], [10, 10, 10, 10])
    assert (f, lo, hi) == (0.975, 0.925, 1.0)  # three of four resampled games the flawed one: 2.5 % tail
    assert stats.zero_event_upper(60) == pytest.approx(0.0487, abs=1e-4)  # 0 flips in 60 states: <= 4.9 %
    assert list(stats.margin_bin([0.0, 5e-7, 0.05, 2.0])) == [0, 0, 5, 7]


@pytest.mark.parametrize("kind", ["scores with ties", "continuous", "one pair"])
def test_the_probability_of_improvement_interval_is_the_paired_bootstrap_bit_for_bit(kind):
    rng = np.random.default_rng(7)
    x, y = {
        "scores with ties": (rng.integers(0, 12, 40), rng.integers(0, 12, 40)),
        "continuous": (rng.normal(size=57), rng.normal(0.2, size=57)),
        "one pair": ([3.0], [3.0]),
    }[kind]
    assert stats.probability_of_improvement_ci(x, y, resamples=500) == stats.paired_ci(
        x, y, stats.probability_of_improvement, resamples=500
    )


def test_the_very_same_games_give_one_half_and_no_spread():
    """Seeds are shared: two runtimes that scored alike on every seed are not two samples that might differ."""
    scores = np.random.default_rng(3).integers(-21, 0, 100).astype(float)
    assert stats.probability_of_improvement(scores, scores) == 0.5
    assert stats.probability_of_improvement_ci(scores, scores) == (0.5, 0.5)
    better = scores + 1  # one point more on every seed
    assert stats.probability_of_improvement_ci(better, scores)[0] > 0.5
    with pytest.raises(ValueError, match="equal"):
        stats.probability_of_improvement_ci([1.0, 2.0], [1.0])


def test_first_divergence_of_equal_traces_of_any_kind():
    assert stats.first_divergence(np.array([1, 2]), [1, 2]) is None
    assert stats.first_divergence([], []) is None and stats.first_divergence([], [4]) == 0
    long = [i % 4 for i in range(1000)]
    for step in (0, 255, 256, 257, 999):
        assert stats.first_divergence(long, long[:step] + [9] + long[step + 1 :]) == step
    assert stats.first_divergence(long, long[:700]) == 700


def test_the_clustered_interval_of_counts_is_the_float_bootstrap_bit_for_bit():
    rng = np.random.default_rng(5)
    decisions = rng.integers(1, 3000, 400).astype(float)
    same = decisions - rng.integers(0, 3, 400)
    idx = np.random.default_rng(stats.BOOTSTRAP_SEED).integers(0, 400, size=(2000, 400))
    fractions = same[idx].sum(axis=1) / decisions[idx].sum(axis=1)  # the definition, in floats
    expected = (
        float(same.sum() / decisions.sum()),
        float(np.quantile(fractions, 0.025)),
        float(np.quantile(fractions, 0.975)),
    )
    assert stats.clustered_fraction(same, decisions, resamples=2000) == expected
    assert stats.clustered_fraction(same / 2, decisions / 2, resamples=2000) == expected  # not whole numbers


@pytest.mark.parametrize("n", [1, 2, 5, 97, 400])
def test_the_iqm_interval_of_whole_scores_is_the_sorted_bootstrap_bit_for_bit(n):
    scores = np.random.default_rng(n).integers(0, 500, n).astype(float)

    def sorted_iqm(x):  # the definition: sort each resample, average the middle half
        x, cut = np.sort(x, axis=1), int(0.25 * x.shape[1])
        return x[:, cut : x.shape[1] - cut].mean(axis=1)

    assert stats.iqm_ci(scores, resamples=3000) == stats.bootstrap_ci(scores, sorted_iqm, 3000)


def test_probability_of_improvement_and_iqm():
    assert stats.probability_of_improvement([2, 2], [1, 3]) == 0.5
    assert stats.probability_of_improvement([5], [1, 2, 5]) == pytest.approx((2 + 0.5) / 3)
    low, high = stats.iqm_ci([1, 2, 3, 4, 5, 6, 7, 100])
    assert low <= 4.5 <= high


def test_a_share_that_is_not_all_never_reads_100_percent():
    """collect's closing table and the pages say a share alike: 181,294 of 181,295 is not "100.00 %"."""
    from rtreport.stats import percent

    assert percent(181294 / 181295, 2) == "99.999 %" and percent(1.0, 2) == "100.00 %"
    assert percent(1 / 181295, 2) == "0.001 %" and percent(0.0, 1) == "0.0 %"
