"""UI string catalogues, one per language: gettext's PO files read with Babel
(``site_gen/locale/<locale>/LC_MESSAGES/rtreport.po``, the template ``site_gen/locale/rtreport.pot``).

Message ids are symbolic (``"nav_home"``, ``"sum_speed"``); English is the source catalogue. Every string the
site writes comes from them, rtreport's own reason messages included (as reason kinds); the same catalogues serve
Jinja2's i18n extension (``_()`` in a template), installed by ``site_gen.render``. Terms are fixed once in
docs/zh-tw-glossary.md. To edit: change the PO files (``pybabel update -i site_gen/locale/rtreport.pot -d
site_gen/locale -D rtreport`` after adding a message id to the template).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

_PERCENT = re.compile(r"(\d) %")
# a space between two CJK characters (or CJK punctuation): none in Taiwanese typography, e.g. where a runtime title
# ending in "CUDA 圖" meets "的"
_CJK = "\u3000-\u303f\u3400-\u9fff\uff00-\uffef"
_CJK_SPACE = re.compile(f"(?<=[{_CJK}]) (?=[{_CJK}])")

LANGUAGES = [  # (url segment, BCP 47 tag for lang/hreflang, name shown in the switcher)
    ("zh-tw", "zh-Hant-TW", "繁體中文"),
    ("en", "en", "English"),
]
LOCALES = {"zh-tw": "zh_Hant_TW", "en": "en"}  # url segment -> the catalogue's locale (Babel's name)
LOCALE_DIR = Path(__file__).resolve().parent.parent / "locale"
DOMAIN = "rtreport"


# The words of runtime titles as run files record them (English, from the registry or a plugin), said in the page's
# language at display time: the file keeps its title, a zh-TW page shows these phrases in Chinese
# (docs/zh-tw-glossary.md). Longest first; each result holds none of the phrases, so applying it twice is harmless.
TITLE_PHRASES = {
    "zh-tw": (
        ("torch.compile (default) + ", "torch.compile（預設模式）+ "),  # no space after a full-width bracket
        ("torch.compile (default)", "torch.compile（預設模式）"),
        ("IO binding", "輸入輸出繫結"),
        ("CUDA graph", "CUDA 圖"),
        (" (plugin)", "（外掛）"),  # no space before a full-width bracket
        ("(plugin)", "（外掛）"),
        # the comma between a title's precision and its variant, full-width as in Chinese text
        ("FP32, ", "FP32，"),
        ("FP16, ", "FP16，"),
        ("INT8, ", "INT8，"),
        ("QDQ, ", "QDQ，"),
        ("EP, ", "EP，"),
    ),
}


def localize_titles(text: str, lang: str) -> str:
    """``text`` with the runtime titles' English phrases in ``lang`` (unchanged for English)."""
    for english, local in TITLE_PHRASES.get(lang, ()):
        text = text.replace(english, local)
    return text


@functools.lru_cache(maxsize=None)
def _read(lang: str) -> dict:
    from babel.messages.pofile import read_po

    path = LOCALE_DIR / LOCALES[lang] / "LC_MESSAGES" / f"{DOMAIN}.po"
    with open(path, "rb") as f:
        messages = read_po(f, locale=LOCALES[lang], domain=DOMAIN)
    return {m.id: m.string for m in messages if m.id and not m.fuzzy}


def catalog(lang: str) -> dict:
    """message id -> text, in ``lang`` (a url segment of ``LANGUAGES``)."""
    return dict(_read(lang))


class Translator:
    """``t(key, **params)``: the catalog string for ``key`` with ``params`` filled in; a missing key raises."""

    def __init__(self, lang: str):
        self.lang = lang
        self.strings = catalog(lang)

    def has(self, key: str) -> bool:
        return key in self.strings

    def _message(self, key: str) -> str:
        """The catalog string of ``key``, before its parameters are filled in."""
        return self.strings[key]

    def __call__(self, key: str, **params) -> str:
        message = self._message(key)
        text = message.format(**params) if params else message
        if self.lang == "zh-tw":  # Taiwanese typography: "12.5%", not "12.5 %"; titles' phrases in Chinese
            text = _CJK_SPACE.sub("", localize_titles(_PERCENT.sub(r"\1%", text), self.lang))
        return text


# The words of a policy of Q-values (Breakout's, and every discrete agent's by default), said of the outputs of a
# policy that has none: action logits, or a continuous action.
OUTPUT_WORDS = {
    "en": (
        ("Q-values", "outputs"),
        ("a Q-value", "an output"),
        ("Q-value", "output"),
        ("|ΔQ|", "|Δ output|"),
        ("Q gap", "output gap"),
    ),
    "zh-tw": ((" Q 值", "輸出值"), ("Q 值", "輸出值"), ("|ΔQ|", "|Δ 輸出值|")),  # no space left between two CJK words
}
# The words of a game (an Atari one's), said of a Gymnasium task's episodes (a message whose whole sentence differs
# has its own ``_task`` variant instead): (pattern, replacement), in order.
EPISODE_WORDS = {
    "en": (
        (r"\ba game\b", "an episode"),
        (r"\bgames\b", "episodes"),
        (r"\bgame\b", "episode"),
        (r"\bGames\b", "Episodes"),
    ),
    "zh-tw": ((r"遊戲局", "回合"), (r"局", "回合")),
}


class _TaskTranslator(Translator):
    """A page's translator for an agent other than a Q-network on an Atari game: a message with a variant for
    its kind of task (``key_continuous`` for continuous actions, ``key_task`` for a Gymnasium task, which is no
    game) says that variant; a Gymnasium task's games are its episodes, and a policy whose outputs are not
    Q-values has "Q-values" said as "outputs". Only the catalog's words change, never a filled-in value."""

    def __init__(self, base: Translator, variants: tuple[str, ...], q_values: bool):
        self.__dict__.update(base.__dict__)
        self.variants, self.q_values = variants, q_values

    def _message(self, key: str) -> str:
        key = next((f"{key}_{v}" for v in self.variants if f"{key}_{v}" in self.strings), key)
        text = self.strings[key]
        if not self.q_values:
            for q_word, word in OUTPUT_WORDS.get(self.lang, ()):
                text = text.replace(q_word, word)
        if "task" in self.variants:
            for pattern, word in EPISODE_WORDS.get(self.lang, ()):
                text = re.sub(pattern, word, text)
        return text


def for_task(t: Translator, protocol: dict | None) -> Translator:
    """``t`` for the pages of a run of ``protocol`` (its stored task): Breakout's and every Atari Q-network's pages
    read as they always have; other tasks' say their own words (``_TaskTranslator``)."""
    protocol = protocol or {}
    variants = (
        *(("continuous",) if protocol.get("action_kind") == "continuous" else ()),
        *(("task",) if protocol.get("family") == "gymnasium" else ()),
    )
    q_values = protocol.get("outputs", "q-values") == "q-values"
    return t if q_values and not variants else _TaskTranslator(t, variants, q_values)
