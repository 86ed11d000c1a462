"""Speed claims with the latency round as the unit: intervals that a drifting round widens, verdicts that follow
the interval, a recommendation that compares the top two directly, one statistic per headline, and repeats."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from conftest import without_repeats

from rtreport import latency_stats as ls
from site_gen import claims
from site_gen.analysis import analyse, head_to_head
from site_gen.answer import answer_lines
from site_gen.findings import recommendation, recommendation_text, sentences
from site_gen.speed_charts import speed_chart
from site_gen.home import headline
from site_gen.i18n import Translator
from site_gen.load import RunRows, RuntimeRows
from site_gen.verdict import GateResult, Gates, Verdict, faster_gate

GATES = Gates(0.10, 0.98, 0.05)
# a passing runtime's agreement and play, as a recommendation reads them: every decision and every seed the same
SHADOW = {"fraction": 1.0, "low": 1.0, "high": 1.0, "decisions": 1000, "same": 1000, "episodes": 10, "flips": 0}
PLAYED = {"outcome": "non-inferior", "mean": 0.0, "low": 0.0, "high": 0.0, "margin": 2.0, "sd": 0.0, "n": 100}


def _runtime(rid: str, position: int, levels_ms, seed: int, sd: float = 0.05, boots=None) -> RuntimeRows:
    """A runtime whose round r has log-normal samples around ``levels_ms[r]`` (2,000 per round); ``boots``: the
    machine's boot of each round (None: one process on one boot, as a file with no repeat)."""
    rng = np.random.default_rng(seed)
    rt = RuntimeRows(rid, position, rid, "test", "cpu", "fp32", "", "available", None, None, None)
    rt.rounds = [m * 1e-3 * np.exp(rng.normal(0, sd, 2000)) for m in levels_ms]
    rt.round_ids = list(range(len(levels_ms)))
    rt.round_info = [
        {
            "round": r,
            "position": 0,
            "started_at": None,
            "conditions": {} if boots is None else {"boot": boots[r], "repeat": _repeat(boots, r)},
        }
        for r in rt.round_ids
    ]
    rt.decision_seconds = np.concatenate(rt.rounds)
    return rt


def _repeat(boots, r: int) -> int:
    """The repeat of round r where each boot is a fresh process: 0 for the first boot's rounds, then 1, 2, …"""
    return list(dict.fromkeys(boots)).index(boots[r])


def _on_boots(levels_per_boot) -> tuple[list, list]:
    """Per-round levels and boots from [[levels of boot a], [levels of boot b], …]."""
    levels = [x for boot in levels_per_boot for x in boot]
    boots = [f"boot-{i}" for i, boot in enumerate(levels_per_boot) for _ in boot]
    return levels, boots


def _run(*runtimes) -> RunRows:
    return RunRows(
        Path("synthetic.duckdb"),
        {
            "run_id": "r",
            "label": "synthetic",
            "status": "complete",
            "reference_runtime": runtimes[0].runtime_id,
            "settings": {},
            "model_path": "model.pt",
            "model_sha256": "0" * 64,
        },
        list(runtimes),
    )


def test_one_drifting_round_widens_the_interval_and_does_not_set_the_value():
    """The H200's reference drifted from 0.35 to 0.76 ms in one of three rounds: the ratio must not follow that
    round (pooled samples let its slow tail set the P95), and its interval must hold both kinds of round."""
    cand = [0.08, 0.08, 0.08]
    steady = analyse(_run(_runtime("ref", 0, [0.35, 0.35, 0.35], 1), _runtime("c", 1, cand, 2)), GATES)
    drift = analyse(_run(_runtime("ref", 0, [0.35, 0.76, 0.35], 1), _runtime("c", 1, cand, 2)), GATES)
    value, low, high = drift.runtime("c").ratio
    s_value, s_low, s_high = steady.runtime("c").ratio
    assert s_low <= 0.08 / 0.35 <= s_high and s_high / s_low < 1.05  # steady rounds: a narrow interval
    assert (0.08 / 0.76) < value < (0.08 / 0.35) * 0.9  # the geometric middle, not one round
    assert low < (0.08 / 0.76) / 1.5 and high > (0.08 / 0.35) * 1.5  # a next measurement of either kind
    assert math.log(high / low) > 20 * math.log(s_high / s_low)


def test_a_candidate_faster_in_every_round_is_never_called_a_tie():
    """Two runtimes pass; A is 35–40 % faster than B in every round, while the reference swings so much that
    their ratios to it overlap. The recommendation compares A with B directly: no tie."""
    ref = _runtime("ref", 0, [0.35, 0.76, 0.50], 1)
    a = _runtime("a", 1, [0.060, 0.065, 0.062], 2)
    b = _runtime("b", 2, [0.100, 0.104, 0.097], 3)
    res = analyse(_run(ref, a, b), GATES)
    ra, rb = res.runtime("a"), res.runtime("b")
    assert ra.ratio[1] <= rb.ratio[2]  # their intervals against the reference overlap …
    for r in (ra, rb):
        r.verdict = Verdict("deployment-worthy", [])
        r.shadow, r.play = dict(SHADOW), dict(PLAYED)
    for lang, tie_words in (("en", "cannot be told apart"), ("zh-tw", "分不出")):
        text = recommendation_text(res, Translator(lang))
        assert tie_words not in text and "b" in text
    rec = recommendation(res)
    assert rec["runtime"] is ra and rec["tie"] is False and rec["versus"]["high"] < 1  # … yet A is faster
    first = answer_lines(res, Translator("en"))[0]["text"]  # the machine page's first line: the fastest, outright
    assert first == "a: it passes all three gates and is the fastest of those that do."


def test_the_first_screen_says_how_many_rounds_behind_the_speed_ran_under_load():
    """Rounds measured while other processes loaded the machine still count; the answer's speed line says how many
    of the rounds behind its figure (the runtime's and the reference's) did, in both languages."""
    ref = _runtime("ref", 0, [0.35, 0.36, 0.34], 1, boots=["a", "b", "c"])
    a = _runtime("a", 1, [0.060, 0.061, 0.062], 2, boots=["a", "b", "c"])
    for info in (ref.round_info[0], a.round_info[0], a.round_info[2]):  # 3 of the 6 rounds: others used 60 %
        info["conditions"].update(cpu_busy=0.9, cpu_busy_own=0.3)
    res = analyse(_run(ref, a), GATES)
    r = res.runtime("a")
    r.verdict, r.shadow, r.play = Verdict("deployment-worthy", []), dict(SHADOW), dict(PLAYED)
    speed_line = {lang: answer_lines(res, Translator(lang))[1]["text"] for lang in ("en", "zh-tw")}
    assert speed_line["en"].endswith(
        "3 of the 6 latency rounds behind this figure (its and the reference's) ran while other processes loaded "
        "the machine (see Speed)."
    )
    assert "有 3 輪是在其他行程占用這台機器時量的" in speed_line["zh-tw"]
    for info in (ref.round_info[0], a.round_info[0], a.round_info[2]):
        info["conditions"].update(cpu_busy=0.3)
    res = analyse(_run(ref, a), GATES)
    r = res.runtime("a")
    r.verdict, r.shadow, r.play = Verdict("deployment-worthy", []), dict(SHADOW), dict(PLAYED)
    assert "loaded" not in answer_lines(res, Translator("en"))[1]["text"]


def test_the_same_runtimes_are_a_tie_when_their_own_ratio_holds_one():
    ref = _runtime("ref", 0, [0.35, 0.36, 0.34], 1)
    a = _runtime("a", 1, [0.060, 0.070, 0.062], 2)
    b = _runtime("b", 2, [0.066, 0.061, 0.068], 3)
    res = analyse(_run(ref, a, b), GATES)
    for r in (res.runtime("a"), res.runtime("b")):
        r.verdict = Verdict("deployment-worthy", [])
        r.shadow, r.play = dict(SHADOW), dict(PLAYED)
    assert "cannot be told apart" in recommendation_text(res, Translator("en"))
    rec = recommendation(res)
    assert rec["tie"] and rec["versus"]["low"] <= 1 <= rec["versus"]["high"]
    first = {lang: answer_lines(res, Translator(lang))[0]["text"] for lang in ("en", "zh-tw")}
    assert first["en"].startswith(f"{rec['runtime'].rows.title}: it passes all three gates and is the fastest")
    assert first["en"].endswith(f"by point estimate, not shown faster than the next, {rec['runner_up'].rows.title}.")
    assert "依點估計" in first["zh-tw"] and "未能證明" in first["zh-tw"]


@pytest.mark.parametrize("lang", ["en", "zh-tw"])
def test_a_headline_never_mixes_p50_and_p95(lang):
    """Made so that P50 and P95 ratios differ (the candidate's tail is lighter): every speed headline names the
    gate's statistic (P95), prints that statistic's ratio with its interval, and that statistic's milliseconds."""
    ref = _runtime("ref", 0, [0.35, 0.40, 0.37], 1, sd=0.3)
    cand = _runtime("c", 1, [0.10, 0.11, 0.10], 2, sd=0.05)
    res = analyse(_run(ref, cand), GATES)
    r = res.runtime("c")
    p50, p95 = ([np.percentile(c, q) / np.percentile(f, q) for c, f in zip(cand.rounds, ref.rounds)] for q in (50, 95))
    assert min(p50) > max(p95) * 1.2  # the two statistics' ratios differ in every round
    t = Translator(lang)
    r.verdict = Verdict(
        "undecided",
        [
            GateResult(
                "play",
                "undecided",
                0.0,
                -1.0,
                1.0,
                -0.5,
                {
                    "n": 100,
                    "outcome": "undecided",
                    "mean": 0.0,
                    "low": -1.0,
                    "high": 1.0,
                    "margin": 0.5,
                    "sd": 3.0,
                    "conditional_power": None,
                },
            )
        ],
    )
    texts = [headline(res, t), recommendation_text(res, t), *sentences(res, t)[:2]]
    r.verdict = Verdict("deployment-worthy", [])
    r.shadow, r.play = dict(SHADOW), dict(PLAYED)
    texts += [headline(res, t), recommendation_text(res, t)]
    for text in texts:
        assert "P50" not in text and "P95" in text, text
    for text in (texts[0], texts[-2]):
        assert f"{1 / r.ratio[0]:.2f}" in text and f"{1 / r.ratio[2]:.2f}" in text and f"{1 / r.ratio[1]:.2f}" in text
    assert f"{r.latency['p95']:.3f}" in texts[-2]


def _interval(value, low, high, rounds=16, sd=0.2, level="boots", repeats=2, measurements=3):
    return {
        "value": value,
        "low": low,
        "high": high,
        "rounds": rounds,
        "repeats": repeats,
        "level": level,
        "sd": sd,
        "df": measurements - 1,
        "measurements": measurements,
        "groups": measurements,
        "boots": measurements if level == "boots" else None,
        "next_low": None,
        "next_high": None,
        "below": rounds if high < 1 else 0,
        "above": rounds if low > 1 else 0,
    }


def test_speed_verdict_follows_the_confidence_interval():
    assert faster_gate(GATES, _interval(0.5, 0.4, 0.9)).state == "pass"  # faster: all past the gate
    slower = faster_gate(GATES, _interval(1.2, 1.05, 1.4))
    assert slower.state == "fail" and slower.detail["slower"]  # slower: all above 1
    short = faster_gate(GATES, _interval(0.95, 0.92, 0.98))
    assert short.state == "fail" and not short.detail["slower"]  # faster, not by 10 %
    open_ = faster_gate(GATES, _interval(0.6, 0.3, 1.2, sd=0.2))
    assert open_.state == "undecided" and open_.detail["statistic"] == "p95"
    # how many measurements in all would decide at this spread: t(G−1)·0.2/√G < |log 0.6 − log 0.9| = 0.405
    n = open_.detail["needed"]
    assert ls.t975(n - 1) * 0.2 / math.sqrt(n) < math.log(0.9 / 0.6) <= ls.t975(n - 2) * 0.2 / math.sqrt(n - 1)


@pytest.mark.parametrize("interval", [(0.1, 0.098, 0.102), (1.5, 1.4, 1.6), (0.95, 0.94, 0.96)])
def test_a_file_from_one_process_never_decides_the_speed_gate(interval):
    """One process (or two) is not enough, whatever its rounds show: ten times as fast with a tight interval is
    "not confirmed", and so is clearly slower — never pass, never fail."""
    for measurements, level in ((1, "rounds"), (2, "repeats")):
        g = faster_gate(
            GATES, _interval(*interval, rounds=10, level=level, repeats=measurements - 1, measurements=measurements)
        )
        assert g.state == "undecided" and not g.detail["confirmed"] and g.detail["needed"] >= 3, g


def test_a_run_of_one_process_never_passes_however_fast():
    """Ten rounds of one process, the candidate ten times as fast in every one of them: its rounds' interval lies
    far past the gate, and still the verdict is undecided, "not confirmed", in both languages."""
    ref = _runtime("ref", 0, [1.0] * 10, 1, sd=0.02)
    cand = _runtime("c", 1, [0.1] * 10, 2, sd=0.02)
    res = analyse(_run(ref, cand), GATES)
    r = res.runtime("c")
    r.shadow = {"fraction": 1.0, "low": 1.0, "high": 1.0, "decisions": 1000, "same": 1000, "episodes": 10, "flips": 0}
    r.play = {
        "outcome": "non-inferior",
        "mean": 0.0,
        "low": 0.0,
        "high": 0.0,
        "margin": 2.0,
        "sd": 0.0,
        "n": 100,
        "look": 0,
        "looks": 1,
    }
    from site_gen.verdict import judge

    r.verdict = judge(GATES, r.ratios["p95"], r.shadow, r.play)
    faster = r.verdict.gates[0]
    assert r.ratio[2] < 0.2 and res.measurements == 1
    assert faster.state == "undecided" and not faster.detail["confirmed"] and r.verdict.outcome == "undecided"
    for lang, words in (("en", "speed not confirmed"), ("zh-tw", "速度尚未確認")):
        from site_gen.wording import gate_reason

        assert gate_reason(faster, Translator(lang), "c").startswith(words)


def test_a_runtime_three_times_as_fast_on_every_boot_passes():
    """The H200's case: the eager reference moves 25 % and more between boots (its P95 0.69, 0.38, 0.45 ms), a CUDA
    graph runtime is about 3× as fast in every round of every one of three boots. The rule before this one, a
    prediction interval for the next boot (t(2) · s · √(1 + 1/3)), left it undecided; the machine's typical ratio
    (t(2) · s / √3) decides it."""
    ref_levels, boots = _on_boots([[0.69] * 10, [0.38] * 3, [0.45] * 3])
    cand_levels = [0.69 / 3.6] * 10 + [0.38 / 2.1] * 3 + [0.45 / 2.6] * 3  # 2.1–3.6× as fast, boot by boot
    ref = _runtime("ref", 0, ref_levels, 1, sd=0.02, boots=boots)
    cand = _runtime("graph", 1, cand_levels, 2, sd=0.02, boots=boots)
    res = analyse(_run(ref, cand), GATES)
    r = res.runtime("graph")
    p95 = r.ratios["p95"]
    assert p95["level"] == "boots" and p95["measurements"] == 3 and p95["below"] == p95["rounds"] == 16
    assert p95["next_high"] > 0.9  # the earlier rule's interval reaches past the gate …
    gate = faster_gate(GATES, p95)
    assert gate.state == "pass" and gate.high <= 0.9  # … the typical ratio's does not
    # the earlier rule, written out: a prediction interval for the next boot over the three boots' means
    means = np.log(p95["group_values"])
    old_high = math.exp(means.mean() + ls.t975(2) * means.std(ddof=1) * math.sqrt(1 + 1 / 3))
    assert old_high > 0.9 and old_high == pytest.approx(p95["next_high"], rel=1e-9)


def test_a_pair_ordered_the_same_way_in_every_round_is_never_a_tie():
    """A is faster than B in every round of three boots, by 1 % on two boots and 40 % on the third: the 95 % CI
    of their typical ratio holds 1 (three measurements that disagree this much cannot settle how much), yet no
    sentence may call them indistinguishable; the sentence says every round went one way."""
    ref_levels, boots = _on_boots([[0.50] * 4, [0.50] * 4, [0.50] * 4])
    a = _runtime("a", 1, [0.0990] * 4 + [0.060] * 4 + [0.0992] * 4, 2, sd=0.001, boots=boots)
    b = _runtime("b", 2, [0.100] * 12, 3, sd=0.001, boots=boots)
    res = analyse(_run(_runtime("ref", 0, ref_levels, 1, sd=0.001, boots=boots), a, b), GATES)
    ra, rb = res.runtime("a"), res.runtime("b")
    versus = head_to_head(ra, rb, "p95")
    assert versus["measurements"] == 3 and versus["below"] == versus["rounds"] == 12
    assert versus["low"] <= 1 <= versus["high"]  # the interval holds 1 …
    assert claims.speed_kind(versus) == "speed_every_round"
    for r in (ra, rb):
        r.verdict = Verdict("deployment-worthy", [])
        r.shadow, r.play = dict(SHADOW), dict(PLAYED)
    rec = recommendation(res)
    assert rec["runtime"] is ra and rec["tie"] is False  # … and it is no tie
    for lang, tie_words, every in (
        ("en", ("cannot be told apart", "no difference shown"), "in every one of its 12"),
        ("zh-tw", ("分不出", "看不出快慢"), "12 輪裡每一輪都比較快"),
    ):
        t = Translator(lang)
        text = recommendation_text(res, t)
        assert every in text and not any(w in text for w in tie_words), text
    chart = speed_chart(res, Translator("en"))
    assert chart.summary[0] == "sum_speed"  # the chart's summary names no tie either


def test_round_statistics_are_paired_by_round_and_two_level_with_repeats():
    def rounds(levels, reps):
        return {k: (rep, np.full(100, lv * 1e-3)) for k, (lv, rep) in enumerate(zip(levels, reps))}

    cand = rounds([1, 2, 4, 1.1], [0, 0, 1, 1])
    ref = rounds([2, 4, 8], [0, 0, 1])
    ratios = ls.paired_ratios(cand, ref, "p50")
    assert sorted(ratios) == [0, 1, 2] and all(v == pytest.approx(0.5) for _, v in ratios.values())
    values = {0: (0, 1.0), 1: (0, 1.2), 2: (1, 1.5), 3: (1, 1.6), 4: (2, 1.1)}
    res = ls.interval(values)
    means = [math.log(1.0 * 1.2) / 2, math.log(1.5 * 1.6) / 2, math.log(1.1)]
    assert res["repeats"] == 2 and res["measurements"] == 3 and res["value"] == pytest.approx(math.exp(np.mean(means)))
    half = ls.t975(2) * np.std(means, ddof=1) / math.sqrt(3)  # the typical value's CI …
    assert res["level"] == "repeats" and res["high"] == pytest.approx(math.exp(np.mean(means) + half))
    half_next = ls.t975(2) * np.std(means, ddof=1) * math.sqrt(1 + 1 / 3)  # … and the next measurement's
    assert res["next_high"] == pytest.approx(math.exp(np.mean(means) + half_next))
    one = ls.interval({0: (0, 1.0), 1: (0, 1.2), 2: (0, 1.1)})  # one process: its rounds' CI
    logs = np.log([1.0, 1.2, 1.1])
    assert one["measurements"] == 1 and one["level"] == "rounds" and one["next_low"] is None
    assert one["high"] == pytest.approx(math.exp(logs.mean() + ls.t975(2) * logs.std(ddof=1) / math.sqrt(3)))
    assert [(k, round(v, 4), n) for k, v, n in ls.repeat_values(values)] == [
        (0, round(math.sqrt(1.2), 4), 2),
        (1, round(math.sqrt(2.4), 4), 2),
        (2, 1.1, 1),
    ]


def test_repeats_on_one_boot_are_one_group_once_there_are_two_boots():
    """Repeats minutes apart on one boot of the machine (a lent VM's lease) share its state: the interval takes the
    boot as its unit, wider than one that counts each repeat as independent; with one boot only, the repeats."""
    values = {
        0: (0, 1.00),
        1: (0, 1.02),
        2: (1, 1.01),
        3: (1, 1.03),
        4: (2, 1.02),
        5: (2, 1.00),
        6: (3, 1.30),
        7: (3, 1.32),
        8: (4, 0.80),
        9: (4, 0.82),
    }
    boots = {r: "a" if rep <= 2 else "b" if rep == 3 else "c" for r, (rep, _) in values.items()}
    per_repeat, per_boot = ls.interval(values), ls.interval(values, boots=boots)
    assert per_repeat["level"] == "repeats" and per_repeat["repeats"] == 4
    assert per_boot["level"] == "boots" and per_boot["boots"] == 3 and per_boot["repeats"] == 4
    means = [np.mean(np.log(group)) for group in ([1.00, 1.02, 1.01, 1.03, 1.02, 1.00], [1.30, 1.32], [0.80, 0.82])]
    half = ls.t975(2) * np.std(means, ddof=1) / math.sqrt(3)
    assert per_boot["high"] == pytest.approx(math.exp(np.mean(means) + half))
    assert per_boot["high"] / per_boot["low"] > per_repeat["high"] / per_repeat["low"]
    assert ls.interval(values, boots={r: "a" for r in values}) == per_repeat  # one boot: no boot-level spread
    # a boot for each repeat: the same groups as the repeats, and the interval says they are boots
    own = ls.interval(values, boots={r: f"boot-{rep}" for r, (rep, _) in values.items()})
    assert own["level"] == "boots" and own["boots"] == own["groups"] == 5
    assert (own["low"], own["high"]) == pytest.approx((per_repeat["low"], per_repeat["high"]))
    # a runtime's rounds say their boot in their conditions; the verdict's "needed" counts boots then
    g = faster_gate(GATES, {**per_boot, "value": 0.85, "low": 0.6, "high": 1.2})
    assert g.state == "undecided" and g.detail["level"] == "boots" and g.detail["boots"] == 3


def _add_repeats(path: Path, slow_reference: dict) -> None:
    """Two later repeats in a copy of a collect file: rounds 100+ copy rounds 0–1 of every runtime, with the
    reference's samples scaled by ``slow_reference[repeat]`` and the contract's conditions (B's collect)."""
    import duckdb

    con = duckdb.connect(str(path))
    try:
        ref = con.execute("SELECT reference_runtime FROM runs").fetchone()[0]
        for repeat, factor in slow_reference.items():
            for src in (0, 1):
                new = 100 * repeat + src
                con.execute(
                    "INSERT INTO latency SELECT run_id, runtime_id, kind, batch_size, ?, iteration, "
                    "seconds * CASE WHEN runtime_id = ? THEN ? ELSE 1 END FROM latency "
                    "WHERE kind = 'decision' AND round = ?",
                    [new, ref, factor, src],
                )
                conditions = {
                    "repeat": repeat,
                    "phase": "repeat",
                    "host_load": 0.25 * repeat,
                    "cpu_busy": 0.5,
                    "cpu_mhz": 2400.0 + repeat,
                    "flagged": ["host load"] if repeat == 2 else None,
                }
                con.execute(
                    "INSERT INTO rounds SELECT run_id, runtime_id, ?, position, started_at + INTERVAL 10 MINUTE"
                    " * ?, ?::JSON FROM rounds WHERE round = ?",
                    [new, repeat, json.dumps(conditions), src],
                )
        from rtreport import integrity

        integrity.record(con, con.execute("SELECT run_id FROM runs").fetchone()[0])  # sealed as collect would
    finally:
        con.close()


def test_repeats_are_shown_per_runtime_with_what_differed(quick_run, tmp_path):
    from click.testing import CliRunner

    from rtreport_cli.main import main
    from site_gen.load import load_file

    path = without_repeats(quick_run, tmp_path / "repeats.duckdb")  # the run alone, then two repeats of its own
    # shifts between repeats far beyond any spread of rounds on a loaded machine: the two-level interval is the wider
    _add_repeats(path, {1: 2.0, 2: 0.5})
    res = analyse(load_file(path)[0], GATES)
    cand = next(r for r in res.runtimes if r.ratios)
    assert cand.ratios["p95"]["repeats"] == 2 and cand.ratios["p95"]["level"] == "repeats"
    out = tmp_path / "site"
    result = CliRunner().invoke(main, ["build", str(path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    for lang, heading, repeat in (
        ("en", "Repeats: latency rounds again, in fresh processes", "repeat 2"),
        ("zh-tw", "重複量測：在新的行程中再量延遲輪次", "重複量測 2"),
    ):
        page = next((out / lang / "hardware").glob("*/tables/index.html")).read_text(encoding="utf-8")
        section = page[page.index(heading) :]  # the repeats and what differed, on the machine's tables page
        assert repeat in section and "0.50" in section and "2402" in section  # host load, CPU MHz of repeat 2
        # both repeats copy the same two rounds, the reference 2× and 0.5× as slow: their ratios differ by that
        ratios = dict(
            (g, v)
            for g, v, _ in ls.repeat_values(ls.paired_ratios(cand.keyed, res.runtime(res.reference_id).keyed, "p95"))
        )
        assert ratios[1] * 2.0 == pytest.approx(ratios[2] * 0.5, rel=1e-6)
        assert f"{1 / ratios[1]:.2f}×" in section and f"{1 / ratios[2]:.2f}×" in section  # as speeds
