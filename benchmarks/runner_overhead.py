"""Does the harness inflate what it measures? For each runner, the P50 that collect stores
(``measure.decision_latency`` through the runner interface) against a minimal hand-written loop
calling the same runtime directly, in the same process, in alternating blocks.

    python benchmarks/runner_overhead.py [--runtimes torch-cpu-fp32,ort-cpu-fp32] [--samples 2000]

Prints one row per runtime: harness P50, hand-loop P50, and their ratio (goal <= 1.10).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from collect import measure, paths
from collect.artifacts import Artifacts
from collect.model_input import load_model
from collect.registry import all_runtimes
from fingerprint import fingerprint  # noqa: E402  (benchmarks/fingerprint.py)


def hand_loop(runner, states, samples):
    """The runtime called directly: no interface, no checks; the same work per decision."""
    rid = runner.info.id
    views = [states[i : i + 1] for i in range(len(states))]
    clock = time.perf_counter
    out = []
    if rid.startswith("torch") and rid.endswith(("-graph", "-compile")):
        import torch

        host_in, static_in, graph, static_out, host_out = (
            runner.host_in,
            runner.static_in,
            runner.graph,
            runner.static_out,
            runner.host_out,
        )
        stream = torch.cuda.current_stream(runner._torch_device)
        for i in range(samples):
            x = views[i % len(views)]
            t = clock()
            host_in.numpy()[...] = x
            static_in.copy_(host_in, non_blocking=True)
            graph.replay()
            host_out.copy_(static_out, non_blocking=True)
            stream.synchronize()
            int(host_out.numpy()[0].argmax())
            out.append(clock() - t)
    elif rid.startswith("ort-cuda") and rid.endswith("-graph"):
        sess, b, x_in, y = runner.session, runner.binding, runner.graph_in, runner.graph_out
        for i in range(samples):
            x = views[i % len(views)]
            t = clock()
            x_in.update_inplace(x)
            sess.run_with_iobinding(b)
            int(y.numpy()[0].argmax())
            out.append(clock() - t)
    elif rid.startswith("torch"):
        import torch

        model, device = runner.model, runner._torch_device
        with torch.inference_mode():
            for i in range(samples):
                x = views[i % len(views)]
                t = clock()
                int(model(torch.from_numpy(x).to(device)).float().cpu().numpy()[0].argmax())
                out.append(clock() - t)
    elif rid == "ort-cpu-fp32":
        sess, name = runner.session, runner.input_name
        for i in range(samples):
            x = views[i % len(views)]
            t = clock()
            int(sess.run(None, {name: x})[0][0].argmax())
            out.append(clock() - t)
    elif rid.startswith("ort-cuda"):
        sess, b = runner.session, runner.session.io_binding()
        for i in range(samples):
            x = views[i % len(views)]
            t = clock()
            b.bind_cpu_input(runner.input_name, x)
            b.bind_output(runner.output_name, "cpu")
            sess.run_with_iobinding(b)
            int(b.copy_outputs_to_cpu()[0][0].argmax())
            out.append(clock() - t)
    else:
        raise SystemExit(f"no hand loop for {rid}")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runtimes", default=None)
    ap.add_argument("--samples", type=int, default=2000)
    ap.add_argument("--blocks", type=int, default=5, help="alternating harness/hand blocks per runtime")
    a = ap.parse_args()
    print(fingerprint(), flush=True)
    model = load_model(paths.AGENT_WEIGHTS)
    states = np.load(paths.FIXED_STATES)
    wanted = a.runtimes.split(",") if a.runtimes else None
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        artifacts = Artifacts(Path(tmp), model.onnx_source())
        for spec in all_runtimes():
            rid = spec.id
            if (wanted and rid not in wanted) or spec.make is None or spec.check(model):
                continue
            with spec.make(model, artifacts, 0) as runner:
                measure.decision_latency(runner, states, 200, 0)  # warm-up
                harness, hand = [], []
                per_block = a.samples // a.blocks
                for _ in range(a.blocks):
                    harness += measure.decision_latency(runner, states, 0, per_block)
                    hand += hand_loop(runner, states, per_block)
            p_h, p_d = np.percentile(harness, 50) * 1e3, np.percentile(hand, 50) * 1e3
            rows.append((rid, p_h, p_d, p_h / p_d))
    print(f"{'runtime':<18} {'harness P50 ms':>15} {'hand loop P50 ms':>17} {'ratio':>7}")
    for rid, p_h, p_d, ratio in rows:
        print(f"{rid:<18} {p_h:>15.4f} {p_d:>17.4f} {ratio:>7.3f}")


if __name__ == "__main__":
    main()
