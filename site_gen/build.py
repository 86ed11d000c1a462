"""``rtreport build``: DuckDB files in, a static bilingual site out (byte-deterministic, no network)."""
from __future__ import annotations

import csv
import io
import shutil
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from collect.errors import UserError
from collect.paths import ROOT

from .analysis import analyse
from .charts import cross_hardware_chart, agreement_chart, latency_chart, play_chart, throughput_chart
from .i18n import LANGUAGES, Translator
from .load import load_run
from .pages import compare_page, gates_view, hardware_page, home_page, page_frame, slugify
from .verdict import Gates

TEMPLATES = ROOT / "templates"
ASSETS = Path(__file__).parent / "assets"
MARKER = ".rtreport-site"


def plotly_bundle() -> tuple[str, Path]:
    """The plotly.js that the plotly package ships, and the versioned name it is served under."""
    import plotly
    from plotly.offline import get_plotlyjs_version

    return f"plotly-{get_plotlyjs_version()}.min.js", Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


def _environment() -> Environment:
    return Environment(loader=FileSystemLoader(str(TEMPLATES)), autoescape=select_autoescape(["html"]),
                       undefined=StrictUndefined, keep_trailing_newline=True, trim_blocks=False)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8"))


def _csv(rows, header) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    return buf.getvalue()


CSV_HEADERS = {
    "latency": ["runtime_id", "samples", "p50_ms", "p95_ms", "p95_ci_low_ms", "p95_ci_high_ms", "p99_ms", "mean_ms", "std_ms"],
    "throughput": ["runtime_id", "batch_size", "decisions_per_second"],
    "agreement": ["runtime_id", "state_index", "reference_margin", "max_abs_dq", "action_changed"],
    "play": ["runtime_id", "seed", "score", "steps", "truncated", "paired_difference_vs_reference"],
    "cross-hardware": ["machine", "runtime_id", "p50_ms", "p95_ms", "same_actions", "mean_score"],
}


def _prepare_out(out: Path) -> None:
    """Only a folder that is empty or was built by rtreport before is replaced."""
    if out.exists():
        if not out.is_dir():
            raise UserError(f"--out {out} is a file, not a folder")
        entries = [p.name for p in out.iterdir() if p.name != ".gitkeep"]
        if entries and MARKER not in entries:
            raise UserError(f"--out {out} is not empty and was not built by rtreport; choose an empty folder")
        for p in out.iterdir():
            if p.name != ".gitkeep":
                shutil.rmtree(p) if p.is_dir() else p.unlink()
    out.mkdir(parents=True, exist_ok=True)


def build_site(db_paths: list[Path], out: Path, gates_path: Path | None = None) -> list[Path]:
    if not db_paths:
        raise UserError("no DuckDB files to build from (give paths, or run rtreport collect first)")
    try:
        gates = Gates.load(gates_path)
    except (OSError, KeyError, ValueError) as e:
        raise UserError(f"cannot read gates file {gates_path}: {type(e).__name__}: {e}") from None
    runs = [load_run(Path(p)) for p in sorted(db_paths, key=lambda p: Path(p).name)]
    results = [analyse(run, gates) for run in runs]
    taken: set = set()
    slugs = [slugify(res.rows.run["label"], taken) for res in results]

    out = Path(out)
    _prepare_out(out)
    env = _environment()
    plotly_name, plotly_src = plotly_bundle()
    written = []

    def render(template: str, lang: str, rel: str, title: str, has_charts: bool, **ctx) -> None:
        t = Translator(lang)
        page = page_frame(lang, rel, title, has_charts)
        html = env.get_template(template).render(t=t, page=page, plotly_file=plotly_name,
                                                 gates=gates_view(gates, t), **ctx)
        path = out / lang / (rel + "/" if rel else "") / "index.html"
        _write(path, html)
        written.append(path)

    for lang, _, _ in LANGUAGES:
        t = Translator(lang)
        render("index.html", lang, "", t("site_title"), False, home=home_page(results, slugs, t))
        compare = compare_page(results, slugs, t)
        render("compare.html", lang, "compare", t("compare_heading"), compare["chart"] is not None, compare=compare)
        render("method.html", lang, "method", t("method_heading"), False)
        for res, slug in zip(results, slugs):
            hw = hardware_page(res, slug, t)
            render("hardware.html", lang, f"hardware/{slug}", res.rows.run["label"], bool(hw["charts"]), hw=hw)

    # Chart data as CSV, language-neutral (runtime ids, raw numbers).
    t_en = Translator("en")
    for res, slug in zip(results, slugs):
        for make in (latency_chart, throughput_chart, agreement_chart, play_chart):
            chart = make(res, t_en)
            if chart:
                _write(out / "data" / slug / f"{chart.chart_id}.csv", _csv(chart.csv_rows, CSV_HEADERS[chart.chart_id]))
    chart = cross_hardware_chart(results, t_en)
    if chart:
        _write(out / "data" / "cross-hardware.csv", _csv(chart.csv_rows, CSV_HEADERS["cross-hardware"]))

    assets = out / "assets"
    assets.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(plotly_src, assets / plotly_name)
    for name in ("site.css", "rtreport.js"):
        shutil.copyfile(ASSETS / name, assets / name)
    _write(out / "gates.toml", (gates_path or Path(__file__).with_name("gates.toml")).read_text())
    _write(out / "index.html", env.get_template("root.html").render())
    _write(out / MARKER, "built by rtreport build; this folder is replaced on every build\n")
    return written
