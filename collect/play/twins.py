"""Twins: a runtime and its CUDA-graph capture compute a decision with the same kernels, so in play one of them
can compute it for both.

Why: play is bound by the host, and the eager runtimes' decisions are its largest cost after the emulator (a
profile of the H200 protocol: eager PyTorch FP16 and FP32 and ONNX Runtime FP16 without a graph 39-47 % of
the play processes' time, 0.55-0.94 ms a decision, against 0.10-0.24 ms for a graph's replay). A graph variant
(``Runtime.same_kernels_as``) records its runtime's own decision path once and replays it: the same compute kernels
with the same arguments (a graph may add a copy), launched by the driver instead of the host. Its Q-values should
then be the runtime's, bit for bit, and its decisions can stand for the runtime's in play, checked as below.

The rule, fixed before play and derived from the run's file only (so ``--resume`` applies the same one):
  * a pair is used only when both runtimes are measured and their Q-values on every fixed state are equal bit for
    bit (``state_q``);
  * in every game the runtime still computes every ``CHECK_EVERY``-th decision itself, and each of those is
    compared bit for bit with its twin's; every game stores its counts (table ``twins``), and the report reads a
    runtime's play and agreement as its own only when no checked decision differed;
  * on the check seeds (``Design.check_seeds``) no twin stands in: every runtime computes every decision itself;
  * a twin stands in for the reference only once it is no longer a candidate under test (``Look.twins``);
  * ``collect --no-twins`` turns the rule off.
"""

from __future__ import annotations

import numpy as np

CHECK_EVERY = 8  # in each game, decisions 0, 8, 16, ... of a twinned runtime are also computed by the runtime


def pairs(specs, measured, state_q: dict) -> dict:
    """{runtime id: the twin that computes its decisions in play}: for each spec with ``same_kernels_as``, when
    both are in ``measured`` and their ``state_q`` (runtime id -> array of every fixed state's Q-values) are equal
    bit for bit."""
    out = {}
    for spec in specs:
        base = spec.same_kernels_as
        if not base or base not in measured or spec.id not in measured:
            continue
        a, b = state_q.get(base), state_q.get(spec.id)
        if a is None or b is None or a.shape != b.shape or not len(a):
            continue
        if np.array_equal(_bits(a), _bits(b)):
            out[base] = spec.id
    return out


def for_play(specs, runners: dict, store, owed) -> dict:
    """{runtime id: its twin} for the runtimes still ``owed`` play, from the run's file (``pairs``)."""
    return {rid: twin for rid, twin in pairs(specs, runners, stored_q(store.con, store.run_id)).items() if rid in owed}


def stored_q(con, run_id: str) -> dict:
    """runtime id -> its fixed states' Q-values (rows in state order), from the run's file."""
    rows = con.execute(
        "SELECT runtime_id, q_values FROM state_q WHERE run_id = ? ORDER BY runtime_id, state_index", [run_id]
    ).fetchall()
    out: dict = {}
    for rid, q in rows:
        out.setdefault(rid, []).append(q)
    return {rid: np.asarray(qs, dtype=np.float32) for rid, qs in out.items()}


def _bits(q) -> np.ndarray:
    return np.ascontiguousarray(q, dtype=np.float32).view(np.uint32)


class Stand:
    """One game's twins: which runtimes submit for the asked ones, and the tallies of what each twin computed.
    ``twins``: {runtime id: twin}, only pairs whose twin is prepared in this process."""

    __slots__ = ("twins", "counts")

    def __init__(self, twins: dict):
        self.twins = twins
        self.counts = {rid: [twin, 0, 0, 0] for rid, twin in twins.items()}  # twin, decisions, checked, differing

    def submitted(self, asked: list, step: int) -> list:
        """The runtimes that compute this step's decisions for ``asked``: each twin in place of its runtime, and
        the runtime as well on a checked step."""
        if not self.twins:
            return asked
        check = step % CHECK_EVERY == 0
        out = []
        for rid in asked:
            twin = self.twins.get(rid)
            if twin is not None:
                out.append(twin)
            if twin is None or check:
                out.append(rid)
        return list(dict.fromkeys(out))

    def resolve(self, asked: list, q: dict, step: int, recompute) -> dict:
        """{asked runtime: Q-values}: a twinned runtime's are its twin's; on a checked step its own are compared
        bit for bit with them. A runtime's own failure (on a checked step) is its failure, as without a twin; a
        twin's failure is not its runtime's: the runtime's own Q-values stand (``recompute(rid)`` when it was not
        asked this step) and the twin stands in no more in this game."""
        if not self.twins:
            return q
        check = step % CHECK_EVERY == 0
        out = {}
        for rid in asked:
            twin = self.twins.get(rid)
            if twin is None:
                out[rid] = q[rid]
                continue
            theirs = q[twin]
            if isinstance(theirs, BaseException):
                del self.twins[rid]
                out[rid] = q[rid] if check else recompute(rid)
                continue
            tally = self.counts[rid]
            tally[1] += 1
            out[rid] = theirs
            if check:
                mine = q[rid]
                if isinstance(mine, BaseException):
                    out[rid] = mine
                    continue
                tally[2] += 1
                tally[3] += not np.array_equal(_bits(mine), _bits(theirs))
        return out

    def rows(self) -> dict:
        """{runtime id: (twin, decisions, checked, differing)} of the runtimes a twin stood in for."""
        return {rid: tuple(c) for rid, c in self.counts.items() if c[1]}
