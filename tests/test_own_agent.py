"""A user's own agent in its own environment, end to end: the real Gymnasium task or ALE game, the real CPU
runtimes, a real DuckDB file and a real build, for a TorchScript policy on CartPole, a Stable-Baselines3 ``.zip``,
and a Q-network on another ALE game; and the one clear line a bad model or an unknown environment gets."""

from __future__ import annotations

import json

import duckdb
import pytest
import torch
from click.testing import CliRunner

from collect import paths
from collect.agent.network import QNetwork
from rtreport import play_margin
from rtreport_cli.main import main


def _collect(tmp_path, *args, name="run.duckdb"):
    out = tmp_path / name
    result = CliRunner().invoke(
        main,
        ["collect", "--quick", "--repeats", "0", "--out", str(out), "--artifacts", str(tmp_path / "art"), *args],
    )
    assert result.exit_code == 0, result.output
    return out


def _run_row(path) -> dict:
    con = duckdb.connect(str(path), read_only=True)
    try:
        cur = con.execute("SELECT protocol, settings, model_format, num_actions, fixed_states_sha256 FROM runs")
        protocol, settings, fmt, n, states_sha = cur.fetchall()[0]
        counts = {
            t: con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0]
            for t in ("task_states", "baseline_episodes", "episodes", "state_q")
        }
    finally:
        con.close()
    return {
        "protocol": json.loads(protocol),
        "settings": json.loads(settings),
        "format": fmt,
        "num_actions": n,
        "states_sha": states_sha,
        **counts,
    }


def _build(tmp_path, *files):
    site = tmp_path / "site"
    result = CliRunner().invoke(main, ["build", *map(str, files), "--out", str(site)])
    assert result.exit_code == 0, result.output
    return site


def _machine_pages(site) -> dict:
    return {
        lang: next(p for p in (site / lang / "hardware").glob("*/index.html")).read_text() for lang in ("en", "zh-tw")
    }


@pytest.fixture(scope="module")
def cartpole_mlp(tmp_path_factory):
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))
    path = tmp_path_factory.mktemp("model") / "mlp.pt"
    torch.jit.save(torch.jit.script(net), str(path))
    return path


def test_a_torchscript_policy_on_cartpole_collects_and_builds(tmp_path, cartpole_mlp):
    out = _collect(tmp_path, "--env", "CartPole-v1", "--model", str(cartpole_mlp))
    row = _run_row(out)
    p = row["protocol"]
    assert p["family"] == "gymnasium" and p["gym_id"] == "CartPole-v1"
    assert p["observation_shape"] == [4] and p["observation_dtype"] == "float32"
    assert p["num_actions"] == 2 and p["max_episode_steps"] == 500 and p["outputs"] == "q-values"
    assert row["format"] == "torchscript" and row["num_actions"] == 2
    # the fixed states come from the model's own play, stored in the file; the margin's anchor too
    assert row["task_states"] == 8 and row["state_q"] >= 16
    assert row["settings"]["play_margin_rule"] == "gain-over-random"
    assert row["baseline_episodes"] == len(row["settings"]["seeds"])
    pages = _machine_pages(_build(tmp_path, out))
    assert "CartPole-v1" in pages["en"] and "a TorchScript module" in pages["en"]
    assert "CartPole-v1" in pages["zh-tw"] and "TorchScript 模組" in pages["zh-tw"]


def test_a_stable_baselines3_zip_is_exported_and_judged_greedy_on_its_logits(tmp_path):
    from stable_baselines3 import PPO

    model = PPO("MlpPolicy", "CartPole-v1", seed=0, n_steps=64, batch_size=64, policy_kwargs={"net_arch": [16]})
    model.learn(128)
    model.save(tmp_path / "ppo.zip")
    out = _collect(tmp_path, "--env", "CartPole-v1", "--model", str(tmp_path / "ppo.zip"))
    row = _run_row(out)
    assert row["format"] == "sb3" and row["protocol"]["outputs"] == "logits"
    assert row["protocol"]["eval_epsilon"] == 0.0
    assert row["settings"]["model_export"]["algorithm"] == "PPO"
    pages = _machine_pages(_build(tmp_path, out))
    assert "Stable-Baselines3 PPO policy" in pages["en"] and "greedy on its logits" in pages["en"]
    assert "Stable-Baselines3 的 PPO 策略" in pages["zh-tw"]


def test_another_ale_game_plays_under_the_atari_protocol(tmp_path):
    torch.manual_seed(0)
    torch.save(QNetwork(6).state_dict(), tmp_path / "pong.pt")
    out = _collect(tmp_path, "--env", "ALE/Pong-v5", "--model", str(tmp_path / "pong.pt"))
    row = _run_row(out)
    p = row["protocol"]
    assert p["game"] == "pong" and p["gym_id"] == "ALE/Pong-v5" and p["num_actions"] == 6
    assert p["action_meanings"] == ["NOOP", "FIRE", "RIGHT", "LEFT", "RIGHTFIRE", "LEFTFIRE"]
    assert p["frameskip"] == 4 and p["sticky_action_probability"] == 0.25 and p["eval_epsilon"] == 0.01
    assert row["task_states"] == 8  # Breakout's shipped states are not Pong's
    pages = _machine_pages(_build(tmp_path, out))
    assert "ALE/Pong-v5" in pages["en"] and "RIGHTFIRE" in pages["en"]


def test_a_mujoco_task_with_continuous_actions_is_judged_within_the_tolerance(tmp_path):
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(11, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3), torch.nn.Tanh())
    torch.jit.save(torch.jit.script(net), str(tmp_path / "hopper.pt"))
    out = _collect(tmp_path, "--env", "Hopper-v5", "--model", str(tmp_path / "hopper.pt"))
    row = _run_row(out)
    p = row["protocol"]
    assert p["action_kind"] == "continuous" and p["num_actions"] == 3 and p["outputs"] == "actions"
    assert p["action_low"] == [-1.0] * 3 and p["action_high"] == [1.0] * 3 and p["action_tolerance"] == 0.01
    con = duckdb.connect(str(out), read_only=True)
    try:
        counts = con.execute("SELECT counts FROM shadow_differences").fetchall()
        shadow = con.execute("SELECT sum(decisions), sum(same) FROM shadow").fetchall()[0]
        random = con.execute("SELECT min(score), max(score) FROM baseline_episodes").fetchall()[0]
    finally:
        con.close()
    # every decision of the reference's games counted in one bin of the difference, and within 1 % here
    assert counts and sum(sum(c) for (c,) in counts) == shadow[0] and shadow[1] == shadow[0]
    assert random[0] is not None
    pages = _machine_pages(_build(tmp_path, out))
    assert "an action of 3 dimensions" in pages["en"] and "within 1 % of that dimension" in pages["en"]
    assert "decisions in play" in pages["en"] and "實戰中的決策" in pages["zh-tw"]


def test_a_stable_baselines3_sac_policy_on_pendulum_plays_its_own_actions(tmp_path):
    from stable_baselines3 import SAC

    model = SAC("MlpPolicy", "Pendulum-v1", seed=0, learning_starts=50, policy_kwargs={"net_arch": [16]})
    model.learn(100)
    model.save(tmp_path / "sac.zip")
    out = _collect(tmp_path, "--env", "Pendulum-v1", "--model", str(tmp_path / "sac.zip"))
    row = _run_row(out)
    assert row["format"] == "sb3" and row["settings"]["model_export"]["algorithm"] == "SAC"
    assert row["protocol"]["action_low"] == [-2.0] and row["protocol"]["outputs"] == "actions"
    pages = _machine_pages(_build(tmp_path, out))
    assert "Stable-Baselines3 SAC policy" in pages["en"] and "clipped to the bounds [-2, 2]" in pages["en"]


def test_breakout_runs_keep_their_protocol_and_margin_rule(quick_run):
    row = _run_row(quick_run)
    assert "family" not in row["protocol"] and row["protocol"]["game"] == "breakout"
    assert "play_margin_rule" not in row["settings"] and row["task_states"] == 0 and row["baseline_episodes"] == 0


# -- bad input: one clear line, exit status 2, nothing written ---------------------------------------------------


def _refused(tmp_path, args, expected):
    out = tmp_path / "x.duckdb"
    result = CliRunner().invoke(main, ["collect", "--quiet", "--out", str(out), *args])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and expected in lines[0], result.output
    assert not out.exists() and not list(tmp_path.glob(".x.duckdb*"))


def test_an_unknown_environment_is_one_line(tmp_path, cartpole_mlp):
    _refused(tmp_path, ["--env", "NoSuchTask-v0", "--model", str(cartpole_mlp)], "NoSuchTask-v0")
    _refused(tmp_path, ["--env", "ALE/NoSuchGame-v5", "--model", str(cartpole_mlp)], "no ROM")


def test_a_policy_of_the_wrong_action_kind_is_one_line(tmp_path, cartpole_mlp):
    from stable_baselines3 import PPO

    PPO("MlpPolicy", "CartPole-v1", n_steps=64, batch_size=64, policy_kwargs={"net_arch": [8]}).save(tmp_path / "d.zip")
    _refused(tmp_path, ["--env", "Acrobot-v1", "--model", str(tmp_path / "d.zip")], "observations of shape (4,)")
    _refused(tmp_path, ["--env", "MountainCarContinuous-v0", "--model", str(tmp_path / "d.zip")], "discrete actions")


def test_a_model_that_does_not_fit_the_task_says_which_shape_was_expected(tmp_path, cartpole_mlp):
    wide = torch.jit.script(torch.nn.Sequential(torch.nn.Linear(6, 2)))
    torch.jit.save(wide, str(tmp_path / "wide.pt"))
    _refused(tmp_path, ["--env", "CartPole-v1", "--model", str(tmp_path / "wide.pt")], "float32 (N, 4)")
    three = torch.jit.script(torch.nn.Sequential(torch.nn.Linear(4, 3)))
    torch.jit.save(three, str(tmp_path / "three.pt"))
    _refused(tmp_path, ["--env", "CartPole-v1", "--model", str(tmp_path / "three.pt")], "(N, 2)")
    _refused(tmp_path, ["--env", "CartPole-v1"], "give --model")
    torch.save(QNetwork(4).state_dict(), tmp_path / "q.pt")
    _refused(tmp_path, ["--env", "CartPole-v1", "--model", str(tmp_path / "q.pt")], "TorchScript")


def test_a_bad_run_configuration_is_one_line(tmp_path, cartpole_mlp):
    config = tmp_path / "run.toml"
    config.write_text('[env]\nid = "CartPole-v1"\nmax_episode_steps = -3\n')
    _refused(tmp_path, ["--config", str(config), "--model", str(cartpole_mlp)], "max_episode_steps")
    _refused(tmp_path, ["--config", str(config), "--model", str(cartpole_mlp)], f"{config}: max_episode_steps")
    config.write_text("[envs]\n")
    _refused(tmp_path, ["--config", str(config), "--model", str(cartpole_mlp)], "unknown section")
    config.write_text("[env]\nkwargs = { no_such_argument = 1 }\n")  # a value's error names the file
    _refused(tmp_path, ["--env", "CartPole-v1", "--config", str(config), "--model", str(cartpole_mlp)], f"{config}: ")
    config.write_text("[policy]\nepsilon = 0.05\n")  # … the environment's id from --env does not
    _refused(tmp_path, ["--env", "NoSuchTask-v0", "--config", str(config), "--model", str(cartpole_mlp)], "unknown")
    # a Stable-Baselines3 .zip says its outputs itself: a configuration that says otherwise is refused
    config.write_text('[policy]\noutputs = "q-values"\n')
    zip_model = paths.DATA / "examples" / "cartpole.zip"
    _refused(tmp_path, ["--env", "CartPole-v1", "--config", str(config), "--model", str(zip_model)], "logits")


# -- the margin on any return scale ---------------------------------------------------------------------------


def test_the_margin_over_random_holds_on_negative_returns():
    # a Pendulum-like task: every return negative; the reference gains 1,000 points over random play
    assert play_margin.margin("gain-over-random", 0.05, [-200.0, -200.0], [-1200.0, -1200.0]) == pytest.approx(50.0)
    # the fraction-of-the-mean rule would give a negative margin there, which no test can use
    assert play_margin.margin("reference-mean", 0.05, [-200.0, -200.0]) < 0
    # no gain over random: a margin of zero (no worse at all); no random scores: no margin yet
    assert play_margin.margin("gain-over-random", 0.05, [10.0, 12.0], [15.0, 11.0]) == 0.0
    assert play_margin.margin("gain-over-random", 0.05, [10.0, 12.0], None) is None
    assert play_margin.margin("reference-mean", 0.05, [100.0, 300.0]) == pytest.approx(10.0)


def test_the_training_observation_normalisation_and_wrappers_go_into_the_run(tmp_path):
    import gymnasium as gym
    import numpy as np
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    from collect import run_config, tasks

    venv = VecNormalize(DummyVecEnv([lambda: gym.make("CartPole-v1")]))
    venv.reset()
    for _ in range(100):
        venv.step([venv.action_space.sample()])
    venv.save(tmp_path / "vec_normalize.pkl")
    (tmp_path / "run.toml").write_text(
        '[env]\nid = "CartPole-v1"\nnormalize_observations = "vec_normalize.pkl"\n'
        'wrappers = [{ name = "FlattenObservation" }]\n'
    )
    task = run_config.task_for(None, run_config.read(tmp_path / "run.toml"), tmp_path)
    stored = task.protocol()
    assert stored["wrappers"] == [{"name": "FlattenObservation", "kwargs": {}}]
    assert len(stored["observation_normalization"]["mean"]) == 4
    assert tasks.from_protocol(json.loads(json.dumps(stored))) == task  # the run alone says how it was played
    observation, _ = task.make_env().reset(seed=3)
    raw, _ = gym.make("CartPole-v1").reset(seed=3)
    venv.training = False
    assert np.allclose(observation, venv.normalize_obs(raw[None])[0], atol=1e-6)
    (tmp_path / "bad.toml").write_text('[env]\nid = "CartPole-v1"\nwrappers = [{ name = "NoSuchWrapper" }]\n')
    with pytest.raises(Exception, match="unknown wrapper"):
        run_config.task_for(None, run_config.read(tmp_path / "bad.toml"), tmp_path)


def test_the_fp16_onnx_of_a_float_observation_model_casts_its_input_first(tmp_path, cartpole_mlp):
    import numpy as np
    import onnx
    import onnxruntime as ort

    from collect import tasks
    from collect.artifacts import convert_onnx_to_fp16
    from collect.model_input import load_model

    load_model(cartpole_mlp, tasks.for_env("CartPole-v1")).onnx_source()(tmp_path / "fp32.onnx")
    half = convert_onnx_to_fp16(onnx.load(str(tmp_path / "fp32.onnx")))
    assert half.graph.node[0].op_type == "Cast" and half.graph.input[0].type.tensor_type.elem_type == 1  # float32 in
    onnx.save(half, str(tmp_path / "fp16.onnx"))
    x = np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32)
    full = ort.InferenceSession(str(tmp_path / "fp32.onnx")).run(None, {"observation": x})[0]
    low = ort.InferenceSession(str(tmp_path / "fp16.onnx")).run(None, {"observation": x})[0]
    assert low.dtype == np.float32 and np.abs(full - low).max() < 1e-2


def test_a_runtime_named_in_runtimes_that_is_not_measured_makes_the_exit_non_zero(tmp_path, cartpole_mlp):
    """A runtime the user asked for by name is owed: the run keeps the rest, and the exit status (5) and the last
    line say which named runtime was not measured and why."""
    from collect.registry import all_runtimes

    missing = next((s.id for s in all_runtimes() if s.check(None)), None)
    if missing is None:
        pytest.skip("every CUDA runtime runs on this machine: none to name that cannot")
    out = tmp_path / "run.duckdb"
    result = CliRunner().invoke(
        main,
        ["collect", "--quick", "--repeats", "0", "--out", str(out), "--artifacts", str(tmp_path / "art")]
        + ["--env", "CartPole-v1", "--model", str(cartpole_mlp), "--runtimes", f"ort-cpu-fp32,{missing}"],
    )
    assert result.exit_code == 5, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and missing in errors[0] and "--runtimes" in errors[0] and str(out) in errors[0]
    con = duckdb.connect(str(out), read_only=True)
    try:
        status = dict(con.execute("SELECT runtime_id, status FROM runtimes").fetchall())
    finally:
        con.close()
    assert status["ort-cpu-fp32"] == "available" and status[missing] == "unavailable"
