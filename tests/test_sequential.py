"""The group-sequential play test (rtreport/sequential.py, rtreport/after_stopping.py): exact boundaries against
published values, the estimate after stopping, conditional power."""

import numpy as np
import pytest

from rtreport import after_stopping, sequential

LOOKS = (100, 300, 600, 900, 1200)  # the project's design


def test_boundaries_match_rpacts_published_lan_demets_obrien_fleming_values():
    # rpact-com/rpact, tests/testthat/test-f_design_group_sequential.R (commit 1d81a55e), tests "x7a" of
    # getDesignGroupSequential(typeOfDesign = "asOF", alpha = 0.13, sided = 1, bindingFutility = FALSE): the
    # efficacy critical values, given there to 1e-7 (they agree here to 1e-7; asserted at 1e-4)
    assert sequential.boundaries([0.4, 0.75, 1], 0.13, sides=1) == pytest.approx(
        [2.1280732, 1.4368565, 1.2468994], abs=1e-4
    )
    assert sequential.boundaries([0.4, 0.75, 0.85, 1], 0.13, sides=1) == pytest.approx(
        [2.1280732, 1.4368565, 1.422873, 1.2970881], abs=1e-4
    )
    # the symmetric test is a different design: at α = 0.13 its lower bound removes paths, visibly
    assert sequential.boundaries([0.4, 0.75, 1], 0.13)[2] < 1.2468994 - 1e-5


def test_boundaries_match_gsdesign_for_five_equal_looks_and_the_projects_design():
    # gsDesign sfLDOF, k = 5 equally spaced, one-sided 0.025: 4.877, 3.357, 2.680, 2.290, 2.031 (published to 3
    # decimals, so compared at their rounding)
    assert sequential.boundaries([0.2, 0.4, 0.6, 0.8, 1.0]) == pytest.approx(
        [4.877, 3.357, 2.680, 2.290, 2.031], abs=5e-4
    )
    # the exact figures for the project's looks (100 … 1,200 seeds): 2.3590 at look 4, 2.0141 at look 5
    c = sequential.boundaries([n / LOOKS[-1] for n in LOOKS])
    assert c[3:] == pytest.approx([2.3590, 2.0141], abs=1e-4)
    assert sequential.boundaries([1.0]) == pytest.approx([1.959964], abs=1e-6)


def test_the_integration_error_is_far_below_1e_5():
    fractions = tuple(n / LOOKS[-1] for n in LOOKS)
    fine = sequential._boundaries(fractions, 0.025, 2, 64)
    assert max(abs(a - b) for a, b in zip(sequential._boundaries(fractions, 0.025, 2, 32), fine)) < 1e-6
    assert max(abs(a - b) for a, b in zip(sequential._boundaries(fractions, 0.025, 2, 16), fine)) < 1e-5
    # one-sided and symmetric bounds coincide at α = 0.025 (paths crossing both sides are that rare)
    assert sequential.boundaries(fractions, sides=1) == pytest.approx(list(fine), abs=1e-6)


def test_the_design_spends_exactly_alpha_at_the_margin_and_simulation_agrees():
    sd, margin = 131.0, 0.05 * 230
    assert sequential.exact_power(sd, margin, LOOKS, -margin) == pytest.approx(0.025, abs=1e-6)
    exact = sequential.exact_power(sd, margin, LOOKS, 0.0)
    assert exact >= 0.80  # an equal runtime at the largest paired spread seen passes in ≥ 80 % of runs
    assert sequential.design_power(sd, margin, LOOKS, simulations=4000) == pytest.approx(exact, abs=0.02)
    assert sequential.design_power(sd, margin, LOOKS, -margin, simulations=20000) == pytest.approx(0.025, abs=0.006)


@pytest.mark.parametrize("true_mean,expected", [(0.0, "non-inferior"), (-40.0, "inferior"), (-12.0, "undecided")])
def test_the_three_outcomes_on_synthetic_differences_with_known_answers(true_mean, expected):
    d = np.random.default_rng(7).normal(size=1200)
    d = (d - d.mean()) / d.std(ddof=1) * 20 + true_mean  # exactly this mean and spread
    mean, low, high = sequential.repeated_ci(d, 4, LOOKS)
    assert mean == pytest.approx(true_mean)
    assert high - low == pytest.approx(2 * 2.014090 * 20 / np.sqrt(1200), abs=1e-5)
    assert sequential.outcome(low, high, 12.0) == expected


def test_the_estimate_after_stopping_is_median_unbiased_where_the_naive_mean_is_not():
    sd, margin, mu = 130.0, 12.5, 3.0  # stops mostly at looks 3 and 4
    _, _, stop, mean = sequential.simulate(sd, margin, LOOKS, mu, simulations=400, seed=5)
    estimate = np.array([after_stopping.stagewise_quantile(0.5, m, sd, k, LOOKS, margin) for m, k in zip(mean, stop)])
    assert (mean > mu).mean() > 0.55  # the naive mean overshoots in most runs …
    assert (estimate > mu).mean() == pytest.approx(0.5, abs=0.05)  # … the adjusted one in half
    # at the first look nothing was selected yet: the estimate is the mean, its interval the plain 95 % one
    est, low, high = after_stopping.stagewise_estimate(5.0, sd, 0, LOOKS, margin)
    assert est == pytest.approx(5.0, abs=1e-4)
    assert (low, high) == pytest.approx((5 - 1.959964 * sd / 10, 5 + 1.959964 * sd / 10), abs=1e-3)


def test_the_estimate_after_stopping_on_paired_differences():
    d = np.random.default_rng(3).normal(20.0, 100.0, size=600)
    out = after_stopping.median_unbiased(d, 2, LOOKS, 12.0)
    assert out["naive"] == pytest.approx(d.mean())
    assert out["low"] < out["estimate"] < out["high"]
    assert out["estimate"] < out["naive"]  # a stop through the upper bound is pulled down
    assert after_stopping.median_unbiased(np.zeros(100), 0, LOOKS, 12.0) == {
        "naive": 0.0,
        "estimate": 0.0,
        "low": 0.0,
        "high": 0.0,
    }


def test_conditional_power_goes_to_one_past_the_bound_and_to_zero_far_below():
    sd, margin = 120.0, 12.0
    assert after_stopping.conditional_power(20.0, sd, 2, LOOKS, margin, 0.0) > 0.999
    assert after_stopping.conditional_power(-40.0, sd, 2, LOOKS, margin, -40.0) < 1e-6
    assert after_stopping.conditional_power(0.0, sd, 4, LOOKS, margin, 0.0) is None  # no look left
    powers = [after_stopping.conditional_power(m, sd, 2, LOOKS, margin, 0.0) for m in (-20, -10, -5, 0)]
    assert powers == sorted(powers)


def test_conditional_power_agrees_with_simulating_the_looks_that_remain():
    sd, margin, mean_now, n_now = 120.0, 12.0, -3.0, 600
    exact = after_stopping.conditional_power(mean_now, sd, 2, LOOKS, margin, 0.0)
    c = sequential.boundaries([n / LOOKS[-1] for n in LOOKS])
    rng = np.random.default_rng(1)
    sums = mean_now * n_now + np.cumsum(rng.normal(0.0, sd, size=(20000, LOOKS[-1] - n_now)), axis=1)
    open_, passed = np.ones(20000, bool), np.zeros(20000, bool)
    for k in (3, 4):
        mean = sums[:, LOOKS[k] - n_now - 1] / LOOKS[k]
        half = c[k] * sd / np.sqrt(LOOKS[k])
        passed |= open_ & (mean - half >= -margin)
        open_ &= (mean - half < -margin) & (mean + half >= -margin)
    assert passed.mean() == pytest.approx(exact, abs=0.01)


def test_conditional_powers_on_paired_differences():
    d = np.random.default_rng(4).normal(-3.0, 120.0, size=300)
    cp = after_stopping.conditional_powers(d, 1, LOOKS, 12.0)
    assert cp["looks_left"] == 3 and 0 < cp["observed"] < 1 and 0 < cp["design"] < 1
    assert after_stopping.conditional_powers(d, 4, LOOKS, 12.0) is None


def test_the_pages_say_conditional_power_while_undecided_in_both_languages():
    from site_gen.i18n import Translator
    from site_gen.wording import chance, conditional_power

    cp = {"conditional_power": {"design": 0.934, "observed": 0.0004, "looks_left": 2}}
    assert (
        conditional_power(cp, Translator("en"))
        == "conditional power with the 2 looks left: 93 % if the true difference is 0, < 1 % if it is the current mean"
    )
    assert (
        conditional_power(cp, Translator("zh-tw"))
        == "剩餘 2 次檢視的條件檢定力：真實差為 0 時 93%，真實差等於目前平均差時 < 1%"
    )
    assert (
        conditional_power({"conditional_power": None}, Translator("en")) == "no look is left: the design ends undecided"
    )
    assert [chance(x) for x in (0.0, 0.004, 0.5, 0.996, 1.0)] == ["< 1 %", "< 1 %", "50 %", "> 99 %", "> 99 %"]


def test_a_look_carries_conditional_power_while_undecided_and_the_adjusted_estimate_once_stopped():
    from site_gen.analysis import _look

    rng = np.random.default_rng(8)
    ref = {s: float(v) for s, v in enumerate(rng.normal(250.0, 90.0, size=1200))}
    worse = {s: ref[s] + d for s, d in enumerate(rng.normal(-12.0, 120.0, size=1200))}
    open_ = _look(worse, ref, list(range(300)), 1, LOOKS, 0.05)
    assert open_["outcome"] == "undecided" and open_["adjusted"] is None
    assert open_["conditional_power"]["looks_left"] == 3
    last = _look(worse, ref, list(range(1200)), 4, LOOKS, 0.05)
    assert last["conditional_power"] is None and last["adjusted"]["naive"] == pytest.approx(last["mean"])
