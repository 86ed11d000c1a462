"""Run labels: the user's own text, in any script, on every page; an ASCII slug only for URLs and file names."""

from __future__ import annotations

import hashlib
import re
import unicodedata

from .errors import UserError

MAX_LABEL_CHARS = 80


def check_label(text: str) -> str:
    """The label as the user typed it (outer spaces trimmed); refuses what cannot be shown as one line."""
    label = unicodedata.normalize("NFC", str(text)).strip()
    if not label:
        raise UserError("--label is empty; give the machine a name, e.g. --label 'lab RTX 4090'")
    if any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in label):
        raise UserError("--label must be one line of printable text (no control characters or line breaks)")
    if len(label) > MAX_LABEL_CHARS:
        raise UserError(f"--label is {len(label)} characters long; keep it to {MAX_LABEL_CHARS}")
    return label


def slug(label: str) -> str:
    """A stable ASCII name for URLs and files. Latin letters and digits carry over; when anything else
    (CJK, accents, …) is dropped, a short hash of the whole label keeps different labels apart."""
    label = unicodedata.normalize("NFC", str(label)).strip()
    # 72: room for a machine's label, an agent's environment and model, and a run's date (``site_gen.history``)
    base = re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")[:72].strip("-")
    if base and all(ord(c) < 128 for c in label):
        return base
    digest = hashlib.sha256(label.encode("utf-8")).hexdigest()[:8]
    return f"{base}-{digest}" if base else f"run-{digest}"
