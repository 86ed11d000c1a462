"""The floor under any batch=1 decision on a GPU: one 28 KB uint8 state host→device plus one small
device→host copy (the Q-values), from pinned memory, timed like a decision. Compare the best runtime's P50.
(`rtreport collect` measures and stores the same floor on GPU machines; this prints it on its own.)

    python benchmarks/copy_floor.py [--samples 2000] [--db data/h200.duckdb]
"""

from __future__ import annotations

import argparse

import numpy as np

from collect.costs import copy_floor
from fingerprint import fingerprint  # noqa: E402  (benchmarks/fingerprint.py)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=2000)
    ap.add_argument("--db", default=None, help="a collect file: print each runtime's P50 over the floor")
    a = ap.parse_args()
    print(fingerprint(), flush=True)
    seconds = copy_floor(a.samples)
    if seconds is None:
        raise SystemExit("needs a CUDA GPU")
    floor, p95 = float(np.percentile(seconds, 50)) * 1e3, float(np.percentile(seconds, 95)) * 1e3
    print(f"copy floor P50 {floor:.4f} ms (P95 {p95:.4f} ms)")
    if a.db:
        import duckdb

        con = duckdb.connect(a.db, read_only=True)
        rows = con.execute(
            "SELECT runtime_id, quantile_cont(seconds, 0.5) * 1e3 FROM latency WHERE kind = 'decision' "
            "GROUP BY 1 ORDER BY 2"
        ).fetchall()
        print(f"{'runtime':<22} {'P50 ms':>9} {'x floor':>8}")
        for rid, p50 in rows:
            print(f"{rid:<22} {p50:>9.4f} {p50 / floor:>8.2f}")


if __name__ == "__main__":
    main()
