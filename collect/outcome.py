"""How a collect run ends, in one last line and an exit status (docs/collecting.md lists them):

0 the run ended and every runtime it tried was measured, or some were (the last line says how many failed);
1 a fault outside any one runtime stopped it (what was measured is kept, marked incomplete);
2 bad input: nothing was written;
3 no runtime produced a measurement: "0 of N runtimes measured" and why;
4 the run's file could not be written (no space, a quota, a read-only file system, no permission): what was
  measured is kept in the hidden partial file, and ``--resume`` continues it once it can be written;
5 a runtime named in ``--runtimes`` failed or cannot run on this machine: the run and its repeats are kept, and
  the line names each such runtime and why;
129, 130, 143: stopped by SIGHUP, SIGINT (Ctrl-C), SIGTERM (what was measured is kept, marked incomplete).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

NOTHING_MEASURED = 3
CANNOT_WRITE = 4
NAMED_NOT_MEASURED = 5


@dataclass
class Tally:
    tried: int
    measured: list = field(default_factory=list)
    failed: list = field(default_factory=list)  # (runtime id, reason, status): not measured after all
    untried: int = 0  # asked for, but this machine cannot try them (their reasons are listed with the failed)

    def line(self) -> str:
        text = f"{len(self.measured)} of {self.tried} runtime{'s' * (self.tried != 1)} measured"
        if not self.failed:
            return text
        if not self.measured:
            return f"{text} ({'; '.join(f'{rid}: {why}' for rid, why, _ in self.failed)[:600]})"
        # failed: an error while measuring; unavailable: found unable to run as it was prepared (its library
        # present, a provider or device it needs not)
        said = [
            f"{n} {word}"
            for word, n in (
                ("failed", sum(st == "failed" for *_, st in self.failed)),
                ("could not run", sum(st != "failed" for *_, st in self.failed)),
            )
            if n
        ]
        more = f", with {self.untried} more this machine cannot try" if self.untried else ""
        return f"{text}, {' and '.join(said)} (listed above{more})"


def tally(con, run_id: str, tried: list[str], untried: int = 0) -> Tally:
    """Of the runtimes this machine could run (``tried``), which hold measurements now and which failed; ``untried``
    counts those asked for that it cannot try at all."""
    status = {
        rid: (st, why)
        for rid, st, why in con.execute(
            "SELECT runtime_id, status, reason FROM runtimes WHERE run_id = ?", [run_id]
        ).fetchall()
    }
    out = Tally(len(tried), untried=untried)
    for rid in tried:
        st, why = status.get(rid, ("not reached", None))
        if st == "available":
            out.measured.append(rid)
        else:
            out.failed.append((rid, why or st, st))
    return out


def named_not_measured(path: Path, named: list[str]) -> str | None:
    """The runtimes of ``named`` that the file at ``path`` holds no measurement of, in one line (None: all were)."""
    import duckdb

    con = duckdb.connect(str(path), read_only=True)
    try:
        status = {
            rid: (st, why) for rid, st, why in con.execute("SELECT runtime_id, status, reason FROM runtimes").fetchall()
        }
    finally:
        con.close()
    missing = [(rid, *status.get(rid, ("not reached", None))) for rid in named]
    missing = [(rid, why or st) for rid, st, why in missing if st != "available"]
    if not missing:
        return None
    which = "; ".join(f"{rid}: {why}" for rid, why in missing)[:600]
    return f"{len(missing)} of the {len(named)} runtimes named by --runtimes not measured ({which})"


def next_steps(where: Path) -> str:
    """What to run after a run that stopped: go on, or publish what is there."""
    return f"rtreport collect --resume {where} continues it; rtreport build {where.parent} publishes what is there"


def write_failed(e: BaseException, why: str, target, kept: bool, source: Path | None) -> str:
    """The one line for a run whose file (or folder) could not be written."""
    path = getattr(e, "path", None) or getattr(e, "filename", None) or target.partial
    untouched = (
        f"{target.out} is untouched" if target.out.exists() or source is not None else f"{target.out} was not created"
    )
    when = "once there is space" if "space" in why or "quota" in why else "once it can be written"
    if not kept:
        target.remove_partial()
        return f"cannot write {path}: {why}; nothing was measured and {untouched}"
    return (
        f"cannot write {path}: {why}; what was measured is kept in {target.partial} (with its .wal, if any) "
        f"and {untouched}; {when}, rtreport collect --resume {target.out} continues it"
    )
