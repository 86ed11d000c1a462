"""Lighthouse figures of the built site: navigation runs, mobile and desktop, of the H200 machine page,
the CPU machine page and the compare page, and timespans in which the reader scrolls each of them to the bottom
as it opens (and the H200 page with every folded section opened first: flicking a screen every 250 ms, or
stopping 1.5 s on each screen), each run --repeats times; prints the machine fingerprint,
`uptime` before each run, each run's JSON line and, per measurement, the median and the spread (min-max) of the
performance score and the total blocking time.

    rtreport build data/ --out /tmp/site
    (cd benchmarks/lighthouse && npm install)           # lighthouse and puppeteer-core, pinned in package.json
    CHROME_PATH=/usr/bin/chromium python benchmarks/lighthouse.py /tmp/site [--repeats 3] [--only timespan]
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import statistics
import subprocess
import sys
import threading
from pathlib import Path

from fingerprint import fingerprint

HERE = Path(__file__).parent / "lighthouse"
PAGES = {"h200": "en/hardware/nvidia-h200/", "cpu": "en/hardware/cpu-epyc-2core/", "compare": "en/compare/"}
RUNS = [
    (page, mode, form, []) for mode in ("navigation", "timespan") for page in PAGES for form in ("mobile", "desktop")
] + [
    ("h200", "timespan", "mobile", ["--open-parts"]),
    ("h200", "timespan", "desktop", ["--open-parts"]),
    ("h200", "timespan", "mobile", ["--open-parts", "--pause", "1500"]),
]


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def serve(site: Path) -> http.server.ThreadingHTTPServer:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("site", type=Path, help="a built site (rtreport build --out)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", choices=["navigation", "timespan"], help="only this kind of run")
    args = ap.parse_args()
    if not (args.site / "en" / "compare" / "index.html").exists():
        print(f"error: {args.site} is not a built site (no en/compare/index.html)", file=sys.stderr)
        return 2
    if not (HERE / "node_modules" / "lighthouse").exists():
        print(f"error: run `npm install` in {HERE} first", file=sys.stderr)
        return 2
    server = serve(args.site)
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    print(fingerprint(), flush=True)
    results: dict[tuple, list[dict]] = {}
    for rep in range(args.repeats):
        for page, mode, form, extra in RUNS:
            if args.only and mode != args.only:
                continue
            uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
            print(f"# run {rep + 1}: {page} {mode} {form} {' '.join(extra)} | uptime: {uptime}", flush=True)
            out = subprocess.run(
                ["node", "lighthouse_flow.mjs", base + PAGES[page], mode, form, *extra],
                cwd=HERE,
                capture_output=True,
                text=True,
                timeout=300,
            )
            line = next((ln for ln in out.stdout.splitlines() if ln.startswith("{")), None)
            if out.returncode or line is None:
                print(f"  failed ({out.returncode}): {out.stderr.strip()[-500:]}", flush=True)
                continue
            print("  " + line, flush=True)
            results.setdefault((page, mode, form, " ".join(extra)), []).append(json.loads(line))
    server.shutdown()
    print("\npage | run | form | performance: median (min-max) | TBT ms: median (min-max) | n")
    for (page, mode, form, extra), rows in results.items():
        perf = [r["performance"] for r in rows]
        tbt = [r["tbt_ms"] for r in rows]
        print(
            f"{page} | {mode}{' ' + extra if extra else ''} | {form} | {statistics.median(perf):.0f} "
            f"({min(perf)}-{max(perf)}) | {statistics.median(tbt):.0f} ({min(tbt):.0f}-{max(tbt):.0f}) | {len(rows)}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
