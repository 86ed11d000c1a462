"""A private CUDA Multi-Process Service (MPS) daemon for the play workers.

Without MPS, the GPU runs one process's CUDA context at a time: many play processes issuing batch=1 decisions are
time-sliced, and a process's small kernels wait for its turn (measured: ~4,000 decisions/s whatever the number of
processes). Under MPS, the workers' work goes through one server context, so kernels of different processes run
side by side. Each decision is still the same batch=1 call with the same kernels; only their scheduling across
processes changes, and every worker's joint self-check (``engine.open_slots``) still compares its overlapped
decisions bit for bit with one-at-a-time ones before it plays.

The daemon is this run's own: its pipe and log folders are a fresh temporary folder, passed to the workers only
(``CUDA_MPS_PIPE_DIRECTORY``), so the main process, which measures latency, and any other program on the machine
stay plain CUDA clients. It changes none of the GPU's settings (compute mode, clocks, MIG) and is shut down when
play ends. Where ``nvidia-cuda-mps-control`` is missing or does not start, play goes on without it and the run
records why. A run killed outright (SIGKILL) cannot stop its daemon: ``echo quit | CUDA_MPS_PIPE_DIRECTORY=<the
run's /tmp/rtreport-mps-*/pipe> nvidia-cuda-mps-control`` does.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

CONTROL = "nvidia-cuda-mps-control"


class MpsDaemon:
    """``with MpsDaemon() as mps:`` — ``mps.env`` is what a worker puts in its environment before CUDA starts
    (empty when the daemon is not running), ``mps.reason`` why not."""

    def __init__(self, control: str | None = None):
        self.control = control or shutil.which(CONTROL)
        self.folder: str | None = None
        self.env: dict = {}
        self.reason: str | None = None

    def __enter__(self):
        if not self.control:
            self.reason = f"{CONTROL} is not on PATH"
            return self
        self.folder = tempfile.mkdtemp(prefix="rtreport-mps-")
        env = {
            "CUDA_MPS_PIPE_DIRECTORY": os.path.join(self.folder, "pipe"),
            "CUDA_MPS_LOG_DIRECTORY": os.path.join(self.folder, "log"),
        }
        for path in env.values():
            os.makedirs(path)
        try:
            done = subprocess.run(
                [self.control, "-d"], env={**os.environ, **env}, capture_output=True, text=True, timeout=30
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            self.reason = f"{CONTROL} -d did not start: {type(e).__name__}: {e}"
        else:
            if done.returncode != 0:
                said = (done.stderr or done.stdout).strip().splitlines()
                self.reason = f"{CONTROL} -d exited with {done.returncode}" + (f": {said[-1]}" if said else "")
            else:
                self.env = env
        if self.reason:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None
        return self

    def probe(self, timeout: float = 120) -> None:
        """One short CUDA client through the daemon before any worker relies on it: if it cannot compute, the
        daemon is stopped and ``reason`` says why (workers then play as plain CUDA clients)."""
        if not self.env:
            return
        code = (
            "import torch; x = torch.arange(8.0, device='cuda'); "
            "assert float((x * 2).sum().item()) == 56.0; torch.cuda.synchronize()"
        )
        try:
            done = subprocess.run(
                [sys.executable, "-c", code],
                env={**os.environ, **self.env},
                capture_output=True,
                text=True,
                timeout=timeout,
            )
            failed = None if done.returncode == 0 else (done.stderr.strip().splitlines() or ["no output"])[-1]
        except (OSError, subprocess.TimeoutExpired) as e:
            failed = f"{type(e).__name__}: {e}"
        if failed:
            self.__exit__(None, None, None)
            self.reason = f"a CUDA client through the MPS daemon failed ({failed})"

    def ask(self, command: str) -> str:
        """A command to this daemon (``get_server_list``, ``get_client_list PID``, ``quit``); its answer."""
        if not self.env:
            return ""
        try:
            done = subprocess.run(
                [self.control],
                input=command + "\n",
                env={**os.environ, **self.env},
                capture_output=True,
                text=True,
                timeout=30,
            )
        except (OSError, subprocess.TimeoutExpired):
            return ""
        return done.stdout.strip()

    def clients(self) -> list[int]:
        """Process ids connected to this daemon's servers (the workers that really run under MPS)."""
        pids = []
        for server in self.ask("get_server_list").split():
            if server.isdigit():
                pids += [int(p) for p in self.ask(f"get_client_list {server}").split() if p.isdigit()]
        return pids

    def __exit__(self, *exc):
        if self.env:
            self.ask("quit")
        if self.folder:
            shutil.rmtree(self.folder, ignore_errors=True)
        self.env = {}
        return False
