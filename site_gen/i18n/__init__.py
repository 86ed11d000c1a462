"""UI string catalogs, one per language (Hugo-style ``i18n/<lang>.json``)."""
from __future__ import annotations

import json
import re
from pathlib import Path

_PERCENT = re.compile(r"(\d) %")

LANGUAGES = [  # (url segment, BCP 47 tag for lang/hreflang, name shown in the switcher)
    ("zh-tw", "zh-Hant-TW", "繁體中文"),
    ("en", "en", "English"),
]


def catalog(lang: str) -> dict:
    return json.loads((Path(__file__).parent / f"{lang}.json").read_text(encoding="utf-8"))


class Translator:
    """``t(key, **params)``: the catalog string for ``key`` with ``params`` filled in; a missing key raises."""

    def __init__(self, lang: str):
        self.lang = lang
        self.strings = catalog(lang)

    def __call__(self, key: str, **params) -> str:
        text = self.strings[key].format(**params) if params else self.strings[key]
        if self.lang == "zh-tw":  # Taiwanese typography: "12.5%", not "12.5 %"
            text = _PERCENT.sub(r"\1%", text)
        return text
