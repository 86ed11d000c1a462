"""Where the shipped inputs live: the ``collect.data`` package, which is the checkout's data/ folder (the default
agent, the fixed states, the pre-registered seeds). The wheel carries the seeds only: it publishes, and the agent
and fixed states (15.5 MB) are read from the checkout (an editable install, or the checkout on PYTHONPATH).
Measured ``*.duckdb`` files in data/ are the published report's inputs, not package data."""
from pathlib import Path

from rtreport.errors import UserError
from rtreport.resources import package_folder

DATA = package_folder("collect.data", "data")
AGENT = DATA / "agent"
AGENT_WEIGHTS = AGENT / "model.pt"
AGENT_ONNX = AGENT / "model.onnx"
MODEL_CARD = AGENT / "model_card.json"
SEEDS = DATA / "seeds.json"
FIXED_STATES = DATA / "fixed_states.npy"
FIXED_STATES_INDEX = DATA / "fixed_states.json"


def require_shipped(model_given: bool) -> None:
    """One clear line when collect's shipped inputs are not installed (the base install only publishes)."""
    needed = [FIXED_STATES, FIXED_STATES_INDEX] + ([] if model_given else [AGENT_WEIGHTS])
    missing = [p.name for p in needed if not p.exists()]
    if missing:
        raise UserError(f"{', '.join(missing)} not found in {DATA}: rtreport collect reads the shipped agent and "
                        "fixed states from a checkout; install it with pip install -e \".[collect]\" there")


def shown(path) -> str:
    """How a model file is named in a run's provenance: ``data/…`` for a shipped file, else its file name
    (no user's home folder in a published report)."""
    path = Path(path).resolve()
    try:
        return "data/" + path.relative_to(DATA.resolve()).as_posix()
    except ValueError:
        return path.name
