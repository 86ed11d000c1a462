"""Writing the site: every page in both languages, chart data as CSV, ``verdicts.json`` per machine, the root
page, an Atom feed of the findings, ``robots.txt``, ``404.html`` (and ``sitemap.xml`` with absolute links when a
base URL is given; ``web.py`` makes those), and the assets (a partial plotly.js bundle, core and bar, and its zh-TW
locale, vendored and versioned). Byte-deterministic."""

from __future__ import annotations

import csv
import hashlib
import io
import shutil
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from rtreport.gates import DEFAULT_GATES
from rtreport.resources import package_folder

from .history import answer, groups as history_groups, history_link, history_page, history_slugs, page_slugs, run_slugs
from .agents import tell_apart
from .compare import compare_page, cross_hardware_chart
from .home import home_page, newest_first
from .study import study_page
from .claims import count_key
from .i18n import LANGUAGES, Translator, for_task, localize_titles
from .og_image import machine_png, site_png
from .tables_page import TABLES_PATH

from .pages import MACHINE_CHARTS, gate_rules, gates_view, hardware_page, machine_title, page_frame
from .verdicts_json import verdicts_document
from .web import atom_feed, meta_description, not_found_view, robots, root_view, sitemap

TEMPLATES = package_folder("site_gen.templates", "templates")  # the checkout's templates/, package data in a wheel
ASSETS = Path(__file__).parent / "assets"
PLOTLY = "plotly-rtreport-3.7.0.min.js"  # plotly.js core + bar: the trace types the charts use (tools/plotly_bundle)
PLOTLY_LOCALE = "plotly-locale-zh-tw-3.7.0.js"
STATIC = (PLOTLY, PLOTLY_LOCALE, "plotly-LICENSE.txt", "rtreport.js", "site.css", "favicon.svg")
TOUCH_ICON = "apple-touch-icon.png"  # 180×180, the favicon's picture; at the site root, where iOS looks
MARKER = ".rtreport-site"
SITE_PICTURE = "og/site.png"  # the share picture of pages that are not one machine's
CSV_HEADERS = {
    "speed": ["runtime_id", "p95_ms", "times_reference_speed", "ci_low", "ci_high", "next_low", "next_high"],
    "latency": [
        "runtime_id",
        "samples",
        "p50_ms",
        "p95_ms",
        "p95_ci_low_ms",
        "p95_ci_high_ms",
        "p99_ms",
        "mean_ms",
        "std_ms",
    ],
    "throughput": ["runtime_id", "batch_size", "decisions_per_second"],
    "agreement": ["runtime_id", "decisions", "same", "fraction", "ci_low", "ci_high"],
    "fixed-states": ["runtime_id", "state_index", "reference_margin", "max_abs_dq", "action_changed"],
    "play": ["runtime_id", "seed", "score", "steps", "truncated", "established_from", "paired_difference_vs_reference"],
    "scores": ["runtime_id", "seeds", "median", "reference_median", "p10", "reference_p10", "p90", "reference_p90"],
    "breakdown": [
        "runtime_id",
        "decision_p50_us",
        "copy_in_us",
        "kernels_us",
        "copy_out_us",
        "host_us",
        "kernels_per_decision",
        "decisions_profiled",
    ],
    "cross-hardware": [
        "machine",
        "runtime_id",
        "p50_ms",
        "p95_ms",
        "same_action_fraction_in_play",
        "paired_score_difference_vs_reference",
    ],
}


def _write(path: Path, text: str) -> None:
    _write_bytes(path, text.encode("utf-8"))


def _write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _csv(rows, header) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    return buf.getvalue()


def asset_versions() -> dict[str, str]:
    """Each static asset's version, the start of its SHA-256: pages name an asset as ``name?v=version``, so a
    browser (or a CDN) that kept an earlier build's copy fetches the new one (the bundle and rtreport.js change
    together), and the same files still give the same pages."""
    return {name: hashlib.sha256((ASSETS / name).read_bytes()).hexdigest()[:10] for name in STATIC}


def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(TEMPLATES)),
        autoescape=select_autoescape(["html"]),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=False,
        extensions=["jinja2.ext.i18n"],
    )
    env.globals["asset_v"] = asset_versions()
    return env


def _install(env: Environment, t: Translator) -> None:
    """Jinja2's i18n extension reads the same catalogues: ``_("key")`` in a template is ``t("key")`` (a text
    with parameters goes through ``t``, whose catalogues fill ``{name}``, not gettext's ``%(name)s``)."""
    env.install_gettext_callables(
        gettext=lambda key: t(key), ngettext=lambda one, many, n: t(one if n == 1 else many), newstyle=False
    )


def render_site(results, out: Path, gates, gates_path, doing: dict, base_url: str | None = None) -> list[Path]:
    tell_apart([res.rows.run for res in results])  # one agent per model and preprocessing, not per file name
    slugs = page_slugs(results)  # how each run is linked: a machine's answer at its label's slug
    own = run_slugs(results)  # each run's own page, which later runs never move
    pages = [
        (res, target) for res, slug, mine in zip(results, slugs, own) for target in dict.fromkeys([slug, mine])
    ]  # the answer's run at both
    out.mkdir(parents=True)
    env = _environment()
    written = []
    # the gates' lines of the runs shown: every run on the site's pages, a machine's own run on its pages
    # (Breakout's alone: the lines as they always read)
    site_rules = gate_rules(results)

    def render(
        template: str,
        lang: str,
        rel: str,
        title: str,
        description: str,
        has_charts: bool,
        kind: str = "website",
        image: str = SITE_PICTURE,
        rules: dict | None = None,
        translator: Translator | None = None,
        **ctx,
    ) -> None:
        doing["what"] = f"writing {lang}/{rel + '/' if rel else ''}index.html"
        t = translator or Translator(lang)  # a machine page's words are its agent's (``i18n.for_task``)
        _install(env, t)
        page = page_frame(lang, rel, title, has_charts, meta_description(description), base_url, kind, image)
        html = env.get_template(template).render(
            t=t,
            page=page,
            plotly_file=PLOTLY,
            plotly_locale=PLOTLY_LOCALE,
            gates=gates_view(gates, t, page["root"], **(rules or site_rules)),
            **ctx,
        )
        html = localize_titles(html, lang)  # titles (table cells, headings, chart labels) in the page's language
        path = out / lang / (rel + "/" if rel else "") / "index.html"
        _write(path, html)
        written.append(path)

    histories = history_groups(results, slugs)  # labels with two or more runs
    run_pages = dict(history_groups(results, own))  # … with each run at its own page
    history_slug = history_slugs(histories)
    history_of = {id(res): label for label, runs in histories for res, _ in runs}
    for lang, _, _ in LANGUAGES:
        t = Translator(lang)
        doing["source"] = None
        home = home_page(results, slugs, t)
        render(
            "index.html",
            lang,
            "",
            t("site_title" if home["breakout"] and not home["agents_line"] else "site_title_agents"),
            t(count_key("home_description", len(results)), n=len(results)),
            False,
            home=home,
        )
        compare = compare_page(results, slugs, t)
        render(
            "compare.html",
            lang,
            "compare",
            t("compare_heading"),
            t("compare_description"),
            compare["chart"] is not None,
            compare=compare,
        )
        render(
            "study.html",
            lang,
            "study",
            t("study_heading"),
            t("study_description"),
            False,
            study=study_page(results, slugs, t),
        )
        render("method.html", lang, "method", t("method_title"), t("method_description"), False)
        for res, slug in pages:
            doing["source"] = res.rows.source
            tr = for_task(t, res.rows.run.get("protocol"))
            hw = hardware_page(res, slug, tr)
            label = history_of.get(id(res))
            hw["history"] = label and history_link(label, dict(histories)[label], res, history_slug[label], tr)
            render(
                "hardware.html",
                lang,
                f"hardware/{slug}",
                machine_title(res, tr),
                hw["found"][0],
                any(hw["charts"].values()),
                kind="article",
                image=f"og/{slug}.png",
                rules=gate_rules([res]),
                translator=tr,
                hw=hw,
            )
            render(
                "tables.html",
                lang,
                f"hardware/{slug}/{TABLES_PATH}",
                hw["tables"]["heading"],
                t("tables_intro"),
                False,
                kind="article",
                image=f"og/{slug}.png",
                rules=gate_rules([res]),
                translator=tr,
                tp=hw["tables"],
            )
        for label, runs in histories:
            doing.update(what=f"writing the history of {label}", source=None)
            render(
                "history.html",
                lang,
                f"history/{history_slug[label]}",
                t("hist_heading", label=label),
                t("hist_description", label=label, n=len(runs)),
                False,
                image=f"og/{runs[answer(runs)][1]}.png",
                hist=history_page(label, run_pages[label], t),
            )

    # Chart data as CSV and verdicts as JSON, language-neutral (runtime ids, raw numbers).
    doing.update(what="writing the chart data (CSV) and verdicts.json", source=None)
    t_en = Translator("en")
    for res, slug in pages:
        _write(out / "data" / slug / "verdicts.json", verdicts_document(res))
        for make in MACHINE_CHARTS:
            chart = make(res, t_en)
            if chart:
                _write(out / "data" / slug / f"{chart.chart_id}.csv", _csv(chart.csv_rows, CSV_HEADERS[chart.chart_id]))
    chart = cross_hardware_chart([res for res, _ in newest_first(results, slugs)], t_en)
    if chart:
        _write(out / "data" / "cross-hardware.csv", _csv(chart.csv_rows, CSV_HEADERS["cross-hardware"]))

    doing["what"] = "drawing the share pictures (og:image)"
    for res, slug in pages:
        _write_bytes(out / "og" / f"{slug}.png", machine_png(res))
    _write_bytes(out / SITE_PICTURE, site_png([res for res, _ in newest_first(results, slugs)]))

    doing["what"] = "writing the feed, robots.txt and the assets"
    _write(out / "feed.xml", atom_feed(results, slugs, base_url))
    _write(out / "robots.txt", robots(base_url))
    if base_url:
        _write(
            out / "sitemap.xml", sitemap(["index.html"] + [p.relative_to(out).as_posix() for p in written], base_url)
        )
    assets = out / "assets"
    assets.mkdir(parents=True, exist_ok=True)
    for name in STATIC:
        shutil.copyfile(ASSETS / name, assets / name)
    _write(out / "gates.toml", Path(gates_path or DEFAULT_GATES).read_text())
    _write(
        out / "index.html",
        env.get_template("root.html").render(
            root=root_view(results, slugs, base_url), image=(base_url or "") + SITE_PICTURE
        ),
    )
    _write(out / "404.html", env.get_template("404.html").render(nf=not_found_view(base_url)))
    shutil.copyfile(ASSETS / TOUCH_ICON, out / TOUCH_ICON)
    _write(out / MARKER, "built by rtreport build; this folder is replaced on every build\n")
    return written
