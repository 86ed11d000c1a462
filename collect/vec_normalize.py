"""Stable-Baselines3's saved ``VecNormalize`` (``vecnormalize.pkl``, ``vec_normalize.pkl``): the observation
statistics a policy was trained behind, read as SB3 reads them, and what rtreport does with them.

``VecNormalize.save`` pickles the wrapper without its environment (``__getstate__`` drops ``venv``,
``class_attributes`` and ``returns``) and ``VecNormalize.load`` unpickles it and hands it an environment. rtreport
needs no environment: it unpickles the file (which imports ``stable_baselines3``; a pickle runs code, so load only
files you trust) and reads the saved state itself, never through the wrapper's attribute lookup (which forwards a
missing attribute, such as a reward-only wrapper's ``obs_rms``, to an environment that is not there). Evaluation
uses the statistics frozen (``training=False``) and the environment's own reward (``norm_reward=False``); what counts
is ``norm_obs``, ``obs_rms`` (mean and variance), ``clip_obs`` and ``epsilon``: an observation becomes
``clip((obs - mean) / sqrt(var + epsilon), -clip_obs, clip_obs)`` (``gym_env.GymTaskEnv``). A Dict observation's
statistics (``norm_obs_keys``) are refused: rtreport plays Box observations only.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from pathlib import Path

from rtreport.errors import UserError

NAMES = ("vecnormalize.pkl", "vec_normalize.pkl")  # the RL Zoo's name, and Hugging Face's / SB3's docs' name

# where the statistics came from, as the run file records it
SOURCES = ("beside the model", "rl-zoo folder", "hugging-face folder", "--normalize", "run configuration")


@dataclass(frozen=True)
class Saved:
    path: Path
    sha256: str
    norm_obs: bool
    norm_reward: bool
    clip: float
    epsilon: float
    mean: tuple | None  # None where norm_obs is off
    var: tuple | None

    @property
    def stats(self) -> tuple | None:
        """(mean, var, clip, epsilon) as ``tasks.Task.normalization`` holds them; None: observations as they are."""
        return (self.mean, self.var, self.clip, self.epsilon) if self.norm_obs else None

    def record(self, source: str) -> dict:
        """What the run file says of it (``protocol.preprocessing.normalization``)."""
        said = {
            "file": str(self.path),
            "sha256": self.sha256,
            "source": source,
            "norm_obs": self.norm_obs,
            "norm_reward": self.norm_reward,
        }
        if self.norm_obs:
            return {"applied": True, **said, "clip": self.clip, "epsilon": self.epsilon}
        return {"applied": False, **said, "reason": "reward-only"}


def read(path) -> Saved:
    """The saved VecNormalize at ``path``; every failure one line naming the file."""
    import numpy as np

    from .agent.network import sha256_file

    path = Path(path)
    if not path.exists():
        raise UserError(f"observation normalisation not found: {path}")
    if path.is_dir():
        raise UserError(f"{path} is a folder; give the VecNormalize file (vecnormalize.pkl) itself")
    try:
        import stable_baselines3.common.vec_env as vec_env  # the classes the pickle names
    except ImportError:
        raise UserError(f"{path}: reading a VecNormalize needs the stable-baselines3 package") from None
    try:
        with open(path, "rb") as f:
            saved = pickle.load(f)
    except Exception as e:
        raise UserError(
            f"{path} is not a saved VecNormalize of Stable-Baselines3 ({type(e).__name__}: {str(e)[:160]})"
        ) from None
    if not isinstance(saved, vec_env.VecNormalize):
        raise UserError(
            f"{path} is not a saved VecNormalize of Stable-Baselines3: it holds a {type(saved).__name__} (save the "
            "training's VecNormalize with vec_env.save(path))"
        )
    state = vars(saved)  # the pickled state, not the wrapper's forwarding attribute lookup
    norm_obs = bool(state.get("norm_obs", True))
    mean = var = None
    if norm_obs:
        rms = state.get("obs_rms")
        if isinstance(rms, dict):
            keys = state.get("norm_obs_keys") or sorted(rms)
            raise UserError(
                f"{path}: VecNormalize statistics of a Dict observation (norm_obs_keys {', '.join(map(str, keys))}) "
                "cannot be honoured: rtreport plays Box observations only"
            )
        try:
            mean = tuple(float(x) for x in np.asarray(rms.mean, np.float64).ravel())
            var = tuple(float(x) for x in np.asarray(rms.var, np.float64).ravel())
        except AttributeError:
            raise UserError(
                f"{path}: a VecNormalize with norm_obs on but no observation statistics (obs_rms)"
            ) from None
        if not (np.isfinite(mean).all() and np.isfinite(var).all() and min(var, default=0.0) >= 0):
            raise UserError(f"{path}: its observation statistics hold non-finite or negative values")
    try:
        clip, eps = float(state.get("clip_obs", 10.0)), float(state.get("epsilon", 1e-8))
    except (TypeError, ValueError):
        raise UserError(f"{path}: its clip_obs or epsilon is not a number") from None
    if not (clip > 0 and eps >= 0):
        raise UserError(f"{path}: clip_obs {clip:g} and epsilon {eps:g} cannot normalise observations")
    return Saved(path, sha256_file(path), norm_obs, bool(state.get("norm_reward", True)), clip, eps, mean, var)


def beside(folder: Path) -> Path | None:
    """The VecNormalize file in ``folder`` under one of SB3's usual names; both there and different: refused."""
    found = [folder / n for n in NAMES if (folder / n).is_file()]
    if len(found) > 1 and found[0].read_bytes() != found[1].read_bytes():
        raise UserError(
            f"{folder} holds two different VecNormalize files ({', '.join(p.name for p in found)}): give the one "
            "the model was trained with by --normalize FILE"
        )
    return found[0] if found else None
