"""The study's lesson, told where a run's data show it: every fixed state agrees, yet played games part."""

from __future__ import annotations

import numpy as np

from . import claims
from .analysis import RunResult
from .claims import titles
from .wording import pct


def fixed_states_vs_play(res: RunResult, t) -> str | None:
    """The study's lesson when the data show it: all fixed states agree, yet played games part."""
    group = [
        r
        for r in res.runtimes
        if r.agreement
        and not r.agreement.get("continuous")  # the story is of discrete actions changed
        and r.shadow
        and r.agreement["same_actions"] == r.agreement["states"]
        and r.shadow["flips"] > 0
        and r.shadow["episodes_with_flip"] >= 0.5 * r.shadow["episodes"]
    ]
    if not group:
        return None
    firsts = [s for r in group for s in r.shadow["first_flip_steps"]]
    pairs: dict = {}
    for r in group:
        for k, n in r.shadow["pairs"].items():
            pairs[k] = pairs.get(k, 0) + n
    meanings = res.rows.run.get("protocol", {}).get("action_meanings") or []
    (a, b), n = max(pairs.items(), key=lambda kv: kv[1])

    def name(x):
        return meanings[x] if x < len(meanings) else str(x)

    share = n / sum(pairs.values())
    states = group[0].agreement["states"]
    # the runtimes may have shadowed different numbers of games (one decided at an earlier look): a range then
    every = all(r.shadow["episodes_with_flip"] == r.shadow["episodes"] for r in group)
    low, high = min(r.shadow["episodes"] for r in group), max(r.shadow["episodes"] for r in group)
    share_kind = "flips_mostly" if share > 0.5 else "flips_most_often"
    pair = claims.say(
        t,
        share_kind,
        share_kind,
        {"share": share, "largest": n == max(pairs.values())},
        None,
        pair=f"{name(a)}→{name(b)}",
        share=pct(share, 0),
    )
    return t(
        "find_story_every" if every else "find_story",
        runtimes=titles([r.rows.title for r in group], t),
        states=states,
        games=f"{min(r.shadow['episodes_with_flip'] for r in group):,}",
        episodes=f"{low:,}" if low == high else f"{low:,}–{high:,}",
        median=f"{np.median(firsts):.0f}",
        pair=pair,
    )
