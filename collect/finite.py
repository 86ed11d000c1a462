"""Outputs are checked before they are believed: a runtime whose Q-values (or actions) are NaN or infinite on a
fixed state or a decision fails with that reason, and nothing is compared with them; a reference whose outputs are
not finite ends the run, since nothing can be compared with it."""

from __future__ import annotations

import numpy as np


class NonFiniteOutputs(Exception):
    """A runtime's outputs are NaN or infinite; the message says on how many of what (``counted``)."""


class ReferenceNotFinite(Exception):
    """The reference's outputs are not finite: nothing can be measured against it; the message says why."""


def counted(outputs, what: str) -> str | None:
    """None where every output is finite; else which: "NaN on 3 of 8 fixed states" (``what``: the plural noun of
    a row, e.g. "fixed states"), "inf on …", or "NaN on 2 and inf on 1 of 8 …" (a row counts where any of its
    outputs is)."""
    q = np.asarray(outputs, dtype=np.float64)
    rows = q.reshape(len(q), -1) if q.ndim > 1 else q.reshape(1, -1)
    with np.errstate(invalid="ignore"):
        nan = np.isnan(rows).any(axis=1)
        inf = np.isinf(rows).any(axis=1) & ~nan
    if not nan.any() and not inf.any():
        return None
    parts = [f"{word} on {int(n.sum())}" for word, n in (("NaN", nan), ("inf", inf)) if n.any()]
    return f"{' and '.join(parts)} of {len(rows)} {what}"


def check(outputs, what: str) -> None:
    """Raise ``NonFiniteOutputs`` ("its outputs are NaN on 8 of 8 fixed states") unless every output is finite."""
    found = counted(outputs, what)
    if found:
        raise NonFiniteOutputs(f"its outputs are {found}")


def check_decision(outputs, seed: int, step: int) -> None:
    """One decision's outputs in play: raise ``NonFiniteOutputs`` naming the seed and the decision."""
    q = np.asarray(outputs)
    if q.dtype.kind == "f" and not np.isfinite(q).all():
        word = "NaN" if np.isnan(q).any() else "inf"
        raise NonFiniteOutputs(f"its outputs are {word} at decision {step} of the game on seed {seed}")
