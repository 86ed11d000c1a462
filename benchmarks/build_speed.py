"""How long `rtreport build` takes, as a ratio against only reading the same files.

Two sets of files: the committed runs (data/*.duckdb, by name) and ten machine files, copies of
data/cpu-epyc-2core-2.duckdb each with its own run id and label (changed with DuckDB, sealed again with
``rtreport.integrity.record`` as collect would). For each set, side by side, each a fresh process
(``python -m ...``, so the interpreter's start and imports count on both sides):
  read   -- ``site_gen.load.load_file`` of every file, nothing else;
  cold   -- ``rtreport build --no-cache``: read, analyse and write every page;
  warm   -- ``rtreport build`` with every file in the cache (a rebuild with nothing new);
  new    -- ``rtreport build`` with every file but one in the cache (a publishing job's rebuild on one new file).
  before -- with --before DIR (a checkout of older code, e.g. `git worktree add /tmp/old main`): its
            ``rtreport build`` of the same files, as cold.
The machine is shared and noisy, so the modes are interleaved and the whole round repeated (--repeat, default 3);
printed: the median and the range of each, and build/read per round (median and range). Usage:
  python benchmarks/build_speed.py [--repeat 3] [--before DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fingerprint import fingerprint  # noqa: E402  (benchmarks/fingerprint.py)

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = [ROOT / "data" / n for n in ("cpu-epyc-2core.duckdb", "cpu-epyc-2core-2.duckdb", "nvidia-h200.duckdb")]
MACHINE_FILE = ROOT / "data" / "cpu-epyc-2core-2.duckdb"  # the current schema, sealed
READ = (
    "import sys; from pathlib import Path; from site_gen.load import load_file\n"
    "for p in sys.argv[1:]: load_file(Path(p))"
)
MODES = ("read", "cold", "warm", "new")


def machine_copy(dest: Path, n: int) -> Path:
    """A copy of MACHINE_FILE as another machine's run: its own run id and label, sealed again."""
    import duckdb

    from rtreport import integrity

    shutil.copyfile(MACHINE_FILE, dest)
    con = duckdb.connect(str(dest))
    try:
        (old,) = con.execute("SELECT run_id FROM runs").fetchone()
        new = f"{old}-bench{n:02d}"
        for table in integrity._tables(con) + [integrity.TABLE]:
            con.execute(f'UPDATE "{table}" SET run_id = ? WHERE run_id = ?', [new, old])
        con.execute("UPDATE runs SET label = ?", [f"bench-machine-{n:02d}"])
        con.execute(f"DELETE FROM {integrity.TABLE} WHERE run_id = ?", [old])
        integrity.record(con, new)
        con.execute("CHECKPOINT")
    finally:
        con.close()
    return dest


def _run(args: list[str], env: dict, code: Path = ROOT) -> float:
    start = time.perf_counter()
    env = dict(env, PYTHONPATH=str(code))
    done = subprocess.run([sys.executable, *args], cwd=code, env=env, capture_output=True, text=True)
    took = time.perf_counter() - start
    if done.returncode:
        sys.exit(f"{' '.join(args[:3])} failed: {(done.stderr or done.stdout).strip()[-400:]}")
    return took


def measure(files: list[Path], mode: str, work: Path, caches: dict, before: Path | None = None) -> float:
    env = dict(os.environ)
    out = work / "site"
    names = [str(f) for f in files]
    if mode == "before":
        return _run(["-m", "rtreport", "build", *names, "--out", str(out)], env, before)
    if mode == "read":
        return _run(["-c", READ, *names], env)
    if mode == "cold":
        return _run(["-m", "rtreport", "build", *names, "--out", str(out), "--no-cache"], env)
    cache = work / f"cache-{mode}"
    shutil.rmtree(cache, ignore_errors=True)
    shutil.copytree(caches[mode], cache)
    env["RTREPORT_CACHE_DIR"] = str(cache)
    return _run(["-m", "rtreport", "build", *names, "--out", str(out)], env)


def fill(files: list[Path], folder: Path) -> Path:
    """A cache holding ``files``' results (made by an unmeasured build)."""
    env = dict(os.environ, RTREPORT_CACHE_DIR=str(folder))
    _run(["-m", "rtreport", "build", *map(str, files), "--out", str(folder.parent / "fill-site")], env)
    shutil.rmtree(folder.parent / "fill-site")
    return folder


def _line(name: str, times: list[float]) -> str:
    return f"{name:<6} median {statistics.median(times):6.2f} s  range {min(times):6.2f} – {max(times):6.2f} s"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--before", type=Path, default=None, help="a checkout of older code to build with, as cold")
    args = ap.parse_args()
    modes = MODES + ("before",) * (args.before is not None)
    print(fingerprint(), flush=True)
    with tempfile.TemporaryDirectory(prefix="build-speed-") as tmp:
        tmp = Path(tmp)
        (tmp / "ten").mkdir()
        ten = [machine_copy(tmp / "ten" / f"machine-{n:02d}.duckdb", n) for n in range(1, 11)]
        sets = {"committed": [p for p in COMMITTED if p.is_file()], "ten": ten}
        caches = {}
        for name, files in sets.items():
            (tmp / name / "work").mkdir(parents=True, exist_ok=True)
            caches[name] = {
                "warm": fill(files, tmp / name / "all"),
                "new": fill(files[:-1], tmp / name / "all-but-one"),
            }
        times = {(s, m): [] for s in sets for m in modes}
        for r in range(args.repeat):
            for name, files in sets.items():
                for mode in modes:
                    times[name, mode].append(measure(files, mode, tmp / name / "work", caches[name], args.before))
            print(f"round {r + 1} of {args.repeat} done", file=sys.stderr, flush=True)
    for name, files in sets.items():
        size = sum(f.stat().st_size for f in files) if name == "committed" else 10 * MACHINE_FILE.stat().st_size
        print(
            f"\n{name}: {len(files)} files, {size / 1e6:.1f} MB ({', '.join(f.name for f in files[:3])}"
            f"{', …' if len(files) > 3 else ''})"
        )
        for mode in modes:
            line = _line(mode, times[name, mode])
            if mode != "read":
                ratios = [b / a for a, b in zip(times[name, "read"], times[name, mode])]
                line += (
                    f"   build/read median {statistics.median(ratios):5.2f}"
                    f" (range {min(ratios):.2f} – {max(ratios):.2f})"
                )
            print(line)


if __name__ == "__main__":
    main()
