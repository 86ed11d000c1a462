"""collect/sb3_model.py: a Stable-Baselines3 save becomes a torch module and an ONNX file that decide exactly as
``model.predict(obs, deterministic=True)`` does, and a file that is not such a save is one clear line.

The models are tiny and trained for a few hundred steps in the test's temporary folder: what matters is that the
rebuilt module and SB3 agree on the same weights, not that the agent is any good."""

import zipfile

import numpy as np
import pytest

pytest.importorskip("stable_baselines3")
gym = pytest.importorskip("gymnasium")
ort = pytest.importorskip("onnxruntime")
torch = pytest.importorskip("torch")

from gymnasium import spaces  # noqa: E402

from collect.sb3_model import export_onnx, load_sb3  # noqa: E402
from rtreport.errors import UserError  # noqa: E402


def _small(**kwargs) -> dict:
    """Small nets on the CPU, seeded; a fresh dict each time, since SB3 writes into the policy_kwargs it is given."""
    return {"policy_kwargs": {"net_arch": [16, 16]}, "seed": 0, "device": "cpu", **kwargs}


def _observations(env, n: int = 50) -> np.ndarray:
    """``n`` observations from the environment's own reset and random steps, as one batch."""
    env.action_space.seed(0)
    obs, _ = env.reset(seed=0)
    batch = [obs]
    while len(batch) < n:
        obs, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            obs, _ = env.reset()
        batch.append(obs)
    return np.stack(batch)


def _save(model, tmp_path, name: str):
    path = tmp_path / f"{name}.zip"
    model.save(path)
    return path


def _module_outputs(policy, obs: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        return policy.module(torch.as_tensor(obs.astype(policy.observation_dtype))).numpy()


def _onnx_outputs(policy, obs: np.ndarray, path) -> np.ndarray:
    export_onnx(policy, path)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == ["observation"]
    assert [o.name for o in session.get_outputs()] == ["outputs"]
    return session.run(None, {"observation": obs.astype(policy.observation_dtype)})[0]


def _agrees_with_predict(model, zip_path, obs: np.ndarray, tmp_path):
    """The module decides as predict() does on every observation, and its ONNX export computes the same outputs,
    for the whole batch and for a batch of one (the batch axis is dynamic)."""
    policy = load_sb3(zip_path)
    outputs = _module_outputs(policy, obs)
    expected = model.predict(obs, deterministic=True)[0]
    if policy.action_kind == "discrete":
        assert outputs.shape == (len(obs), policy.num_actions)
        np.testing.assert_array_equal(outputs.argmax(axis=1), expected)
    else:
        assert outputs.shape == (len(obs), policy.num_actions)
        np.testing.assert_allclose(np.clip(outputs, policy.action_low, policy.action_high), expected, atol=1e-5)
    np.testing.assert_allclose(policy.decide(outputs), expected, atol=1e-5)
    onnx_path = tmp_path / "policy.onnx"
    np.testing.assert_allclose(_onnx_outputs(policy, obs, onnx_path), outputs, atol=1e-4)
    np.testing.assert_allclose(_onnx_outputs(policy, obs[:1], onnx_path), outputs[:1], atol=1e-4)
    return policy


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """DQN and PPO on CartPole, PPO and SAC on Pendulum, each trained a few hundred steps and saved once."""
    from stable_baselines3 import DQN, PPO, SAC

    folder = tmp_path_factory.mktemp("sb3")
    recipes = {
        "dqn-cartpole": (DQN, "CartPole-v1", {"learning_starts": 50, "buffer_size": 1000, "train_freq": 4}),
        "ppo-cartpole": (PPO, "CartPole-v1", {"n_steps": 128, "batch_size": 64, "n_epochs": 2}),
        "ppo-pendulum": (PPO, "Pendulum-v1", {"n_steps": 128, "batch_size": 64, "n_epochs": 2}),
        "sac-pendulum": (SAC, "Pendulum-v1", {"learning_starts": 50, "buffer_size": 1000, "batch_size": 32}),
    }
    models = {}
    for name, (cls, env_id, kwargs) in recipes.items():
        model = cls("MlpPolicy", env_id, **_small(**kwargs))
        model.learn(total_timesteps=300)
        models[name] = (model, _save(model, folder, name), env_id)
    return models


@pytest.mark.parametrize(
    "name, algorithm, outputs, kind, n",
    [
        ("dqn-cartpole", "DQN", "q-values", "discrete", 2),
        ("ppo-cartpole", "PPO", "logits", "discrete", 2),
        ("ppo-pendulum", "PPO", "actions", "continuous", 1),
        ("sac-pendulum", "SAC", "actions", "continuous", 1),
    ],
)
def test_a_trained_model_decides_as_predict_does(trained, tmp_path, name, algorithm, outputs, kind, n):
    model, path, env_id = trained[name]
    env = gym.make(env_id)
    policy = _agrees_with_predict(model, path, _observations(env), tmp_path)
    assert (policy.algorithm, policy.outputs, policy.action_kind, policy.num_actions) == (algorithm, outputs, kind, n)
    assert policy.observation_shape == env.observation_space.shape
    assert policy.observation_dtype == "float32"
    if kind == "continuous":
        assert policy.action_low == (-2.0,) and policy.action_high == (2.0,)
    else:
        assert policy.action_low is None and policy.action_high is None
    assert not policy.module.training
    assert all(p.dtype == torch.float32 and p.device.type == "cpu" for p in policy.module.parameters())
    import stable_baselines3

    assert policy.export["from"] == "stable-baselines3"
    assert policy.export["sb3_version"] == stable_baselines3.__version__
    assert (policy.export["algorithm"], policy.export["outputs"]) == (algorithm, outputs)
    assert policy.export["path_inside"] == "policy.pth"
    assert policy.export["policy_class"].startswith("stable_baselines3.")
    assert policy.export["note"]


def test_sac_actions_are_in_the_env_units(trained):
    """SAC's actor works in [-1, 1]; the module rescales to Pendulum's [-2, 2] as predict() does."""
    model, path, env_id = trained["sac-pendulum"]
    obs = _observations(gym.make(env_id))
    outputs = _module_outputs(load_sb3(path), obs)
    assert np.all(np.abs(outputs) <= 2.0)
    scaled = model.actor(torch.as_tensor(obs), deterministic=True).detach().numpy()
    np.testing.assert_allclose(outputs, scaled * 2.0, atol=1e-5)


@pytest.mark.parametrize(
    "algorithm, env_id, kwargs",
    [
        ("A2C", "CartPole-v1", {}),
        ("A2C", "Pendulum-v1", {}),
        ("PPO", "Pendulum-v1", {"use_sde": True, "policy_kwargs": {"net_arch": [16], "squash_output": True}}),
        ("TD3", "Pendulum-v1", {"buffer_size": 100}),
        ("DDPG", "Pendulum-v1", {"buffer_size": 100}),
    ],
)
def test_each_algorithm_is_recognised_and_rebuilt(tmp_path, algorithm, env_id, kwargs):
    """Untrained models (random weights decide just as well): algorithms that share a policy class (PPO, A2C;
    TD3, DDPG) are told apart, and squash_output's tanh and rescaling are in the module."""
    import stable_baselines3

    model = getattr(stable_baselines3, algorithm)("MlpPolicy", env_id, **_small(**kwargs))
    path = _save(model, tmp_path, algorithm)
    policy = _agrees_with_predict(model, path, _observations(gym.make(env_id)), tmp_path)
    assert policy.algorithm == algorithm


class _TinyEnv(gym.Env):
    """An environment with the given spaces, enough for SB3 to build and save a model around them."""

    def __init__(self, observation_space, action_space):
        self.observation_space, self.action_space = observation_space, action_space

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.observation_space.seed(seed)
        return self.observation_space.sample(), {}

    def step(self, action):
        return self.observation_space.sample(), 0.0, False, False, {}


def test_an_image_model_takes_uint8_frames(tmp_path):
    """A CNN policy on uint8 frames: the module takes the frames as they are and divides by 255 as SB3 does."""
    from stable_baselines3 import DQN

    env = _TinyEnv(spaces.Box(0, 255, (1, 36, 36), np.uint8), spaces.Discrete(3))
    model = DQN("CnnPolicy", env, **_small(buffer_size=100))
    path = _save(model, tmp_path, "dqn-image")
    policy = _agrees_with_predict(model, path, _observations(env, 20), tmp_path)
    assert (policy.observation_shape, policy.observation_dtype) == ((1, 36, 36), "uint8")
    assert (policy.outputs, policy.num_actions) == ("q-values", 3)


@pytest.mark.parametrize("algorithm, env_id", [("QRDQN", "CartPole-v1"), ("TQC", "Pendulum-v1")])
def test_sb3_contrib_algorithms(tmp_path, algorithm, env_id):
    contrib = pytest.importorskip("sb3_contrib")
    model = getattr(contrib, algorithm)("MlpPolicy", env_id, **_small(buffer_size=100))
    path = _save(model, tmp_path, algorithm)
    assert _agrees_with_predict(model, path, _observations(gym.make(env_id)), tmp_path).algorithm == algorithm


def _one_line_error(path) -> str:
    with pytest.raises(UserError) as caught:
        load_sb3(path)
    message = str(caught.value)
    assert message and "\n" not in message
    return message


def _torch_bytes(obj) -> bytes:
    import io

    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def test_files_that_are_not_sb3_saves(tmp_path):
    text = tmp_path / "notes.zip"
    text.write_text("not a model\n")
    assert "not a zip" in _one_line_error(text)

    empty = tmp_path / "empty.zip"
    empty.write_bytes(b"")
    assert "not a zip" in _one_line_error(empty)

    other = tmp_path / "other.zip"
    with zipfile.ZipFile(other, "w") as z:
        z.writestr("readme.txt", "hello")
    assert "no 'data'" in _one_line_error(other)

    not_json = tmp_path / "not-json.zip"
    with zipfile.ZipFile(not_json, "w") as z:
        z.writestr("data", b"\x80\x04 pickled")
        z.writestr("policy.pth", _torch_bytes({}))
    assert "not JSON" in _one_line_error(not_json)
    no_policy = tmp_path / "empty-policy.zip"
    with zipfile.ZipFile(no_policy, "w") as z:
        z.writestr("data", "{}")
        z.writestr("policy.pth", b"")
    assert "is damaged: its policy.pth is not a whole PyTorch archive" in _one_line_error(no_policy)

    assert "not found" in _one_line_error(tmp_path / "missing.zip")
    assert "folder" in _one_line_error(tmp_path)


def test_a_damaged_save_is_one_line(trained, tmp_path):
    """A real save whose weights were overwritten: SB3's own error comes back as one line naming the algorithm."""
    _, path, _ = trained["dqn-cartpole"]
    damaged = tmp_path / "damaged.zip"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(damaged, "w") as dst:
        for name in src.namelist():
            dst.writestr(name, b"garbage" if name == "policy.pth" else src.read(name))
    said = _one_line_error(damaged)
    assert "is damaged: its policy.pth is not a whole PyTorch archive" in said and "copy it again" in said


def test_unsupported_spaces_are_refused(tmp_path):
    from stable_baselines3 import PPO

    box = spaces.Box(-1.0, 1.0, (3,), np.float32)
    dict_obs = _TinyEnv(spaces.Dict({"a": box, "b": box}), spaces.Discrete(2))
    path = _save(PPO("MultiInputPolicy", dict_obs, **_small(n_steps=16, batch_size=16)), tmp_path, "dict")
    message = _one_line_error(path)
    assert "Dict" in message and "supported" in message

    multi = _TinyEnv(box, spaces.MultiDiscrete([2, 3]))
    path = _save(PPO("MlpPolicy", multi, **_small(n_steps=16, batch_size=16)), tmp_path, "multidiscrete")
    assert "MultiDiscrete" in _one_line_error(path)
