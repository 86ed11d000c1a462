"""The repeats a run owes after its protocol: each a fresh process (``rtreport collect --repeat``), so that every
file ``rtreport collect`` makes holds at least three independent measurements of the machine's speed (the run's
own process and two repeats by default), which the faster gate needs (``rtreport/gates.toml``).

How many the run asked for is ``settings.repeats`` (``--repeats N``; files made before it owe none); ``--resume``
takes those still missing. Each repeat waits ``settings.repeat_pause_s`` first, so the repeats are spread after the
run rather than taken in one breath with it, and commits its own copy of the file: stopped or failed, the file
keeps the complete run and the repeats before it.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from . import children
from .interrupts import STOP_SIGNALS

WAIT_FOR_CHILD_S = 120.0  # after a stop signal: how long a repeat gets to leave the file as it was


def owed(path: Path) -> tuple[int, int]:
    """(repeats the run asked for, repeats the file holds)."""
    import duckdb

    con = duckdb.connect(str(path), read_only=True)
    try:
        status, settings = con.execute("SELECT status, settings FROM runs").fetchone()
        have = con.execute("SELECT count(*) FROM repeats").fetchone()[0]
    finally:
        con.close()
    wanted = int(json.loads(settings or "{}").get("repeats") or 0) if status == "complete" else 0
    return wanted, int(have)


def command(path: Path, rounds: int, options) -> list[str]:
    """The repeat's own command line: this Python, this model, GPU and artifacts folder."""
    cmd = [
        sys.executable,
        "-m",
        "rtreport",
        "collect",
        "--repeat",
        str(path),
        "--rounds",
        str(rounds),
    ]
    if options.cuda_index:  # cuda:0 is the default, and naming it on a machine without a GPU is refused
        cmd += ["--device", f"cuda:{options.cuda_index}"]
    if options.model_path:
        cmd += ["--model", str(options.model_path)]
    if options.artifacts:
        cmd += ["--artifacts", str(options.artifacts)]
    if options.allow_mixed_onnxruntime:
        cmd.append("--allow-mixed-onnxruntime")
    if options.quiet:
        cmd.append("--quiet")
    return cmd


def take(path: Path, options, say) -> int:
    """Take the repeats ``path``'s run still owes, one fresh process each. Returns 0 when it owes none any more;
    the repeat's own exit code when one failed or was stopped (nothing after it is taken; the file keeps what was
    committed)."""
    wanted, have = owed(path)
    if have >= wanted:
        return 0
    settings = _settings(path)
    rounds = int(settings.get("repeat_rounds") or 3)
    pause = float(settings.get("repeat_pause_s") or 0.0)
    stopped: list = []

    def forward(signum, frame):  # a stop while a repeat runs: the repeat gets it too, and leaves the file whole
        stopped.append(signal.Signals(signum).name)
        if child and child.poll() is None:
            child.send_signal(signum)

    previous = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    child = None
    try:
        for s in STOP_SIGNALS:
            signal.signal(s, forward)
        for k in range(have + 1, wanted + 1):
            say(
                f"repeat {k} of {wanted} in a fresh process, {pause:.0f} s after the last measurement (the speed "
                f"gate needs at least three independent measurements: the run and its repeats)"
            )
            _sleep(pause, stopped)
            if stopped:
                break
            # a process group of its own: a Ctrl-C at the terminal reaches the repeat through ``forward`` only once;
            # a SIGTERM when this process dies, however it dies, and the repeat leaves the file as it was
            child = subprocess.Popen(
                command(path, rounds, options), start_new_session=True, preexec_fn=children.preexec(signal.SIGTERM)
            )
            code = _wait(child, stopped)
            child = None
            if code:
                return _ended(path, code, stopped, say, wanted)
            if stopped:
                break
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
    if stopped:
        return _ended(path, 128 + getattr(signal, stopped[0]), stopped, say, wanted)
    return 0


def _ended(path: Path, code: int, stopped: list, say, wanted: int) -> int:
    _, have = owed(path)
    why = f"stopped by {stopped[0]}" if stopped else f"a repeat ended with exit code {code}"
    say(
        f"{why}: {path} keeps the complete run and {have} of its {wanted} repeats; its speed gate needs at least "
        f"three independent measurements; rtreport collect --resume {path} takes the repeats it still owes"
    )
    return code if code else 1


def _sleep(seconds: float, stopped: list) -> None:
    end = time.monotonic() + seconds
    while not stopped and time.monotonic() < end:
        time.sleep(min(0.2, max(0.0, end - time.monotonic())))


def _wait(child, stopped: list) -> int:
    while True:
        try:
            return child.wait(timeout=WAIT_FOR_CHILD_S if stopped else None)
        except subprocess.TimeoutExpired:  # it did not stop in time: it works on a copy, so the file is whole
            child.kill()
            return child.wait()


def _settings(path: Path) -> dict:
    import duckdb

    con = duckdb.connect(str(path), read_only=True)
    try:
        return json.loads(con.execute("SELECT settings FROM runs").fetchone()[0] or "{}")
    finally:
        con.close()
