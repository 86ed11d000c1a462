"""Twins in a run's rows (``collect.play.twins``): which runtime's play decisions its CUDA-graph capture made, what
of a game counts where a capture made the reference's decisions, and a play outcome as the verdict reads it
(pure, no I/O)."""

from __future__ import annotations


def twin_summary(rt, run: dict, titles: dict) -> dict | None:
    """In play, the decisions its CUDA-graph twin computed for it (collect.play.twins), summed over its twins (one
    in practice): how many, how many the runtime recomputed itself and how many of those differed in any bit. None
    when every decision was its own."""
    if not rt.twins:
        return None
    total = {k: sum(c[k] for c in rt.twins.values()) for k in ("games", "decisions", "checked", "differing")}
    return {
        "twins": sorted(rt.twins),
        "titles": [titles.get(x, x) for x in sorted(rt.twins)],
        **total,
        "every": run.get("settings", {}).get("twin_check_every"),
    }


def play_outcome(r) -> str | None:
    """The play test's outcome as the verdict reads it (a twin that differed: "undecided", ``verdict.judge``)."""
    if not r.play:
        return None
    differed = r.verdict and any(g.gate == "play" and g.detail.get("twin_differed") for g in r.verdict.gates)
    return "undecided" if differed else r.play["outcome"]


def stood_in(rt, reference) -> dict:
    """Seeds where ``rt`` made the reference's decisions (its CUDA-graph twin) -> (decisions the reference
    recomputed itself, of those equal bit for bit): there the only ones where the two are compared independently."""
    return {
        s: (checked, checked - differing)
        for s, (twin, checked, differing) in reference.twin_games.items()
        if twin == rt.runtime_id and s in rt.shadow
    }
