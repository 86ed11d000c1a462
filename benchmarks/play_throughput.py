"""Play throughput: the old engine (one game per process at a time) against the concurrent engine (many games in
flight per process, ``collect.engine``), side by side in one run on the same prepared runtimes and seeds.

    python benchmarks/play_throughput.py --driver torch-cuda-fp32-graph --configs 1x8,16x4,16x8 --seeds 64
    python benchmarks/play_throughput.py --driver torch-cuda-fp32 --shadows torch-cuda-fp16,torch-cuda-fp16-graph

A config ``SxW`` is S slots in each of W processes (``1xW`` is the old engine); ``SxWm`` the same with the W
processes sharing the GPU through a private CUDA MPS daemon (``collect.mps``). For each config: wall seconds,
decisions per second in aggregate (the driver's and every shadow's batch=1 calls), and whether every episode —
seed, score, action trace, shadow tallies — equals the first config's (it must: an episode depends only on its
seed and the Q-values). Worker start-up (spawning, preparing, compiling) is not timed: every worker has
started (``Players.wait_started``) and played a short warm-up game in each slot before the clock starts.
Goal: >= 12,000 decisions/s on the H200 with a FP32 CUDA-graph runtime.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from collect import paths  # noqa: E402
from collect.agent.shipped import load_seeds  # noqa: E402
from collect.artifacts import Artifacts  # noqa: E402
from collect.play.engine import open_slots  # noqa: E402
from collect.model_input import load_model  # noqa: E402
from collect.play import Players, Task  # noqa: E402
from collect.registry import all_runtimes  # noqa: E402
from fingerprint import fingerprint  # noqa: E402  (benchmarks/fingerprint.py)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--driver", default="torch-cpu-fp32")
    ap.add_argument("--shadows", default="", help="comma-separated runtime ids shown every observation")
    ap.add_argument("--configs", default="1x1,4x1", help="slots x workers[m], comma-separated (m: through MPS)")
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--step-cap", type=int, default=None, help="cut every game at this many decisions")
    ap.add_argument("--json", type=Path, default=None, help="also write the rows here")
    ap.add_argument(
        "--expect",
        type=Path,
        default=None,
        help="JSON {runtime id: {seed: [actions]}} of stored episodes (e.g. from a committed file's "
        '"episodes" rows): every config\'s episodes of the driver must replay them',
    )
    args = ap.parse_args()
    print(fingerprint(), flush=True)
    shadows = tuple(s for s in args.shadows.split(",") if s)
    model = load_model(paths.AGENT_WEIGHTS)
    artifacts = Artifacts(Path(tempfile.mkdtemp(prefix="play-throughput-")), model.onnx_source())
    specs = {s.id: s for s in all_runtimes()}
    unknown = [rid for rid in (args.driver, *shadows) if rid not in specs]
    if unknown:
        print(f"unknown runtime {', '.join(unknown)}; known: {', '.join(specs)}", file=sys.stderr)
        return 2
    configs = args.configs.lower().split(",")
    if not all(
        len(c.split("x")) == 2 and all(v.isdigit() and int(v) > 0 for v in c.removesuffix("m").split("x"))
        for c in configs
    ):
        print(
            f"--configs {args.configs}: give SLOTSxWORKERS pairs such as 1x8,16x4 (16x4m: through MPS)", file=sys.stderr
        )
        return 2
    runners = {}
    for rid in (args.driver, *shadows):
        reason = specs[rid].check(model)
        if reason:
            print(f"{rid}: cannot run here: {reason}")
            return 2
        runners[rid] = specs[rid].make(model, artifacts, 0)
        runners[rid].prepare()
    most_slots = max(int(c.split("x")[0]) for c in configs)
    overlap = open_slots(runners, most_slots)  # the engine's self-check, here where it can be printed
    for rid in runners:
        print(f"{rid}: overlapped decisions {overlap.get(rid, 'none: each slot decides in turn')}")
    seeds = list(load_seeds()["play"])[: args.seeds]
    tasks = [Task(args.driver, shadows, s, args.step_cap) for s in seeds]
    print(
        f"{os.cpu_count()} cores; driver {args.driver}; shadows {', '.join(shadows) or 'none'}; "
        f"{len(seeds)} seeds; step cap {args.step_cap}"
    )
    expect = json.loads(args.expect.read_text()).get(args.driver, {}) if args.expect else {}
    rows, first, ok = [], None, True
    for config in configs:
        slots, workers = (int(v) for v in config.removesuffix("m").split("x"))
        with Players(
            runners, workers, paths.AGENT_WEIGHTS, artifacts, 0, slots=slots, mps=config.endswith("m")
        ) as players:
            players.wait_started()  # every worker started and prepared: the start is not timed
            mps = players.mps_state()
            if mps:
                print(f"{config:>7}: MPS {mps}", flush=True)
            warm = [Task(args.driver, shadows, s, 5) for s in seeds[: max(1, slots * workers)]]
            list(players.run(warm))
            start = time.perf_counter()
            results = list(players.run(tasks))
            wall = time.perf_counter() - start
        faults = [str(f) for _, _, f in results if f is not None]
        if faults:
            print(f"{config}: {faults[0]}")
            return 1
        episodes = [(asdict(r[0]), {k: asdict(t) for k, t in r[2].items()}) for _, r, _ in results]
        decisions = sum(r[0].steps + sum(t.decisions for t in r[2].values()) for _, r, _ in results)
        same = first is None or episodes == first
        differing = set()  # what differs from the first config: the driver's episode, or a shadow's tally
        for (episode, tallies), (episode0, tallies0) in zip(episodes, first or episodes):
            if episode != episode0:
                differing.add("driver")
            differing.update(rid for rid in tallies if tallies[rid] != tallies0.get(rid))
        differing = sorted(differing)
        first = first or episodes
        replayed = [e["actions"] == expect[str(e["seed"])] for e, _ in episodes if str(e["seed"]) in expect]
        row = {
            "config": config,
            "slots": slots,
            "workers": workers,
            "wall_s": round(wall, 2),
            "decisions": decisions,
            "decisions_per_s": round(decisions / wall),
            "steps": sum(r[0].steps for _, r, _ in results),
            "same_episodes_as_first": same,
            "mps": mps,
            "stored_traces_replayed": f"{sum(replayed)}/{len(replayed)}" if replayed else None,
            "differing": differing,
        }
        rows.append(row)
        ok = ok and same and all(replayed)
        print(
            f"{config:>7}: {wall:7.2f} s, {decisions:,} decisions, {decisions / wall:9,.0f} decisions/s, "
            f"episodes {'identical to' if same else 'DIFFERENT (' + ', '.join(differing) + ') from'} "
            f"{rows[0]['config']}" + (f"; stored traces replayed {row['stored_traces_replayed']}" if replayed else ""),
            flush=True,
        )
    for r in runners.values():
        r.close()
    if args.json:
        args.json.write_text(json.dumps({"driver": args.driver, "shadows": shadows, "rows": rows}, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
