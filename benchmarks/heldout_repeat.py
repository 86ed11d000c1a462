"""Does the next measurement land inside the published speed intervals? (a held-out repeat)

    python benchmarks/heldout_repeat.py PUBLISHED.duckdb HELDOUT.duckdb

PUBLISHED is the committed machine file the site was built from; HELDOUT is a copy of it to which one more
``rtreport collect --repeat`` was added *after* the report was built, in fresh processes, and which is kept out
of ``data/`` (so out of the published figures). For every candidate runtime and for P50 and P95 alike, it takes
the held-out repeat's own ratio to the reference (the geometric mean of its rounds' candidate / reference ratios,
the value the interval predicts) and says whether it lies inside the published 95 % prediction interval for the
next measurement ("what the next measurement will show"); and the same for each runtime's own P50 and P95 in
milliseconds. A fingerprint of both measurements leads the output.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from rtreport import latency_stats  # noqa: E402
from site_gen import analysis, load  # noqa: E402


def _runs(path: Path):
    [run] = load.load_file(path)
    keyed = {rt.runtime_id: analysis.keyed_rounds(rt) for rt in run.runtimes if rt.decision_seconds.size}
    return run, keyed


def main(published: Path, heldout: Path) -> int:
    run, pub = _runs(published)
    run2, held = _runs(heldout)
    if run.run["run_id"] != run2.run["run_id"]:
        raise SystemExit("the held-out file is not a copy of the published run")
    reference = run.run["reference_runtime"]
    known = {k for rounds in pub.values() for k in rounds}
    new = {rid: {k: v for k, v in rounds.items() if k not in known} for rid, rounds in held.items()}
    repeats = sorted({rep for rounds in new.values() for rep, _ in rounds.values()})
    if len(repeats) != 1:
        raise SystemExit(f"the held-out file should add exactly one repeat to the published file; it adds {repeats}")
    print(
        f"published: {published} ({sum(len(v) for v in pub.values()) // max(len(pub), 1)} rounds a runtime, "
        f"repeats {sorted({rep for r in pub.values() for rep, _ in r.values()} - {0})}); held-out repeat "
        f"{repeats[0]} in {heldout}: {max(len(v) for v in new.values())} rounds"
    )
    import duckdb

    con = duckdb.connect(str(heldout), read_only=True)
    for row in con.execute("SELECT repeat, started_at, finished_at, machine FROM repeats ORDER BY repeat").fetchall():
        print(f"  repeat {row[0]}: {row[1]:%Y-%m-%d %H:%M:%S}–{row[2]:%H:%M:%S} UTC, {row[3]}")
    con.close()
    from site_gen.verdict import Gates

    published_result = analysis.analyse(run, Gates.load())  # the intervals exactly as the site publishes them
    lines, ratio_ok = [], {}  # runtime -> [inside?] for its P50 and P95 ratios
    for rid in sorted(pub, key=lambda r: (r != reference, r)):
        for q in latency_stats.STATISTICS:
            checks = []
            result = published_result.runtime(rid)
            own = result.latency["est"][q] if result and result.latency else None
            got = latency_stats.repeat_values(latency_stats.per_round(new.get(rid, {}), q))
            if own and got:
                checks.append(("ms", own, got[0][1]))
            if rid != reference:
                ratio = result.ratios.get(q) if result else None
                got = latency_stats.repeat_values(
                    latency_stats.paired_ratios(new.get(rid, {}), new.get(reference, {}), q)
                )
                if ratio and got:
                    checks.append(("ratio", ratio, got[0][1]))
            for kind, iv, value in checks:
                if iv.get("next_low") is None:  # one measurement: no interval for the next one was published
                    lines.append(
                        f"{rid:26s} {q} {kind:5s} published {iv['value']:.3f}: no next-measurement "
                        f"interval (one measurement)  held-out {value:.3f}"
                    )
                    continue
                ok = iv["next_low"] <= value <= iv["next_high"]
                if kind == "ratio":
                    ratio_ok.setdefault(rid, []).append(ok)
                lines.append(
                    f"{rid:26s} {q} {kind:5s} published {iv['value']:.3f} next [{iv['next_low']:.3f}, "
                    f"{iv['next_high']:.3f}] (typical [{iv['low']:.3f}, {iv['high']:.3f}])  held-out "
                    f"{value:.3f}  {'inside' if ok else 'OUTSIDE'}"
                )
    print("\n".join(lines))
    inside, total = sum(sum(v) for v in ratio_ok.values()), sum(len(v) for v in ratio_ok.values())
    both = sum(all(v) for v in ratio_ok.values())
    print(
        f"ratios inside the published next-measurement interval: {inside} of {total} (P50 and P95); runtimes with "
        f"both inside: "
        f"{both} of {len(ratio_ok)} ({100 * both / max(len(ratio_ok), 1):.0f} %)"
    )
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__.split("\n\n")[1])
    raise SystemExit(main(Path(sys.argv[1]), Path(sys.argv[2])))
