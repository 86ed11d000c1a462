"""A custom environment by Gymnasium's ``module:EnvId``: the module of the user's own package is imported, registers
the environment, and rtreport makes its task from it (the command of docs/own-agent.md)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

PACKAGE = textwrap.dedent(
    """
    import gymnasium as gym
    import numpy as np


    class Corridor(gym.Env):
        observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        action_space = gym.spaces.Discrete(2)

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            self.x = 0
            return np.zeros(2, np.float32), {}

        def step(self, action):
            self.x += 1 if action else -1
            return np.array([self.x / 10, 0], np.float32), 1.0, abs(self.x) >= 10, False, {}


    gym.register(id="Corridor-v0", entry_point=Corridor, max_episode_steps=50)
    """
)


def test_module_colon_env_id(tmp_path):
    (tmp_path / "my_envs").mkdir()
    (tmp_path / "my_envs" / "__init__.py").write_text(PACKAGE)
    code = (
        "from collect import tasks; t = tasks.for_env('my_envs:Corridor-v0'); "
        "print(t.env_id, t.num_actions, t.max_episode_steps, t.observation.shape)"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.getcwd()])}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["my_envs:Corridor-v0", "2", "50", "(2,)"]
    # without the package on the path: one line, no traceback
    alone = {**os.environ, "PYTHONPATH": os.getcwd()}
    done = subprocess.run(
        [
            os.path.join(os.path.dirname(sys.executable), "rtreport"),
            "collect",
            "--env",
            "my_envs:Corridor-v0",
            "--quick",
        ],
        env=alone,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "my_envs" in done.stderr and len(done.stderr.strip().splitlines()) == 1
