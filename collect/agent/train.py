"""Train the default agent with PQN (Gallici et al. 2024, "Simplifying Deep Temporal
Difference Learning"): many vectorised envs, a LayerNorm Q-network, Q(lambda) targets over
short rollouts, no replay buffer and no target network. Hyper-parameters follow CleanRL's
``pqn_atari_envpool.py``; the environment is the shared protocol (``protocol.py``).

Runs are resumable: a checkpoint folder holds the network (``model.pt``, a plain state dict),
the trainer state (``trainer.pt``: optimiser, step counter, iteration, accumulated wall time,
config) and every finished game's raw score (``returns.csv``), so that training can be chained
across commands that each stop after ``max_minutes``.
"""

from __future__ import annotations

import csv
import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from .network import QNetwork
from .protocol import FRAMESKIP, make_train_vector_env, training_episode_seeds, vector_env_seeds


@dataclass
class TrainConfig:
    total_timesteps: int = 6_000_000  # agent steps; frames = 4x (the schedules are laid over this)
    num_envs: int = 128
    num_steps: int = 32  # rollout length per env between updates
    learning_rate: float = 2.5e-4
    anneal_lr: bool = True
    gamma: float = 0.99
    q_lambda: float = 0.65
    num_minibatches: int = 32
    update_epochs: int = 2
    max_grad_norm: float = 10.0
    start_e: float = 1.0
    end_e: float = 0.01
    exploration_fraction: float = 0.10
    life_loss_is_terminal: bool = True  # for the value target only; the game goes on
    seed: int = 1

    @property
    def batch_size(self) -> int:
        return self.num_envs * self.num_steps

    @property
    def num_iterations(self) -> int:
        return self.total_timesteps // self.batch_size


def epsilon_at(config: TrainConfig, step: int) -> float:
    """Linear decay from start_e to end_e over the first exploration_fraction of training."""
    duration = config.exploration_fraction * config.total_timesteps
    slope = (config.end_e - config.start_e) / duration
    return max(slope * step + config.start_e, config.end_e)


def q_lambda_returns(rewards, dones, values, next_value, gamma: float, q_lambda: float):
    """Peng's Q(lambda) targets, computed backwards over one rollout.

    rewards, dones, values: (T, N); values[t] = max_a Q(s_t, a); next_value: (N,) for s_T.
    dones[t] cuts the bootstrap after step t (game over or, in training, a lost life).
    G_t = r_t + gamma * (1 - d_t) * (lambda * G_{t+1} + (1 - lambda) * max_a Q(s_{t+1}, a))
    """
    returns = torch.zeros_like(rewards)
    next_return, next_max_q = next_value, next_value
    for t in reversed(range(rewards.shape[0])):
        returns[t] = rewards[t] + gamma * (1.0 - dones[t]) * (q_lambda * next_return + (1.0 - q_lambda) * next_max_q)
        next_return, next_max_q = returns[t], values[t]
    return returns


class Checkpoint:
    """The files of one resumable training run."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        self.model = self.folder / "model.pt"
        self.trainer = self.folder / "trainer.pt"
        self.returns = self.folder / "returns.csv"

    def exists(self) -> bool:
        return self.model.exists() and self.trainer.exists()

    def save(self, net, optimizer, state: dict) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        # Write-then-rename: a command killed mid-save never leaves a torn checkpoint.
        for path, obj in (
            (self.model, net.state_dict()),
            (self.trainer, {**state, "optimizer": optimizer.state_dict()}),
        ):
            tmp = path.with_suffix(".tmp")
            torch.save(obj, tmp)
            tmp.replace(path)

    def load(self, net, optimizer, device) -> dict:
        net.load_state_dict(torch.load(self.model, map_location=device, weights_only=True))
        state = torch.load(self.trainer, map_location=device, weights_only=False)
        optimizer.load_state_dict(state.pop("optimizer"))
        return state

    def append_returns(self, rows) -> None:
        new = not self.returns.exists()
        self.folder.mkdir(parents=True, exist_ok=True)
        with self.returns.open("a", newline="") as f:
            w = csv.writer(f)
            if new:
                w.writerow(["global_step", "frames", "score", "steps"])
            w.writerows(rows)


def train(
    config: TrainConfig,
    checkpoint_dir: str | Path,
    device: str = "auto",
    max_minutes: float | None = None,
    max_iterations: int | None = None,
    log=print,
) -> dict:
    """Train (or resume) until total_timesteps, max_minutes or max_iterations; return the state."""
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    ckpt = Checkpoint(checkpoint_dir)
    net = QNetwork().to(device)
    optimizer = torch.optim.RAdam(net.parameters(), lr=config.learning_rate)
    state = {"global_step": 0, "iteration": 0, "wall_seconds": 0.0, "games": 0, "config": dataclasses.asdict(config)}
    if ckpt.exists():
        state = ckpt.load(net, optimizer, device)
        saved = TrainConfig(**state["config"])
        if dataclasses.asdict(saved) != dataclasses.asdict(config):
            log(f"resuming with the checkpoint's config (the given options are ignored): {saved}")
        config = saved
        log(f"resumed at step {state['global_step']:,} (iteration {state['iteration']})")

    iteration0 = state["iteration"]
    torch.manual_seed(config.seed + iteration0)
    rng = np.random.default_rng(config.seed + iteration0)
    envs = make_train_vector_env(config.num_envs)
    first_seed = config.seed * 1_000_000 + iteration0 * config.num_envs
    obs_np, info = envs.reset(seed=vector_env_seeds(training_episode_seeds(first_seed, config.num_envs)))
    lives = info["lives"].copy()
    episode_score = np.zeros(config.num_envs)
    episode_steps = np.zeros(config.num_envs, dtype=np.int64)
    recent = []

    T, N = config.num_steps, config.num_envs
    obs_buf = torch.zeros((T, N) + envs.single_observation_space.shape, dtype=torch.uint8, device=device)
    actions_buf = torch.zeros((T, N), dtype=torch.long, device=device)
    rewards_buf = torch.zeros((T, N), device=device)
    dones_buf = torch.zeros((T, N), device=device)
    values_buf = torch.zeros((T, N), device=device)
    minibatch = config.batch_size // config.num_minibatches

    started = time.perf_counter()
    wall0 = state["wall_seconds"]
    try:
        while state["iteration"] < config.num_iterations:
            if config.anneal_lr:
                frac = 1.0 - state["iteration"] / config.num_iterations
                optimizer.param_groups[0]["lr"] = frac * config.learning_rate
            finished = []
            step0 = state["global_step"]
            for t in range(T):
                step = step0 + t * N
                obs = torch.from_numpy(obs_np).to(device)
                obs_buf[t] = obs
                with torch.no_grad():
                    q = net(obs)
                values_buf[t], greedy = q.max(dim=1)
                eps = epsilon_at(config, step)
                explore = torch.from_numpy(rng.random(N) < eps).to(device)
                random_actions = torch.from_numpy(rng.integers(0, q.shape[1], N)).to(device)
                actions = torch.where(explore, random_actions, greedy)
                actions_buf[t] = actions
                obs_np, reward, terminated, truncated, info = envs.step(actions.cpu().numpy().astype(np.int32))
                game_over = terminated | truncated
                life_lost = (info["lives"] < lives) & ~game_over
                lives = info["lives"].copy()
                done = game_over | (life_lost if config.life_loss_is_terminal else False)
                rewards_buf[t] = torch.from_numpy(np.sign(reward).astype(np.float32)).to(device)
                dones_buf[t] = torch.from_numpy(done.astype(np.float32)).to(device)
                episode_score += reward
                episode_steps += 1
                for i in np.flatnonzero(game_over):
                    finished.append((step + N, (step + N) * FRAMESKIP, float(episode_score[i]), int(episode_steps[i])))
                    episode_score[i], episode_steps[i] = 0.0, 0

            with torch.no_grad():
                next_value = net(torch.from_numpy(obs_np).to(device)).max(dim=1).values
            returns = q_lambda_returns(rewards_buf, dones_buf, values_buf, next_value, config.gamma, config.q_lambda)
            b_obs = obs_buf.reshape((-1,) + obs_buf.shape[2:])
            b_actions, b_returns = actions_buf.reshape(-1), returns.reshape(-1)
            for _ in range(config.update_epochs):
                perm = torch.randperm(config.batch_size, device=device)
                for start in range(0, config.batch_size, minibatch):
                    idx = perm[start : start + minibatch]
                    q_taken = net(b_obs[idx]).gather(1, b_actions[idx].unsqueeze(1)).squeeze(1)
                    loss = F.mse_loss(q_taken, b_returns[idx])
                    optimizer.zero_grad(set_to_none=True)
                    loss.backward()
                    torch.nn.utils.clip_grad_norm_(net.parameters(), config.max_grad_norm)
                    optimizer.step()

            state["iteration"] += 1
            state["global_step"] = step0 + T * N
            state["games"] += len(finished)
            ckpt.append_returns(finished)
            recent = (recent + [f[2] for f in finished])[-100:]
            elapsed = time.perf_counter() - started
            state["wall_seconds"] = wall0 + elapsed
            done_here = state["iteration"] - iteration0
            if done_here % 10 == 0 or state["iteration"] == config.num_iterations:
                sps = done_here * config.batch_size / elapsed
                mean = f"{np.mean(recent):7.1f}" if recent else "    n/a"
                log(
                    f"it {state['iteration']:5d}/{config.num_iterations} step {state['global_step']:>10,} "
                    f"frames {state['global_step'] * FRAMESKIP:>11,} eps {eps:.3f} loss {loss.item():.4f} "
                    f"score(last {len(recent)}) {mean} games {state['games']} sps {sps:,.0f}"
                )
            if done_here % 50 == 0:
                ckpt.save(net, optimizer, state)
            if max_iterations is not None and done_here >= max_iterations:
                break
            if max_minutes is not None and elapsed > max_minutes * 60:
                log(f"stopping after {elapsed / 60:.1f} min (max_minutes); resume from {ckpt.folder}")
                break
    finally:
        envs.close()
        ckpt.save(net, optimizer, state)
    return state
