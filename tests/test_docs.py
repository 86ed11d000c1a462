"""README.md shows what the shipped files say."""
from pathlib import Path

from collect import paths  # noqa: F401
from collect.agent import shipped as agent

ROOT = Path(__file__).resolve().parents[1]  # the checkout


def test_readme_model_card_summary_is_current():
    readme = (ROOT / "README.md").read_text()
    start = readme.index("<!-- model-card-summary -->\n") + len("<!-- model-card-summary -->\n")
    end = readme.index("\n<!-- /model-card-summary -->")
    assert readme[start:end] == agent.card_markdown(agent.read_card()), \
        "README's model card summary is stale: regenerate it from data/agent/model_card.json"


def test_every_command_option_is_documented_in_the_readme():
    from rtreport.cli import main
    readme = (ROOT / "README.md").read_text()
    for name in ("collect", "build", "train"):
        for param in main.commands[name].params:
            for opt in getattr(param, "opts", []):
                if opt.startswith("--"):
                    assert opt in readme, f"rtreport {name} {opt} is not documented in README.md"
