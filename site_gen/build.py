"""``rtreport build``: DuckDB files in, a static bilingual site out (byte-deterministic, no network)."""
from __future__ import annotations

import csv
import io
import os
import shutil
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from rtreport.errors import UserError
from rtreport.gates import DEFAULT_GATES
from rtreport.resources import package_folder

from .analysis import analyse
from .charts import cross_hardware_chart, agreement_chart, latency_chart, play_chart, throughput_chart
from .i18n import LANGUAGES, Translator
from .load import load_file
from .pages import compare_page, gates_view, hardware_page, home_page, page_frame, slugify
from .verdict import Gates
from .verdicts_json import verdicts_document

TEMPLATES = package_folder("site_gen.templates", "templates")   # the checkout's templates/, package data in a wheel
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


def find_inputs(items: list[Path]) -> list[Path]:
    """DuckDB files from files and folders (a folder: every ``*.duckdb`` directly inside it)."""
    files = []
    for item in map(Path, items):
        if item.is_dir():
            found = sorted(item.glob("*.duckdb"))
            if not found:
                raise UserError(f"{item} holds no .duckdb files: run rtreport collect first, or give the files")
            files += found
        elif item.exists():
            files.append(item)
        elif item == Path("data") and len(items) == 1:
            raise UserError("no ./data folder here: run rtreport build where rtreport collect wrote data/, "
                            "or give the DuckDB files or folders to build from")
        else:
            raise UserError(f"{item}: no such file or folder")
    return files


def _check_out(out: Path) -> None:
    """Only a folder that is absent, empty or built by rtreport before may be replaced."""
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is a file, not a folder")
    if out.is_dir():
        entries = [p.name for p in out.iterdir() if p.name != ".gitkeep"]
        if entries and MARKER not in entries:
            raise UserError(f"--out {out} is not empty and was not built by rtreport; choose an empty folder")
    if not out.parent.is_dir():
        raise UserError(f"--out {out}: folder {out.parent} does not exist")


def _swap_in(new: Path, out: Path) -> None:
    """Replace ``out`` by the finished ``new`` folder: two renames, so a reader never sees half a site."""
    if (out / ".gitkeep").exists():
        (new / ".gitkeep").write_bytes((out / ".gitkeep").read_bytes())
    old = out.with_name(f".{out.name}.old-{os.getpid()}")
    if out.exists():
        os.replace(out, old)
    try:
        os.replace(new, out)
    except BaseException:
        if old.exists():
            os.replace(old, out)
        raise
    if old.exists():
        shutil.rmtree(old, ignore_errors=True)


def load_runs(db_paths: list[Path], allow_invalid: bool = False) -> list:
    """Every file's run, or one error line per file that cannot be used (all of them, not just the first)."""
    runs, errors = [], []
    for path in db_paths:
        try:
            runs += load_file(Path(path), allow_invalid)
        except UserError as e:
            errors.append(str(e))
    seen: dict[str, Path] = {}
    for run in runs:
        rid = run.run["run_id"]
        if rid in seen:
            errors.append(f"the same run ({rid}) is given twice: {seen[rid]} and {run.source}; give it once")
        seen.setdefault(rid, run.source)
    if errors:
        raise UserError("\n".join(errors))
    return runs


def display_labels(runs) -> list[str]:
    """Each run's label as its user typed it; runs that share a label are told apart by date and file."""
    counts: dict[str, int] = {}
    for run in runs:
        counts[run.run["label"]] = counts.get(run.run["label"], 0) + 1
    return [run.run["label"] if counts[run.run["label"]] == 1 else
            f"{run.run['label']} ({str(run.run['started_at'])[:16]}, {run.source.name})" for run in runs]


def build_site(db_paths: list[Path], out: Path, gates_path: Path | None = None,
               allow_invalid: bool = False) -> list[Path]:
    """Build into a temporary folder beside ``out`` and swap it in once every page is written; on any
    failure the previous site stays as it was."""
    if not db_paths:
        raise UserError("no DuckDB files to build from (give paths, or run rtreport collect first)")
    try:
        gates = Gates.load(gates_path)
    except (OSError, KeyError, ValueError) as e:
        raise UserError(f"cannot read gates file {gates_path}: {type(e).__name__}: {e}") from None
    out = Path(out)
    _check_out(out)
    runs = load_runs(sorted(db_paths, key=lambda p: Path(p).name), allow_invalid)
    tmp = out.with_name(f".{out.name}.building-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    doing = {"what": "starting", "source": None}
    try:
        for run, label in zip(runs, display_labels(runs)):
            run.run["display_label"] = label
        results = []
        for run in runs:
            doing.update(what="analysing", source=run.source)
            results.append(analyse(run, gates))
        written = _render(results, tmp, gates, gates_path, doing)
        _swap_in(tmp, out)
    except UserError:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    except Exception as e:
        shutil.rmtree(tmp, ignore_errors=True)
        source = f" from {doing['source']}" if doing["source"] else ""
        first = (str(e).strip().splitlines() or [""])[0][:200]
        raise UserError(f"build failed {doing['what']}{source} ({type(e).__name__}: {first}); "
                        f"the site in {out} is unchanged") from None
    return [out / p.relative_to(tmp) for p in written]


def _render(results, out: Path, gates, gates_path, doing: dict) -> list[Path]:
    taken: set = set()
    slugs = [slugify(res.rows.run["label"], taken) for res in results]
    out.mkdir(parents=True)
    env = _environment()
    plotly_name, plotly_src = plotly_bundle()
    written = []

    def render(template: str, lang: str, rel: str, title: str, has_charts: bool, **ctx) -> None:
        doing["what"] = f"writing {lang}/{rel + '/' if rel else ''}index.html"
        t = Translator(lang)
        page = page_frame(lang, rel, title, has_charts)
        html = env.get_template(template).render(t=t, page=page, plotly_file=plotly_name,
                                                 gates=gates_view(gates, t), **ctx)
        path = out / lang / (rel + "/" if rel else "") / "index.html"
        _write(path, html)
        written.append(path)

    for lang, _, _ in LANGUAGES:
        t = Translator(lang)
        doing["source"] = None
        render("index.html", lang, "", t("site_title"), False, home=home_page(results, slugs, t))
        compare = compare_page(results, slugs, t)
        render("compare.html", lang, "compare", t("compare_heading"), compare["chart"] is not None, compare=compare)
        render("method.html", lang, "method", t("method_heading"), False)
        for res, slug in zip(results, slugs):
            doing["source"] = res.rows.source
            hw = hardware_page(res, slug, t)
            render("hardware.html", lang, f"hardware/{slug}", res.rows.run["display_label"], bool(hw["charts"]), hw=hw)

    # Chart data as CSV, language-neutral (runtime ids, raw numbers).
    doing.update(what="writing the chart data (CSV)", source=None)
    t_en = Translator("en")
    for res, slug in zip(results, slugs):
        _write(out / "data" / slug / "verdicts.json", verdicts_document(res))
        for make in (latency_chart, throughput_chart, agreement_chart, play_chart):
            chart = make(res, t_en)
            if chart:
                _write(out / "data" / slug / f"{chart.chart_id}.csv", _csv(chart.csv_rows, CSV_HEADERS[chart.chart_id]))
    chart = cross_hardware_chart(results, t_en)
    if chart:
        _write(out / "data" / "cross-hardware.csv", _csv(chart.csv_rows, CSV_HEADERS["cross-hardware"]))

    doing["what"] = "copying the assets"
    assets = out / "assets"
    assets.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(plotly_src, assets / plotly_name)
    for name in ("site.css", "rtreport.js"):
        shutil.copyfile(ASSETS / name, assets / name)
    _write(out / "gates.toml", Path(gates_path or DEFAULT_GATES).read_text())
    _write(out / "index.html", _environment().get_template("root.html").render())
    _write(out / MARKER, "built by rtreport build; this folder is replaced on every build\n")
    return written
