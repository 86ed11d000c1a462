"""The docs show what the shipped files and the command line say, and README.md stays a short page."""

from pathlib import Path

from collect import paths  # noqa: F401
from collect.agent import shipped as agent

ROOT = Path(__file__).resolve().parents[1]  # the checkout


def test_the_model_card_summary_is_current():
    readme = (ROOT / "docs" / "agent.md").read_text()
    start = readme.index("<!-- model-card-summary -->\n") + len("<!-- model-card-summary -->\n")
    end = readme.index("\n<!-- /model-card-summary -->")
    assert readme[start:end] == agent.card_markdown(agent.read_card()), (
        "docs/agent.md's model card summary is stale: regenerate it from data/agent/model_card.json"
    )


def test_every_command_option_is_documented():
    from rtreport_cli.main import main

    pages = {"collect": "collecting.md", "build": "publishing.md", "train": "agent.md"}
    for name, page in pages.items():
        text = (ROOT / "docs" / page).read_text()
        for param in main.commands[name].params:
            for opt in getattr(param, "opts", []):
                if opt.startswith("--"):
                    assert opt in text, f"rtreport {name} {opt} is not documented in docs/{page}"


def test_the_readme_is_a_short_page_with_its_two_commands_and_live_links():
    import re

    readme = (ROOT / "README.md").read_text()
    assert len(readme) < 8000
    for heading in ("## Set up and run", "## Tests"):
        assert re.search(re.escape(heading) + r".*?\n```sh\n.+\n```", readme, re.S), heading
    for target in re.findall(r"\]\(([^)#]+)\)", readme):
        assert (ROOT / target).exists(), target
