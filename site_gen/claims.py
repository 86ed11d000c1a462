"""The claim kinds: every generated sentence with a number or a comparison is one of these, and each kind names the
test result that licenses it. ``say`` refuses a claim its evidence does not license (a bug in the caller, never
the reader's problem) and records it on the translator (``t.ledger``), so a test can check every claim a page
makes against the data, and that both languages make the same ones."""

from __future__ import annotations

TOL = 1e-9


def _holds(e, x) -> bool:
    return e["low"] - TOL <= x <= e["high"] + TOL


def _one_way(e) -> bool:
    """Every round of a ratio on one side of 1 (``below`` / ``above``: rounds under / over 1, of ``rounds``)."""
    return e["rounds"] > 0 and (e["below"] == e["rounds"] or e["above"] == e["rounds"])


# kind: (the result that licenses it, the check of that result on the evidence)
KINDS = {
    # a ratio of latencies (candidate / reference, or one runtime / another) with its 95 % interval
    "speed_faster": ("the whole interval of the ratio lies below 1", lambda e: e["high"] < 1 - TOL),
    "speed_slower": ("the whole interval of the ratio lies above 1", lambda e: e["low"] > 1 + TOL),
    "speed_unresolved": (
        "the interval of the ratio holds 1 and its rounds went both ways: no direction is claimed",
        lambda e: _holds(e, 1) and not _one_way(e),
    ),
    "speed_every_round": (
        "the interval of the ratio holds 1 although every round went one way: the order is said "
        "per round, and no tie is claimed",
        lambda e: _holds(e, 1) and _one_way(e),
    ),
    # the faster gate: ``gate`` is the ratio a runtime must reach (1 − the required reduction)
    "gate_faster_pass": ("the interval's slow end is at or below the gate", lambda e: e["high"] <= e["gate"] + TOL),
    "gate_faster_short": (
        "the whole interval lies above the gate but not above 1",
        lambda e: e["low"] > e["gate"] + TOL and e["low"] <= 1 + TOL,
    ),
    "gate_faster_slower": ("the whole interval lies above 1", lambda e: e["low"] > 1 + TOL),
    "gate_faster_straddles": ("the interval holds the gate", lambda e: _holds(e, e["gate"])),
    "gate_faster_unconfirmed": (
        "fewer independent measurements than the gate needs: no speed verdict",
        lambda e: e["measurements"] < e["min_measurements"],
    ),
    # agreement on played decisions: share and its 95 % CI against the gate
    "agreement_pass": ("the CI's low end is at or above the gate", lambda e: e["low"] >= e["gate"] - TOL),
    "agreement_fail": ("the whole CI lies below the gate", lambda e: e["high"] < e["gate"] - TOL),
    "agreement_straddles": ("the CI holds the gate", lambda e: _holds(e, e["gate"])),
    "exact": (
        "no flip on any played decision (agreement 100 %), continuous actions equal bit for bit",
        lambda e: e["flips"] == 0 and e["decisions"] > 0 and e.get("equal", e["decisions"]) == e["decisions"],
    ),
    "within_tolerance": (
        "every played continuous action within the tolerance of the reference's",
        lambda e: e["flips"] == 0 and e["decisions"] > 0 and e.get("continuous") is True,
    ),
    # the play test (repeated CI of the mean paired difference against −margin)
    "play_non_inferior": (
        "outcome non-inferior: the whole repeated CI lies above −margin",
        lambda e: e["outcome"] == "non-inferior" and e["low"] > -e["margin"],
    ),
    "play_inferior": (
        "outcome inferior: the whole repeated CI lies below −margin",
        lambda e: e["outcome"] == "inferior" and e["high"] < -e["margin"],
    ),
    "play_undecided": (
        "outcome undecided: the repeated CI holds −margin",
        lambda e: e["outcome"] == "undecided" and _holds(e, -e["margin"]),
    ),
    "play_identical": (
        "every paired seed scored the same (no interval to give)",
        lambda e: e["sd"] == 0 and e["mean"] == 0,
    ),
    # in play, a runtime's decisions computed by its CUDA-graph twin (collect.play.twins), and the runtime's own
    # recomputation of a sample of them, bit for bit
    "twin_checked": (
        "every decision the runtime recomputed itself equals its twin's, bit for bit",
        lambda e: e["differing"] == 0 and 0 < e["checked"] <= e["decisions"],
    ),
    "twin_differed": (
        "some decision the runtime recomputed itself differs from its twin's",
        lambda e: 0 < e["differing"] <= e["checked"],
    ),
    "twin_stood_in": (
        "it computed the reference's decisions in these games; only the reference's own recomputed ones count",
        lambda e: e["games"] > 0 and e["checked"] >= 0,
    ),
    # a verdict for a group of runtimes, and its count
    "verdict_group": (
        "every runtime named has this verdict, and the count is theirs",
        lambda e: len(set(e["outcomes"])) == 1 and len(e["outcomes"]) == e["n"],
    ),
    # the most frequent kind of flip: "mostly" only when it is more than half of them
    "flips_mostly": ("the pair is more than half of the flips", lambda e: e["share"] > 0.5 and e["largest"]),
    "flips_most_often": (
        "the pair is the most frequent, at most half of the flips",
        lambda e: e["share"] <= 0.5 and e["largest"],
    ),
    # the study's lesson: the flips in play were near-ties, closer calls than the fixed states hold
    "near_ties": (
        "at most a tenth of the fixed states are as close a call (the reference's top-two margin) as the flips' median",
        lambda e: e["states"] > 0 and e["as_close"] <= 0.1 * e["states"],
    ),
    # the family of verdicts: the Bonferroni bound over the distinct play tests
    "family_bound": (
        "the bound is the number of distinct play tests times the per-verdict error, at most 1",
        lambda e: abs(e["bound"] - min(1.0, e["tests"] * e["alpha"])) < TOL and e["tests"] <= e["candidates"],
    ),
    # a runtime singled out as the lowest (highest) of a group on some measure
    "lowest_of": ("its value is the lowest of the group named", lambda e: e["value"] <= min(e["others"]) + TOL),
    "highest_of": ("its value is the highest of the group named", lambda e: e["value"] >= max(e["others"]) - TOL),
    # rankings by point estimate: the sentence says "point estimate" and gives the interval where there is one
    "fastest_point": (
        "its point estimate (ratio or latency) is the lowest of the group named",
        lambda e: e["value"] <= min(e["others"]) + TOL,
    ),
    "fastest_paired": (
        "the lowest ratio of the group, and the runtimes named as not told apart from it are exactly "
        "those whose own per-round ratio to it holds 1 with rounds both ways (or has no interval)",
        lambda e: (
            e["value"] <= min(e["others"]) + TOL
            and e["named"] == sum(v is None or (_holds(v, 1) and not _one_way(v)) for v in e["versus"])
        ),
    ),
    "ranked_point": (
        "listed in the order of their point estimates, lowest first",
        lambda e: all(a <= b + TOL for a, b in zip(e["values"], e["values"][1:])),
    ),
    "all_equal": ("every runtime of the group has the same value", lambda e: len(set(e["values"])) == 1),
    # the play test's outcomes listed: every runtime under its own outcome
    "outcome_lists": (
        "each runtime is listed under the outcome of its own play test",
        lambda e: all(o == k for k, os in e["lists"].items() for o in os),
    ),
    "both_non_inferior": (
        "both runtimes' play tests ended non-inferior",
        lambda e: all(o == "non-inferior" for o in e["outcomes"]) and len(e["outcomes"]) == 2,
    ),
    # a mean paired score difference beside its interval: no direction is claimed
    "score_difference": (
        "the interval holds the mean; no direction is claimed",
        lambda e: e["low"] - TOL <= e["mean"] <= e["high"] + TOL,
    ),
    "scores_identical": ("the same score on every paired seed", lambda e: e["identical"] == e["n"] > 0),
    # two runs of one machine: "all ≈" only when no comparison's two 95 % intervals stand apart
    "within_spread": (
        "no runtime's P95 or ratio moved beyond both runs' 95 % intervals; the count is theirs",
        lambda e: not {"slower", "faster"} & set(e["moves"]) and e["moves"].count("same") == e["n"],
    ),
    # the recommendation: the fastest (point estimate) of the runtimes that pass all three gates
    "recommend": (
        "it passes all three gates and has the lowest ratio of those that do",
        lambda e: e["outcome"] == "deployment-worthy" and e["ratio"] <= min(e["others"], default=e["ratio"]),
    ),
    # the recommendation called the fastest outright: its own per-round ratio to the next that passes lies below 1
    "recommend_paired": (
        "it passes all three gates, has the lowest ratio of those that do, and the whole interval of its own "
        "per-round ratio to the next one lies below 1",
        lambda e: (
            e["outcome"] == "deployment-worthy"
            and e["ratio"] <= min(e["others"], default=e["ratio"])
            and e["versus"] is not None
            and e["versus"]["high"] < 1 - TOL
        ),
    ),
    # ... and where that interval holds 1 (or the two were not timed in the same rounds): fastest by point estimate,
    # and not shown faster than the next
    "recommend_point": (
        "it passes all three gates and has the lowest ratio of those that do; its own per-round ratio to the next "
        "one holds 1, or there is none",
        lambda e: (
            e["outcome"] == "deployment-worthy"
            and e["ratio"] <= min(e["others"], default=e["ratio"])
            and (e["versus"] is None or _holds(e["versus"], 1))
        ),
    ),
    # the fixed states computed again in fresh processes (repeats), compared bit for bit with the first time
    "reproducible": (
        "every repeat's Q-values equal the first measurement's bit for bit on every state compared, in "
        "at least as many fresh processes as the rule needs (for a compiled runtime: processes that "
        "started without a carried compile cache)",
        lambda e: (
            e["reproducible"] is True
            and e["differing_repeats"] == 0
            and e["fresh"] >= e["needed"]
            and e["repeats"] >= e["fresh"]
        ),
    ),
    "reproducibility_not_shown": (
        "no repeat differed, but fewer fresh processes agreed than the rule needs",
        lambda e: e["reproducible"] is None and e["differing_repeats"] == 0 and e["fresh"] < e["needed"],
    ),
    "not_reproducible": (
        "some repeat's Q-values differ in at least one bit; the counts are the worst repeat's",
        lambda e: (
            e["reproducible"] is False
            and 0 < e["differing_repeats"] <= e["repeats"]
            and 0 < e["q_differ"] <= e["states"]
            and e["action_differ"] <= e["states"]
        ),
    ),
    "fastest_exact": (
        "of the runtimes that pass all three gates with no flip, the lowest ratio",
        lambda e: e["flips"] == 0 and e["ratio"] <= min(e["others"], default=e["ratio"]),
    ),
}
# Words no generated sentence may use, whatever its kind (en, zh-TW): equality is never shown by these tests.
NEVER = ("plays as well", "as good as the reference", "玩得一樣好", "一樣好")
# "runtime(s)": a count says its own number (``count_key``)
PLURAL_GUESS = r"\w\(s\)"


class Unlicensed(AssertionError):
    """A sentence was about to claim what its evidence does not carry."""


def check(kind: str, evidence: dict) -> bool:
    return bool(KINDS[kind][1](evidence))


def say(t, kind: str, key: str, evidence: dict, subject: str | None = None, **params) -> str:
    """The sentence ``key`` as claim ``kind``: only when ``evidence`` licenses it; recorded on ``t.ledger``."""
    if not check(kind, evidence):
        raise Unlicensed(f"{kind} ({KINDS[kind][0]}) is not licensed by {evidence} for {subject}")
    text = t(key, **params)
    ledger = getattr(t, "ledger", None)
    if ledger is not None:
        ledger.append({"kind": kind, "key": key, "subject": subject, "evidence": dict(evidence), "text": text})
    return text


def speed_kind(e: dict) -> str:
    if check("speed_faster", e):
        return "speed_faster"
    if check("speed_slower", e):
        return "speed_slower"
    return "speed_every_round" if _one_way(e) else "speed_unresolved"


def titles(names: list[str], t) -> str:
    """Runtime titles as one list a reader can split again: the language's list separator, or its semicolon
    where a title itself holds that separator ("PyTorch CUDA FP32, CUDA graph")."""
    sep = t("sep")
    return (t("semi") if any(sep.strip() in n for n in names) else sep).join(names)


def count_key(key: str, n: int) -> str:
    """``key_one`` for one, ``key_other`` otherwise: never "runtime(s)"."""
    return f"{key}_{'one' if n == 1 else 'other'}"
