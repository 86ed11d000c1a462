"""What the end-to-end tests of Stable-Baselines3 agents share: a real ``rtreport collect --quick``, the episodes
the reference played in it, SB3's own deterministic evaluation of the same seeds (a Gymnasium task behind
``DummyVecEnv``, or an Atari game through ``make_atari_env`` + ``VecFrameStack``), and the built machine page."""

from __future__ import annotations

import json

import duckdb
import gymnasium as gym
from click.testing import CliRunner

from rtreport_cli.main import main

REFERENCE = "torch-cpu-fp32"


def collect(tmp_path, *args, runtimes=REFERENCE):
    out = tmp_path / "run.duckdb"
    result = CliRunner().invoke(
        main,
        [
            "collect",
            "--quick",
            "--repeats",
            "0",
            "--runtimes",
            runtimes,
            "--out",
            str(out),
            "--artifacts",
            str(tmp_path / "art"),
            *map(str, args),
        ],
    )
    assert result.exit_code == 0, result.output
    return out


def played(out, actions=False):
    """The reference's own episodes (seed -> (return, steps, step cap), and with ``actions`` each step's action
    too) and the run's protocol."""
    con = duckdb.connect(str(out), read_only=True)
    try:
        rows = con.execute(
            "SELECT seed, score, steps, step_cap, actions FROM episodes WHERE runtime_id = ? AND source IS NULL "
            "ORDER BY seed",
            [REFERENCE],
        ).fetchall()
        protocol = json.loads(con.execute("SELECT protocol FROM runs").fetchone()[0])
    finally:
        con.close()
    assert rows
    return {seed: (score, steps, cap, *([list(a)] if actions else [])) for seed, score, steps, cap, a in rows}, protocol


class _Return(gym.Wrapper):
    """The environment's own reward summed in float64 (DummyVecEnv hands rewards on as float32); ``episode`` stays
    after the reset DummyVecEnv makes at the episode's end."""

    def reset(self, **kwargs):
        self.total = 0.0
        return self.env.reset(**kwargs)

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.total += float(reward)
        self.episode = self.total
        return obs, reward, terminated, truncated, info


def _episode(model, venv, seed, cap):
    """One deterministic episode of ``model`` on ``venv`` seeded as rtreport seeds it (``seed(s)`` then ``reset()``:
    the environment's ``reset(seed=s)``), cut at ``cap`` decisions: (its actions, the rewards ``venv`` handed on,
    summed)."""
    venv.seed(seed)
    obs, actions, total = venv.reset(), [], 0.0
    while True:
        action, _ = model.predict(obs, deterministic=True)
        obs, reward, done, _ = venv.step(action)
        actions.append(action[0].tolist())
        total += float(reward[0])
        if done[0] or (cap is not None and len(actions) >= cap):
            return actions, total


def sb3_returns(model, env_id, seeds_caps, normalize=None, stack=0):
    """SB3's deterministic evaluation of a Gymnasium task, one DummyVecEnv episode per seed, cut at the run's step
    cap (None: the whole episode); the return is the environment's own reward (``_Return``)."""
    from stable_baselines3.common.vec_env import DummyVecEnv, VecFrameStack, VecNormalize

    out = {}
    for seed, cap in seeds_caps.items():
        venv = DummyVecEnv([lambda: _Return(gym.make(env_id))])
        if normalize is not None:
            venv = VecNormalize.load(str(normalize), venv)
            venv.training, venv.norm_reward = False, False
        if stack:
            venv = VecFrameStack(venv, stack)
        actions, _ = _episode(model, venv, seed, cap)
        out[seed] = (venv.unwrapped.envs[0].episode, len(actions))
        venv.close()
    return out


def sb3_atari_env(env_id, seed=None):
    """An Atari game as the SB3 documentation builds it for a CnnPolicy (``make_atari_env(n_envs=1)`` +
    ``VecFrameStack(n_stack=4)``), without life loss or reward clipping, as rtreport's SB3 protocol plays it."""
    import ale_py
    from stable_baselines3.common.env_util import make_atari_env
    from stable_baselines3.common.vec_env import VecFrameStack

    gym.register_envs(ale_py)
    env = make_atari_env(
        env_id, n_envs=1, seed=seed, wrapper_kwargs={"terminal_on_life_loss": False, "clip_reward": False}
    )
    return VecFrameStack(env, n_stack=4)


def sb3_atari_games(model, env_id, seeds_caps):
    """SB3's deterministic evaluation of an Atari game, one episode per seed, cut at the run's step cap: (its
    return, summed from the rewards the vectorised environment hands on, which are not clipped; its steps; its
    actions)."""
    out = {}
    for seed, cap in seeds_caps.items():
        venv = sb3_atari_env(env_id, seed)
        actions, total = _episode(model, venv, seed, cap)
        out[seed] = (total, len(actions), actions)
        venv.close()
    return out


def assert_plays_as_sb3(out, model, env_id, normalize=None, stack=0, atari=False):
    """The reference's episodes in ``out`` equal SB3's evaluation of the same seeds, return and steps (an Atari
    game's actions too, step by step), each cut at the step cap the run played it with (``--quick`` caps at 150
    decisions; an uncapped run compares whole episodes)."""
    games, protocol = played(out, actions=atari)
    caps = {s: game[2] for s, game in games.items()}
    if atari:
        assert {s: (score, steps, actions) for s, (score, steps, _, actions) in games.items()} == sb3_atari_games(
            model, env_id, caps
        )
    else:
        sb3 = sb3_returns(model, env_id, caps, normalize, stack)
        assert {s: (score, steps) for s, (score, steps, _) in games.items()} == sb3
    return protocol


def machine_pages(site) -> dict:
    return {
        lang: next(p for p in (site / lang / "hardware").glob("*/index.html")).read_text() for lang in ("en", "zh-tw")
    }
