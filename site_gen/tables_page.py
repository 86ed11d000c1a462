"""A machine's tables page: every table of its machine page, one section each, so that the machine page tells the
result in charts and short lines and stays a few phone screens a section, while every number stays one link away.

Nothing is computed here: the tables are the machine page's own (``pages.hardware_page``), regrouped.
"""

from __future__ import annotations

from .i18n import Translator

TABLES_PATH = "tables"  # below the machine page's folder: hardware/<slug>/tables/
# The machine page's parts that have tables, in page order, and each one's tables: ("chart", chart id) is a chart's
# data table, anything else the name of a table the machine page model holds.
PART_TABLES = (
    ("verdicts", "verdicts", ("gates",)),  # one table a gate: ``verdict_why.gate_tables``
    (
        "speed",
        "speed",
        (("chart", "speed"), ("chart", "latency"), "rounds", "repeats", "conditions", ("chart", "throughput")),
    ),
    ("agreement", "agreement", (("chart", "agreement"), "played_agreement", ("chart", "fixed-states"))),
    ("play", "play", (("chart", "play"), ("chart", "scores"), "play_test")),
    ("costs", "costs_heading", (("chart", "breakdown"), "kernels", "resources")),
)
HEADINGS = {
    "rounds": "rounds_heading",
    "repeats": "repeats_heading",
    "conditions": "repeats_conditions_heading",
    "played_agreement": "played_agreement_heading",
    "play_test": "play_test_heading",
    "kernels": "kernels_heading",
    "resources": "resources_heading",
}


INTROS = {"play_test": "play_test_intro"}  # a table's own line above it, where its columns need one


def _table(hw: dict, key) -> tuple[str, dict | None, str | None, str | None]:
    """(section id, table, heading key or chart title, intro) of one of the machine page's tables."""
    if isinstance(key, tuple):
        chart = hw["charts"].get(key[1])
        return f"t-{key[1]}", chart and chart["table"], chart and chart["title"], None
    if key in ("repeats", "conditions"):
        repeats = hw.get("repeats")
        if not repeats:
            return f"t-{key}", None, None, None
        if key == "repeats":
            return "t-repeats", repeats["ratios"], HEADINGS[key], repeats["intro"]
        return "t-conditions", repeats["conditions"], HEADINGS[key], None
    return f"t-{key.replace('_', '-')}", hw.get(key), HEADINGS[key], INTROS.get(key)


def machine_tables(hw: dict, t: Translator) -> dict:
    """The tables page's model, and on the machine page each part's links to its tables (``hw["table_links"]``,
    set here) and each chart's link to its data table (``chart["table_href"]``)."""
    sections, links = [], {}
    for part, title_key, keys in PART_TABLES:
        part_title = t(title_key)
        found = [_table(hw, key) + (key,) for key in keys if key != "gates"]
        if "gates" in keys:
            found = [(f"t-{g['key']}", g["table"], g["heading"], None, "gates") for g in hw["gate_tables"]]
        for sid, table, heading, intro, key in found:
            if not table or not table["rows"]:
                continue
            heading = heading if isinstance(key, tuple) or key == "gates" else t(heading)
            sections.append(
                {
                    "id": sid,
                    "heading": heading,
                    "part": part_title,
                    "intro": t(intro) if intro in INTROS.values() else intro,
                    "table": table,
                    "back": f"../index.html#{part}",
                }
            )
            href = f"{TABLES_PATH}/index.html#{sid}"
            if isinstance(key, tuple):
                hw["charts"][key[1]]["table_href"] = href
            else:
                links.setdefault(part, []).append({"href": href, "text": heading})
    hw["table_links"] = links
    return {
        "heading": t("tables_heading", machine=hw["machine"]),
        "date": hw["date"],
        "intro": t("tables_intro"),
        "machine_href": "../index.html",
        "machine_link": t("tables_back"),
        "back_link": t("tables_back_part"),
        "contents": [
            {
                "part": part,
                "links": [{"href": f"#{s['id']}", "text": s["heading"]} for s in sections if s["part"] == part],
            }
            for part in dict.fromkeys(s["part"] for s in sections)
        ],
        "sections": sections,
    }
