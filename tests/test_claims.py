"""Every sentence the site generates for the committed runs, in both languages, read against its claim kind and the
data: the wording items of an audit of the site's sentences, each a check that fails on pages that still carry it; every
recorded claim licensed by the analysis' own numbers; and the same claims in zh-TW and English, page by page."""

import html
import re
from itertools import permutations

import pytest
from click.testing import CliRunner

from rtreport_cli.main import main
from site_gen import claims
from site_gen.i18n import localize_titles
from site_gen.analysis import analyse
from site_gen.build import display_labels, load_runs
from site_gen.compare import compare_page
from site_gen.home import home_page
from site_gen.study import study_page
from site_gen.i18n import LANGUAGES, Translator, catalog, for_task
from site_gen.pages import hardware_page, slugify
from site_gen.wording import signed
from site_gen.verdict import Gates
from tests.conftest import COMMITTED_RUNS, EXAMPLE_RUNS

LANGS = [code for code, _, _ in LANGUAGES]
# Text left from earlier layouts or claims the data never carried (the audit's list), in both languages.
STALE = (
    "Left:",
    "Right:",
    "左圖",
    "右圖",
    "product owner",
    "產品負責人",
    "Latency, agreement and score",
    "各機器的延遲、一致性與分數",
    "include that spread",
    "已包含這段差距",
)


def _results(files):
    runs = load_runs(list(files))
    for run, label in zip(runs, display_labels(runs)):
        run.run["display_label"] = label
    taken: set = set()
    res = [analyse(run, Gates.load(None)) for run in runs]
    return res, [slugify(r.rows.run["label"], taken) for r in res]


@pytest.fixture(scope="module")
def results():
    return _results(COMMITTED_RUNS)


@pytest.fixture(scope="module")
def examples():
    """The example agents' committed runs: CartPole (logits), InvertedPendulum (continuous), Pong (an Atari game)."""
    return _results(EXAMPLE_RUNS)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("claims") / "site"
    result = CliRunner().invoke(main, ["build", *map(str, COMMITTED_RUNS), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


def page_text(path) -> str:
    text = re.sub(r"<(script|style)\b.*?</\1>", " ", path.read_text(encoding="utf-8"), flags=re.S)
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", text)))


def wording_problems(site, results) -> list[str]:
    """The audit's wording items found on the built pages (an empty list: none)."""
    res, slugs = results
    titles = sorted({r.rows.title for x in res for r in x.runtimes})
    cpu_slugs = [s for x, s in zip(res, slugs) if not x.rows.run.get("gpu_name")]
    problems = []
    for lang in LANGS:
        sep = catalog(lang)["sep"]
        for path in sorted((site / lang).rglob("index.html")):
            page, text = path.relative_to(site).as_posix(), page_text(path)
            raw = path.read_text(encoding="utf-8")
            said = lambda what, m: problems.append(f"{page}: {what}: …{m}…")  # noqa: E731
            for phrase in claims.NEVER + STALE:
                if phrase in text:
                    said("never said or stale", phrase)
            for m in re.finditer(claims.PLURAL_GUESS, text):
                said("a plural guessed", m.group(0))
            # a direction with an interval that runs the other way ("22.8 % slower (95 % interval … faster to …)")
            for m in re.finditer(r"[\d.]+ % (faster|slower) \(95 % interval ([^)]*)\)", text):
                if {"faster": "slower", "slower": "faster"}[m.group(1)] in m.group(2):
                    said("direction the interval does not carry", m.group(0))
            for m in re.finditer(r"(快|慢) [\d.]+%（95% 區間：?([^）]*)）", text):
                if {"快": "慢", "慢": "快"}[m.group(1)] in m.group(2):
                    said("direction the interval does not carry", m.group(0))
            for m in re.finditer(r"([+−-]\d+\.\d+) (?:to|至|…) \1(?![\d])", text):
                said("an interval with both ends equal", m.group(0))
            for m in re.finditer(r"(?:mostly \S+ \(|大多是 \S+（佔翻轉的 )(\d+) ?%", text):
                if int(m.group(1)) <= 50:
                    said("'mostly' for at most half", m.group(0))
            for a, b in permutations(titles, 2):  # a list a reader cannot split back into its titles
                if (sep.strip() in a or sep.strip() in b) and f"{a}{sep}{b}" in text:
                    said("titles holding the list separator joined by it", f"{a}{sep}{b}")
            if page.endswith("compare/index.html") and re.search(
                r"<th[^>]*>\s*" + re.escape(catalog(lang)["col_mean"]) + r"\s*</th>", raw
            ):
                said("unpaired mean column", catalog(lang)["col_mean"])
            if page.endswith("study/index.html"):
                for s in cpu_slugs:
                    if f"hardware/{s}/" in raw:
                        said("a CPU machine mapped to the study's GPU runtimes", s)
    return problems


def test_pages_carry_none_of_the_audited_wording(site, results):
    assert wording_problems(site, results) == []


def test_home_card_gives_each_tensorrt_family_its_own_reasons(results):
    from site_gen import reasons
    from site_gen.home import FAMILIES, tensorrt_note

    res, _ = results
    for lang in LANGS:
        t = Translator(lang)
        for x in res:
            note = tensorrt_note(x, t)
            if note is None:
                continue
            for prefix, family in FAMILIES:
                rows = [r for r in x.runtimes if r.rows.runtime_id.startswith(prefix)]
                if not rows:
                    continue
                kinds = {t(f"reason_kind_{reasons.kind(r.rows.status, r.rows.reason)}") for r in rows}
                part = re.search(
                    re.escape(t(family)) + re.escape(t("family_reason", family="", why="")) + r"([^;；)）]*)", note
                )
                assert part, (lang, family, note)
                assert set(part.group(1).split(t("sep"))) == kinds, (lang, family, note)


def page_claims(results, lang) -> dict:
    """Page -> the claims its model made (recorded by ``claims.say``)."""
    res, slugs = results
    makers = {
        "index": lambda t: home_page(res, slugs, t),
        "compare": lambda t: compare_page(res, slugs, t),
        "study": lambda t: study_page(res, slugs, t),
    }
    for x, slug in zip(res, slugs):  # a machine page in its agent's words, as the site renders it
        makers[f"hardware/{slug}"] = lambda t, x=x, slug=slug: hardware_page(
            x, slug, for_task(t, x.rows.run.get("protocol"))
        )
    from site_gen.history import groups as history_groups, history_page

    for label, runs in history_groups(res, slugs):
        makers[f"history/{label}"] = lambda t, label=label, runs=runs: history_page(label, runs, t)
    out = {}
    for page, make in makers.items():
        t = Translator(lang)
        t.ledger = []
        make(t)
        out[page] = t.ledger
    return out


def test_every_claim_is_licensed_by_the_data(results):
    res, slugs = results
    by_slug = dict(zip(slugs, res))
    seen = set()
    for lang in LANGS:
        for page, ledger in page_claims(results, lang).items():
            for c in ledger:
                seen.add(c["kind"])
                assert claims.check(c["kind"], c["evidence"]), c
                x = by_slug.get(page.removeprefix("hardware/"))
                r = x and c["subject"] and x.runtime(c["subject"])
                if not r:
                    continue
                e = c["evidence"]  # the evidence is the analysis' own result for that runtime
                if c["kind"].startswith(("speed_", "gate_faster")) and r.ratio and "gate" in e:
                    assert (e["value"], e["low"], e["high"]) == r.ratio, c
                if c["kind"].startswith("play_"):
                    assert (e["mean"], e["low"], e["high"], e["outcome"]) == (
                        r.play["mean"],
                        r.play["low"],
                        r.play["high"],
                        r.play["outcome"],
                    ), c
                if c["kind"].startswith("agreement_"):
                    assert (e["low"], e["high"]) == (r.shadow["low"], r.shadow["high"]), c
                if c["kind"] in ("reproducible", "not_reproducible"):
                    assert e == {k: r.reproduction[k] for k in e}, c
    # the committed runs exercise the main kinds (a check that never ran could not fail)
    assert {
        "gate_faster_pass",
        "gate_faster_unconfirmed",
        "play_non_inferior",
        "agreement_pass",
        "recommend",
        "verdict_group",
        "speed_faster",
        "reproducible",
    } <= seen, seen


def test_both_languages_make_the_same_claims_page_by_page(results):
    said = {lang: page_claims(results, lang) for lang in LANGS}
    for page in said["en"]:
        en = sorted((c["kind"], str(c["subject"])) for c in said["en"][page])
        zh = sorted((c["kind"], str(c["subject"])) for c in said["zh-tw"][page])
        assert en == zh, page
    assert any(said["en"].values())


def test_an_unlicensed_claim_is_refused():
    t = Translator("en")
    with pytest.raises(claims.Unlicensed):  # "slower" for an interval that runs from faster to slower
        claims.say(
            t,
            "speed_slower",
            "speed_slower",
            {"value": 1.228, "low": 0.95, "high": 1.4},
            value="22.8 %",
            low="-5 %",
            high="40 %",
        )
    with pytest.raises(claims.Unlicensed):  # "straddles" for a runtime wholly past the gate
        claims.say(
            t, "gate_faster_straddles", "gate_faster_straddles", {"value": 1.3, "low": 1.1, "high": 1.5, "gate": 0.9}
        )
    assert claims.titles(["A, B", "C"], t) == "A, B; C"
    assert claims.count_key("find_pass", 1) == "find_pass_one" and claims.count_key("find_pass", 8) == "find_pass_other"


def test_the_recommendation_states_what_it_trades_against_the_fastest_exact_runtime(results):
    """The fastest runtime that passes against the fastest exact and reproducible one (no flip in play, the same
    bits in fresh processes), in speed, agreement and play, one sentence each, both languages; expectations from
    the files, not fixed figures."""
    from site_gen.analysis import head_to_head
    from site_gen.findings import recommendation, sentences, trade_off

    res, _ = results
    checked = 0
    for x in res:
        rec = recommendation(x)
        if rec is None:
            assert trade_off(x, Translator("en")) == []
            continue
        fast = rec["runtime"]
        adopted = [r for r in x.runtimes if r.verdict and r.verdict.outcome == "deployment-worthy" and r.ratio]
        exact = [
            r for r in adopted if r.shadow["flips"] == 0 and r.reproduction and r.reproduction["reproducible"] is True
        ]  # exact, and shown reproducible
        for lang in LANGS:
            t = Translator(lang)
            said = trade_off(x, t)
            checked += 1
            assert said == sentences(x, t)[1 : 1 + len(said)]  # right after the recommendation
            if not exact:
                assert len(said) == 1
                continue
            best = min(exact, key=lambda r: r.ratio[0])
            if best is fast:
                assert len(said) == 1 and f"{fast.shadow['decisions']:,}" in said[0]
                continue
            shown = [localize_titles(r.rows.title, lang) for r in (fast, best)]  # a zh-TW page says them in Chinese
            repro = fast.reproduction and fast.reproduction["reproducible"] is not True  # said as a fourth
            assert len(said) == 3 + bool(repro) and all(all(name in s for name in shown) for s in said)
            v = head_to_head(fast, best, x.gates.speed_statistic)  # speed, paired by round,
            assert f"{1 / v['value']:.2f}×" in said[0] or f"{1 / v['value']:.2f} 倍" in said[0]  # on one scale
            assert f"{1 / v['high']:.2f}" in said[0] and f"{1 / v['low']:.2f}" in said[0]
            # "the fastest exact" outright only where its own ratio to the next exact one lies below 1
            second = sorted(exact, key=lambda r: r.ratio[0])[1:2]
            versus = head_to_head(best, second[0], x.gates.speed_statistic) if second else None
            point = bool(second) and (versus is None or versus["high"] >= 1)
            assert (("by point estimate" in said[0]) or ("依點估計" in said[0])) == point
            assert not point or localize_titles(second[0].rows.title, lang) in said[0]
            assert f"{fast.shadow['flips']:,}" in said[1] and f"{best.shadow['decisions']:,}" in said[1]
            for r in (fast, best):  # a mean, or "every seed scored as the reference did"
                same = r.play["sd"] == 0 and r.play["mean"] == 0
                assert (t("trade_play_identical") if same else signed(r.play["mean"])) in said[2]
    assert checked >= 2  # some committed run recommends a runtime (read in both languages)


def test_an_install_hint_naming_compute_capabilities_is_read_as_not_installed():
    """The TensorRT-RTX reason on a machine without the package names the capabilities it serves: it is still
    "not installed", not "this GPU is not one the library serves" (which the H200's own refusal is)."""
    from site_gen import reasons

    hint = (
        "the tensorrt_rtx Python package is not installed (No module named 'tensorrt_rtx'); pip install "
        "tensorrt-rtx (from PyPI; runs on compute capability 8.0, 8.6, 8.9 and 12.x)"
    )
    refusal = (
        "tensorrt_rtx 1.7.1.116: IRuntime::deserializeCudaEngine: Error Code 6: API Usage Error (The engine "
        "cannot run on this GPU, which has compute capability 9.0."
    )
    assert reasons.kind("unavailable", hint) == "not_installed"
    assert reasons.kind("unavailable", refusal) == "gpu_not_served"


def test_an_execution_provider_that_did_not_load_is_not_said_to_be_missing():
    """ONNX Runtime lists its TensorRT EP on the H200, whose TensorRT libraries are not there: the provider is in
    the installed ONNX Runtime and did not load, which is not "the installed ONNX Runtime lacks it"."""
    from collect.outcome import Tally
    from site_gen import reasons

    loaded = (
        "TensorrtExecutionProvider did not load (Please install TensorRT libraries as mentioned in the GPU "
        "requirements page; session providers: CUDAExecutionProvider, CPUExecutionProvider)"
    )
    assert reasons.kind("unavailable", loaded) == "provider_not_loaded"
    assert reasons.kind("unavailable", "TensorrtExecutionProvider is not in onnxruntime") == "provider_missing"
    tally = Tally(3, ["a"], [("b", loaded, "unavailable"), ("c", "CUDA error", "failed")])
    assert tally.line() == "1 of 3 runtimes measured, 1 failed and 1 could not run (listed above)"
    tally.untried = 10  # asked for, their library absent: listed above too, so the line counts them
    assert tally.line().endswith("1 could not run (listed above, with 10 more this machine cannot try)")


def test_the_example_agents_pages_make_licensed_claims_alike_in_both_languages(examples):
    said = {lang: page_claims(examples, lang) for lang in LANGS}
    kinds = set()
    for lang in LANGS:
        for page, ledger in said[lang].items():
            for c in ledger:
                kinds.add(c["kind"])
                assert claims.check(c["kind"], c["evidence"]), (page, c)
    for page in said["en"]:
        en = sorted((c["kind"], str(c["subject"])) for c in said["en"][page])
        zh = sorted((c["kind"], str(c["subject"])) for c in said["zh-tw"][page])
        assert en == zh, page
    assert {"recommend", "play_identical", "play_inferior", "near_ties", "family_bound", "within_tolerance"} <= kinds, (
        kinds
    )
