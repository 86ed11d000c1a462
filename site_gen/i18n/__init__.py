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


# The words of runtime titles as run files record them (English, from the registry or a plugin), said in the page's
# language at display time: the file keeps its title, a zh-TW page shows these phrases in Chinese
# (docs/zh-tw-glossary.md). Longest first; each result holds none of the phrases, so applying it twice is harmless.
TITLE_PHRASES = {
    "zh-tw": (("torch.compile (default)", "torch.compile（預設模式）"), ("IO binding", "輸入輸出繫結"),
              ("CUDA graph", "CUDA 圖"), ("(plugin)", "（外掛）")),
}


def localize_titles(text: str, lang: str) -> str:
    """``text`` with the runtime titles' English phrases in ``lang`` (unchanged for English)."""
    for english, local in TITLE_PHRASES.get(lang, ()):
        text = text.replace(english, local)
    return text


def catalog(lang: str) -> dict:
    return json.loads((Path(__file__).parent / f"{lang}.json").read_text(encoding="utf-8"))


class Translator:
    """``t(key, **params)``: the catalog string for ``key`` with ``params`` filled in; a missing key raises."""

    def __init__(self, lang: str):
        self.lang = lang
        self.strings = catalog(lang)

    def __call__(self, key: str, **params) -> str:
        text = self.strings[key].format(**params) if params else self.strings[key]
        if self.lang == "zh-tw":  # Taiwanese typography: "12.5%", not "12.5 %"; titles' phrases in Chinese
            text = localize_titles(_PERCENT.sub(r"\1%", text), self.lang)
        return text
