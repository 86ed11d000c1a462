"""Whether a latency round ran while other processes loaded the host (pure; the readings come from
``collect.conditions``).

The measure is the share of all cores' time that processes other than this run's used *during the round*: the
CPU busy share from /proc/stat over the round, less this run's own CPU time (the measuring process and its play
workers) over the same interval. It is read directly, not inferred: the 1-min load average, which rtreport also
records, counts runnable threads, and this run's own threads waiting for a core (a play process's thread pool
while two processes share two cores) count there too; on the 2-core VM it read 0.50–1.14 per core "from other
processes" in 27 of 50 rounds during which other processes used 0–5 % of the CPU. A round is loaded when
others used more than ``FOREIGN_LIMIT`` of the cores' time; ``collect`` measures such a round again
(``collect.rounds``), and the pages count how many were taken again and how many still ran loaded.
"""

from __future__ import annotations

FOREIGN_LIMIT = 0.10  # share of all cores' time used by other processes during the round


def foreign_share(conditions: dict) -> float | None:
    """The share of all cores' time other processes used during the round, or None where not recorded."""
    busy, own = conditions.get("cpu_busy"), conditions.get("cpu_busy_own")
    if busy is None or own is None:
        return None
    return max(0.0, float(busy) - float(own))


def loaded(conditions: dict) -> bool:
    """Other processes used more than ``FOREIGN_LIMIT`` of the CPU during the round."""
    share = foreign_share(conditions)
    return share is not None and share > FOREIGN_LIMIT


def reason(conditions: dict) -> str | None:
    """One line for a loaded round (the terminal's and the file's ``flagged``), or None."""
    if not loaded(conditions):
        return None
    return f"other processes used {foreign_share(conditions):.0%} of the CPU during the round"
