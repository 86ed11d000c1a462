"""Stable-Baselines3 Atari agents: rtreport's reference plays PongNoFrameskip-v4 as SB3's own evaluation does
(``make_atari_env`` + ``VecFrameStack(n_stack=4)``, deterministic), observation for observation and action for
action, for a PPO (logits) and a DQN (Q-values) CnnPolicy trained for a few steps; and end to end, a PPO ``.zip``
through ``rtreport collect`` and ``rtreport build``."""

from __future__ import annotations

import html

import duckdb
import numpy as np
import pytest
import torch
from click.testing import CliRunner

from collect import tasks
from collect.agent.protocol import EpisodeInPlay
from collect.model_input import load_model
from rtreport_cli.main import main
from sb3_play import REFERENCE, assert_plays_as_sb3, collect, machine_pages, played, sb3_atari_env
from site_gen.i18n import Translator

ENV = "PongNoFrameskip-v4"
SEEDS = (3, 11)
STEPS = 150  # decisions compared per seed


def _sb3_env(seed: int):
    return sb3_atari_env(ENV, seed)


@pytest.fixture(scope="module", params=["PPO", "DQN"])
def agent(request, tmp_path_factory):
    import stable_baselines3 as sb3

    kwargs = (
        {"n_steps": 64, "batch_size": 32, "n_epochs": 1}
        if request.param == "PPO"
        else {"buffer_size": 500, "learning_starts": 32, "train_freq": 16}
    )
    model = getattr(sb3, request.param)("CnnPolicy", _sb3_env(0), seed=0, device="cpu", **kwargs)
    model.learn(128)
    path = tmp_path_factory.mktemp("pong") / f"{request.param.lower()}_pong.zip"
    model.save(path)
    return request.param, path, type(model).load(path, device="cpu")


def test_reference_plays_as_sb3_evaluates(agent):
    algorithm, path, model = agent
    source = load_model(path, tasks.for_env(ENV))
    task = source.task
    assert task.atari_preprocessing == "sb3" and task.epsilon == 0.0
    assert task.outputs == ("q-values" if algorithm == "DQN" else "logits")
    protocol = task.protocol()
    assert protocol["atari"]["sticky_action_probability"] == 0.0 and protocol["atari"]["noop_max"] == 30
    assert tasks.from_protocol(protocol) == task
    module = source.torch_model()
    for seed in SEEDS:
        sb3_env = _sb3_env(seed)
        sb3_obs = sb3_env.reset()
        env = task.make_env()
        game = EpisodeInPlay(env, seed, task.epsilon, policy=task.decisions().policy(seed))
        for _ in range(STEPS):
            expected = np.transpose(sb3_obs[0], (2, 0, 1))  # VecTransposeImage: what the CnnPolicy sees
            np.testing.assert_array_equal(game.observation, expected)
            sb3_action, _ = model.predict(sb3_obs, deterministic=True)
            with torch.inference_mode():
                outputs = module(torch.from_numpy(game.observation[None])).numpy()[0]
            assert game.step(outputs) == int(sb3_action[0])
            sb3_obs, _, done, _ = sb3_env.step(sb3_action)
            assert game.done == bool(done[0])
            if game.done:
                break
        env.close()
        sb3_env.close()


def test_v4_id_is_known_and_rtreport_protocol_keeps_its_files():
    task = tasks.for_env(ENV)
    assert task.name == "Pong" and task.game == "pong" and task.atari_preprocessing == "sb3"
    breakout = tasks.for_env(None).protocol()
    assert "atari" not in breakout and breakout["eval_epsilon"] == 0.01
    assert tasks.from_protocol(breakout).atari_preprocessing == "rtreport"


def test_an_evaluation_epsilon_the_sb3_protocol_cannot_honour_is_refused(agent, tmp_path):
    """SB3's Atari evaluation is greedy: a run configuration's own ε is refused in one line, never dropped."""
    _, path, _ = agent
    config = tmp_path / "run.toml"
    config.write_text("[policy]\nepsilon = 0.05\n")
    for env in (ENV, "ALE/Pong-v5"):
        out = tmp_path / "run.duckdb"
        result = CliRunner().invoke(
            main, ["collect", "--quick", "--env", env, "--model", str(path), "--config", str(config), "--out", str(out)]
        )
        errors = [line for line in result.output.splitlines() if line.strip()]
        assert result.exit_code == 2 and len(errors) == 1, result.output
        assert "greedy (ε 0)" in errors[0] and "epsilon of 0.05" in errors[0] and not out.exists()


@pytest.fixture(scope="module")
def pong_run(tmp_path_factory):
    """A PPO CnnPolicy trained on Pong the SB3 documentation's way (``make_atari_env(n_envs=1)`` +
    ``VecFrameStack(n_stack=4)``) for a few hundred steps and saved as a ``.zip``; a real quick collect of it with
    ONNX Runtime beside the reference, and a real build."""
    import ale_py
    import gymnasium as gym
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_atari_env
    from stable_baselines3.common.vec_env import VecFrameStack

    gym.register_envs(ale_py)
    root = tmp_path_factory.mktemp("pong-run")
    env = VecFrameStack(make_atari_env(ENV, n_envs=1, seed=0), n_stack=4)
    PPO("CnnPolicy", env, seed=0, device="cpu", n_steps=64, batch_size=32, n_epochs=1).learn(256).save(
        root / "ppo_pong.zip"
    )
    env.close()
    out = collect(
        root, "--rounds", "1", "--env", ENV, "--model", root / "ppo_pong.zip", runtimes=f"{REFERENCE},ort-cpu-fp32"
    )
    site = root / "site"
    result = CliRunner().invoke(main, ["build", str(out), "--out", str(site)])
    assert result.exit_code == 0, result.output
    return PPO.load(root / "ppo_pong.zip", device="cpu"), out, site


def test_a_pong_ppo_zip_collected_end_to_end_plays_as_sb3_evaluates(pong_run):
    """The reference's games are SB3's deterministic evaluation of the same seeds through ``make_atari_env``: the
    same return, the same number of steps and the same action at every step, on every seed the run played
    (``--quick`` plays the first 150 decisions of each game, so SB3's game is cut there too); ONNX Runtime chooses
    the reference's action on every fixed state and every decision of play; the file and both languages' machine
    page say the SB3 protocol."""
    model, out, site = pong_run
    protocol = assert_plays_as_sb3(out, model, ENV, atari=True)
    atari = protocol["atari"]
    assert atari["preprocessing"] == "stable-baselines3" and atari["epsilon"] == 0.0
    assert atari["sticky_action_probability"] == 0.0 and atari["noop_max"] == 30 and atari["fire_on_reset"] is True
    assert protocol["outputs"] == "logits"
    con = duckdb.connect(str(out), read_only=True)
    try:
        decisions, same = con.execute(
            "SELECT sum(decisions), sum(same) FROM shadow WHERE runtime_id = 'ort-cpu-fp32'"
        ).fetchone()
        states = con.execute(
            "SELECT r.action = c.action FROM state_q r JOIN state_q c USING (run_id, state_index) "
            "WHERE r.runtime_id = ? AND c.runtime_id = 'ort-cpu-fp32'",
            [REFERENCE],
        ).fetchall()
    finally:
        con.close()
    assert decisions == sum(steps for _, steps, _ in played(out)[0].values()) and same == decisions
    assert len(states) == 8 and all(equal for (equal,) in states)
    pages = {lang: html.unescape(page) for lang, page in machine_pages(site).items()}
    for lang, page in pages.items():
        t = Translator(lang)
        said = t("atari_protocol_sb3", sticky="0", noops=30, fire=t("atari_fire_yes"))
        assert said in page, (lang, said)
    assert "up to 30 no-op starts" in pages["en"] and "開局最多 30 次 no-op" in pages["zh-tw"]
