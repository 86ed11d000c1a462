"""The adoption gates (``gates.toml``): fixed before looking; read by collect (the play margin decides when a
runtime has played enough) and by build (every verdict)."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

DEFAULT_GATES = Path(__file__).with_name("gates.toml")


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
        data = tomllib.loads(path.read_text())
        play = data["play"]
        # gates files of rtreport ≤ 0.1 gave the play gate as a (negative) lower bound
        margin = (
            play["margin_fraction_of_reference_mean"]
            if "margin_fraction_of_reference_mean" in play
            else -play["min_ci_low_fraction_of_reference_mean"]
        )
        if float(margin) < 0:
            raise ValueError("the play margin must not be negative")
        faster = data["faster"]
        statistic = str(faster.get("statistic", "p95")).lower()
        if statistic not in ("p50", "p95"):
            raise ValueError(f"the faster gate's statistic must be p50 or p95, not {statistic!r}")
        # gates files of rtreport ≤ 0.2 named the reduction min_p95_reduction (the statistic was always P95)
        reduction = faster["min_reduction"] if "min_reduction" in faster else faster["min_p95_reduction"]
        measurements = int(faster.get("min_measurements", 3))
        if measurements < 2:
            raise ValueError(
                "the faster gate needs min_measurements of at least 2 (one measurement has no spread "
                "between measurements)"
            )
        written = faster.get("rule_written")
        over_random = float(play.get("margin_fraction_of_gain_over_random", 0.05))
        if over_random < 0:
            raise ValueError("the play margin must not be negative")
        return cls(
            float(reduction),
            float(data["agreement"]["min_same_action_fraction"]),
            float(margin),
            "default" if path == DEFAULT_GATES else path.name,
            statistic,
            measurements,
            None if written is None else str(written),
            over_random,
            float(data["agreement"].get("continuous_action_tolerance", 0.01)),
        )
