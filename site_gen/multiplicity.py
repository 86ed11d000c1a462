"""How many tests a machine's verdicts are, and which error rate they hold; pure, no I/O.

The family is the candidates of one machine's run, each tested against the same reference. Each verdict holds
its own one-sided 2.5 % error (per comparison; no familywise correction: docs/sequential-design.md says why).
Runtimes whose games are the same game on every seed both played (the same action at every step: a runtime the reuse
rule gave the reference's games, a CUDA-graph twin that takes its twin's action at every step) have the same paired
differences and are one play test, counted once."""

from __future__ import annotations

from rtreport.sequential import ALPHA

from . import claims
from .claims import titles


def _games(r) -> dict:
    """seed -> the game the runtime played there: its action at every step (its own trace, or that of the game the
    reuse rule established it by), None where no trace was stored."""
    return {
        e["seed"]: (tuple(r.rows.traces[e["seed"]]) if e["seed"] in r.rows.traces else None) for e in r.rows.episodes
    }


def play_tests(res) -> list[list]:
    """The judged candidates grouped into distinct play tests: two runtimes are one test when, on each of their
    seeds in common, both played the very same game (the same action at every step, so the same paired difference
    with the reference). Equal scores alone do not make one game (a capped return, CartPole's 500, is reached in
    many ways), and a game without its stored trace is never taken for another's."""
    judged = [r for r in res.runtimes if r.verdict and r.play]
    groups: list[list] = []
    for r in judged:
        mine = _games(r)
        for g in groups:
            other = _games(g[0])
            common = mine.keys() & other.keys()
            if common and all(mine[s] is not None and mine[s] == other[s] for s in common):
                g.append(r)
                break
        else:
            groups.append([r])
    return groups


def family(res) -> dict | None:
    """Candidates, distinct play tests, and the Bonferroni bound on the chance that at least one candidate truly
    worse by the margin is called non-inferior (distinct tests × the per-verdict error)."""
    groups = play_tests(res)
    if not groups:
        return None
    return {
        "candidates": sum(len(g) for g in groups),
        "tests": len(groups),
        "alpha": ALPHA,
        "bound": min(1.0, len(groups) * ALPHA),
        "shared": [g for g in groups if len(g) > 1],
        "groups": groups,
    }


def family_text(res, t) -> str | None:
    """The verdict section's statement of the family, the error rate and how twins are counted."""
    f = family(res)
    if f is None:
        return None
    from .wording import pct

    e = {k: f[k] for k in ("candidates", "tests", "alpha", "bound")}
    if f["candidates"] == 1:
        return claims.say(t, "family_bound", "family_text_one", e, None, alpha=pct(f["alpha"]))
    # every test, numbered, those of one runtime too: "4 distinct play tests" lists four
    shared = (
        t("group_sep").join(
            t("family_group", k=k, runtimes=titles([r.rows.title for r in g], t)) for k, g in enumerate(f["groups"], 1)
        )
        if f["shared"]
        else ""
    )
    return claims.say(
        t,
        "family_bound",
        "family_text",
        e,
        None,
        candidates=f["candidates"],
        tests=f["tests"],
        alpha=pct(f["alpha"]),
        bound=pct(f["bound"]),
        shared=shared or t("family_no_shared"),
    )
