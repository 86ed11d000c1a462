"""Recompute the fixed states' Q-values of some runtimes here and compare them bit for bit with what a run file
stored: does this machine, with this code, still compute what the file's runtimes computed (e.g. after a change
to how a runner issues its work)?

    python benchmarks/stored_states.py data/nvidia-h200.duckdb --runtimes ort-cuda-fp16,ort-cuda-fp16-graph

Per runtime: how many of the stored states' Q-values are bit-identical, the largest absolute difference and how
many greedy actions agree. Exit 1 if any runtime differs in any bit.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from collect import paths  # noqa: E402
from collect.artifacts import Artifacts  # noqa: E402
from collect.model_input import load_model  # noqa: E402
from collect.registry import all_runtimes  # noqa: E402
from fingerprint import fingerprint  # noqa: E402  (benchmarks/fingerprint.py)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file", type=Path)
    ap.add_argument("--runtimes", required=True, help="comma-separated runtime ids")
    args = ap.parse_args()
    print(fingerprint(), flush=True)
    import duckdb

    try:
        con = duckdb.connect(str(args.file), read_only=True)
        con.execute("SELECT 1 FROM state_q LIMIT 1")
    except duckdb.Error as e:
        print(f"cannot read fixed-state Q-values from {args.file}: {str(e).splitlines()[0]}", file=sys.stderr)
        return 2
    specs = {s.id: s for s in all_runtimes()}
    unknown = [rid for rid in args.runtimes.split(",") if rid not in specs]
    if unknown:
        print(f"unknown runtime {', '.join(unknown)}; known: {', '.join(specs)}", file=sys.stderr)
        return 2
    model = load_model(paths.AGENT_WEIGHTS)
    artifacts = Artifacts(Path(tempfile.mkdtemp(prefix="stored-states-")), model.onnx_source())
    states = np.load(paths.FIXED_STATES)
    differs = False
    for rid in args.runtimes.split(","):
        rows = con.execute(
            "SELECT state_index, q_values FROM state_q WHERE runtime_id = ? ORDER BY state_index", [rid]
        ).fetchall()
        if not rows:
            print(f"{rid}: the file stores no fixed-state Q-values")
            continue
        reason = specs[rid].check(model)
        if reason:
            print(f"{rid}: cannot run here: {reason}")
            continue
        runner = specs[rid].make(model, artifacts, 0)
        runner.prepare()
        try:
            stored = np.array([q for _, q in rows], dtype=np.float32)
            now = np.stack([runner.infer(states[i : i + 1])[0] for i, _ in rows]).astype(np.float32)
        finally:
            runner.close()
        same = (stored.view(np.uint32) == now.view(np.uint32)).all(axis=1)
        actions = int((stored.argmax(axis=1) == now.argmax(axis=1)).sum())
        print(
            f"{rid}: {int(same.sum())} of {len(rows)} states bit-identical to the file; largest difference "
            f"{float(np.abs(stored - now).max()):.3g}; greedy action the same on {actions} of {len(rows)}"
        )
        differs = differs or not same.all()
    return 1 if differs else 0


if __name__ == "__main__":
    sys.exit(main())
