"""Whether a runtime's decisions reproduce between processes: the fixed states' Q-values that a repeat computed
in a fresh process (``repeat_state_q``) against the run's first measurement (``state_q``), bit for bit.
Pure functions over plain rows; no I/O."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Reproduction:
    states: int  # fixed states measured both times
    q_differ: int  # states whose Q-values differ in at least one bit
    action_differ: int  # states whose greedy action (argmax, ties to the lowest index) differs

    @property
    def identical(self) -> bool:
        """Every state compared, and every Q-value the same bits."""
        return self.states > 0 and self.q_differ == 0


def compare(first: dict, again: dict) -> Reproduction:
    """``first``, ``again``: {state index: Q-values}; states in only one of them are not compared."""
    common = sorted(set(first) & set(again))
    q_differ = action_differ = 0
    for i in common:
        a, b = np.asarray(first[i], np.float32), np.asarray(again[i], np.float32)
        if a.shape != b.shape or not np.array_equal(a.view(np.uint32), b.view(np.uint32)):
            q_differ += 1
        if a.size and b.size and int(np.argmax(a)) != int(np.argmax(b)):
            action_differ += 1
    return Reproduction(len(common), q_differ, action_differ)


def by_repeat(first_rows, repeat_rows) -> dict:
    """{(runtime id, repeat): Reproduction} from ``state_q`` rows (runtime id, state index, Q-values) and
    ``repeat_state_q`` rows (runtime id, repeat, state index, Q-values)."""
    first: dict = {}
    for rid, i, q in first_rows:
        first.setdefault(rid, {})[int(i)] = q
    again: dict = {}
    for rid, k, i, q in repeat_rows:
        again.setdefault((rid, int(k)), {})[int(i)] = q
    return {key: compare(first.get(key[0], {}), q) for key, q in sorted(again.items())}


def in_words(r: Reproduction) -> str:
    """One line for the terminal (the report's own words come from site_gen's translations)."""
    if r.states == 0:
        return "no fixed state to compare"
    if r.identical:
        return f"bit for bit the first measurement's Q-values on all {r.states} fixed states"
    return (
        f"Q-values differ from the first measurement's on {r.q_differ} of {r.states} fixed states, "
        f"the action on {r.action_differ}: not reproducible"
    )


MIN_FRESH_PROCESSES = 2  # repeats that must agree bit for bit before a runtime is called reproducible


def cache_at_start(details_by_runtime: dict) -> int | None:
    """How many files one process's compile cache (Inductor's) held before it compiled anything, from the runtimes'
    ``details`` of that process: ``inductor_cache.files_at_process_start``, or, in files that did not record it,
    the least ``files_before_compile`` of its compiled runtimes (the first to compile saw the cache as the process
    found it; a later one also sees the files the first wrote). None: nothing in the process compiled."""
    counts = []
    for details in details_by_runtime.values():
        cache = (details or {}).get("inductor_cache")
        if cache:
            counts.append(cache.get("files_at_process_start", cache.get("files_before_compile")))
    counts = [int(c) for c in counts if c is not None]
    return min(counts) if counts else None


def standing(first: dict, again: dict, compiled: bool, carried: dict) -> dict | None:
    """Whether a runtime is shown reproducible between processes, from its first measurement's fixed-state Q-values
    (``first``: state -> Q-values) and each repeat's (``again``: repeat -> {state -> Q-values}).

    ``compiled``: the runtime compiles its kernels in each process (``torch.compile``), so only repeats that
    started without a carried compile cache (``carried``: repeat -> files the process's cache held at its start,
    or None where not recorded) show whether compiling again gives the same bits. Returns None without a repeat;
    else {reproducible: True (at least ``MIN_FRESH_PROCESSES`` such repeats, all equal bit for bit) | False (some
    repeat differs) | None (none differs, but too few repeats to show it), repeats, fresh (the repeats that count),
    needed, differing_repeats, states, q_differ, action_differ (the worst repeat's), per_repeat}."""
    per = {k: r for k, q in sorted(again.items()) if (r := compare(first, q)).states}
    if not per:
        return None
    worst = max(per.values(), key=lambda r: (r.action_differ, r.q_differ))
    differing = [k for k, r in per.items() if not r.identical]
    fresh = [k for k in per if not compiled or carried.get(k) == 0]
    verdict = False if differing else True if len(fresh) >= MIN_FRESH_PROCESSES else None
    return {
        "reproducible": verdict,
        "repeats": len(per),
        "fresh": len(fresh),
        "needed": MIN_FRESH_PROCESSES,
        "compiled": compiled,
        "differing_repeats": len(differing),
        "states": min(r.states for r in per.values()),
        "q_differ": worst.q_differ,
        "action_differ": worst.action_differ,
        "per_repeat": {
            k: {
                "states": r.states,
                "q_differ": r.q_differ,
                "action_differ": r.action_differ,
                "cache_files_at_start": carried.get(k),
            }
            for k, r in per.items()
        },
    }
