"""Where the shipped files live. rtreport runs from its checkout (``pip install -e .``)."""
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data"
AGENT = DATA / "agent"
AGENT_WEIGHTS = AGENT / "model.pt"
AGENT_ONNX = AGENT / "model.onnx"
MODEL_CARD = AGENT / "model_card.json"
SEEDS = DATA / "seeds.json"
FIXED_STATES = DATA / "fixed_states.npy"
FIXED_STATES_INDEX = DATA / "fixed_states.json"
