"""Calibration states for the INT8 runtimes: made once per run, the same set for every quantized runtime.

Post-training quantization picks each tensor's INT8 scale from the values it takes on sample inputs. Those inputs
must not come from what the report later judges, or the quantized runtime would be tuned to its own exam: the
states here come from the reference implementation's own play (PyTorch FP32 on the CPU; an ONNX model's own FP32
graph in ONNX Runtime) on seeds outside every pre-registered list of ``data/seeds.json`` (evaluation, fixed-state
harvest, play), and a state equal to one of the 60 fixed states is left out. Each game gives states at evenly
spread points of its length (as the fixed states do), so early, middle and late game are all represented.

The set is cached in the artifacts folder under a name derived from what decides it (the model's hash, the seeds,
the counts, the game protocol), so a later run on the same model reuses it; its seeds, size and SHA-256 go into
every quantized runtime's ``details``. A cached set that is damaged (a truncated file, notes that are not
JSON or do not match the states) is named in one ``note:`` line and made again.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from .agent.protocol import EpisodeInPlay
from .paths import FIXED_STATES, SEEDS


@dataclass(frozen=True)
class CalibrationPlan:
    seeds: tuple = (20000, 20001, 20002, 20003)  # outside data/seeds.json's lists (checked in ``disjoint_reason``)
    states_per_game: int = 128  # 4 games x 128 = 512 states
    max_steps: int | None = None  # None: whole games (tests cut them short)


PLAN = CalibrationPlan()


@dataclass(frozen=True)
class CalibrationSet:
    path: Path
    seconds: float  # playing (or reading the cached file) in this run
    info: dict  # what the run records: seeds, size, SHA-256, who played

    def states(self) -> np.ndarray:
        return np.load(self.path, allow_pickle=False)


def preregistered_seeds(seeds_path: Path = SEEDS) -> set[int]:
    lists = json.loads(Path(seeds_path).read_text())
    return {int(s) for key, value in lists.items() if isinstance(value, list) for s in value}


def disjoint_reason(plan: CalibrationPlan, seeds_path: Path = SEEDS) -> str | None:
    """Why ``plan``'s seeds may not calibrate (they overlap a pre-registered list), or None."""
    shared = sorted(set(plan.seeds) & preregistered_seeds(seeds_path))
    if shared:
        return f"calibration seeds {shared} are pre-registered in {Path(seeds_path).name}; choose others"
    return None


def plan_key(plan: CalibrationPlan, model_sha256: str, task=None) -> str:
    """What decides the set, hashed: the same key, the same states (Breakout's key is what it was before tasks)."""
    from .task import BREAKOUT

    task = task or BREAKOUT
    decided_by = {
        "plan": asdict(plan),
        "model_sha256": model_sha256,
        "protocol": task.protocol(),
        **({"fixed_states": hashlib.sha256(Path(FIXED_STATES).read_bytes()).hexdigest()} if task.is_breakout else {}),
    }
    return hashlib.sha256(json.dumps(decided_by, sort_keys=True).encode()).hexdigest()[:16]


def reference_q_function(model):
    """The reference implementation's Q-function: PyTorch FP32 on the CPU, or an ONNX model's own graph."""
    if model.format == "onnx":
        import onnxruntime as ort

        session = ort.InferenceSession(str(model.path), providers=["CPUExecutionProvider"])
        name = session.get_inputs()[0].name
        return lambda observation: session.run(None, {name: np.asarray(observation)[None]})[0][
            0
        ], f"ONNX Runtime {ort.__version__} FP32 (CPU)"
    from .agent.shipped import torch_q_function

    return torch_q_function(model.torch_model()), "PyTorch FP32 (CPU)"


def harvest(q_function, plan: CalibrationPlan, fixed: np.ndarray, task=None) -> tuple[np.ndarray, int]:
    """States at evenly spread points of each game (``states_per_game`` each, or every step of a shorter game),
    less any equal to a fixed state; and how many were left out for that. ``task``: the game (default Breakout)."""
    from .task import BREAKOUT

    task = task or BREAKOUT
    env, decisions, dtype = task.make_env(), task.decisions(), np.dtype(task.observation.dtype)
    fixed_bytes = {s.tobytes() for s in fixed}
    kept, dropped = [], 0
    try:
        for seed in plan.seeds:
            game, seen = EpisodeInPlay(env, seed, task.epsilon, plan.max_steps, decisions.policy(seed)), []
            while not game.done:
                seen.append(np.array(game.observation, dtype))
                game.step(q_function(game.observation))
            n = len(seen)
            steps = sorted({int((k + 0.5) * n / plan.states_per_game) for k in range(plan.states_per_game)})
            for step in steps:
                if seen[step].tobytes() in fixed_bytes:
                    dropped += 1
                else:
                    kept.append(seen[step])
    finally:
        env.close()
    return np.stack(kept).astype(dtype), dropped


def cache_damage(path: Path) -> str | None:
    """Why the cached calibration set at ``path`` (and its ``.json`` notes) cannot be reused: "absent" where
    neither file is there, a reason where one is missing, unreadable or does not match the other; None when intact."""
    meta = path.with_suffix(".json")
    if not path.exists() and not meta.exists():
        return "absent"
    if not path.exists() or not meta.exists():
        return f"{(meta if path.exists() else path).name} is missing"
    try:
        recorded = json.loads(meta.read_text())
    except (ValueError, UnicodeDecodeError):
        return f"{meta.name} is not readable JSON"
    if not isinstance(recorded, dict) or recorded.get("sha256") != hashlib.sha256(path.read_bytes()).hexdigest():
        return f"{path.name} does not match the SHA-256 in {meta.name}"
    try:
        np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError):
        return f"{path.name} is not a readable array"
    return None


def calibration_set(model, artifacts, plan: CalibrationPlan | None = None) -> CalibrationSet:
    """This run's calibration set (made at most once per run through ``artifacts``; reused from the artifacts
    folder when a run before made the same one)."""
    plan = plan or PLAN
    reason = disjoint_reason(plan)
    if reason:
        raise ValueError(reason)
    task = model.task
    key = plan_key(plan, model.sha256, task)

    def build(path: Path) -> None:
        meta = path.with_suffix(".json")
        damage = cache_damage(path)
        if damage is None:
            return
        if damage != "absent":
            print(f"note: the calibration cache {path.name} is damaged ({damage}); making it again", file=sys.stderr)
        q_function, played_by = reference_q_function(model)
        start = time.perf_counter()
        # Breakout's fixed states ship with rtreport; another task's are taken from other seeds (no state to drop)
        fixed = np.load(FIXED_STATES) if task.is_breakout else np.empty((0, *task.observation.shape))
        states, dropped = harvest(q_function, plan, fixed, task)
        assert states.shape[1:] == task.observation.shape
        tmp = path.with_suffix(".tmp")
        with open(tmp, "wb") as f:  # raw .npy: byte-stable
            np.save(f, states, allow_pickle=False)
        tmp.replace(path)
        notes = {
            "seeds": list(plan.seeds),
            "states": int(len(states)),
            "states_per_game": plan.states_per_game,
            "max_steps": plan.max_steps,
            "left_out_equal_to_fixed_states": dropped,
            "played_by": played_by,
            "play_seconds": round(time.perf_counter() - start, 3),
            "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
            "key": key,
        }
        meta.write_text(json.dumps(notes, indent=1) + "\n")

    path, seconds = artifacts.make(f"calibration-{key}.npy", build)
    info = json.loads(path.with_suffix(".json").read_text())
    return CalibrationSet(path, seconds, {**info, "file": path.name, "seconds_in_this_run": round(seconds, 3)})
