"""Web conventions, as a static-site generator does them: whole-word meta descriptions, the root page that answers
in both languages, a bilingual Atom feed of the findings (with rel="self"), the sitemap (the root page included),
robots.txt at the site root and a bilingual 404 page. Text in, text out: ``render.py`` writes the files."""

from __future__ import annotations

import unicodedata
from xml.sax.saxutils import escape, quoteattr

from .findings import recommendation_text
from .home import headline, newest_first
from .i18n import LANGUAGES, Translator
from .pages import label_of, machine_title

DESCRIPTION_WIDTH = 160  # columns; a CJK character counts two, as a search result shows it
BREAK_AFTER = "，。；、：！？）」』"  # full-width punctuation; after ASCII punctuation only at a space


def _wide(c: str) -> bool:
    return unicodedata.east_asian_width(c) in ("W", "F")


def meta_description(text: str, width: int = DESCRIPTION_WIDTH) -> str:
    """``text`` on one line, at most ``width`` columns: cut only where a word ends (a space, after punctuation, or
    between two CJK characters), never inside a Latin word or a number, with "…" when cut."""
    text = " ".join(text.split())
    cols = [2 if _wide(c) else 1 for c in text]
    if sum(cols) <= width:
        return text
    room, used, end = width - 1, 0, 0  # one column for the ellipsis
    while end < len(text) and used + cols[end] <= room:
        used += cols[end]
        end += 1
    for i in range(end, 0, -1):
        before, after = text[i - 1], text[i]
        if before.isdigit():
            continue  # a number keeps the word after it (its unit, its noun)
        if after == " " or before in BREAK_AFTER or (_wide(before) and _wide(after)):
            cut = text[:i].rstrip(" ，、；：,;:")
            if cut:
                return cut + "…"
    return text[:end] + "…"  # one word longer than the whole width


def root_view(results, slugs, base_url: str | None) -> dict:
    """The site's root page: each language's question and one line of answer per machine, newest first."""
    languages = []
    for code, tag, name in LANGUAGES:
        t = Translator(code)
        lines = [
            {"href": f"{code}/hardware/{slug}/index.html", "short": label_of(res), "headline": headline(res, t)}
            for res, slug in newest_first(results, slugs)
        ]
        languages.append(
            {
                "code": code,
                "tag": tag,
                "name": name,
                "heading": t("home_heading"),
                "lines": lines,
                "colon": t("colon"),
                "title": t("site_title"),
                "open": t("nav_home"),
            }
        )
    description = " · ".join(
        meta_description(
            " ".join(f"{x['short']}{lang['colon']}{x['headline']}" for x in lang["lines"]), DESCRIPTION_WIDTH // 2
        )
        for lang in reversed(languages)
    )  # English first: the page's title starts so too
    return {"languages": languages, "description": description, "url": f"{base_url}index.html" if base_url else None}


def not_found_view(base_url: str | None) -> dict:
    """The 404 page is served at any path: its links are absolute (the base URL's, or the server's root)."""
    root = base_url or "/"
    return {
        "root": root,
        "languages": [
            {
                "code": code,
                "tag": tag,
                "name": name,
                "heading": Translator(code)("not_found"),
                "home": f"{root}{code}/index.html",
                "open": Translator(code)("nav_home"),
            }
            for code, tag, name in LANGUAGES
        ],
    }


def _stamp(value) -> str:
    return str(value or "1970-01-01 00:00:00")[:19].replace(" ", "T") + "Z"


def atom_feed(results, slugs, base_url: str | None) -> str:
    """One entry per machine and language, newest first; each entry's summary is the machine page's finding (its
    first sentence). Links are relative to the feed when no base URL is given."""
    base = base_url or ""
    runs = newest_first(results, slugs)
    updated = _stamp(
        max((str(r.rows.run.get("finished_at") or r.rows.run.get("started_at")) for r, _ in runs), default=None)
    )
    entries = []
    for res, slug in runs:
        run = res.rows.run
        for code, tag, _ in LANGUAGES:
            t = Translator(code)
            link = f"{base}{code}/hardware/{slug}/index.html"
            entries.append(
                f'<entry xml:lang="{tag}"><title>{escape(machine_title(res, t))}</title>'
                f'<link rel="alternate" hreflang="{tag}" href={quoteattr(link)}/>'
                f"<id>urn:rtreport:run:{escape(run['run_id'])}:{code}</id>"
                f"<updated>{_stamp(run.get('finished_at') or run['started_at'])}</updated>"
                f"<summary>{escape(recommendation_text(res, t))}</summary></entry>"
            )
    titles = " · ".join(Translator(code)("site_title") for code, _, _ in LANGUAGES)
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n<feed xmlns="http://www.w3.org/2005/Atom">'
        f"<title>rtreport — {escape(titles)}</title><id>urn:rtreport:{escape(base or 'site')}</id>"
        f"<updated>{updated}</updated>"
        f'<link rel="self" type="application/atom+xml" href={quoteattr(base + "feed.xml")}/>'
        f'<link rel="alternate" href={quoteattr(base + "index.html")}/><author><name>rtreport</name></author>'
        + "".join(entries)
        + "</feed>\n"
    )


def sitemap(paths: list[str], base_url: str) -> str:
    """``paths``: every page relative to the site root, the root page's ``index.html`` included."""
    urls = "".join(f"<url><loc>{escape(base_url + p)}</loc></url>" for p in sorted(paths))
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n'
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>\n'
    )


def robots(base_url: str | None) -> str:
    return "User-agent: *\nAllow: /\n" + (f"Sitemap: {base_url}sitemap.xml\n" if base_url else "")
