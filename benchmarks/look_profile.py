"""Where each look's time went in a real collect, from the run file's ``play_time`` table (collect.play.timing):
per look, its wall time (the main process's), the decisions of every runtime per second, and each component's
share of the play processes' summed wall time.

    python benchmarks/look_profile.py data/nvidia-h200.duckdb [--run RUN_ID]

A look's figures are the differences between its totals and the previous look's of the same session and process
(a resumed run's new session starts from zero). "the engine's own Python" is what is left of the play processes'
wall time: the ε draws, argmax, tallies and the scheduling of slots.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fingerprint import fingerprint  # noqa: E402  (benchmarks/fingerprint.py)


def per_look(rows) -> dict:
    """rows (session, look, process, component, calls, seconds) → {(session, look): {process: {component:
    (calls, seconds)}}} of differences from the previous look of the same session and process."""
    totals: dict = defaultdict(dict)
    for session, look, process, component, calls, seconds in rows:
        totals[(session, look)].setdefault(process, {})[component] = (calls, seconds)
    out, last = {}, {}
    for key in sorted(totals):
        session = key[0]
        out[key] = {}
        for process, comps in totals[key].items():
            before = last.get((session, process), {})
            out[key][process] = {
                c: (n - before.get(c, (0, 0.0))[0], s - before.get(c, (0, 0.0))[1]) for c, (n, s) in comps.items()
            }
            last[(session, process)] = comps
    return out


def describe(look: dict) -> list[str]:
    main = look.get(0, {})
    wall = main.get("wall", (0, 0.0))[1]
    workers = {p: c for p, c in look.items() if p != 0} or {0: main}
    summed = defaultdict(lambda: [0, 0.0])
    for comps in workers.values():
        for c, (n, s) in comps.items():
            summed[c][0] += n
            summed[c][1] += s
    process_wall = summed.pop("wall", [0, 0.0])[1]
    cpu = summed.pop("cpu", [0, 0.0])[1]
    decisions = sum(n for c, (n, _) in summed.items() if c.endswith(" fetch"))
    steps = summed.get("emulator step", [0, 0.0])[0]
    lines = [
        f"  wall {wall:7.1f} s, {len(workers)} play process(es); {steps:,} game steps, {decisions:,} runtime "
        f"decisions = {decisions / wall if wall else 0:,.0f}/s; play processes' CPU {cpu / process_wall:.0%} "
        f"of their wall time"
        if process_wall
        else "  (no play process time)"
    ]
    accounted = 0.0
    for c, (n, s) in sorted(summed.items(), key=lambda kv: -kv[1][1]):
        accounted += s
        if process_wall and s / process_wall >= 0.005:
            lines.append(f"    {c:<38} {s / process_wall:6.1%}  {n:>10,} calls  {s / n * 1e6 if n else 0:8.1f} µs each")
    if process_wall:
        lines.append(f"    {'the engine and the games (the rest)':<38} {1 - accounted / process_wall:6.1%}")
    for c in ("storing episodes", "waiting for results"):
        if c in main and 0 in look and len(look) > 1:
            lines.append(f"    main process: {c:<24} {main[c][1]:7.1f} s")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file", type=Path)
    ap.add_argument("--run", help="run id (default: the file's only or newest run)")
    args = ap.parse_args()
    print(fingerprint(), "(this machine reads the file; the figures are the run's)", flush=True)
    import duckdb

    con = duckdb.connect(str(args.file), read_only=True)
    tables = {t for (t,) in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    if "play_time" not in tables:
        print(f"{args.file}: no play_time table (a file made before collect recorded where play's time goes)")
        return 1
    run = args.run or con.execute("SELECT run_id FROM runs ORDER BY started_at DESC LIMIT 1").fetchone()[0]
    cpu, label = con.execute(
        "SELECT cpu || ', ' || cpu_count || ' cores; ' || coalesce(gpu_name, 'no GPU'), label "
        "FROM runs WHERE run_id = ?",
        [run],
    ).fetchone()
    print(f"run {run} ({label}): {cpu}")
    rows = con.execute(
        "SELECT session, look, process, component, calls, seconds FROM play_time WHERE run_id = ? "
        "ORDER BY session, look, process",
        [run],
    ).fetchall()
    for (session, look), processes in per_look(rows).items():
        print(f"session {session}, look {look + 1}:")
        print("\n".join(describe(processes)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
