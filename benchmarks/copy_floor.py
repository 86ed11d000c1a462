"""The floor under any batch=1 decision on a GPU: one 28 KB uint8 state host→device plus one small
device→host copy (the Q-values), from pinned memory, timed like a decision. Compare the best runtime's P50.

    python benchmarks/copy_floor.py [--samples 2000] [--db data/h200.duckdb]
"""
from __future__ import annotations

import argparse
import time

import numpy as np


def copy_floor(samples: int = 2000) -> tuple[float, float]:
    """P50 and P95 in ms of one pinned 28 KB uint8 host→device copy plus a 16-byte device→host copy and a sync."""
    import torch
    if not torch.cuda.is_available():
        raise SystemExit("needs a CUDA GPU")
    host_in = torch.zeros((1, 4, 84, 84), dtype=torch.uint8).pin_memory()
    dev_in = torch.empty_like(host_in, device="cuda")
    dev_out = torch.zeros((1, 4), device="cuda")
    host_out = torch.zeros((1, 4)).pin_memory()
    stream = torch.cuda.current_stream()
    seconds = []
    for i in range(samples + 200):
        t = time.perf_counter()
        dev_in.copy_(host_in, non_blocking=True)
        host_out.copy_(dev_out, non_blocking=True)
        stream.synchronize()
        if i >= 200:
            seconds.append(time.perf_counter() - t)
    return float(np.percentile(seconds, 50)) * 1e3, float(np.percentile(seconds, 95)) * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=2000)
    ap.add_argument("--db", default=None, help="a collect file: print each runtime's P50 over the floor")
    a = ap.parse_args()
    floor, p95 = copy_floor(a.samples)
    print(f"copy floor P50 {floor:.4f} ms (P95 {p95:.4f} ms)")
    if a.db:
        import duckdb
        con = duckdb.connect(a.db, read_only=True)
        rows = con.execute("SELECT runtime_id, quantile_cont(seconds, 0.5) * 1e3 FROM latency WHERE kind = 'decision' "
                           "GROUP BY 1 ORDER BY 2").fetchall()
        print(f"{'runtime':<22} {'P50 ms':>9} {'x floor':>8}")
        for rid, p50 in rows:
            print(f"{rid:<22} {p50:>9.4f} {p50 / floor:>8.2f}")


if __name__ == "__main__":
    main()
