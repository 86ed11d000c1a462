"""Where the shipped inputs live: the ``collect.data`` package, which is the checkout's data/ folder and ships
inside the wheel (the default agent, the fixed states, the pre-registered seeds). Measured ``*.duckdb``
files in data/ are the published report's inputs, not package data."""

from pathlib import Path

from rtreport.resources import package_folder

DATA = package_folder("collect.data", "data")
AGENT = DATA / "agent"
AGENT_WEIGHTS = AGENT / "model.pt"
AGENT_ONNX = AGENT / "model.onnx"
MODEL_CARD = AGENT / "model_card.json"
SEEDS = DATA / "seeds.json"
FIXED_STATES = DATA / "fixed_states.npy"
FIXED_STATES_INDEX = DATA / "fixed_states.json"


def shown(path) -> str:
    """How a model file is named in a run's provenance: ``data/…`` for a shipped file, else its file name
    (no user's home folder in a published report)."""
    path = Path(path).resolve()
    try:
        return "data/" + path.relative_to(DATA.resolve()).as_posix()
    except ValueError:
        return path.name
