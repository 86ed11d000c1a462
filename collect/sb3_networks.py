"""The networks that rebuild a Stable-Baselines3 policy's deterministic decision (``sb3_model``) from the policy's
own sub-modules: one ``torch.nn.Module`` per kind of policy, whose output is what ``predict(obs,
deterministic=True)`` computes before its final numpy step."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import nn

from rtreport.errors import UserError

# What rtreport can rebuild, in one line (its refusals end with it).
SUPPORTED = (
    "supported: DQN, PPO, A2C, SAC, TD3, DDPG (and QRDQN, TQC, CrossQ, TRPO, MaskablePPO with sb3-contrib installed), "
    "with a Box observation space (a vector or an image) and a Discrete or 1-D Box action space"
)


class _Preprocess(nn.Module):
    """SB3's ``preprocess_obs`` for a Box space: a float cast, and /255 for images when the policy normalizes them."""

    def __init__(self, observation_space, normalize_images: bool):
        super().__init__()
        self.observation_space = observation_space
        self.normalize_images = normalize_images

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        from stable_baselines3.common.preprocessing import preprocess_obs

        return preprocess_obs(obs, self.observation_space, normalize_images=self.normalize_images)


class _Unscale(nn.Module):
    """``BasePolicy.unscale_action``: [-1, 1] to [low, high], in float32 and in the same order of operations."""

    def __init__(self, action_space):
        super().__init__()
        self.register_buffer("low", torch.as_tensor(np.asarray(action_space.low, np.float32)))
        self.register_buffer("high", torch.as_tensor(np.asarray(action_space.high, np.float32)))

    def forward(self, scaled: torch.Tensor) -> torch.Tensor:
        return self.low + (0.5 * (scaled + 1.0) * (self.high - self.low))


class _QValues(nn.Module):
    """DQN: ``q_net(obs)``, whose argmax ``DQNPolicy._predict`` returns."""

    def __init__(self, q_net: nn.Module):
        super().__init__()
        self.q_net = q_net

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.q_net(obs)


class _QuantileMean(nn.Module):
    """QR-DQN: the mean over quantiles, whose argmax ``QRDQNPolicy._predict`` returns."""

    def __init__(self, quantile_net: nn.Module):
        super().__init__()
        self.quantile_net = quantile_net

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.quantile_net(obs).mean(dim=1)


class _ActorCriticHead(nn.Module):
    """PPO/A2C: ``action_net(mlp_extractor.forward_actor(features))``, the distribution's parameters whose mode
    ``predict`` returns: the logits' argmax, or the Gaussian's mean (tanh'ed and rescaled when the policy squashes)."""

    def __init__(self, policy, squash: bool):
        super().__init__()
        self.preprocess = _Preprocess(policy.observation_space, policy.normalize_images)
        self.features_extractor = policy.pi_features_extractor
        self.mlp_extractor = policy.mlp_extractor
        self.action_net = policy.action_net
        self.unscale = _Unscale(policy.action_space) if squash else None

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        latent_pi = self.mlp_extractor.forward_actor(self.features_extractor(self.preprocess(obs)))
        out = self.action_net(latent_pi)
        if self.unscale is not None:
            out = self.unscale(torch.tanh(out))
        return out


class _SquashedActor(nn.Module):
    """SAC-like actors: the squashed Gaussian's mode, tanh(mu(latent_pi(features))), rescaled to the bounds."""

    def __init__(self, actor):
        super().__init__()
        self.preprocess = _Preprocess(actor.observation_space, actor.normalize_images)
        self.features_extractor = actor.features_extractor
        self.latent_pi = actor.latent_pi
        self.mu = actor.mu
        self.unscale = _Unscale(actor.action_space)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        mean = self.mu(self.latent_pi(self.features_extractor(self.preprocess(obs))))
        return self.unscale(torch.tanh(mean))


class _DeterministicActor(nn.Module):
    """TD3/DDPG: the actor's output (its last layer is a tanh), rescaled to the bounds."""

    def __init__(self, actor):
        super().__init__()
        self.actor = actor
        self.unscale = _Unscale(actor.action_space)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.unscale(self.actor(obs))


def decision_module(policy, kind: str, discrete: bool, path: Path) -> tuple[nn.Module, str, str]:
    """The decision module for ``kind``, what its outputs are, and a one-line note for the run's provenance."""
    try:
        if kind == "q-net":
            return _QValues(policy.q_net), "q-values", "policy.q_net(obs): Q-values; the action is their argmax"
        if kind == "quantile-net":
            note = "policy.quantile_net(obs).mean(dim=1): Q-values; the action is their argmax"
            return _QuantileMean(policy.quantile_net), "q-values", note
        if kind == "actor-critic":
            if discrete:
                note = "policy.action_net(latent_pi): the action logits; the action is their argmax"
                return _ActorCriticHead(policy, squash=False), "logits", note
            if policy.squash_output:
                note = "unscale_action(tanh(policy.action_net(latent_pi))): the action, in the env's units"
                return _ActorCriticHead(policy, squash=True), "actions", note
            note = "policy.action_net(latent_pi): the Gaussian's mean, unclipped; predict() clips it to the bounds"
            return _ActorCriticHead(policy, squash=False), "actions", note
        if kind == "squashed-actor":
            note = "unscale_action(tanh(actor.mu(latent_pi))): the deterministic action, in the env's units"
            return _SquashedActor(policy.actor), "actions", note
        if kind == "deterministic-actor":
            note = "unscale_action(actor(obs)): the deterministic action, in the env's units"
            return _DeterministicActor(policy.actor), "actions", note
    except AttributeError as e:
        raise UserError(f"{path}: its policy ({type(policy).__name__}) has an unexpected structure: {e}") from e
    raise UserError(f"{path}: cannot rebuild the decision of this policy; {SUPPORTED}")
