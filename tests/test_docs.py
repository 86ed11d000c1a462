"""README.md shows what the shipped files say."""
from collect import agent, paths


def test_readme_model_card_summary_is_current():
    readme = (paths.ROOT / "README.md").read_text()
    start = readme.index("<!-- model-card-summary -->\n") + len("<!-- model-card-summary -->\n")
    end = readme.index("\n<!-- /model-card-summary -->")
    assert readme[start:end] == agent.card_markdown(agent.read_card()), \
        "README's model card summary is stale: regenerate it from data/agent/model_card.json"
