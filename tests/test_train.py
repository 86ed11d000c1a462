"""Training: the Q(lambda) targets by hand, and a CPU smoke run of the real trainer that resumes."""

import torch
import pytest
from click.testing import CliRunner

from rtreport_cli.main import main
from collect.agent.train import Checkpoint, TrainConfig, epsilon_at, q_lambda_returns


def test_q_lambda_returns_by_hand():
    # One env, three steps, gamma 0.5, lambda 0.5; a done after step 1 cuts the bootstrap.
    rewards = torch.tensor([[1.0], [2.0], [3.0]])
    dones = torch.tensor([[0.0], [1.0], [0.0]])
    values = torch.tensor([[10.0], [20.0], [30.0]])
    next_value = torch.tensor([40.0])
    g = q_lambda_returns(rewards, dones, values, next_value, gamma=0.5, q_lambda=0.5)
    # G2 = 3 + .5 * 40 = 23; G1 = 2 (done); G0 = 1 + .5 * (.5 * 2 + .5 * 20) = 6.5
    assert g.squeeze(1).tolist() == [6.5, 2.0, 23.0]


def test_epsilon_schedule():
    c = TrainConfig(total_timesteps=1000, exploration_fraction=0.1, start_e=1.0, end_e=0.01)
    assert epsilon_at(c, 0) == 1.0
    assert abs(epsilon_at(c, 50) - 0.505) < 1e-12
    assert abs(epsilon_at(c, 100) - 0.01) < 1e-12 and epsilon_at(c, 900) == 0.01


@pytest.mark.slow  # a long end-to-end run: python -m pytest -m slow (CI runs it)
def test_cpu_smoke_training_runs_and_resumes(tmp_path):
    args = [
        "train",
        "--checkpoint-dir",
        str(tmp_path),
        "--total-timesteps",
        "640",
        "--num-envs",
        "4",
        "--num-steps",
        "16",
        "--num-minibatches",
        "4",
        "--device",
        "cpu",
    ]
    first = CliRunner().invoke(main, args + ["--max-iterations", "4"])
    assert first.exit_code == 0, first.output
    ckpt = Checkpoint(tmp_path)
    state = torch.load(ckpt.trainer, weights_only=False)
    assert (state["iteration"], state["global_step"]) == (4, 256)
    weights_after_first = torch.load(ckpt.model, weights_only=True)

    second = CliRunner().invoke(main, args)
    assert second.exit_code == 0, second.output
    assert "resumed at step 256" in second.output
    state = torch.load(ckpt.trainer, weights_only=False)
    assert (state["iteration"], state["global_step"]) == (10, 640)
    weights_after_second = torch.load(ckpt.model, weights_only=True)
    assert any(not torch.equal(weights_after_first[k], weights_after_second[k]) for k in weights_after_first)


def test_train_rejects_a_batch_that_does_not_split():
    result = CliRunner().invoke(main, ["train", "--num-envs", "3", "--num-steps", "5", "--num-minibatches", "4"])
    assert result.exit_code == 2
    assert "must divide" in result.output and "Traceback" not in result.output
