"""`rtreport build`: determinism, bad input, hostile strings, translations."""

import html
import json
import re
import shutil

import duckdb
import pytest
from click.testing import CliRunner

from conftest import COMMITTED_RUNS
from rtreport import integrity
from rtreport_cli.main import main
from site_gen.i18n import LANGUAGES, catalog


def _tree(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_build_is_byte_deterministic(quick_run, built_site, tmp_path):
    again = tmp_path / "again"
    assert CliRunner().invoke(main, ["build", str(quick_run), "--out", str(again)]).exit_code == 0
    first, second = _tree(built_site), _tree(again)
    assert first.keys() == second.keys()
    assert [k for k in first if first[k] != second[k]] == []


def test_every_page_exists_in_both_languages_with_lang_and_a_switcher(built_site):
    pages = sorted(p.relative_to(built_site / "en").as_posix() for p in (built_site / "en").rglob("index.html"))
    assert "index.html" in pages and "compare/index.html" in pages and "method/index.html" in pages
    assert "study/index.html" in pages and any(p.startswith("hardware/") for p in pages)
    for code, tag, _ in LANGUAGES:
        for page in pages:
            html = (built_site / code / page).read_text()
            assert f'<html lang="{tag}">' in html
            for other_code, other_tag, _ in LANGUAGES:
                if other_code == code:
                    continue  # the switcher names the other language and leads to the same page in it
                link = re.search(rf'<a class="switcher"[^>]*hreflang="{other_tag}"[^>]*href="([^"]+)"', html)
                assert link, (code, page)
                target = (built_site / code / page).parent / link.group(1)
                assert target.resolve() == (built_site / other_code / page).resolve(), (code, page, link.group(1))


def test_pages_stay_light_beside_the_shared_plotly_bundle(built_site):
    bundles = list((built_site / "assets").glob("plotly-*.min.js"))
    assert len(bundles) == 1 and re.fullmatch(r"plotly-rtreport-\d+\.\d+\.\d+\.min\.js", bundles[0].name)
    for page in built_site.rglob("index.html"):
        assert page.stat().st_size <= 1_500_000
        assert "cdn." not in page.read_text() and "https://" not in page.read_text().split("<main", 1)[0]


def test_catalogs_have_the_same_keys_and_no_empty_strings():
    en, zh = catalog("en"), catalog("zh-tw")
    assert set(en) == set(zh), set(en) ^ set(zh)
    assert all(v.strip() for v in en.values()) and all(v.strip() for v in zh.values())
    for key in en:  # same placeholders on both sides
        assert set(re.findall(r"{(\w+)", en[key])) == set(re.findall(r"{(\w+)", zh[key])), key


def test_catalogues_are_gettext_po_files_with_the_template_and_jinja_reads_them(tmp_path):
    """The message catalogues are gettext's PO files (Babel reads them; the template .pot lists every id), and a
    template's ``_("key")`` (Jinja2's i18n extension) says what ``t("key")`` says."""
    from babel.messages.pofile import read_po
    from jinja2 import DictLoader

    from site_gen import render
    from site_gen.i18n import DOMAIN, LOCALE_DIR, LOCALES, Translator

    with open(LOCALE_DIR / f"{DOMAIN}.pot", "rb") as f:
        template = {m.id for m in read_po(f) if m.id}
    for lang, locale in LOCALES.items():
        with open(LOCALE_DIR / locale / "LC_MESSAGES" / f"{DOMAIN}.po", "rb") as f:
            po = read_po(f)
        assert str(po.locale) == locale and {m.id for m in po if m.id} == template
        assert not [m.id for m in po if m.id and m.fuzzy]
    env = render._environment()
    env.loader = DictLoader({"p.html": "{{ _('nav_home') }}|{{ t('nav_home') }}"})
    for lang in LOCALES:
        t = Translator(lang)
        render._install(env, t)
        a, b = env.get_template("p.html").render(t=t).split("|")
        assert a == b == catalog(lang)["nav_home"]


def _visible_text(html):
    html = re.sub(r"<script.*?</script>", " ", html, flags=re.S)
    return re.sub(r"<[^>]+>", " ", html)


def test_chinese_pages_show_no_untranslated_english_strings(built_site):
    en, zh = catalog("en"), catalog("zh-tw")
    english_only = [v for k, v in en.items() if v != zh[k] and "{" not in v and len(v) >= 12]
    for page in (built_site / "zh-tw").rglob("index.html"):
        text = _visible_text(page.read_text())
        leaked = [s for s in english_only if s in text]
        assert not leaked, (page, leaked)


def test_charts_carry_their_data_table_and_csv(built_site):
    """Each chart links its data table, which stands on the machine's tables page (one section a table), and its
    CSV."""
    page = (built_site / "en" / "hardware" / "ci-cpu" / "index.html").read_text()
    tables = (built_site / "en" / "hardware" / "ci-cpu" / "tables" / "index.html").read_text()
    for chart in ("latency", "throughput", "agreement", "play"):
        assert f'id="chart-{chart}"' in page and f'id="summary-{chart}"' in page
        assert f'href="tables/index.html#t-{chart}"' in page
        section = re.search(rf'<h2 id="t-{chart}">.*?</section>', tables, re.S).group(0)
        assert section.count("<tr>") >= 2  # its head and a runtime's row at least
        assert (built_site / "data" / "ci-cpu" / f"{chart}.csv").exists()
        spec = re.search(rf'<script type="application/json" id="spec-{chart}">(.*?)</script>', page, re.S).group(1)
        assert json.loads(spec)["data"]


# -- bad input ------------------------------------------------------------------------------------


def _bad_build(args, expected):
    result = CliRunner().invoke(main, ["build", *args])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and expected in lines[0], result.output


def test_not_a_duckdb_file(tmp_path):
    (tmp_path / "x.duckdb").write_text("hello")
    _bad_build([str(tmp_path / "x.duckdb"), "--out", str(tmp_path / "s")], "not a DuckDB database file")


def test_a_duckdb_file_from_elsewhere(tmp_path):
    con = duckdb.connect(str(tmp_path / "other.duckdb"))
    con.execute("CREATE TABLE t (x INT)")
    con.close()
    _bad_build([str(tmp_path / "other.duckdb"), "--out", str(tmp_path / "s")], "not one written by rtreport")


def test_a_newer_schema_version(quick_run, tmp_path):
    newer = tmp_path / "newer.duckdb"
    shutil.copyfile(quick_run, newer)
    con = duckdb.connect(str(newer))
    con.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    con.close()
    _bad_build([str(newer), "--out", str(tmp_path / "s")], "schema version 99")


def test_missing_file_and_foreign_out_folder(quick_run, tmp_path):
    _bad_build([str(tmp_path / "nope.duckdb"), "--out", str(tmp_path / "s")], "no such file")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "thesis.tex").write_text("precious")
    _bad_build([str(quick_run), "--out", str(tmp_path / "mine")], "not empty")
    assert (tmp_path / "mine" / "thesis.tex").read_text() == "precious"


def test_incomplete_run_gets_a_labelled_partial_page(quick_run, tmp_path):
    partial = tmp_path / "partial.duckdb"
    shutil.copyfile(quick_run, partial)
    con = duckdb.connect(str(partial))
    con.execute("UPDATE runs SET status = 'incomplete', status_detail = 'interrupted (Ctrl-C) during play'")
    # Three seeds were planned; both runtimes played only two: the play gate lacks data.
    con.execute(
        "UPDATE runs SET profile = 'full', settings = json_merge_patch(settings, "
        '\'{"seeds": [1000, 1001, 1002], "looks": [3]}\')'
    )
    integrity.record(con, con.execute("SELECT run_id FROM runs").fetchone()[0])  # sealed as collect would
    con.close()
    out = tmp_path / "s"
    assert CliRunner().invoke(main, ["build", str(partial), "--out", str(out)]).exit_code == 0
    en = (out / "en" / "hardware" / "ci-cpu" / "index.html").read_text()
    zh = (out / "zh-tw" / "hardware" / "ci-cpu" / "index.html").read_text()
    assert "Partial results" in en and "interrupted (Ctrl-C) during play" in en and "部分結果" in zh
    tables = (out / "en" / "hardware" / "ci-cpu" / "tables" / "index.html").read_text()
    assert "no games paired with the reference" in tables  # a seed short of the look: no play verdict


def test_hostile_strings_are_escaped_everywhere(quick_run, tmp_path):
    hostile = tmp_path / "hostile.duckdb"
    shutil.copyfile(quick_run, hostile)
    evil = '<script>alert("x")</script>'
    con = duckdb.connect(str(hostile))
    con.execute("UPDATE runs SET label = ?, cpu = ?, host = ?", [evil + "lab", evil + "cpu", "</script><b>h"])
    con.execute("UPDATE runtimes SET title = ? WHERE runtime_id = 'ort-cpu-fp32'", ["ORT " + evil])
    con.execute("UPDATE runtimes SET reason = ? WHERE status = 'unavailable'", [evil + "why"])
    integrity.record(con, con.execute("SELECT run_id FROM runs").fetchone()[0])  # sealed as collect would
    con.close()
    out = tmp_path / "s"
    result = CliRunner().invoke(main, ["build", str(hostile), "--out", str(out)])
    assert result.exit_code == 0, result.output
    for page in out.rglob("*.html"):
        html = page.read_text()
        assert evil not in html and "</script><b>" not in html, page
        # the only script elements are ours: the bundle, the drawing code and JSON specs
        for tag in re.findall(r"<script[^>]*>", html):
            assert 'type="application/json"' in tag or "src=" in tag, (page, tag)


def test_each_runtime_keeps_one_distinct_colour_in_every_chart():
    """The published H200 file: ten measured runtimes, each drawn in its own colour on every chart that shows it
    (rows of one trace coloured per runtime, or one trace per runtime)."""
    from collect import paths
    from site_gen.analysis import analyse
    from site_gen.charts import agreement_chart, fixed_states_chart, throughput_chart
    from site_gen.play_charts import play_chart
    from site_gen.speed_charts import latency_chart, speed_chart
    from site_gen.load import load_file
    from site_gen.verdict import Gates

    res = analyse(load_file(paths.DATA / "nvidia-h200.duckdb")[0], Gates.load(None))
    titles = {r.rows.title for r in res.runtimes}
    t = lambda key, **kw: key  # noqa: E731
    seen, charts = {}, 0
    for make in (speed_chart, latency_chart, throughput_chart, agreement_chart, fixed_states_chart, play_chart):
        chart = make(res, t)
        assert chart is not None, make.__name__
        charts += 1
        for trace in chart.figure["data"]:
            colour = trace["marker"]["color"]
            if isinstance(colour, list):  # one row per runtime
                pairs = zip(trace["y"], colour)
            else:  # one trace per runtime (its name may be wrapped or suffixed)
                pairs = [(trace.get("name", "").split(" — ")[0].replace(",<br>", ", "), colour)]
            for name, c in pairs:
                assert name in titles, (make.__name__, name)
                seen.setdefault(name, set()).add(c)
    assert charts == 6 and len(seen) >= 10
    assert all(len(colours) == 1 for colours in seen.values()), seen
    assert len({next(iter(c)) for c in seen.values()}) == len(seen)


def test_each_runtimes_tf32_state_is_shown_in_the_readers_language():
    from site_gen.describe import tf32_text
    from site_gen.i18n import Translator

    en, zh = Translator("en"), Translator("zh-tw")
    off = {"tf32": "off", "switches": {"matmul": False, "cudnn": False}}
    assert tf32_text(off, en) == "off (matmul off, cuDNN off)"
    assert tf32_text({"tf32": "on", "switches": {"matmul": True, "cudnn": False}}, en) == "on (matmul on, cuDNN off)"
    assert tf32_text({"tf32": "off", "switches": {"use_tf32": "0"}}, zh) == "關閉（use_tf32=0）"
    assert (
        tf32_text({"tf32": "off", "switches": {"BuilderFlag.TF32": "cleared"}}, en) == "off (BuilderFlag.TF32=cleared)"
    )
    assert tf32_text({"tf32": "not-applicable"}, zh) == "不適用（CPU）"
    assert tf32_text({"tf32": "by-types"}, zh) == zh("tf32_typed")
    assert tf32_text({"tf32": "default"}, zh) == zh("tf32_default")
    assert tf32_text({}, en) == en("none")


# -- zh-TW throughout, light pages, web conventions ---------------------------------------------------

ALLOWED_LATIN = {  # what stays Latin on a zh-TW page; rtreport's own words are Chinese (docs/zh-tw-glossary.md)
    # product, library and hardware names
    "PyTorch",
    "ONNX",
    "Runtime",
    "TensorRT",
    "TensorRT-RTX",
    "RTX",
    "CUDA",
    "cuDNN",
    "NVIDIA",
    "H200",
    "A100",
    "Laptop",
    "OpenVINO",
    "NNCF",
    "DuckDB",
    "NVML",
    "CUPTI",
    "Python",
    "PyPI",
    "rtreport",
    "rliable",
    "asv",
    "onnxruntime",
    "openvino",
    "nncf",
    "Atari",
    "Breakout",
    # abbreviations and statistics' names
    "CPU",
    "GPU",
    "FP32",
    "FP16",
    "TF32",
    "INT8",
    "QDQ",
    "PTQ",
    "EP",
    "IQM",
    "CSV",
    "JSON",
    "SHA-256",
    "UTC",
    "SM",
    "Q",
    "P10",
    "P50",
    "P90",
    "P95",
    "P99",
    "MPS",
    # engineering terms Taiwanese engineers say in English (docs/zh-tw-glossary.md)
    "eager",
    # units
    "MB",
    "MiB",
    "KB",
    "B",
    "MHz",
    "mJ",
    "W",
    "C",
    # library switches and file names (runtime titles' own words are said in Chinese: i18n.TITLE_PHRASES)
    "torch.compile",
    "matmul",
    "use_tf32",
    "gates.toml",
    "model.pt",
    # the game's action names, people cited, the language switcher
    "NOOP",
    "FIRE",
    "RIGHT",
    "LEFT",
    "O",
    "Brien",
    "Lan",
    "DeMets",
    "Fleming",
    "Jennison",
    "Turnbull",
    "Bonferroni",
    "Machado",
    "Welch",
    "Student",
    "t",
    "G",  # G: the number of independent measurements in a formula
    "English",
}


def _machine_names(runs) -> list[str]:
    """The CPU and GPU names the runs recorded: a machine's own name, shown as it names itself (data, like an OS)."""
    names = set()
    for path in runs:
        con = duckdb.connect(str(path), read_only=True)
        names |= {n for row in con.execute("SELECT cpu, gpu_name FROM runs").fetchall() for n in row if n}
        con.close()
    return sorted(names, key=len, reverse=True)


def _zh_latin_words(site, runs=()):
    found, names = {}, _machine_names(runs)
    for page in (site / "zh-tw").rglob("index.html"):
        s = page.read_text()
        for pattern in (
            r"<head>.*?</head>",
            r"<script.*?</script>",
            r"<code>.*?</code>",
            r'<dl class="facts">.*?</dl>',
            r'<details class="raw">.*?</details>',
        ):
            s = re.sub(pattern, " ", s, flags=re.S)  # code, provenance values and raw library messages are data
        text = html.unescape(re.sub(r"<[^>]+>", " ", s)).replace("TensorRT for RTX", "TensorRT-RTX")  # a product name
        for name in names:
            text = text.replace(name, " ")
        text = re.sub(
            r"\b(Linux|Windows|macOS|Darwin)-\S+|--[a-z][a-z-]*", " ", text
        )  # and command-line options    # an OS as the machine reports it
        for word in re.findall(r"[A-Za-z][A-Za-z0-9_.+\-]*", text):
            if (
                word in ALLOWED_LATIN
                or re.fullmatch(r"(torch|ort|trt|trtrtx|ort-trt|ort-trtrtx)-[a-z0-9-]+", word)
                or re.fullmatch(r"e[+-]\d+|[0-9a-f]{8,}|cu\d+|cpu|[a-z0-9-]+-[a-z0-9-]+(\.duckdb)?", word)
            ):
                continue  # runtime ids, exponents, hashes, build tags, machine labels
            found.setdefault(word, page.relative_to(site).as_posix())
    return found


def test_chinese_pages_have_no_latin_prose(published_site, quick_run):
    site = published_site
    assert _zh_latin_words(site, [quick_run, *COMMITTED_RUNS]) == {}


def test_a_machine_named_in_latin_script_is_shown_as_it_names_itself(tmp_path):
    """The CPU a run recorded is the machine's own name, shown as recorded (on the home page's list of machines
    marked as not to be translated), whatever the vendor calls it; it is the only Latin script it brings."""
    run = tmp_path / "xeon.duckdb"
    shutil.copyfile(next(p for p in COMMITTED_RUNS if p.name == "cpu-epyc-2core-4.duckdb"), run)
    con = duckdb.connect(str(run))
    con.execute("UPDATE runs SET cpu = 'Intel(R) Xeon(R) Processor @ 2.10GHz', label = 'ci-xeon'")
    integrity.record(con, con.execute("SELECT run_id FROM runs").fetchone()[0])
    con.close()
    result = CliRunner().invoke(main, ["build", str(run), "--out", str(tmp_path / "site")])
    assert result.exit_code == 0, result.output
    home = (tmp_path / "site" / "zh-tw" / "index.html").read_text()
    assert '<span class="rec" translate="no">Intel(R) Xeon(R) Processor @ 2.10GHz · ' in home
    assert _zh_latin_words(tmp_path / "site", [run]) == {}
    assert set(_zh_latin_words(tmp_path / "site")) == {"Intel", "R", "Xeon", "Processor", "GHz"}


def test_every_chart_page_weighs_at_most_1_5_mb_with_its_scripts(published_site):
    site = published_site
    assets = site / "assets"
    bundles = list(assets.glob("plotly-rtreport-*.min.js"))
    assert len(bundles) == 1 and bundles[0].stat().st_size < 1_200_000  # core + bar, not the full 4.8 MB
    for page in site.rglob("index.html"):
        text = page.read_text()
        total = page.stat().st_size + (assets / "site.css").stat().st_size + (assets / "favicon.svg").stat().st_size
        if 'class="chart"' in text:
            total += (assets / "rtreport.js").stat().st_size + bundles[0].stat().st_size
            total += (assets / "plotly-locale-zh-tw-3.7.0.js").stat().st_size if "/zh-tw/" in page.as_posix() else 0
        assert total <= 1_500_000, (page, total)
        assert "cdn." not in text and "https://" not in text.split("<main", 1)[0]


def test_web_conventions_with_a_base_url(quick_run, tmp_path):
    import xml.etree.ElementTree as ET

    site = tmp_path / "s"
    base = "https://example.org/rt/"
    result = CliRunner().invoke(main, ["build", str(quick_run), "--out", str(site), "--base-url", base[:-1]])
    assert result.exit_code == 0, result.output
    for page in site.rglob("index.html"):
        rel = page.relative_to(site).as_posix()
        html_text = page.read_text()
        if rel == "index.html":
            continue
        lang, inner = rel.split("/", 1)
        assert f'<link rel="canonical" href="{base}{rel}">' in html_text
        for code, tag, _ in LANGUAGES:
            assert f'<link rel="alternate" hreflang="{tag}" href="{base}{code}/{inner}">' in html_text
        assert f'hreflang="x-default" href="{base}en/{inner}"' in html_text
        assert re.search(r'<meta name="description" content="[^"]{40,}">', html_text), rel
        for prop in ("og:title", "og:description", "og:url", "og:type", "og:locale"):
            assert f'property="{prop}"' in html_text, (rel, prop)
        assert 'rel="icon"' in html_text and "gates.toml" in html_text or "method" not in rel
    urls = [
        u.text
        for u in ET.parse(site / "sitemap.xml").getroot().iter("{http://www.sitemaps.org/schemas/sitemap/0.9}loc")
    ]
    assert f"{base}zh-tw/index.html" in urls and f"{base}en/hardware/ci-cpu/index.html" in urls
    assert (site / "robots.txt").read_text() == f"User-agent: *\nAllow: /\nSitemap: {base}sitemap.xml\n"
    feed = ET.parse(site / "feed.xml").getroot()
    entries = feed.findall("{http://www.w3.org/2005/Atom}entry")
    assert sorted(e.find("{http://www.w3.org/2005/Atom}link").get("href") for e in entries) == [
        f"{base}{code}/hardware/ci-cpu/index.html" for code in ("en", "zh-tw")
    ]  # one entry per language
    bad = CliRunner().invoke(main, ["build", str(quick_run), "--out", str(tmp_path / "t"), "--base-url", "example.org"])
    assert bad.exit_code == 2 and "--base-url must be an http(s) URL" in bad.output


def test_without_a_base_url_no_relative_hreflang_or_canonical(built_site):
    for page in built_site.rglob("index.html"):
        text = page.read_text()
        assert 'rel="canonical"' not in text and 'hreflang="x-default"' not in text
        assert '<link rel="alternate" hreflang' not in text


def test_the_overview_says_how_many_seeds_each_run_played(quick_run, published_site):
    """Runs that played different numbers of their pre-registered seeds: the overview names whose workload is
    whose, instead of two unlabelled lines."""
    site = published_site
    text = html.unescape(re.sub(r"\s+", " ", (site / "en" / "index.html").read_text()))
    played = {}
    for path in (quick_run, *COMMITTED_RUNS[2:]):  # each machine's answer (the CPU machine's newest run)
        con = duckdb.connect(str(path), read_only=True)
        label, ref, seeds = con.execute("SELECT label, reference_runtime, settings FROM runs").fetchone()
        n = con.execute("SELECT count(*) FROM episodes WHERE runtime_id = ?", [ref]).fetchone()[0]
        con.close()
        played[label] = (n, len(json.loads(seeds)["seeds"]))
    said = {}  # runs with the same workload share one line, their labels listed in its brackets
    for n, listed, whose in re.findall(
        r"([\d,]+) of ([\d,]+) pre-registered seeds played, ε = 0\.01 \((.+?)\)</dd>", text
    ):
        said[(int(n.replace(",", "")), int(listed.replace(",", "")))] = whose
    assert len(said) == len(set(played.values())), said
    for label, workload in played.items():
        assert label in said[workload], (label, said)


def test_the_fixed_states_story_counts_games_right_when_runtimes_shadowed_different_numbers():
    """Runtimes decided at different looks shadowed different numbers of games: every game of each flipped, so the
    page says 'every one of the 900–1,200 games', never 'at least 900 of 900' (what it said on the H200 file)."""
    from types import SimpleNamespace as NS
    from site_gen.findings import fixed_states_vs_play

    said, calls = {}, []

    def t(key, **kw):
        said.update(key=key, **kw)
        calls.append((key, kw))
        return key

    def runtime(title, episodes):
        return NS(
            rows=NS(title=title),
            agreement={"same_actions": 60, "states": 60, "reference_margin": [0.5] * 57 + [0.001] * 3},
            shadow={
                "flips": episodes * 3,
                "episodes_with_flip": episodes,
                "episodes": episodes,
                "first_flip_steps": [20, 30],
                "pairs": {(3, 0): 5, (0, 3): 1},
                "flip_margins": [0.004, 0.01],
            },
        )

    res = NS(
        runtimes=[runtime("A", 900), runtime("B", 1200)],
        rows=NS(run={"protocol": {"action_meanings": ["NOOP", "FIRE", "RIGHT", "LEFT"]}}),
    )
    fixed_states_vs_play(res, t)
    assert said["key"] == "find_story_every" and said["episodes"] == "900–1,200"
    assert ("flips_mostly", {"pair": "LEFT→NOOP", "share": "83 %"}) in calls  # 5 of 6 flips: "mostly"
    res.runtimes[1].shadow["episodes_with_flip"] = 1100
    fixed_states_vs_play(res, t)
    assert said["key"] == "find_story" and said["games"] == "900" and said["episodes"] == "900–1,200"
    # "near-ties the fixed states rarely contain" only where at most a tenth of the fixed states are as close
    for r in res.runtimes:
        r.agreement["reference_margin"] = [0.5] * 50 + [0.001] * 10
    fixed_states_vs_play(res, t)
    assert said["key"] == "find_story_margins"
    # runtimes whose commonest changes differ: each named with its own, never one pooled pair
    res.runtimes[1].shadow["pairs"] = {(0, 3): 4, (3, 0): 1}
    calls.clear()
    fixed_states_vs_play(res, t)
    assert [kw["runtime"] for key, kw in calls if key == "flips_of"] == ["A", "B"]
    assert ("flips_mostly", {"pair": "NOOP→LEFT", "share": "80 %"}) in calls


def test_a_share_that_is_not_all_is_never_shown_as_100_percent():
    from site_gen.wording import pct

    assert pct(181294 / 181295, 2) == "99.999 %" and pct(1.0, 2) == "100.00 %"
    assert pct(1e-7, 2) == "0.00001 %" and pct(0.0, 2) == "0.00 %" and pct(0.99312, 2) == "99.31 %"


@pytest.mark.parametrize(
    "lang,labels",
    [
        ("en", ["Use", "Speed", "Same actions", "Play", "Decision"]),
        ("zh-tw", ["建議", "速度", "動作一致", "實戰", "正式決定"]),
    ],
)
def test_a_machine_page_opens_with_the_studys_summary_lines(published_site, lang, labels):
    """The H200 page's answer, as the study ends: which runtime, how much faster with its interval, whether it picks
    the reference's actions, whether it plays as well (a mean difference and its interval against the margin), the
    decision with its scope; then the other runtimes by outcome."""
    page = (published_site / lang / "hardware" / "nvidia-h200" / "index.html").read_text(encoding="utf-8")
    summary = re.search(r'<dl class="summary">(.*?)</dl>', page, re.S).group(1)
    found = re.findall(r"<dt>(.*?)</dt>", summary)
    assert found[:5] == labels, found
    play = re.findall(r"<dd>(.*?)</dd>", summary)[3]
    assert re.search(r"[−-]\d+\.\d\d", play) and ("margin" in play or "容許界線" in play)  # a mean, against the margin


def test_every_link_between_pages_leads_somewhere(published_site):
    """Every relative link of every page reaches a file of the site, and every #fragment an element of its page (a
    machine page's links to the method's sections, the tables page's tables, a folded part)."""
    from urllib.parse import unquote, urlsplit

    site, ids, broken = published_site, {}, []

    def ids_of(path):
        if path not in ids:
            ids[path] = set(re.findall(r'\sid="([^"]+)"', path.read_text())) if path.suffix == ".html" else set()
        return ids[path]

    for page in site.rglob("*.html"):
        for href in re.findall(r'\shref="([^"]+)"', page.read_text()):
            parts = urlsplit(html.unescape(href))
            if parts.scheme or parts.netloc:
                continue  # outside the site
            path = unquote(parts.path)
            # the 404 page links from the site's root, being served at any missing address
            target = (site / path.lstrip("/") if path.startswith("/") else page.parent / path) if path else page
            target = target.resolve()
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file() or (parts.fragment and parts.fragment not in ids_of(target)):
                broken.append(f"{page.relative_to(site)}: {href}")
    assert not broken, broken[:20]


def test_a_runtime_measured_on_no_machine_shown_is_no_empty_card_on_a_phone(published_site):
    """The home page's verdict grid leaves out, on a phone, the machines where a runtime did not run; a runtime
    that ran on none of them shows each machine's reason instead of an empty card (site.css: tr.nowhere)."""
    css = (published_site / "assets").glob("site*.css")
    assert any("tr.nowhere td.absent { display: block; }" in p.read_text() for p in css)
    for lang in ("zh-tw", "en"):
        page = (published_site / lang / "index.html").read_text()
        table = re.search(r'<table class="matrix stack">.*?</table>', page, re.S).group(0)
        rows = re.findall(r"<tr( class=\"nowhere\")?><th scope=\"row\">.*?</tr>", table, re.S)
        bodies = re.findall(r"<tr(?: class=\"nowhere\")?><th scope=\"row\">(.*?)</tr>", table, re.S)
        for nowhere, body in zip(rows, bodies):
            cells = re.findall(r"<td [^>]*>", body)
            assert bool(nowhere) == all('class="absent"' in c for c in cells), body[:200]
