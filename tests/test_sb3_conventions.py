"""Agents as Stable-Baselines3 users save them, end to end: real SB3 training (a few hundred steps), real Gymnasium
and MuJoCo, the real PyTorch runtime, a real DuckDB file and a real build. A model is given as its RL Zoo
experiment folder or its Hugging Face folder, its VecNormalize found there; the reference (PyTorch FP32) plays the
very episodes SB3's own deterministic evaluation plays on the same seeds (``model.predict(obs,
deterministic=True)`` on a ``DummyVecEnv``, behind ``VecNormalize.load`` with ``training=False`` and
``norm_reward=False``); and what the training's preprocessing was is in the run file and on the page, in both
languages."""

from __future__ import annotations

import json
from collections import OrderedDict

import gymnasium as gym
import pytest
import yaml
from click.testing import CliRunner

from rtreport_cli.main import main
from sb3_play import REFERENCE, assert_plays_as_sb3, collect, machine_pages, played, sb3_returns


def _refused(args) -> str:
    result = CliRunner().invoke(main, ["collect", "--quick", "--runtimes", REFERENCE, *map(str, args)])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    return lines[0]


def _zoo_folder(root, algo, env_id, model, config, venv=None):
    """An experiment folder as ``rl_zoo3.train`` saves it: ``<Env>.zip`` and ``<Env>/`` with ``config.yml``,
    ``args.yml`` (``yaml.dump`` of OrderedDicts) and, when training normalised, ``vecnormalize.pkl``."""
    run = root / "logs" / algo / f"{env_id}_1"
    settings = run / env_id
    settings.mkdir(parents=True)
    model.save(run / f"{env_id}.zip")
    if venv is not None:
        venv.save(settings / "vecnormalize.pkl")
    (settings / "config.yml").write_text(yaml.dump(OrderedDict(sorted(config.items()))))
    args = OrderedDict([("algo", algo), ("env", env_id), ("env_kwargs", None), ("n_timesteps", -1), ("seed", 0)])
    (settings / "args.yml").write_text(yaml.dump(args))
    return run


@pytest.fixture(scope="module")
def cheetah(tmp_path_factory):
    """HalfCheetah PPO trained behind VecNormalize, as the RL Zoo trains every MuJoCo task, in the Zoo's layout."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    root = tmp_path_factory.mktemp("cheetah")
    venv = VecNormalize(DummyVecEnv([lambda: gym.make("HalfCheetah-v5")]), gamma=0.99)
    model = PPO("MlpPolicy", venv, seed=0, n_steps=128, batch_size=64, n_epochs=1, policy_kwargs={"net_arch": [16]})
    model.learn(256)
    run = _zoo_folder(
        root, "ppo", "HalfCheetah-v5", model, {"normalize": True, "n_envs": 1, "policy": "MlpPolicy"}, venv
    )
    return run, model


def test_a_zoo_folder_with_vecnormalize_plays_as_sb3_evaluates_and_says_so(tmp_path, cheetah):
    run, model = cheetah
    out = collect(tmp_path, "--model", run)  # the environment from the folder's args.yml
    pkl = run / "HalfCheetah-v5" / "vecnormalize.pkl"
    protocol = assert_plays_as_sb3(out, model, "HalfCheetah-v5", normalize=pkl)
    assert protocol["gym_id"] == "HalfCheetah-v5"
    from collect.agent.network import sha256_file

    norm = protocol["preprocessing"]["normalization"]
    assert norm["applied"] and norm["source"] == "rl-zoo folder" and norm["sha256"] == sha256_file(pkl)
    assert norm["clip"] == 10.0 and norm["epsilon"] == 1e-8
    assert protocol["preprocessing"]["model_folder"]["layout"] == "rl-zoo"
    assert len(protocol["observation_normalization"]["mean"]) == 17
    # without its statistics the same policy plays other games: the normalisation is what made them equal
    unnormalised = sb3_returns(model, "HalfCheetah-v5", {s: cap for s, (_, _, cap) in played(out)[0].items()})
    assert unnormalised != {s: (score, steps) for s, (score, steps, _) in played(out)[0].items()}
    site = tmp_path / "site"
    result = CliRunner().invoke(main, ["build", str(out), "--out", str(site)])
    assert result.exit_code == 0, result.output
    pages = machine_pages(site)
    short = norm["sha256"][:12]
    assert "Observations are normalised as in training" in pages["en"] and short in pages["en"]
    assert "found in the RL Zoo folder" in pages["en"] and "clipped to ±10" in pages["en"]
    assert "觀測值依訓練時的方式正規化" in pages["zh-tw"] and short in pages["zh-tw"]
    assert "在 RL Zoo 資料夾中找到" in pages["zh-tw"] and "RL Zoo 實驗資料夾" in pages["zh-tw"]


def test_a_zoo_folder_trained_with_normalisation_but_without_its_statistics_is_refused(tmp_path, cheetah):
    import shutil

    run, _ = cheetah
    copy = tmp_path / "HalfCheetah-v5_1"
    shutil.copytree(run, copy)
    (copy / "HalfCheetah-v5" / "vecnormalize.pkl").unlink()
    line = _refused(["--model", copy])
    assert "HalfCheetah-v5/config.yml: normalize: true says the model was trained on normalised observations" in line
    assert "--normalize FILE" in line
    # given by the flag instead, it is applied and said to come from there
    out = collect(tmp_path, "--model", copy, "--normalize", run / "HalfCheetah-v5" / "vecnormalize.pkl")
    assert played(out)[1]["preprocessing"]["normalization"]["source"] == "--normalize"
    assert "--env Hopper-v5, but" in _refused(["--model", copy, "--env", "Hopper-v5"])


def test_a_cartpole_ppo_zoo_folder_plays_as_sb3_evaluates(tmp_path):
    from stable_baselines3 import PPO

    model = PPO("MlpPolicy", "CartPole-v1", seed=0, n_steps=64, batch_size=64, policy_kwargs={"net_arch": [16]})
    model.learn(128)
    run = _zoo_folder(tmp_path, "ppo", "CartPole-v1", model, {"n_envs": 1, "policy": "MlpPolicy"})
    out = collect(tmp_path, "--model", run, "--env", "CartPole-v1")
    protocol = assert_plays_as_sb3(out, model, "CartPole-v1")
    assert protocol["preprocessing"]["normalization"] == {"applied": False, "reason": "none found"}


def test_whole_cartpole_episodes_play_as_sb3_evaluates_them(tmp_path, monkeypatch):
    """``--quick`` cuts every game at 150 decisions, so the tests above compare the first 150 steps of each
    episode. Here the quick profile plays whole episodes, and a PPO whose greedy action follows the pole's angular
    velocity (its action head set by hand: logits ±10·θ̇) keeps the pole up for more than 150 steps and then lets
    it fall: SB3's return over the whole episode equals rtreport's, as does the episode's length."""
    from dataclasses import replace

    import torch
    from stable_baselines3 import PPO

    from collect import collect_command

    monkeypatch.setattr(collect_command, "QUICK", replace(collect_command.QUICK, episode_step_cap=None))
    model = PPO("MlpPolicy", "CartPole-v1", seed=0, n_steps=64, batch_size=64, policy_kwargs={"net_arch": []})
    with torch.no_grad():
        model.policy.action_net.weight.copy_(torch.tensor([[0.0, 0.0, 0.0, -10.0], [0.0, 0.0, 0.0, 10.0]]))
        model.policy.action_net.bias.zero_()
    model.save(tmp_path / "ppo.zip")
    out = collect(tmp_path, "--env", "CartPole-v1", "--model", tmp_path / "ppo.zip")
    assert_plays_as_sb3(out, PPO.load(tmp_path / "ppo.zip", device="cpu"), "CartPole-v1")
    games = played(out)[0].values()
    assert all(cap is None for _, _, cap in games)  # whole episodes, none cut by the run
    assert all(150 < steps < 500 for _, steps, _ in games)  # longer than --quick's cap, ended by the pole's fall


def test_a_pendulum_sac_hugging_face_folder_plays_as_sb3_evaluates(tmp_path):
    from stable_baselines3 import SAC

    model = SAC("MlpPolicy", "Pendulum-v1", seed=0, learning_starts=50, policy_kwargs={"net_arch": [16]})
    model.learn(100)
    hub = tmp_path / "sac-Pendulum-v1"
    hub.mkdir()
    model.save(hub / "sac-Pendulum-v1.zip")
    (hub / "env_kwargs.yml").write_text("{}\n")
    (hub / "README.md").write_text(
        "---\nlibrary_name: stable-baselines3\ntags:\n- Pendulum-v1\n- reinforcement-learning\nmodel-index:\n"
        "- name: SAC\n  results:\n  - task:\n      type: reinforcement-learning\n      name: reinforcement-learning\n"
        "    dataset:\n      name: Pendulum-v1\n      type: Pendulum-v1\n---\n\n"
        "# **SAC** Agent playing **Pendulum-v1**\n"
    )
    out = collect(tmp_path, "--model", hub)
    protocol = assert_plays_as_sb3(out, model, "Pendulum-v1")
    folder = protocol["preprocessing"]["model_folder"]
    assert folder["layout"] == "hugging-face" and folder["env_id_from"] == "README.md"
    assert folder["model_file"] == "sac-Pendulum-v1.zip"


def test_reward_only_statistics_are_recognised_and_recorded(tmp_path):
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    from collect.collect_command import model_for

    venv = VecNormalize(DummyVecEnv([lambda: gym.make("CartPole-v1")]), norm_obs=False)
    model = PPO("MlpPolicy", venv, seed=0, n_steps=32, batch_size=32, policy_kwargs={"net_arch": [8]})
    model.save(tmp_path / "ppo.zip")
    venv.save(tmp_path / "vec_normalize.pkl")  # beside the model, as Hugging Face names it
    task = model_for(tmp_path / "ppo.zip", "CartPole-v1", None).task
    norm = task.protocol()["preprocessing"]["normalization"]
    assert norm["applied"] is False and norm["reason"] == "reward-only" and norm["source"] == "beside the model"
    assert task.normalization is None and "observation_normalization" not in task.protocol()
    from collect import tasks

    assert tasks.from_protocol(json.loads(json.dumps(task.protocol()))) == task
    # named by a run configuration (where it once failed to unpickle), it reads the same
    from collect import run_config

    (tmp_path / "run.toml").write_text('[env]\nid = "CartPole-v1"\nnormalize_observations = "vec_normalize.pkl"\n')
    by_config = run_config.task_for(None, run_config.read(tmp_path / "run.toml"), tmp_path)
    assert json.loads(by_config.preprocessing)["normalization"]["reason"] == "reward-only"


def test_zoo_settings_rtreport_cannot_reproduce_are_refused_by_name(tmp_path):
    from stable_baselines3 import PPO

    model = PPO("MlpPolicy", "CartPole-v1", seed=0, n_steps=32, batch_size=32, policy_kwargs={"net_arch": [8]})
    cases = [
        ({"env_wrapper": "rl_zoo3.wrappers.TimeFeatureWrapper"}, "env_wrapper rl_zoo3.wrappers.TimeFeatureWrapper"),
        ({"vec_env_wrapper": "my_pkg.MyVecWrapper"}, "vec_env_wrapper my_pkg.MyVecWrapper"),
    ]
    for i, (config, said) in enumerate(cases):
        run = _zoo_folder(tmp_path / str(i), "ppo", "CartPole-v1", model, config)
        line = _refused(["--model", run])
        assert said in line and "not measured without it" in line
    from collect import tasks
    from collect.gym_env import frame_stacked

    with pytest.raises(Exception, match=r"frame_stack 4 \(VecFrameStack\) of Breakout's observations uint8"):
        frame_stacked(tasks.BREAKOUT, 4)
    # a gymnasium wrapper is applied, in the Zoo's {name: kwargs} form
    run = _zoo_folder(
        tmp_path / "w",
        "ppo",
        "CartPole-v1",
        model,
        {"env_wrapper": [{"gymnasium.wrappers.TimeLimit": {"max_episode_steps": 50}}]},
    )
    from collect.collect_command import model_for

    assert model_for(run, None, None).task.wrappers == (("TimeLimit", '{"max_episode_steps": 50}'),)


def test_a_zoo_frame_stack_after_vecnormalize_is_played_as_vecframestack_stacks(tmp_path):
    """The Zoo stacks after normalising (VecFrameStack over VecNormalize): the same observations at every step of a
    random game, and the reference's games equal SB3's evaluation."""
    import numpy as np
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import DummyVecEnv, VecFrameStack, VecNormalize

    from collect.collect_command import model_for

    norm = VecNormalize(DummyVecEnv([lambda: gym.make("CartPole-v1")]))
    model = PPO(
        "MlpPolicy", VecFrameStack(norm, 3), seed=0, n_steps=64, batch_size=64, policy_kwargs={"net_arch": [16]}
    )
    model.learn(128)
    config = {"normalize": True, "frame_stack": 3, "policy": "MlpPolicy"}
    run = _zoo_folder(tmp_path, "ppo", "CartPole-v1", model, config, norm)
    pkl = run / "CartPole-v1" / "vecnormalize.pkl"
    task = model_for(run, None, None).task
    assert task.observation.shape == (12,) and task.frame_stack == 3
    from collect import tasks

    assert tasks.from_protocol(json.loads(json.dumps(task.protocol()))) == task  # a resume or repeat plays it so
    ours = task.make_env()
    sb3 = VecNormalize.load(str(pkl), DummyVecEnv([lambda: gym.make("CartPole-v1")]))
    sb3.training = False
    sb3 = VecFrameStack(sb3, 3)
    rng = np.random.default_rng(0)
    sb3.seed(5)
    theirs, (mine, _) = sb3.reset(), ours.reset(seed=5)
    for _ in range(30):
        assert np.array_equal(mine, theirs[0])
        action = int(rng.integers(2))
        theirs, _, done, _ = sb3.step([action])
        mine, _, terminated, truncated, _ = ours.step(action)
        if done[0]:
            assert terminated or truncated
            sb3.seed(6)
            theirs, (mine, _) = sb3.reset(), ours.reset(seed=6)
    out = collect(tmp_path, "--model", run)
    protocol = assert_plays_as_sb3(out, model, "CartPole-v1", normalize=pkl, stack=3)
    assert protocol["frame_stack"] == 3 and protocol["preprocessing"]["model_folder"]["frame_stack"] == 3
    site = tmp_path / "site"
    result = CliRunner().invoke(main, ["build", str(out), "--out", str(site)])
    assert result.exit_code == 0, result.output
    pages = machine_pages(site)
    assert "sees the last 3 observations, oldest first" in pages["en"]
    assert "最近 3 個觀測值" in pages["zh-tw"]


def test_zoo_yaml_is_read_safely_with_its_python_tags(tmp_path):
    """args.yml as the Zoo writes it (an OrderedDict, the env as huggingface_sb3's EnvironmentName): read without
    building any object; a reward-only ``normalize`` string asks for no statistics."""
    from collect import model_folder

    run = tmp_path / "CartPole-v1_1"
    (run / "CartPole-v1").mkdir(parents=True)
    (run / "CartPole-v1.zip").write_bytes(b"")  # find() reads the folder, not the model
    (run / "CartPole-v1" / "args.yml").write_text(
        "!!python/object/apply:collections.OrderedDict\n- - - env\n"
        "    - !!python/object/new:huggingface_sb3.naming_schemes.EnvironmentName\n"
        "      args:\n      - CartPole-v1\n      state:\n        gym_id: CartPole-v1\n"
        "  - - env_kwargs\n    - sutton_barto_reward: true\n"
        "  - - policy_kwargs\n    - !!python/name:os.system ''\n"
    )
    (run / "CartPole-v1" / "config.yml").write_text(
        "!!python/object/apply:collections.OrderedDict\n- - - normalize\n    - dict(norm_obs=False, norm_reward=True)\n"
        "  - - train_freq\n    - !!python/tuple\n      - 1\n      - step\n"
    )
    found = model_folder.find(run)
    assert found.env_id == "CartPole-v1" and found.env_id_from == "CartPole-v1/args.yml"
    assert found.env_kwargs == {"sutton_barto_reward": True} and found.trained_normalized is None
    assert found.model == run / "CartPole-v1.zip" and found.layout == "rl-zoo"
    (run / "CartPole-v1" / "config.yml").write_text("normalize: true\n")
    assert model_folder.find(run).trained_normalized == f"{run}/CartPole-v1/config.yml: normalize: true"
    (run / "CartPole-v1" / "config.yml").write_text("normalize: [unclosed\n")
    with pytest.raises(Exception, match="is not a readable YAML file"):
        model_folder.find(run)


class _DictObs(gym.Env):
    observation_space = gym.spaces.Dict({"position": gym.spaces.Box(-1.0, 1.0, (2,))})
    action_space = gym.spaces.Discrete(2)

    def reset(self, seed=None, options=None):
        return {"position": self.observation_space["position"].sample()}, {}

    def step(self, action):
        return self.reset()[0], 0.0, True, False, {}


def test_statistics_rtreport_cannot_honour_are_one_line(tmp_path):
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    from collect import vec_normalize

    VecNormalize(DummyVecEnv([_DictObs])).save(tmp_path / "dict.pkl")
    with pytest.raises(Exception, match=r"Dict observation \(norm_obs_keys position\) cannot be honoured"):
        vec_normalize.read(tmp_path / "dict.pkl")
    (tmp_path / "other.pkl").write_bytes(__import__("pickle").dumps({"obs_rms": None}))
    with pytest.raises(Exception, match="not a saved VecNormalize of Stable-Baselines3: it holds a dict"):
        vec_normalize.read(tmp_path / "other.pkl")
    folder = tmp_path / "two"
    folder.mkdir()
    VecNormalize(DummyVecEnv([lambda: gym.make("CartPole-v1")])).save(folder / "vecnormalize.pkl")
    VecNormalize(DummyVecEnv([lambda: gym.make("CartPole-v1")]), clip_obs=5.0).save(folder / "vec_normalize.pkl")
    with pytest.raises(Exception, match="two different VecNormalize files"):
        vec_normalize.beside(folder)


def test_a_hugging_face_folder_with_vec_normalize_plays_as_sb3_evaluates(tmp_path):
    """A Hub folder without a model card: the environment from the file's name, the statistics from
    ``vec_normalize.pkl``, the kwargs from ``env_kwargs.yml``."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    venv = VecNormalize(DummyVecEnv([lambda: gym.make("CartPole-v1")]))
    model = PPO("MlpPolicy", venv, seed=1, n_steps=64, batch_size=64, policy_kwargs={"net_arch": [16]})
    model.learn(128)
    hub = tmp_path / "ppo-CartPole-v1"
    hub.mkdir()
    model.save(hub / "ppo-CartPole-v1.zip")
    venv.save(hub / "vec_normalize.pkl")
    (hub / "env_kwargs.yml").write_text("{}\n")
    out = collect(tmp_path, "--model", hub)
    protocol = assert_plays_as_sb3(out, model, "CartPole-v1", normalize=hub / "vec_normalize.pkl")
    prep = protocol["preprocessing"]
    assert prep["model_folder"]["env_id_from"] == "ppo-CartPole-v1.zip"
    assert prep["normalization"]["source"] == "hugging-face folder" and prep["normalization"]["applied"]
    line = _refused(["--model", hub, "--env", "Acrobot-v1"])
    assert "--env Acrobot-v1, but" in line and "trained on CartPole-v1" in line


def test_every_preprocessing_sentence_is_said_in_both_languages():
    from site_gen.agent_view import PREP_SOURCES, preprocessing_lines
    from site_gen.i18n import Translator

    said = {"file": "logs/x/vecnormalize.pkl", "sha256": "ab" * 32, "norm_obs": False, "norm_reward": True}
    cases = [
        {"normalization": {"applied": True, **said, "source": source, "clip": 5.0, "epsilon": 1e-8}}
        for source in PREP_SOURCES
    ]
    cases += [
        {"normalization": {"applied": False, **said, "source": "--normalize", "reason": "reward-only"}},
        {"normalization": {"applied": False, "reason": "none found"}},
        {
            "model_folder": {
                "layout": "hugging-face",
                "folder": "hub",
                "model_file": "a.zip",
                "env_id_from": "README.md",
            }
        },
        {"model_folder": {"layout": "rl-zoo", "folder": "z", "model_file": "b.zip", "frame_stack": 4}},
    ]
    expected = {
        "en": ["±5", "reward statistics only", "as the environment gives them", "Hugging Face", "last 4 observations"],
        "zh-tw": ["±5", "只有獎勵的統計量", "直接採用環境給出的值", "Hugging Face 模型資料夾", "最近 4 個觀測值"],
    }
    for lang, words in expected.items():
        t = Translator(lang)
        text = " ".join(line for prep in cases for line in preprocessing_lines(prep, t))
        assert "{" not in text and "abababababab" in text and all(w in text for w in words), (lang, text)
        sources = {t(key) for key in PREP_SOURCES.values()}
        assert len(sources) == len(PREP_SOURCES) and all(s in text for s in sources)
