"""The adoption gates (``gates.toml``): fixed before looking; read by collect (the play margin decides when a
runtime has played enough) and by build (every verdict). A gates file is checked against ``SCHEMA`` where it is
read: every missing table and key, every value of the wrong type or out of its range, and every unknown key is
named, in one line (``GatesError``, a ``UserError``: exit 2)."""

from __future__ import annotations

import datetime
import math
import tomllib
from dataclasses import dataclass
from pathlib import Path

from .errors import UserError

DEFAULT_GATES = Path(__file__).with_name("gates.toml")


class GatesError(UserError):
    """A gates file that cannot be used; the message names every problem found."""


def _number(low: float, high: float, high_open: bool = False):
    def check(value):
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            return "a number"
        if value < low or value > high or (high_open and value == high):
            return f"a number from {low:g} to {high:g}{' (not included)' if high_open else ''}"
        return None

    return check


def _count(least: int):
    def check(value):
        if isinstance(value, bool) or not isinstance(value, int):
            return "a whole number"
        return None if value >= least else f"a whole number of at least {least}"

    return check


def _date(value):
    if isinstance(value, datetime.date):
        return None
    try:
        datetime.date.fromisoformat(str(value))
    except ValueError:
        return "a date (YYYY-MM-DD)"
    return None


def _statistic(value):
    return None if isinstance(value, str) and value.lower() in ("p50", "p95") else '"p50" or "p95"'


# table -> key -> (required, check); a required key may be given by its older name (``OLDER_NAMES``)
SCHEMA = {
    "faster": {
        "statistic": (False, _statistic),
        "min_reduction": (True, _number(0, 1, high_open=True)),
        "min_measurements": (False, _count(2)),
        "rule_written": (False, _date),
    },
    "agreement": {
        "min_same_action_fraction": (True, _number(0, 1)),
        "continuous_action_tolerance": (False, _number(0, 1)),
        "continuous_rule_written": (False, _date),
    },
    "play": {
        "margin_fraction_of_reference_mean": (True, _number(0, 1)),
        "margin_fraction_of_gain_over_random": (False, _number(0, 1)),
        "margin_rule_written": (False, _date),
    },
}
# names of rtreport ≤ 0.2 (the reduction; the statistic was always P95) and ≤ 0.1 (the play gate as a negative
# lower bound), still read
OLDER_NAMES = {
    ("faster", "min_reduction"): ("min_p95_reduction", _number(0, 1, high_open=True)),
    ("play", "margin_fraction_of_reference_mean"): ("min_ci_low_fraction_of_reference_mean", _number(-1, 0)),
}


def problems(data: dict) -> list[str]:
    """Every way ``data`` (a parsed gates file) departs from ``SCHEMA``, each in a few words."""
    out = []
    for name, keys in SCHEMA.items():
        table = data.get(name)
        if table is None:
            out.append(f"missing table [{name}] (with {', '.join(k for k, (req, _) in keys.items() if req)})")
            continue
        if not isinstance(table, dict):
            out.append(f"[{name}] must be a table, not a value")
            continue
        for key, (required, check) in keys.items():
            older, older_check = OLDER_NAMES.get((name, key), (None, None))
            if key not in table and older in table:
                key, check = older, older_check
            if key not in table:
                if required:
                    out.append(f"missing key {key} in [{name}]")
                continue
            wanted = check(table[key])
            if wanted:
                out.append(f"[{name}] {key} must be {wanted}, not {table[key]!r}")
        known = set(keys) | {old for (t, _), (old, _) in OLDER_NAMES.items() if t == name}
        out.extend(f"unknown key {key} in [{name}]" for key in table if key not in known)
    out.extend(f"unknown table [{name}]" for name in data if name not in SCHEMA)
    return out


def read(path: Path) -> dict:
    """The gates file parsed and checked: a ``GatesError`` naming every problem, or its tables."""
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise GatesError(f"gates file not found: {path}") from None
    except IsADirectoryError:
        raise GatesError(f"gates file {path} is a folder; give a TOML file such as rtreport/gates.toml") from None
    except UnicodeDecodeError:
        raise GatesError(f"gates file {path} is not text (UTF-8 TOML)") from None
    except tomllib.TOMLDecodeError as e:
        raise GatesError(f"gates file {path} is not valid TOML: {e}") from None
    except OSError as e:
        raise GatesError(f"cannot read gates file {path}: {e.strerror or e}") from None
    found = problems(data)
    if found:
        raise GatesError(f"gates file {path}: {'; '.join(found)}")
    return data


@dataclass(frozen=True)
class Gates:
    min_p95_reduction: float
    min_same_action_fraction: float
    play_margin: float  # fraction of the reference's mean score
    source: str = "default"
    speed_statistic: str = "p95"  # the latency statistic the faster gate compares ("p50" | "p95")
    min_measurements: int = 3  # independent measurements (boots, else processes) the faster gate needs
    rule_written: str | None = None  # when the faster gate's rule was written (ISO date): earlier files re-judged
    play_margin_over_random: float = 0.05  # every task but Breakout: fraction of the reference's gain over random
    action_tolerance: float = 0.01  # continuous actions: agreement within this fraction of each dimension's range

    @classmethod
    def load(cls, path: Path | None = None) -> "Gates":
        path = Path(path) if path else DEFAULT_GATES
        data = read(path)
        play, faster, agreement = data["play"], data["faster"], data["agreement"]
        margin = (
            play["margin_fraction_of_reference_mean"]
            if "margin_fraction_of_reference_mean" in play
            else -play["min_ci_low_fraction_of_reference_mean"]
        )
        reduction = faster["min_reduction"] if "min_reduction" in faster else faster["min_p95_reduction"]
        written = faster.get("rule_written")
        return cls(
            float(reduction),
            float(agreement["min_same_action_fraction"]),
            float(margin),
            "default" if path == DEFAULT_GATES else path.name,
            str(faster.get("statistic", "p95")).lower(),
            int(faster.get("min_measurements", 3)),
            None if written is None else str(written),
            float(play.get("margin_fraction_of_gain_over_random", 0.05)),
            float(agreement.get("continuous_action_tolerance", 0.01)),
        )
