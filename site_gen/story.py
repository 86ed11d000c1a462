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
    meanings = res.rows.run.get("protocol", {}).get("action_meanings") or []

    def name(x):
        return meanings[x] if x < len(meanings) else str(x)

    def commonest(runtimes) -> tuple:
        pairs: dict = {}
        for r in runtimes:
            for k, n in r.shadow["pairs"].items():
                pairs[k] = pairs.get(k, 0) + n
        (a, b), n = max(pairs.items(), key=lambda kv: kv[1])
        return (a, b), n / sum(pairs.values())

    def said(pair, share) -> str:
        kind = "flips_mostly" if share > 0.5 else "flips_most_often"
        return claims.say(
            t,
            kind,
            kind,
            {"share": share, "largest": True},
            None,
            pair=f"{name(pair[0])}→{name(pair[1])}",
            share=pct(share, 0),
        )

    # the commonest change, of the group where every runtime's own commonest is the same one, else runtime by runtime
    own = [commonest([r]) for r in group]
    if len({p for p, _ in own}) == 1:
        pair = said(*commonest(group))
    else:
        pair = t("semi").join(t("flips_of", runtime=r.rows.title, flips=said(*o)) for r, o in zip(group, own))
    states = group[0].agreement["states"]
    # "near-ties the fixed states rarely contain": the flips' median margin (the reference's top-two gap where they
    # happened) is one that at most a tenth of the fixed states come as close as
    near = float(np.median([m for r in group for m in r.shadow["flip_margins"]]))
    fixed = np.asarray(group[0].agreement["reference_margin"], dtype=float)
    e = {"states": int(fixed.size), "as_close": int((fixed <= near).sum())}
    # the runtimes may have shadowed different numbers of games (one decided at an earlier look): a range then
    every = all(r.shadow["episodes_with_flip"] == r.shadow["episodes"] for r in group)
    low, high = min(r.shadow["episodes"] for r in group), max(r.shadow["episodes"] for r in group)
    key = "find_story_every" if every else "find_story"
    params = dict(
        runtimes=titles([r.rows.title for r in group], t),
        states=states,
        games=f"{min(r.shadow['episodes_with_flip'] for r in group):,}",
        episodes=f"{low:,}" if low == high else f"{low:,}–{high:,}",
        median=f"{np.median(firsts):.0f}",
        pair=pair,
    )
    if claims.check("near_ties", e):
        return claims.say(t, "near_ties", key, e, None, **params)
    return t(key + "_margins", **params)
