"""Every sentence on every built page, read: each sentence with a number or a comparison word is
a recorded claim (``claims.say``, its text on the ledger), fixed method text from the catalogs (no figure of the run
in it), or one of a short list of purely descriptive kinds (``DESCRIPTIVE``). Read on the published site (the
committed runs and this machine's quick run), both languages."""

import html
import json
import re
from pathlib import Path


from site_gen.analysis import analyse
from site_gen.build import display_labels, load_runs
from site_gen.history import groups as history_groups, history_page
from site_gen.compare import compare_page
from site_gen.home import home_page
from site_gen.study import study_page
from site_gen.i18n import LANGUAGES, Translator, catalog
from site_gen.pages import hardware_page, slugify
from site_gen.verdict import Gates
from site_gen.web import headline
from tests.conftest import COMMITTED_RUNS

LANGS = [code for code, _, _ in LANGUAGES]
# Purely descriptive sentences (i18n keys): they say when, what and how many were measured, or what a gate
# requires; never a result, a direction or a comparison.
DESCRIPTIVE = (
    "measured_on",
    "measured_date",
    "session_item",
    "hist_run_n",  # dates, rounds and runs by number
    "open_machine",
    "machine_runs",
    "hist_link",
    "hist_intro",  # links and counts of runs
    "hist_answer",
    "hist_superseded",  # which run is a machine's newest complete
    "speed_intro",
    "agreement_intro",
    "play_intro",
    "workload_text",
    "workload_text_greedy",  # how many samples, states and seeds
    "title_fixed",  # the fixed-states chart's title: how many states
    "speed_intro_task",
    "agreement_intro_task",
    "play_intro_task",
    "play_intro_continuous",  # other agents' introductions
    "gate_agreement_within",
    "gate_agreement_tolerance",
    "gate_play_over_random",  # other agents' gates
    "card_tensorrt_no_gpu",
    "scope",
    "contents",
    "sum_cross_one",
    "sum_cross_other",
    "state_n",  # how many runtimes, machines; which state
    "gate_faster",
    "gate_agreement",
    "gate_play",  # what each gate requires (the gates file)
    "dirty_banner",
    "mixed_onnxruntime_banner",
    "card_tensorrt",  # provenance, and why a runtime did not run
    "family_group",
    "tf32_on",
    "tf32_off",  # which runtimes share a play test; a setting
    "atari_protocol_rtreport",
    "atari_protocol_sb3",  # how an Atari game is played: the protocol's settings
    "cap_throughput_fixed_batch",  # which batch sizes the model takes
    "smoke_banner_cap",  # where the smoke profile cuts a game
    "agent_bounds_each",  # an action's bounds
    "hist_changed",
    "hist_library",
    "hist_runtime_libraries",
    "hist_step",  # what changed between two runs
    "not_alike",  # what differs between runs' settings
    "repeats_intro",  # what the repeats' table holds ("比值")
    "speed_unconfirmed_one",
    "speed_unconfirmed_other",  # how many measurements, and the gate's need
    "speed_load_retaking",
    "speed_load_before",
    "gate_faster_load",  # rounds measured again for others' load
    "speed_rejudged",
    "hist_single_process",  # when the rule was written; runs not compared
    "ans_not_run_one",
    "ans_not_run_other",
    "ans_not_run_kind",  # how many runtimes did not run, by reason
    "sum_scores_one",
    "sum_scores_other",  # how many runtimes a chart shows
)
# A number (not a digit inside a name such as FP32, P95 or H200) or a comparison word.
NUMBER = re.compile(r"(?<![A-Za-z\d_.-])\d")
COMPARISON = re.compile(
    r"\b(faster|slower|fastest|slowest|quicker|better|worse|best|worst|lowest|highest|fewest|"
    r"least|most|mostly|than|ahead|behind|inferior|non-inferior|outperform\w*)\b|"
    r"[快慢優劣]|最|較|比|不遜",
    re.I,
)
DATE = re.compile(r"\d{4}-\d\d-\d\d(?:[ T]\d\d:\d\d(?::\d\d)?)?")  # a date or a time is descriptive
INLINE = r"a|abbr|b|code|em|i|mark|small|span|strong|sub|sup|time|bdi"


def norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def blocks(path: Path) -> list[str]:
    """The page's text, one entry per block (paragraph, list item, caption, heading, summary); tables and
    definition lists (their cells are figures, not sentences), scripts, styles, the navigation and the recorded
    messages of libraries (shown verbatim, folded) left out."""
    raw = path.read_text(encoding="utf-8")
    raw = raw[raw.find("<body") :] if "<body" in raw else raw
    raw = re.sub(r"<(script|style|table|dl|svg|template|nav)\b.*?</\1>", "\n", raw, flags=re.S)
    raw = re.sub(r'<details class="raw">.*?</details>', "\n", raw, flags=re.S)  # a library's message, verbatim
    raw = re.sub(rf"</?(?:{INLINE})\b[^>]*>", "", re.sub(r"\s+", " ", raw))
    return [b for b in (norm(html.unescape(x)) for x in re.sub(r"<[^>]+>", "\n", raw).split("\n")) if b]


def template_text() -> list[str]:
    """The text written in the templates themselves (the method page, the lede, headings) and the original
    study's cited text: the same on every build, it states no result of a run."""
    out = set()
    for path in (Path(__file__).parents[1] / "templates").rglob("*.html"):
        raw = re.sub(r"\{#.*?#\}", "", path.read_text(encoding="utf-8"), flags=re.S)
        raw = re.sub(r"<(script|style)\b.*?</\1>", "\n", raw, flags=re.S)
        raw = re.sub(rf"</?(?:{INLINE})\b[^>]*>", "", raw)
        for piece in re.split(r"\{\{.*?\}\}|\{%.*?%\}|<[^>]+>", raw, flags=re.S):
            if len(norm(html.unescape(piece))) > 3:
                out.add(norm(html.unescape(piece)))
    cited = json.loads((Path(__file__).parents[1] / "site_gen" / "original_study.json").read_text(encoding="utf-8"))
    return sorted(out | set(strings_in(cited)), key=len, reverse=True)


def strings_in(v) -> list[str]:
    if isinstance(v, str):
        return [norm(v)]
    items = v.values() if isinstance(v, dict) else v if isinstance(v, (list, tuple)) else []
    return [s for w in items for s in strings_in(w)]


def recorded(x) -> set[str]:
    """Every string the run's file records (reasons, versions, hashes, ids): shown as the file has them."""
    out = set(strings_in(x.rows.run))
    walk = lambda v: out.update(strings_in(v))  # noqa: E731
    for r in x.runtimes:
        walk([r.rows.title, r.rows.runtime_id, r.rows.reason, r.rows.status])
        out |= {f"{k}={v}" for k, v in ((r.rows.numerics or {}).get("switches") or {}).items()}
    return {s for s in out if len(s) > 2}


def site_claims(paths) -> dict:
    """Language -> the text of every claim the site's page models make (as ``render_site`` makes them)."""
    runs = load_runs(sorted(paths, key=lambda p: Path(p).name))
    for run, label in zip(runs, display_labels(runs)):
        run.run["display_label"] = label
    res = [analyse(run, Gates.load(None)) for run in runs]
    taken: set = set()
    slugs = [slugify(r.rows.run["label"], taken) for r in res]
    out = {}
    for lang in LANGS:
        t = Translator(lang)
        t.ledger = []
        home_page(res, slugs, t), compare_page(res, slugs, t), study_page(res, slugs, t)
        for x, slug in zip(res, slugs):
            hardware_page(x, slug, t), headline(x, t)
        for label, group in history_groups(res, slugs):
            history_page(label, group, t)
        out[lang] = {norm(c["text"]) for c in t.ledger}
    return out, sorted(set().union(*map(recorded, res)), key=len, reverse=True)


def _pattern(template: str) -> str:
    """A catalog string as a pattern: a parameter inside it matches anything, one at its start or end the rest of
    that sentence."""
    parts = [re.escape(norm(p)).replace(r"\ %", r"\ ?%") for p in re.split(r"\{[^{}]*\}", template)]
    head = r"[^;；。]+?" if parts[0] == "" else ""
    tail = r"[^;；。]+" if parts[-1] == "" and len(parts) > 1 else ""
    return head + ".+?".join(parts).strip() + tail


def _pieces(template: str) -> list[str]:
    """The pieces of a catalog string that every match of its pattern (``_pattern``) holds as they stand: a block
    that lacks one is not searched (lazy wildcards on a long block take minutes)."""
    pieces = [q.strip() for p in re.split(r"\{[^{}]*\}", template) for q in norm(p).split(" %")]
    return [q for q in pieces if q]


class _Within:
    """Strings in a fixed order (longest first), and for one block the few of them that occur in it, in that
    order: a string that is no substring of the block cannot become one as its spans are blanked out, so taking
    only these out of it, in the same order, gives what taking every string out would. Indexed by each string's
    first ``K`` characters (the shorter ones are always tried)."""

    K = 6

    def __init__(self, texts):
        self.texts, self.short, self.index = list(texts), [], {}
        for i, text in enumerate(self.texts):
            if len(text) < self.K:
                self.short.append(i)
            else:
                self.index.setdefault(text[: self.K], []).append(i)

    def of(self, block: str) -> list[str]:
        grams = {block[i : i + self.K] for i in range(len(block) - self.K + 1)}
        found = [i for g in grams & self.index.keys() for i in self.index[g]]
        return [self.texts[i] for i in sorted(found + self.short) if self.texts[i] in block]


def uncovered(site: Path, said: dict, names: list[str]) -> list[str]:
    """Each sentence with a number or a comparison word that is no recorded claim, fixed text, or descriptive."""
    problems = []
    for lang in LANGS:
        strings, t = catalog(lang), Translator(lang)
        # fixed text (the catalogs' and templates' own, no parameter in it) is the same on every build: taken out
        # where it is a whole block or sentence, or long enough not to be a word of a generated sentence
        fixed = sorted(
            {norm(t(k)) for k, v in strings.items() if "{" not in v} | set(template_text()), key=len, reverse=True
        )
        described = [(_pieces(t(k)), re.compile(_pattern(t(k)))) for k in DESCRIPTIVE]
        texts = _Within(sorted(said[lang], key=len, reverse=True))
        fixed_within, names_within, fixed_set = _Within(fixed), _Within(names), set(fixed)
        for path in sorted((site / lang).rglob("*.html")):
            for block in blocks(path):
                spans = [
                    m.span() for pieces, p in described if all(q in block for q in pieces) for m in p.finditer(block)
                ]
                rest = block  # what is taken out keeps its length, so that a sentence keeps its place
                for text in texts.of(block):
                    rest = rest.replace(text, "¶" * len(text))
                for text in fixed_within.of(block):
                    if len(text) >= 25 or text == rest.strip():
                        rest = rest.replace(text, "¶" * len(text))
                for name in names_within.of(block):
                    rest = rest.replace(name, "_" * len(name))
                rest = DATE.sub(lambda m: "_" * len(m.group(0)), rest)
                cuts = [0] + [i for m in re.finditer(r"¶+|(?<=[.;:。；：])\s+", rest) for i in m.span()] + [len(rest)]
                for start, end in zip(cuts[::2], cuts[1::2]):
                    sentence = rest[start:end].strip()
                    if not (NUMBER.search(sentence) or COMPARISON.search(sentence)) or sentence in fixed_set:
                        continue
                    if any(a <= start and end <= b for a, b in spans):
                        continue
                    problems.append(f"{path.relative_to(site).as_posix()}: {block[start:end].strip()!r} in {block!r}")
    return problems


def test_every_sentence_with_a_number_or_a_comparison_is_a_claim(published_site, quick_run):
    said, names = site_claims([quick_run, *COMMITTED_RUNS])
    problems = uncovered(published_site, said, names)
    assert problems == [], f"{len(problems)} sentences no claim licenses:\n" + "\n".join(problems[:60])


def _page_texts(site: Path, lang: str):
    for path in sorted((site / lang).rglob("*.html")):
        yield path, blocks(path)


def test_no_margin_is_said_as_a_measurement_and_speed_has_one_scale(published_site):
    """The play test's margin is fixed before measuring: a sentence names it as the margin (容許界線), never as how
    far the games differed ("no worse than 12.39 points a game"). A speed is a multiple of another's speed
    ("3.49×", "3.49 倍"), never a percentage a reader can take for another ratio ("71.4 % faster")."""
    from site_gen.build import load_runs

    margins = set()
    for run in load_runs(list(COMMITTED_RUNS)):
        res = analyse(run, Gates.load(None))
        margins |= {f"{r.play['margin']:.2f}" for r in res.runtimes if r.play}
    assert margins
    said_as_measure = re.compile(r"no worse than|not worse than|差距不超過|每局差距")
    percent_speed = re.compile(r"\d+(?:\.\d+)? ?% (?:faster|slower)|快 ?\d+(?:\.\d+)? ?%|慢 ?\d+(?:\.\d+)? ?%")
    for lang in LANGS:
        for path, texts in _page_texts(published_site, lang):
            for block in texts:
                assert not said_as_measure.search(block), (path.name, block)
                assert not percent_speed.search(block), (path.name, block)
                for sentence in re.split(r"(?<=[.;。；])\s*", block):
                    for m in margins:
                        if f"−{m}" in sentence or f"-{m}" in sentence:
                            assert re.search(r"margin|容許界線|gate|門檻", sentence), (path.name, sentence)


def test_means_are_compared_on_the_same_seeds(published_site):
    """Where a page sets a runtime's mean score beside the reference's, both are over the same seeds: the play
    table gives "its / the reference's" from the seeds that runtime played, and the study page names the seeds."""
    for lang, header, words in (
        ("en", "mean score, it / the reference (same seeds)", "on the same"),
        ("zh-tw", "平均分數：它／基準（同種子）", "在相同"),
    ):
        tables = published_site / lang / "hardware" / "nvidia-h200" / "tables" / "index.html"
        assert header in tables.read_text(encoding="utf-8")  # the scores' table, on the machine's tables page
        study = (published_site / lang / "study" / "index.html").read_text(encoding="utf-8")
        assert words in study
