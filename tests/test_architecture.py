"""The shape of the code: the DuckDB file is the only seam between collect and site_gen; build needs only the
publishing dependencies (in a checkout and as an installed wheel); a runtime is one entry, even from another
package; older files keep building; runs that measured different things are not compared silently."""

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import venv
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from collect import paths
from conftest import COMMITTED_RUNS, EXAMPLE_RUNS
from rtreport_cli.main import main

ROOT = Path(__file__).resolve().parents[1]  # the checkout
PACKAGES = ("rtreport", "rtreport_cli", "collect", "site_gen")
COMMITTED = COMMITTED_RUNS


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for f in (ROOT / package).rglob("*.py"):
            parts = f.relative_to(ROOT).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = f
    found["collect.agent"] = ROOT / "collect" / "agent" / "__init__.py"
    return found


def _imports(name: str, path: Path, modules: dict) -> set[str]:
    """Every project module ``name`` imports, at the top or inside a function."""
    is_package = path.name == "__init__.py"
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")[: len(name.split(".")) - node.level + (1 if is_package else 0)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module
            targets = [f"{prefix}.{a.name}" for a in node.names] + [prefix]
        else:
            continue
        for t in targets:
            while t and t not in modules:
                t = t.rpartition(".")[0]
            if t and t != name:
                out.add(t)
    return out


def test_the_tests_name_every_committed_run():
    """Tests use the published runs by name (``conftest.COMMITTED_RUNS``), never a glob of data/ that would also
    find the user's own runs: the list must be exactly what git holds."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: nothing to compare the list with")
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "data/*.duckdb"], capture_output=True, text=True)
    assert listed.returncode == 0, listed.stderr
    named = [f"data/{p.name}" for p in COMMITTED_RUNS] + [f"data/examples/{p.name}" for p in EXAMPLE_RUNS]
    assert sorted(listed.stdout.split()) == sorted(named)
    assert all(p.is_file() for p in COMMITTED_RUNS + EXAMPLE_RUNS)


def test_imports_flow_one_way_from_the_command_line_down_to_the_core():
    modules = _modules()
    graph = {m: _imports(m, p, modules) for m, p in modules.items()}
    for m, deps in graph.items():
        if m.startswith("site_gen"):
            assert not [d for d in deps if d.startswith("collect")], (m, deps)
        if m.split(".")[0] == "rtreport" and m != "rtreport.__main__":  # the core both halves stand on imports
            assert not [d for d in deps if d.startswith(("collect", "site_gen", "rtreport_cli"))], (m, deps)
        if m.startswith(("collect", "site_gen")):  # nothing imports the command line
            assert not [d for d in deps if d.startswith("rtreport_cli")], (m, deps)
    # no cycles among modules (a package's __init__ importing nothing here)
    state = {}

    def visit(m, stack):
        state[m] = "open"
        for d in graph.get(m, ()):
            if state.get(d) == "open":
                raise AssertionError("import cycle: " + " -> ".join(stack + [m, d]))
            if d not in state:
                visit(d, stack + [m])
        state[m] = "done"

    for m in graph:
        if m not in state:
            visit(m, [])


def test_no_module_is_too_long_to_read_in_one_sitting():
    """A module's length in characters other than whitespace, so that the measure is the formatter's to keep: how
    it breaks a call into lines changes no count. 13,000 is about what 300 lines held before the formatter."""
    long = {m: n for m, p in _modules().items() if (n := len(re.sub(r"\s", "", p.read_text()))) > 13_000}
    assert not long, long


def _tree(folder: Path) -> dict:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


BLOCKER = textwrap.dedent("""
    import sys
    BLOCKED = {"torch", "onnxruntime", "onnx", "gymnasium", "ale_py", "cv2", "triton", "tensorrt"}
    class Block:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ImportError(f"{name} is blocked: rtreport build must not need it")
    sys.meta_path.insert(0, Block())
    from rtreport_cli.main import main
    main(sys.argv[1:])
""")


def test_build_needs_none_of_the_measuring_libraries(quick_run, published_site, tmp_path):
    inputs = [str(quick_run), *map(str, COMMITTED)]  # the inputs of published_site, built in this process
    result = subprocess.run(
        [sys.executable, "-c", BLOCKER, "build", *inputs, "--out", str(tmp_path / "blocked")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert _tree(tmp_path / "blocked") == _tree(published_site)


@pytest.mark.slow  # a long end-to-end run: python -m pytest -m slow (CI runs it)
def test_the_wheel_publishes_from_a_fresh_venv_with_the_base_dependencies_only(tmp_path):
    wheels, source = tmp_path / "wheels", tmp_path / "source"
    # pip builds a setuptools project in place (build/, *.egg-info): build a copy, never the checkout itself
    shutil.copytree(
        ROOT,
        source,
        ignore=shutil.ignore_patterns(
            ".git", ".venv", "venv", "site", "artifacts", "build", "dist", "*.egg-info", "__pycache__", "*.duckdb*"
        ),
    )
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(source)],
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = wheels.glob("rtreport-*.whl")
    env = tmp_path / "venv"
    venv.create(env, with_pip=True)
    pip = [str(env / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    installed = subprocess.run(pip + [str(wheel)], capture_output=True, text=True)
    if installed.returncode != 0 and "NewConnectionError" in installed.stdout + installed.stderr:
        pytest.skip("no package index reachable to install the base dependencies")
    assert installed.returncode == 0, installed.stderr
    listed = subprocess.run(
        [str(env / "bin" / "python"), "-m", "pip", "list", "--format=json"], capture_output=True, text=True
    )
    names = {p["name"].lower() for p in json.loads(listed.stdout)}
    assert {"duckdb", "jinja2", "click", "rich", "numpy"} <= names
    assert not names & {"torch", "onnxruntime", "gymnasium", "ale-py", "onnx", "plotly"}, names
    work = tmp_path / "elsewhere"
    (work / "data").mkdir(parents=True)
    for f in COMMITTED:
        shutil.copyfile(f, work / "data" / f.name)
    result = subprocess.run(
        [str(env / "bin" / "rtreport"), "build"],
        capture_output=True,
        text=True,
        cwd=work,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    assert result.returncode == 0, result.stderr
    assert (work / "site" / "en" / "hardware" / "nvidia-h200" / "index.html").exists()
    assert (work / "site" / "zh-tw" / "method" / "index.html").exists()


@pytest.mark.slow  # a long end-to-end run: python -m pytest -m slow (CI runs it)
def test_a_runtime_from_another_package_is_collected_and_published(tmp_path):
    site = tmp_path / "site-packages"
    info = site / "tiny_runtime_plugin-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tiny-runtime-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[rtreport.runtimes]\ntiny = tiny_runtime:RUNTIMES\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT / "tests" / "plugins")])}
    listed = subprocess.run(
        [sys.executable, "-m", "rtreport", "collect", "--list-runtimes"], capture_output=True, text=True, env=env
    )
    assert "tiny-cpu-fp32" in listed.stdout and "TinyRT CPU FP32, plugin" in listed.stdout, listed.stderr
    out = tmp_path / "plugin.duckdb"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "rtreport",
            "collect",
            "--quick",
            "--quiet",
            "--runtimes",
            "torch-cpu-fp32,tiny-cpu-fp32",
            "--label",
            "plugin",
            "--out",
            str(out),
            "--artifacts",
            str(tmp_path / "a"),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    con = duckdb.connect(str(out), read_only=True)
    row = con.execute(
        "SELECT status, title, libraries, position, details FROM runtimes WHERE runtime_id = 'tiny-cpu-fp32'"
    ).fetchone()
    assert row[0] == "available" and row[1] == "TinyRT CPU FP32, plugin" and json.loads(row[2]) == {"tinyrt": "0.0.1"}
    from collect.packages import files_sha256  # the plugin's package, version and its code's hash

    plugin = ROOT / "tests" / "plugins" / "tiny_runtime.py"
    package = {"name": "tiny-runtime-plugin", "version": "0.1", "sha256": files_sha256([(plugin.name, plugin)])}
    assert json.loads(row[4])["package"] == package
    assert con.execute("SELECT count(*) FROM episodes WHERE runtime_id = 'tiny-cpu-fp32'").fetchone()[0] == 2
    con.close()
    # build runs without the plugin installed: everything it shows comes from the file
    assert CliRunner().invoke(main, ["build", str(out), "--out", str(tmp_path / "s")]).exit_code == 0
    page = (tmp_path / "s" / "en" / "hardware" / "plugin" / "index.html").read_text()
    tables = (tmp_path / "s" / "en" / "hardware" / "plugin" / "tables" / "index.html").read_text()
    assert "TinyRT CPU FP32, plugin" in page and package["sha256"] in page
    assert "TinyRT CPU FP32, plugin" in tables and "8/8" in tables  # its fixed states, on the tables page


def test_a_broken_plugin_is_named_and_ignored(tmp_path):
    site = tmp_path / "site-packages"
    info = site / "broken_plugin-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[rtreport.runtimes]\nbroken = no_such_module:RUNTIMES\n")
    env = {**os.environ, "PYTHONPATH": str(site)}
    listed = subprocess.run(
        [sys.executable, "-m", "rtreport", "collect", "--list-runtimes"], capture_output=True, text=True, env=env
    )
    assert listed.returncode == 0 and "torch-cpu-fp32" in listed.stdout
    assert "runtime plugin broken (no_such_module:RUNTIMES) ignored: ModuleNotFoundError" in listed.stderr


SCHEMA_1 = Path(__file__).with_name("fixtures") / "schema1-cpu"  # the CPU file of December 2026's first days,
# three seeds kept (EXPORT DATABASE, parquet)


def _schema_1_file(folder: Path) -> Path:
    path = folder / "schema1-cpu.duckdb"
    con = duckdb.connect(str(path))
    con.execute((SCHEMA_1 / "schema.sql").read_text())
    for table in sorted(p.stem for p in SCHEMA_1.glob("*.parquet")):
        con.execute(f"INSERT INTO {table} SELECT * FROM read_parquet(?)", [str(SCHEMA_1 / f"{table}.parquet")])
    con.close()
    return path


def test_schema_1_files_are_read_through_the_migration(tmp_path):
    from rtreport import migrations, schema
    from site_gen.load import load_file

    old = [
        f
        for f in [*COMMITTED, _schema_1_file(tmp_path)]
        if duckdb.connect(str(f), read_only=True)
        .execute("SELECT value FROM meta WHERE key = 'schema_version'")
        .fetchone()[0]
        == "1"
    ]
    assert old, "the schema-1 fixture must be a schema-1 file"
    for f in old:
        (run,) = load_file(f)
        raw = duckdb.connect(str(f), read_only=True)
        steps = dict(((r, s), n) for r, s, n in raw.execute("SELECT runtime_id, seed, steps FROM episodes").fetchall())
        actions = dict(
            ((r, s), n)
            for r, s, n in raw.execute("SELECT runtime_id, seed, count(*) FROM actions GROUP BY ALL").fetchall()
        )
        raw.close()
        assert steps == actions
        for rt in run.runtimes:
            assert [rt.position, rt.runtime_id] == [migrations.V1_ORDER.index(rt.runtime_id), rt.runtime_id]
            for e in rt.episodes:
                assert len(rt.traces[e["seed"]]) == e["steps"] == steps[(rt.runtime_id, e["seed"])]
            if rt.status == "available":
                assert rt.numerics["tf32"] in ("off", "not-applicable") and rt.libraries
        assert run.run["seeds_sha256"] == schema.seeds_sha256(run.run["settings"]["seeds"])
    site = tmp_path / "site"
    result = CliRunner().invoke(main, ["build", str(old[-1]), "--out", str(site)])
    assert result.exit_code == 0, result.output
    assert "ONNX Runtime CPU FP32" in (site / "en" / "hardware" / "cpu-epyc-2core" / "index.html").read_text()


def _clone_run(src, dst, run_id, **changes):
    shutil.copyfile(src, dst)
    con = duckdb.connect(str(dst))
    for table in ("runs", "runtimes", "latency", "state_q", "episodes"):
        con.execute(f"UPDATE {table} SET run_id = ?", [run_id])
    for column, value in changes.items():
        con.execute(f"UPDATE runs SET {column} = ?", [value])
    con.close()
    return dst


def test_runs_that_measured_different_things_carry_a_notice(quick_run, tmp_path):
    other = _clone_run(quick_run, tmp_path / "other.duckdb", "other", label="other machine", model_sha256="f" * 64)
    result = CliRunner().invoke(main, ["build", str(quick_run), str(other), "--out", str(tmp_path / "s")])
    assert result.exit_code == 0, result.output
    for page in ("index.html", "compare/index.html"):
        en = (tmp_path / "s" / "en" / page).read_text()
        zh = (tmp_path / "s" / "zh-tw" / page).read_text()
        assert "Not measured alike — the model: " in en and "other machine: ffffffffffff" in en
        assert "量測條件不一致" in zh
    alike = CliRunner().invoke(main, ["build", str(quick_run), "--out", str(tmp_path / "t")])
    assert "Not measured alike" not in (tmp_path / "t" / "en" / "index.html").read_text()
    assert alike.exit_code == 0


def test_several_runs_of_one_machine_in_one_file_are_grouped(quick_run, tmp_path):
    second = _clone_run(quick_run, tmp_path / "second.duckdb", "second-run")
    both = tmp_path / "both.duckdb"
    shutil.copyfile(quick_run, both)
    con = duckdb.connect(str(both))
    con.execute(f"ATTACH '{second}' AS b (READ_ONLY)")
    for table in ("runs", "runtimes", "latency", "state_q", "episodes"):
        con.execute(f"INSERT INTO {table} SELECT * FROM b.{table}")
    con.execute("UPDATE runs SET started_at = started_at + INTERVAL 1 DAY WHERE run_id = 'second-run'")
    con.close()
    result = CliRunner().invoke(main, ["build", str(both), "--out", str(tmp_path / "s")])
    assert result.exit_code == 0, result.output
    home = (tmp_path / "s" / "en" / "index.html").read_text()
    assert "ci-cpu: 2 runs" in home
    # the machine's answer, and each run at its own URL (its day), which later runs do not move
    pages = sorted(p.name for p in (tmp_path / "s" / "en" / "hardware").iterdir())
    assert (
        pages[0] == "ci-cpu" and len(pages) == 3 and all(re.fullmatch(r"ci-cpu-\d{4}-\d\d-\d\d", p) for p in pages[1:])
    )


def test_the_reference_comes_from_the_registry_ranks():
    from collect.registry import all_runtimes, reference_runtime_id

    runtimes = all_runtimes()
    assert reference_runtime_id(["ort-cpu-fp32", "torch-cpu-fp32"], runtimes) == "torch-cpu-fp32"
    assert reference_runtime_id(["ort-cpu-fp32", "torch-cuda-fp32", "torch-cpu-fp32"], runtimes) == "torch-cuda-fp32"
    assert reference_runtime_id(["ort-cuda-fp16"], runtimes) is None
    assert len({r.id for r in runtimes}) == len(runtimes)
    assert paths.AGENT_WEIGHTS.is_file()
