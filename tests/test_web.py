"""Web conventions (site_gen/web.py): whole-word meta descriptions, the root page, the feed, 404 and icons."""

import html
import re
import xml.etree.ElementTree as ET

from click.testing import CliRunner

from rtreport_cli.main import main
from site_gen.web import meta_description

ATOM = "{http://www.w3.org/2005/Atom}"


def test_a_short_description_stays_whole():
    assert meta_description("  Two  words\nhere. ") == "Two words here."


def test_a_long_description_is_cut_where_a_word_ends():
    text = "P50 0.175 ms against 0.567 ms, the reference's action on 181,294 of 181,295 decisions"
    assert meta_description(text, 30) == "P50 0.175 ms against…"  # a number keeps its unit
    assert meta_description(text, 34) == "P50 0.175 ms against 0.567 ms…"  # the comma goes with the cut
    assert meta_description(text, 62) == "P50 0.175 ms against 0.567 ms, the reference's action on…"  # not "181…"
    assert meta_description(text, 72) == "P50 0.175 ms against 0.567 ms, the reference's action on 181,294 of…"
    assert meta_description("abcdefghij klm", 8) == "abcdefg…"  # one word wider than the whole width


def test_chinese_is_cut_between_characters_and_counted_two_columns_each():
    text = "ONNX Runtime CPU FP32 值得部署：P50 0.175 毫秒，為參考的 2.9 倍。"
    cut = meta_description(text, 31)
    assert cut == "ONNX Runtime CPU FP32 值得部署…"
    assert meta_description(text, 44) == "ONNX Runtime CPU FP32 值得部署…"  # not "P50 0.175…" without 毫秒
    assert meta_description(text, 52) == "ONNX Runtime CPU FP32 值得部署：P50 0.175 毫秒，為…"


def test_root_page_feed_404_and_icons_with_a_base_url(quick_run, tmp_path):
    site, base = tmp_path / "s", "https://example.org/rt/"
    result = CliRunner().invoke(main, ["build", str(quick_run), "--out", str(site), "--base-url", base[:-1]])
    assert result.exit_code == 0, result.output
    root = (site / "index.html").read_text()
    assert f'<link rel="canonical" href="{base}index.html">' in root
    description = re.search(r'<meta name="description" content="([^"]+)">', root).group(1)
    assert description.startswith("ci-cpu: ") and " · ci-cpu：" in description
    assert root.count('<ul class="glance"><li><a href="') == 2 and 'href="en/hardware/ci-cpu/index.html"' in root
    urls = [
        u.text
        for u in ET.parse(site / "sitemap.xml").getroot().iter("{http://www.sitemaps.org/schemas/sitemap/0.9}loc")
    ]
    assert f"{base}index.html" in urls
    feed = ET.parse(site / "feed.xml").getroot()
    assert [link.get("href") for link in feed.findall(f"{ATOM}link") if link.get("rel") == "self"] == [
        f"{base}feed.xml"
    ]
    entries = feed.findall(f"{ATOM}entry")
    assert sorted(e.get("{http://www.w3.org/XML/1998/namespace}lang") for e in entries) == ["en", "zh-Hant-TW"]
    for entry in entries:
        lang = "en" if entry.get("{http://www.w3.org/XML/1998/namespace}lang") == "en" else "zh-tw"
        page = (site / lang / "hardware" / "ci-cpu" / "index.html").read_text()
        summary = entry.find(f"{ATOM}summary").text
        assert summary and summary in page  # the page's finding, word for word
        assert entry.find(f"{ATOM}link").get("href") == f"{base}{lang}/hardware/ci-cpu/index.html"
    missing = (site / "404.html").read_text()
    assert f'href="{base}en/index.html"' in missing and f'href="{base}zh-tw/index.html"' in missing
    assert (site / "apple-touch-icon.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (
        'rel="apple-touch-icon" href="../../../apple-touch-icon.png"'
        in (site / "en" / "hardware" / "ci-cpu" / "index.html").read_text()
    )
    assert (site / "robots.txt").read_text() == f"User-agent: *\nAllow: /\nSitemap: {base}sitemap.xml\n"


def test_every_meta_description_is_whole_words(published_site):
    """Each cut description is the start of its page's own text, and the cut falls where a word ends."""
    cut = 0
    for page in published_site.rglob("*.html"):
        source = page.read_text()
        found = re.search(r'<meta name="description" content="([^"]+)">', source)
        if not found or not found.group(1).endswith("…"):
            continue
        stem = html.unescape(found.group(1))[:-1]
        body = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", source.split("<main", 1)[-1])).split())
        at = body.find(stem)
        if at < 0:
            continue  # a description of its own (the home pages'), not the page's first sentence
        after = body[at + len(stem)]
        assert not (stem[-1].isascii() and stem[-1].isalnum() and after.isascii() and after.isalnum()), (page, stem)
        cut += 1
    assert cut >= 4  # the machine pages' findings are longer than a description, in both languages
