"""What a task needs besides the model's runtimes, for every task that ships none of it (all but Breakout): fixed
states taken from the reference model's own play, and the episodes of a uniformly random policy that anchor the
play margin (``rtreport.play_margin``). Both are made once when a run begins and stored in its file, so a resumed
run, a repeat and the report read the same ones.

The harvest follows the shipped agent's rule (``agent.shipped.harvest_fixed_states``): the harvest seeds of
data/seeds.json, outside the play list, each episode giving ten states at the centres of ten equal slices of its
length, played by the model in PyTorch FP32 eager on the CPU (ONNX Runtime FP32 on the CPU for a model given as
ONNX), greedy with the task's evaluation ε.
"""

from __future__ import annotations

import hashlib

import numpy as np

from .agent.protocol import EpisodeInPlay, Episode
from .finite import NonFiniteOutputs, ReferenceNotFinite, check_decision

STATES_PER_EPISODE = 10
RANDOM_POLICY = "uniform-random"


def harvest(model, seeds, step_cap: int | None = None) -> tuple[np.ndarray, list[dict]]:
    """(states, where each was taken) from the model's play on ``seeds``."""
    from .calibration import reference_q_function

    task, (q_function, _) = model.task, reference_q_function(model)

    def decide(observation):  # the reference's own play: outputs that are not numbers end the run here
        q = q_function(observation)
        try:
            check_decision(q, game.seed, len(game.actions))
        except NonFiniteOutputs as e:
            raise ReferenceNotFinite(
                f"the reference (its own play, where the fixed states are taken): {e}; nothing can be compared with it"
            ) from None
        return q

    env, decisions = task.make_env(), task.decisions()
    states, index = [], []
    try:
        for seed in seeds:
            game, seen = EpisodeInPlay(env, seed, task.epsilon, step_cap, decisions.policy(seed)), []
            while not game.done:
                seen.append(np.array(game.observation, dtype=task.observation.dtype))
                game.step(decide(game.observation))
            steps = len(seen)
            for k in range(min(STATES_PER_EPISODE, steps)):
                step = int((k + 0.5) * steps / min(STATES_PER_EPISODE, steps))
                states.append(seen[step])
                index.append({"seed": int(seed), "step": step, "episode_steps": steps})
    finally:
        env.close()
    return np.stack(states), index


def for_run(store, model, profile, ui, resuming) -> tuple[np.ndarray, list | None]:
    """A run's fixed states: the stored ones (a resumed run), else harvested now, with where each was taken (None
    when they are stored already)."""
    kept = stored(store.con, store.run_id, model.task) if resuming else None
    if kept is not None:
        return kept, None
    from .agent.shipped import load_seeds

    with ui.phase("fixed states: the reference's own play", 1) as tick:
        states, index = harvest(model, load_seeds()["fixed_state_harvest"], profile.episode_step_cap)
        tick(1)
    return states, index


def owe_random(store, task, seeds, design, ui) -> None:
    """The uniformly random policy's episodes on ``seeds`` (a look's) that the file still lacks."""
    have = {
        s
        for (s,) in store.con.execute(
            "SELECT seed FROM baseline_episodes WHERE run_id = ? AND policy = ?", [store.run_id, RANDOM_POLICY]
        ).fetchall()
    }
    owed = [s for s in seeds if s not in have]
    if owed:
        with ui.phase("a uniformly random policy (the play margin's anchor)", len(owed)) as tick:
            episodes = random_episodes(task, owed, design.step_cap)
            tick(len(owed))
        store.add_baseline_episodes(RANDOM_POLICY, episodes)


def stored(con, run_id: str, task) -> np.ndarray | None:
    rows = con.execute("SELECT observation FROM task_states WHERE run_id = ? ORDER BY state_index", [run_id]).fetchall()
    if not rows:
        return None
    shape, dtype = task.observation.shape, np.dtype(task.observation.dtype)
    return np.stack([np.frombuffer(bytes(b), dtype=dtype).reshape(shape) for (b,) in rows])


def fingerprint(states: np.ndarray) -> str:
    """SHA-256 of the states' bytes (C order), as the run's ``fixed_states_sha256``."""
    return hashlib.sha256(np.ascontiguousarray(states).tobytes()).hexdigest()


def random_episodes(task, seeds, step_cap: int | None = None) -> list[Episode]:
    """One episode per seed of a policy that picks every action uniformly at random (its own generator per
    episode, seeded by the seed), in the same environment on the same seeds as the reference."""
    env = task.make_env()
    out = []
    try:
        for seed in seeds:
            rng = np.random.default_rng([int(seed), 1])
            observation, _ = env.reset(seed=int(seed))
            score, steps, done, truncated = 0.0, 0, False, False
            while not done:
                if task.continuous:
                    action = rng.uniform(task.action_low, task.action_high).astype(np.float32)
                else:
                    action = int(rng.integers(task.num_actions))
                _, reward, terminated, cut, _ = env.step(action)
                score, steps = score + float(reward), steps + 1
                capped = step_cap is not None and steps >= step_cap
                done = terminated or cut or capped
                truncated = bool((cut or capped) and not terminated)
            out.append(Episode(int(seed), score, steps, truncated, []))
    finally:
        env.close()
    return out
