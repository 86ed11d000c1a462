"""The fault corpus: one row per bad input a user can give ``rtreport collect`` (a run, ``--resume``, ``--repeat``),
``check`` and ``build``, run through the real command line on real files made once (a tiny TorchScript policy's
CPU run of CartPole, its site, a Stable-Baselines3 save, rtreport's Q-network) and damaged per case. Every row
asserts its exit status, exactly one ``Error:`` line on stderr (``note:`` lines allowed; no traceback, no library's
raw text), and that no file in the case's folder changed but those the command documents."""

from __future__ import annotations

import fnmatch
import hashlib
import os
import re
import shutil
import subprocess
import sys
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

import duckdb
import pytest
import torch
from click.testing import CliRunner

from collect.agent.network import QNetwork
from rtreport_cli.main import main

RUN, MODEL, SITE = "run.duckdb", "mlp.pt", "site"
# what no line a user reads may hold: a traceback, a warning, a library's exception class
RAW = re.compile(
    r"Traceback|Warning:|duckdb\.\w|onnxruntime\.\w|onnx\.\w|google\.protobuf|(?<!JSON)DecodeError|PytorchStreamReader|miniz"
)


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """What every case copies from: the tiny CartPole run (complete, no repeats), its site, the TorchScript policy,
    a Stable-Baselines3 PPO save of CartPole and a state dict of rtreport's Q-network."""
    src = tmp_path_factory.mktemp("corpus")
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))
    torch.jit.save(torch.jit.script(net), str(src / MODEL))
    torch.save(QNetwork(4).state_dict(), src / "q.pt")
    runner = CliRunner()
    result = runner.invoke(
        main,
        [
            "collect",
            "--quick",
            "--repeats",
            "0",
            "--runtimes",
            "torch-cpu-fp32,ort-cpu-fp32",
            "--env",
            "CartPole-v1",
            "--model",
            str(src / MODEL),
            "--out",
            str(src / RUN),
            "--artifacts",
            str(src / "art"),
            "--label",
            "tiny",
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    result = runner.invoke(main, ["build", str(src / RUN), "--out", str(src / SITE)])
    assert result.exit_code == 0, result.output
    import gymnasium as gym
    from stable_baselines3 import PPO

    PPO("MlpPolicy", gym.make("CartPole-v1"), n_steps=64, batch_size=64, seed=0, device="cpu").save(src / "ppo.zip")
    shutil.rmtree(src / "art")
    return src


# ---------------------------------------------------------------------------------------------------------------
# how inputs are damaged: each takes the case's folder


def _write(name: str, data: bytes | str):
    def damage(w: Path):
        (w / name).write_bytes(data.encode() if isinstance(data, str) else data)

    return damage


def _truncate(name: str, keep: float = 0.5):
    def damage(w: Path):
        data = (w / name).read_bytes()
        (w / name).write_bytes(data[: int(len(data) * keep)])

    return damage


def _sql(*statements: str, name: str = RUN):
    def damage(w: Path):
        con = duckdb.connect(str(w / name))
        for s in statements:
            con.execute(s)
        con.close()

    return damage


NEWER_SCHEMA = _sql("UPDATE meta SET value = '999' WHERE key = 'schema_version'")
EDITED_ROW = _sql("UPDATE episodes SET score = score + 1 WHERE rowid = (SELECT min(rowid) FROM episodes)")


def _foreign_duckdb(w: Path):
    (w / RUN).unlink()
    con = duckdb.connect(str(w / RUN))
    con.execute("CREATE TABLE results AS SELECT 1 AS score")
    con.close()


def _script(module: torch.nn.Module, name: str = "bad.pt"):
    def damage(w: Path):
        torch.jit.save(torch.jit.script(module), str(w / name))

    return damage


class _Flat(torch.nn.Module):
    def forward(self, x):
        return x.sum(dim=1)


class _Pair(torch.nn.Module):
    def forward(self, x):
        return x[:, :2], x[:, 2:]


def _onnx(out_shape: tuple, in_shape=(4,), dtype=None, name="bad.onnx", inputs=1, declared=True):
    """A one-node ONNX model: (N, *in_shape) of ``dtype`` (float32) in, reshaped to (N, *out_shape) out (its sizes
    symbolic unless ``declared``)."""

    def damage(w: Path):
        import onnx
        from onnx import TensorProto, helper

        elem = dtype or TensorProto.FLOAT
        ins = [helper.make_tensor_value_info(f"x{i}", elem, ["N", *in_shape]) for i in range(inputs)]
        shape = helper.make_tensor("shape", TensorProto.INT64, [1 + len(out_shape)], [-1, *out_shape])
        nodes = [helper.make_node("Reshape", ["x0", "shape"], ["y"])]
        out = helper.make_tensor_value_info(
            "y", elem, ["N", *(out_shape if declared else [f"d{i}" for i in out_shape])]
        )
        graph = helper.make_graph(nodes, "g", ins, [out], initializer=[shape])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        onnx.save(model, str(w / name))

    return damage


def _state(make: Callable[[dict], object], name: str = "sd.pt"):
    """A checkpoint made from rtreport's Q-network state dict."""

    def damage(w: Path):
        torch.save(make(QNetwork(4).state_dict()), w / name)

    return damage


def _sb3_entry(entry: str, data: bytes | None):
    """ppo.zip with ``entry`` replaced by ``data`` (None: left out)."""

    def damage(w: Path):
        import zipfile

        src, dst = w / "ppo.zip", w / "ppo.new.zip"
        with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
            for item in zin.infolist():
                if item.filename != entry:
                    zout.writestr(item, zin.read(item.filename))
                elif data is not None:
                    zout.writestr(item, data)
        dst.replace(src)

    return damage


def _toml(name: str, text: str):
    return _write(name, text)


def _both(*damages):
    def damage(w: Path):
        for d in damages:
            d(w)

    return damage


GATES_OK = (Path(__file__).resolve().parents[1] / "rtreport" / "gates.toml").read_text()


def _gates(edit: Callable[[str], str]):
    return _write("g.toml", edit(GATES_OK))


def _folder(name: str):
    def damage(w: Path):
        (w / name).mkdir()

    return damage


MOUNTED: list[Path] = []  # read-only folders a case mounted, unmounted as it ends


def _read_only(*names: str):
    """Folder ``ro`` a read-only file system (a tmpfs mounted again read-only) holding copies of ``names``; without the
    right to mount, the case is skipped."""

    def damage(w: Path):
        ro = w / "ro"
        ro.mkdir()
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=32m", "tmpfs", str(ro)], capture_output=True).returncode:
            pytest.skip("cannot mount a tmpfs here (needs root): the read-only folder cases are not run")
        MOUNTED.append(ro)
        for name in names:
            shutil.copyfile(w / name, ro / name)
        subprocess.run(["mount", "-o", "remount,ro", str(ro)], check=True, capture_output=True)

    return damage


def _none(w: Path):
    pass


# ---------------------------------------------------------------------------------------------------------------
# the cases


@dataclass
class Case:
    id: str
    args: list[str]  # after ``rtreport``; the case's folder is the current folder
    damage: Callable[[Path], None]
    code: int
    line: str  # a regular expression the one Error: line (check's exit 1: its one line on stdout) matches
    needs: tuple = (RUN, MODEL)  # what is copied into the case's folder first
    env: dict = field(default_factory=dict)  # environment variables for the case ({w} is the case's folder)
    changes: tuple = ()  # files (relative globs) the command may write or change
    xfail: str | None = None
    process: bool = False  # run as its own process: what the C++ libraries write to stderr is seen too


CP = ["--env", "CartPole-v1"]
TINY = ["--quick", "--repeats", "0", "--runtimes", "torch-cpu-fp32", "--artifacts", "art", "--out", "out.duckdb"]
LIST = ["collect", "--list-runtimes", "--model", "sd.pt"]  # loads the model, measures nothing


def collect(*args):
    return ["collect", *args]


def with_model(model, *more):
    return ["collect", *CP, "--model", model, *TINY, *more]


def resume(*more):
    return ["collect", "--resume", RUN, "--model", MODEL, "--artifacts", "art", *more]


def repeat(*more):
    return ["collect", "--repeat", RUN, "--model", MODEL, "--artifacts", "art", *more]


def build(*more):
    return ["build", RUN, "--out", SITE, *more]


B = (RUN, MODEL, SITE)
OPTIONS = [
    Case(
        "collect-unknown-option",
        collect("--fast"),
        _none,
        2,
        r"^Error: No such option '--fast'\. \(rtreport collect --help lists the options\)$",
    ),
    Case("collect-rounds-0", collect("--rounds", "0"), _none, 2, r"--rounds.*0 is not in the range 1<=x<=50"),
    Case("collect-rounds-51", collect("--rounds", "51"), _none, 2, r"--rounds.*51 is not in the range"),
    Case("collect-play-workers-0", collect("--play-workers", "0"), _none, 2, r"--play-workers.*not in the range"),
    Case("collect-repeats-negative", collect("--repeats", "-1"), _none, 2, r"--repeats.*-1 is not in the range"),
    Case("collect-rounds-text", collect("--rounds", "many"), _none, 2, r"--rounds': 'many' is not a valid integer"),
    Case("collect-runtimes-swallows-option", collect("--runtimes", "--quick"), _none, 2, r"not '--quick'"),
    Case("collect-unknown-runtime", with_model(MODEL, "--runtimes", "nope"), _none, 2, r"unknown runtime nope; known"),
    Case("collect-empty-runtimes", with_model(MODEL, "--runtimes", ","), _none, 2, r"unknown runtime \(none given\)"),
    Case("collect-label-two-lines", collect("--quick", "--label", "lab\nbox"), _none, 2, r"--label"),
    Case("collect-play-slots-0", collect("--play-slots", "0"), _none, 2, r"--play-slots': 0 is not in the range"),
    Case(
        "resume-missing-file",
        ["collect", "--resume", "gone.duckdb"],
        _none,
        2,
        r"^Error: --resume gone\.duckdb: no such file",
    ),
    Case("resume-a-folder", ["collect", "--resume", "d"], _folder("d"), 2, r"^Error: --resume d: a folder, not a run"),
    Case("repeat-missing-file", ["collect", "--repeat", "gone.duckdb"], _none, 2, r"gone\.duckdb"),
    Case("build-a-text-input", ["build", "n.txt", "--out", SITE], _write("n.txt", "x"), 2, r"n\.txt", needs=B),
    Case("collect-empty-label", collect("--quick", "--label", ""), _none, 2, r"--label is empty"),
    Case("collect-device-form", collect("--device", "gpu0"), _none, 2, r"--device must look like cuda:0, not 'gpu0'"),
    Case("collect-device-absent", collect("--device", "cuda:64"), _none, 2, r"--device cuda:64 is not on this machine"),
    Case("collect-normalize-alone", collect("--normalize", "v.pkl"), _none, 2, r"--normalize is for a model of your"),
    Case("collect-env-without-model", collect(*CP), _none, 2, r"give --model: the shipped agent plays Breakout"),
    Case("resume-with-env", resume(*CP), _none, 2, r"--resume plays the task the run began with"),
    Case("resume-with-out", resume("--out", "x.duckdb"), _none, 2, r"--resume continues the file's own run"),
    Case("resume-with-quick", resume("--quick"), _none, 2, r"takes no --out, --label or --quick"),
    Case("repeat-with-env", repeat(*CP), _none, 2, r"^Error: --repeat .*takes no .*--env"),
    Case(
        "repeat-with-config",
        repeat("--config", "run.toml"),
        _toml("run.toml", "[env]\n"),
        2,
        r"^Error: --repeat .*takes no .*--config",
    ),
    Case("repeat-with-rounds-and-label", repeat("--label", "x"), _none, 2, r"--repeat adds to the file's own run"),
    Case("repeat-with-quick", repeat("--quick"), _none, 2, r"--repeat adds to the file's own run"),
    Case("repeat-with-runtimes", repeat("--runtimes", "torch-cpu-fp32"), _none, 2, r"--repeat adds to the file"),
    Case("repeat-and-resume", repeat("--resume", RUN), _none, 2, r"takes no --resume"),
    Case("check-no-file", ["check"], _none, 2, r"Missing argument 'FILE'"),
    Case(
        "check-takes-no-gates",
        ["check", "--gates", "g.toml", RUN],
        _none,
        2,
        r"^Error: No such option '--gates'\. \(rtreport check --help",
    ),
    Case("check-missing-file", ["check", "nothing.duckdb"], _none, 2, r"^Error: nothing\.duckdb: no such file$"),
    Case("check-a-folder", ["check", "."], _folder("x"), 2, r"is a folder, not a run file"),
    Case(
        "build-unknown-option",
        ["build", "--fast"],
        _none,
        2,
        r"^Error: No such option '--fast'\..*\(rtreport build --help",
    ),
    Case(
        "build-missing-input",
        ["build", "nothing.duckdb", "--out", SITE],
        _none,
        2,
        r"^Error: nothing\.duckdb: no such file or folder$",
        needs=B,
    ),
    Case(
        "collect-out-exists",
        with_model(MODEL),
        _write("out.duckdb", b"kept"),
        2,
        r"^Error: out\.duckdb already exists; pass --overwrite to replace it",
    ),
]

MODELS = [
    Case(
        "model-broken-link",
        with_model("l.pt"),
        lambda w: (w / "l.pt").symlink_to(w / "gone.pt"),
        2,
        r"^Error: model file not found: l\.pt$",
    ),
    Case(
        "torchscript-named-onnx",
        with_model("m.onnx"),
        lambda w: shutil.copy(w / MODEL, w / "m.onnx"),
        2,
        r"^Error: cannot read m\.onnx as an ONNX model",
    ),
    Case(
        "onnx-named-pt",
        with_model("m.pt"),
        _onnx((2,), name="m.pt"),
        2,
        r"^Error: m\.pt is an ONNX model, named \.pt: rename it to end in \.onnx$",
    ),
    Case(
        "sb3-named-pt",
        with_model("p.pt"),
        lambda w: shutil.copy(w / "ppo.zip", w / "p.pt"),
        2,
        r"^Error: p\.pt is a Stable-Baselines3 save, named \.pt: rename it to end in \.zip$",
        needs=(MODEL, "ppo.zip"),
    ),
    Case("model-missing", with_model("gone.pt"), _none, 2, r"^Error: model file not found: gone\.pt$"),
    Case("model-empty", with_model("e.pt"), _write("e.pt", b""), 2, r"e\.pt is empty \(0 bytes\), not a model"),
    Case("model-text", with_model("t.pt"), _write("t.pt", "weights\n"), 2, r"t\.pt is a text file, not a model"),
    Case(
        "model-a-folder",
        with_model("m"),
        _folder("m"),
        2,
        r"^Error: model path is a folder: m is neither an RL Zoo experiment folder nor a Hugging Face",
    ),
    Case(
        "torchscript-truncated",
        with_model("c.pt"),
        _both(lambda w: shutil.copy(w / MODEL, w / "c.pt"), _truncate("c.pt")),
        2,
        r"^Error: c\.pt is damaged or truncated: a zip archive whose end is missing",
    ),
    Case(
        "torchscript-wrong-input",
        with_model("bad.pt"),
        _script(torch.nn.Linear(8, 2)),
        2,
        r"bad\.pt: the model does not take CartPole-v1's observations",
    ),
    Case(
        "torchscript-three-actions",
        with_model("bad.pt"),
        _script(torch.nn.Linear(4, 3)),
        2,
        r"the model has 3 outputs, but CartPole-v1 has 2 actions",
    ),
    Case("torchscript-1d-output", with_model("bad.pt"), _script(_Flat()), 2, r"expected outputs \(N, 2\).*\(1,\)"),
    Case("torchscript-tuple-output", with_model("bad.pt"), _script(_Pair()), 2, r"expected outputs \(N, 2\).*tuple"),
    Case(
        "state-dict-for-cartpole",
        with_model("sd.pt"),
        _state(lambda sd: sd),
        2,
        r"a state dict fits only rtreport's Atari Q-network",
    ),
    Case("onnx-empty", with_model("e.onnx"), _write("e.onnx", b""), 2, r"e\.onnx is empty \(0 bytes\), not an ONNX"),
    Case(
        "onnx-garbage",
        with_model("g.onnx"),
        _write("g.onnx", b"\x08\x07garbage" * 50),
        2,
        r"cannot read g\.onnx as an ONNX model \(damaged, truncated or not ONNX\): its bytes do not parse as an",
    ),
    Case(
        "onnx-truncated",
        with_model("bad.onnx"),
        _both(_onnx((2,)), _truncate("bad.onnx", 0.6)),
        2,
        r"cannot read bad\.onnx as an ONNX model",
    ),
    Case("onnx-output-3d", with_model("bad.onnx"), _onnx((2, 1)), 2, r"the output must be \(N, A\).*\(N, 2, 1\)"),
    Case("onnx-output-1d", with_model("bad.onnx"), _onnx(()), 2, r"the output must be \(N, A\)"),
    Case("onnx-output-4-actions", with_model("bad.onnx"), _onnx((4,)), 2, r"has 4 outputs, but CartPole-v1 has 2"),
    Case("onnx-input-shape", with_model("bad.onnx"), _onnx((2,), (5,)), 2, r"input must be .*found float32 \(N, 5\)"),
    Case("onnx-input-dtype", with_model("bad.onnx"), _onnx((2,), dtype=11), 2, r"input must be .*found float64"),
    Case(
        "onnx-fails-to-run",
        with_model("bad.onnx"),
        _onnx((3,), declared=False),
        2,
        r"^Error: bad\.onnx: ONNX Runtime cannot run the model on one observation: its Reshape node fails: .*The "
        r"input tensor cannot be reshaped to the requested shape",
    ),
    Case(
        "onnx-undeclared-output-1d",
        with_model("bad.onnx"),
        _onnx((), declared=False),
        2,
        r"the output must be \(N, A\)",
    ),
    Case("onnx-two-inputs", with_model("bad.onnx"), _onnx((2,), inputs=2), 2, r"expected one input and one output"),
]

# every common layout of a Q-network checkpoint is accepted (Breakout: the loader of rtreport's own network)
_SD_ACCEPTED = {
    "plain": lambda sd: sd,
    "model_state_dict": lambda sd: {"model_state_dict": sd, "optimizer_state_dict": {"lr": 1e-4}, "epoch": 3},
    "state_dict": lambda sd: {"state_dict": sd},
    "module-prefix": lambda sd: {f"module.{k}": v for k, v in sd.items()},
    "orig-mod-prefix": lambda sd: {f"_orig_mod.{k}": v for k, v in sd.items()},
    "nested-both-prefixes": lambda sd: {
        "checkpoint": {"state_dict": {f"module._orig_mod.{k}": v for k, v in sd.items()}}
    },
}
STATE_DICTS = [
    Case(f"state-dict-{name}-accepted", LIST, _state(make), 0, "", needs=()) for name, make in _SD_ACCEPTED.items()
] + [
    Case(
        "state-dict-foreign-keys",
        LIST,
        _state(lambda sd: {"encoder.weight": torch.zeros(2, 2), "head.bias": torch.zeros(2)}),
        2,
        r"not a state dict of rtreport's Q-network .*found 2 keys: encoder\.weight, head\.bias",
        needs=(),
    ),
    Case("state-dict-a-list", LIST, _state(lambda sd: list(sd.values())), 2, r"found a list, not a dict", needs=()),
    Case("state-dict-empty", LIST, _state(lambda sd: {}), 2, r"found an empty dict", needs=()),
    Case(
        "state-dict-wrong-frames",
        LIST,
        _state(lambda sd: {**sd, "network.0.weight": torch.zeros(32, 3, 8, 8)}),
        2,
        r"the network takes 3 stacked frames",
        needs=(),
    ),
    Case(
        "state-dict-truncated",
        LIST,
        _both(_state(lambda sd: sd), _truncate("sd.pt")),
        2,
        r"^Error: sd\.pt is damaged or truncated: a zip archive whose end is missing",
        needs=(),
    ),
    Case(
        "state-dict-whole-module",
        LIST,
        _state(lambda sd: QNetwork(4)),
        2,
        r"holds a pickled .*QNetwork.*which rtreport does not unpickle",
        needs=(),
    ),
]

SB3 = [
    Case(
        "sb3-truncated",
        with_model("ppo.zip"),
        _truncate("ppo.zip"),
        2,
        r"ppo\.zip is damaged: a truncated zip",
        needs=("ppo.zip",),
    ),
    Case(
        "sb3-policy-garbage",
        with_model("ppo.zip"),
        _sb3_entry("policy.pth", b"garbage" * 100),
        2,
        r"ppo\.zip is damaged: its policy\.pth is not a whole PyTorch archive",
        needs=("ppo.zip",),
    ),
    Case(
        "sb3-data-not-json",
        with_model("ppo.zip"),
        _sb3_entry("data", b"{not json"),
        2,
        r"its 'data' entry is not JSON",
        needs=("ppo.zip",),
    ),
    Case(
        "sb3-no-policy",
        with_model("ppo.zip"),
        _sb3_entry("policy.pth", None),
        2,
        r"not a complete Stable-Baselines3 save: the zip has no 'policy\.pth'",
        needs=("ppo.zip",),
    ),
    Case(
        "sb3-not-a-zip",
        with_model("ppo.zip"),
        _write("ppo.zip", b"not a zip at all" * 10),
        2,
        r"ppo\.zip: not a Stable-Baselines3 save: not a zip file",
        needs=(),
    ),
]


CFG = ["collect", *CP, "--model", MODEL, "--config", "run.toml", *TINY]
CONFIGS = [
    Case("config-missing", CFG, _none, 2, r"run configuration not found: run\.toml"),
    Case("config-a-folder", CFG, _folder("run.toml"), 2, r"--config run\.toml is a folder"),
    Case("config-not-toml", CFG, _toml("run.toml", "[env\nid = 3"), 2, r"run\.toml is not a TOML run configuration"),
    Case("config-unknown-section", CFG, _toml("run.toml", "[agent]\nx = 1\n"), 2, r"unknown section \[agent\]"),
    Case("config-unknown-key", CFG, _toml("run.toml", "[env]\nsteps = 9\n"), 2, r"unknown key\(s\) steps in \[env\]"),
    Case(
        "config-steps-zero",
        CFG,
        _toml("run.toml", "[env]\nmax_episode_steps = 0\n"),
        2,
        r"max_episode_steps must be a positive whole number, not 0",
    ),
    Case(
        "config-epsilon-2",
        CFG,
        _toml("run.toml", "[policy]\nepsilon = 2\n"),
        2,
        r"\[policy\] epsilon must be a number from 0 to 1, not 2",
    ),
    Case(
        "config-outputs-unknown",
        CFG,
        _toml("run.toml", '[policy]\noutputs = "votes"\n'),
        2,
        r"unknown model outputs 'votes'",
    ),
    Case(
        "config-wrappers-not-list",
        CFG,
        _toml("run.toml", "[env]\nwrappers = 3\n"),
        2,
        r"\[env\] wrappers must be a list of tables",
    ),
    Case(
        "config-unknown-wrapper",
        CFG,
        _toml("run.toml", '[env]\nwrappers = [{ name = "NoSuchWrapper" }]\n'),
        2,
        r"unknown wrapper 'NoSuchWrapper': give a class of gymnasium\.wrappers",
    ),
    Case(
        "config-kwargs-not-table", CFG, _toml("run.toml", "[env]\nkwargs = 3\n"), 2, r"\[env\] kwargs must be a table"
    ),
    Case(
        "config-id-differs",
        CFG,
        _toml("run.toml", '[env]\nid = "Acrobot-v1"\n'),
        2,
        r"--env CartPole-v1 and the run configuration's \[env\] id Acrobot-v1 differ",
    ),
    Case(
        "config-kwargs-unknown",
        CFG,
        _toml("run.toml", "[env.kwargs]\ngravity = 3\n"),
        2,
        r"CartPole-v1 does not take the given env_kwargs",
    ),
]

GB = ["build", RUN, "--out", SITE, "--gates", "g.toml"]
GATES = [
    Case("gates-missing", GB, _none, 2, r"gates file not found: g\.toml", needs=B),
    Case("gates-a-folder", GB, _folder("g.toml"), 2, r"gates file g\.toml is a folder", needs=B),
    Case("gates-not-toml", GB, _write("g.toml", "[faster\n"), 2, r"gates file g\.toml is not valid TOML", needs=B),
    Case("gates-not-text", GB, _write("g.toml", b"\xff\xfe\x00\x01"), 2, r"is not text \(UTF-8 TOML\)", needs=B),
    Case(
        "gates-missing-table",
        GB,
        _gates(lambda t: t.replace("[play]", "[plays]")),
        2,
        r"gates file g\.toml: .*\[play\]",
        needs=B,
    ),
    Case(
        "gates-missing-key",
        GB,
        _gates(lambda t: re.sub(r"(?m)^min_reduction = .*$", "", t)),
        2,
        r"gates file g\.toml: .*min_reduction",
        needs=B,
    ),
    Case(
        "gates-wrong-type",
        GB,
        _gates(lambda t: re.sub(r"(?m)^min_reduction = .*$", 'min_reduction = "ten percent"', t)),
        2,
        r"gates file g\.toml: .*min_reduction",
        needs=B,
    ),
    Case(
        "gates-fraction-98",
        GB,
        _gates(lambda t: re.sub(r"(?m)^min_same_action_fraction = .*$", "min_same_action_fraction = 98", t)),
        2,
        r"gates file g\.toml: .*min_same_action_fraction.*98",
        needs=B,
    ),
    Case(
        "gates-negative-minimum",
        GB,
        _gates(lambda t: re.sub(r"(?m)^min_measurements = .*$", "min_measurements = -1", t)),
        2,
        r"gates file g\.toml: .*min_measurements.*-1",
        needs=B,
    ),
    Case(
        "gates-date-not-a-date",
        GB,
        _gates(lambda t: t.replace("rule_written = 2026-12-03", 'rule_written = "soon"')),
        2,
        r"gates file g\.toml: .*rule_written",
        needs=B,
    ),
    Case(
        "gates-unknown-key",
        GB,
        _gates(lambda t: t.replace("[faster]", "[faster]\nmax_slowdown = 0.5")),
        2,
        r"gates file g\.toml: .*max_slowdown",
        needs=B,
    ),
    Case(
        "gates-unknown-statistic",
        GB,
        _gates(lambda t: t.replace('statistic = "p95"', 'statistic = "p99.9"')),
        2,
        r"gates file g\.toml: .*statistic",
        needs=B,
    ),
]

UPGRADE = r"newer than this rtreport reads \(\d+\); upgrade rtreport$"
NOT_DUCKDB = r"not a DuckDB database file \(or its header is damaged\)"
RUN_FILES = []
for _name, _damage, _pattern in [
    ("not-duckdb", _write(RUN, "time,score\n1,2\n"), NOT_DUCKDB),
    ("truncated", _truncate(RUN, 0.4), r"damaged or truncated: DuckDB cannot read it"),
    ("foreign-duckdb", _foreign_duckdb, r"not one written by rtreport collect"),
    ("newer-schema", NEWER_SCHEMA, UPGRADE),
    ("empty", _write(RUN, b""), NOT_DUCKDB),
]:
    RUN_FILES += [
        Case(f"check-{_name}", ["check", RUN], _damage, 2, _pattern),
        Case(f"build-{_name}", build(), _damage, 2, _pattern, needs=B),
        Case(f"resume-{_name}", resume(), _damage, 2, r"^Error: --resume run\.duckdb: .*" + f"({_pattern})"),
        Case(f"repeat-{_name}", repeat(), _damage, 2, r"^Error: --repeat run\.duckdb: .*" + f"({_pattern})"),
    ]
RUN_FILES += [
    Case("check-edited-row", ["check", RUN], EDITED_ROW, 1, r"^run\.duckdb: tiny \(complete\): damaged: .*episodes"),
    Case("build-edited-row", build(), EDITED_ROW, 2, r"run\.duckdb is refused: it no longer holds the rows", needs=B),
    Case("resume-edited-row", resume(), EDITED_ROW, 2, r"the rows of episodes fail their checksum"),
    Case("repeat-edited-row", repeat(), EDITED_ROW, 2, r"the rows of episodes fail their checksum"),
    Case(
        "build-edited-row-allow-invalid",  # published marked damaged, without verdicts, as documented
        build("--allow-invalid"),
        EDITED_ROW,
        0,
        "",
        needs=B,
        changes=("site/*",),
    ),
    Case(
        "resume-without-model",
        ["collect", "--resume", RUN, "--artifacts", "art"],
        _none,
        2,
        r"^Error: --resume run\.duckdb: the run measured a model of your own \(torchscript, sha256 \w+\) on "
        r"CartPole-v1; give it again with --model$",
    ),
    Case(
        "repeat-without-model",
        ["collect", "--repeat", RUN, "--artifacts", "art"],
        _none,
        2,
        r"^Error: --repeat run\.duckdb: the run measured a model of your own \(torchscript, sha256 \w+\) on ",
    ),
    Case(
        "resume-another-model",
        ["collect", "--resume", RUN, "--model", "other.pt", "--artifacts", "art"],
        _script(torch.nn.Linear(4, 2), "other.pt"),
        2,
        r"^Error: the run measured another model \(sha256 \w+\); give the same --model \(this one is \w+\)$",
    ),
]

OUTPUTS = [
    Case(
        "build-out-a-file",
        ["build", RUN, "--out", "notes.txt"],
        _write("notes.txt", "mine\n"),
        2,
        r"^Error: --out notes\.txt is a file, not a folder$",
    ),
    Case("build-out-dot", ["build", RUN, "--out", "."], _none, 2, r"--out \. is the folder you are in"),
    Case("build-out-unwritable", ["build", RUN, "--out", "/proc/rtreport-site"], _none, 2, r"cannot write --out /proc"),
    Case("collect-out-unwritable", with_model(MODEL, "--out", "/proc/x.duckdb"), _none, 2, r"cannot write /proc/x"),
    Case(
        "collect-out-a-folder",
        with_model(MODEL, "--out", "d"),
        _folder("d"),
        2,
        r"^Error: --out d is a folder; give a file name$",
    ),
    Case(
        "collect-default-out-data-a-file",
        ["collect", *CP, "--model", MODEL, "--quick", "--runtimes", "torch-cpu-fp32", "--artifacts", "art"],
        _write("data", "a file\n"),
        2,
        r"^Error: \./data is a file; collect writes its run into a folder \./data",
    ),
    Case(
        "collect-artifacts-a-file",
        ["collect", *CP, "--model", MODEL, *TINY[:-4], "--artifacts", "a.txt", "--out", "out.duckdb"],
        _write("a.txt", "a file\n"),
        2,
        r"--artifacts': Directory 'a\.txt' is a file",
    ),
    Case(
        "build-cache-a-file",  # the build goes on without its cache, and says so
        build(),
        _write("cache", "a file\n"),
        0,
        r"^note: the build cache's folder \(RTREPORT_CACHE_DIR\) .*cache is a file; built without the cache",
        needs=B,
        env={"RTREPORT_CACHE_DIR": "{w}/cache"},
        changes=("site/*",),
    ),
    Case(
        "build-folder-without-runs",
        ["build", "runs", "--out", SITE],
        _folder("runs"),
        2,
        r"^Error: runs holds no \.duckdb files: run rtreport collect first, or give the files",
        needs=B,
    ),
    Case(
        "build-no-input-no-data",
        ["build", "--out", SITE],
        _none,
        2,
        r"^Error: no \./data folder here: run rtreport build where",
        needs=(SITE,),
    ),
]

ENVS = [
    Case(
        "env-continuous-wrong-outputs",
        ["collect", "--env", "Pendulum-v1", "--model", "p3.pt", *TINY],
        _script(torch.nn.Linear(3, 2), "p3.pt"),
        2,
        r"^Error: p3\.pt: the model has 2 outputs, but Pendulum-v1 has 1 action dimension "
        r"\(expected outputs \(N, 1\)\)$",
    ),
    Case(
        "env-atari-with-an-mlp",
        ["collect", "--env", "ALE/Pong-v5", "--model", MODEL, *TINY],
        _none,
        2,
        r"mlp\.pt: the model does not take .*Pong.*observations",
    ),
    Case(
        "env-id-with-spaces",
        ["collect", "--env", "Cart Pole", "--model", MODEL, *TINY],
        _none,
        2,
        r"^Error: unknown or unusable environment 'Cart Pole': Malformed environment ID",
    ),
    Case(
        "env-unknown",
        ["collect", "--env", "NoSuchTask-v0", "--model", MODEL, *TINY],
        _none,
        2,
        r"unknown or unusable environment 'NoSuchTask-v0'",
    ),
    Case(
        "env-missing-module",
        ["collect", "--env", "nosuchpkg_rt:Task-v0", "--model", MODEL, *TINY],
        _none,
        2,
        r"^Error: nosuchpkg_rt:Task-v0 needs a package that is not installed: No module named 'nosuchpkg_rt'",
    ),
    Case(
        "env-atari-wrong-form",
        ["collect", "--env", "ALE/Breakout", "--model", MODEL, *TINY],
        _none,
        2,
        r"ALE/Breakout: give ALE/<Game>-v5 or <Game>NoFrameskip-v4",
    ),
    Case(
        "env-atari-no-rom",
        ["collect", "--env", "ALE/NoSuchGame-v5", "--model", MODEL, *TINY],
        _none,
        2,
        r"no ROM named",
    ),
    Case("env-empty", ["collect", "--env", "", "--model", MODEL, *TINY], _none, 2, r"--env is empty"),
    Case(
        "env-dict-observation",
        ["collect", "--env", "FrozenLake-v1", "--model", MODEL, *TINY],
        _none,
        2,
        r"FrozenLake-v1: its observation space is Discrete",
    ),
]

MORE = [
    Case("check-in-a-read-only-folder", ["check", "ro/run.duckdb"], _read_only(RUN), 0, ""),
    Case(
        "build-from-a-read-only-folder",
        ["build", "ro/run.duckdb", "--out", SITE],
        _read_only(RUN),
        0,
        "",
        needs=B,
        changes=("site/*",),
    ),
    Case(
        "build-out-in-a-read-only-folder",
        ["build", RUN, "--out", "ro/site"],
        _read_only(),
        2,
        r"^Error: cannot write --out ro/site: folder ro takes no new folder \(Read-only file system\)$",
    ),
    Case(
        "collect-out-in-a-read-only-folder",
        with_model(MODEL, "--out", "ro/x.duckdb"),
        _read_only(),
        2,
        r"^Error: cannot write ro/x\.duckdb: folder ro is not writable",
    ),
    Case(
        "resume-in-a-read-only-folder",
        resume()[:2] + ["ro/run.duckdb"] + resume()[3:],
        _read_only(RUN),
        2,
        r"^Error: cannot write ro/run\.duckdb: folder ro is not writable$",
    ),
    Case(
        "repeat-in-a-read-only-folder",
        repeat()[:2] + ["ro/run.duckdb"] + repeat()[3:],
        _read_only(RUN),
        2,
        r"^Error: cannot write ro/run\.duckdb: folder ro is not writable$",
    ),
    # a log beside the file that is not its own is not replayed, and left as it is
    Case("check-stray-wal", ["check", RUN], _write(RUN + ".wal", b"garbage" * 300), 0, ""),
    Case("build-stray-wal", build(), _write(RUN + ".wal", b"garbage" * 300), 0, "", needs=B, changes=("site/*",)),
    Case(
        "build-base-url",
        build("--base-url", "notaurl"),
        _none,
        2,
        r"^Error: --base-url must be an http\(s\) URL such as https://example\.org/rtreport/, not 'notaurl'$",
        needs=B,
    ),
    Case(
        "build-same-run-twice",
        ["build", RUN, RUN, "--out", SITE],
        _none,
        2,
        r"^Error: the same run \(\w+\) is given twice: run\.duckdb and run\.duckdb; give it once$",
        needs=B,
    ),
    Case(
        "build-out-foreign-folder",
        ["build", RUN, "--out", "own"],
        _both(_folder("own"), _write("own/a.txt", "x")),
        2,
        r"^Error: --out own is not empty and was not built by rtreport; choose an empty folder$",
    ),
    Case(
        "normalize-garbage",
        with_model(MODEL, "--normalize", "v.pkl"),
        _write("v.pkl", b"garbage"),
        2,
        r"^Error: v\.pkl is not a saved VecNormalize of Stable-Baselines3 \(UnpicklingError: ",
    ),
    Case(
        "normalize-missing",
        with_model(MODEL, "--normalize", "v.pkl"),
        _none,
        2,
        r"^Error: observation normalisation not found: v\.pkl$",
    ),
    Case(
        "state-dict-named-zip-for-cartpole",
        with_model("s.zip"),
        _state(lambda sd: sd, "s.zip"),
        2,
        r"s\.zip: for CartPole-v1, give a TorchScript module",
    ),
    Case(
        "config-normalize-not-a-file",
        CFG,
        _toml("run.toml", '[env]\nnormalize_observations = "yes"\n'),
        2,
        r"^Error: run\.toml: observation normalisation not found: yes$",
    ),
    Case(
        "gates-number-as-text",
        GB,
        _gates(lambda t: t.replace("min_reduction = 0.10", 'min_reduction = "0.10"')),
        2,
        r"\[faster\] min_reduction must be a number, not '0\.10'",
        needs=B,
    ),
    Case(
        "gates-reduction-of-1",
        GB,
        _gates(lambda t: t.replace("min_reduction = 0.10", "min_reduction = 1.0")),
        2,
        r"\[faster\] min_reduction must be a number from 0 to 1 \(not included\), not 1\.0",
        needs=B,
    ),
    Case(
        "model-folder-of-nothing",
        with_model("z"),
        _both(_folder("z"), _write("z/config.yml", "")),
        2,
        r"^Error: z: expected one model \.zip in this Hugging Face folder, found no \.zip$",
    ),
]
CASES = OPTIONS + MODELS + STATE_DICTS + SB3 + CONFIGS + GATES + RUN_FILES + OUTPUTS + ENVS + MORE
# a few again as processes of their own: ONNX Runtime's and PyTorch's C++ code writes to stderr behind Python's back
AS_PROCESSES = ("onnx-fails-to-run", "torchscript-wrong-input", "sb3-policy-garbage", "build-newer-schema")
CASES += [replace(c, id=f"{c.id}-as-a-process", process=True) for c in CASES if c.id in AS_PROCESSES]


def _digests(folder: Path) -> dict:
    """Every file's sha256 and every folder, links as what they point to, under ``folder``."""
    return {
        str(p.relative_to(folder)): (
            f"-> {os.readlink(p)}"
            if p.is_symlink()
            else "folder"
            if p.is_dir()
            else hashlib.sha256(p.read_bytes()).hexdigest()
        )
        for p in sorted(folder.rglob("*"))
    }


def _in_process(args):
    return CliRunner().invoke(main, args, prog_name="rtreport")


@dataclass
class _Ran:
    exit_code: int
    stdout: str
    stderr: str
    exception: None = None


def _as_process(args):
    """The command as the ``rtreport`` script runs it, in a process of its own."""
    code = "import sys; from rtreport_cli.main import main; main(sys.argv[1:], prog_name='rtreport')"
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120)
    return _Ran(done.returncode, done.stdout, done.stderr)


def _params():
    return [
        pytest.param(case, id=case.id, marks=[pytest.mark.xfail(strict=True, reason=case.xfail)] if case.xfail else [])
        for case in CASES
    ]


def test_the_corpus_is_large_and_its_names_unique():
    assert len(CASES) >= 60 and len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", _params())
def test_fault(case: Case, made: Path, tmp_path: Path, monkeypatch):
    w = tmp_path / "w"
    w.mkdir()
    for name in case.needs:
        (shutil.copytree if (made / name).is_dir() else shutil.copyfile)(made / name, w / name)
    try:
        _run_case(case, made, w, monkeypatch)
    finally:
        while MOUNTED:
            subprocess.run(["umount", "-l", str(MOUNTED.pop())], capture_output=True)


def _run_case(case: Case, made: Path, w: Path, monkeypatch):
    case.damage(w)
    monkeypatch.chdir(w)
    for key, value in case.env.items():
        monkeypatch.setenv(key, value.format(w=w))
    before = _digests(w)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = _in_process(case.args) if not case.process else _as_process(case.args)
    said = result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"{type(result.exception).__name__}: {result.exception}\n{said}"
    )
    assert result.exit_code == case.code, said + result.stdout
    assert not RAW.search(said + result.stdout), said
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)], [str(w.message) for w in caught]
    lines = [line for line in said.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("Error:")]
    assert all(line.startswith(("Error:", "note:", "built " if case.code == 0 else "note:")) for line in lines), said
    if case.code == 0:
        assert not errors, said
        assert not case.line or any(re.search(case.line, line) for line in lines), said
    elif case.code == 1 and case.args[0] == "check":  # damaged: check's one line on stdout says so
        assert not errors and len(result.stdout.strip().splitlines()) == 1, said + result.stdout
        assert re.search(case.line, result.stdout.strip()), result.stdout
    else:
        assert len(errors) == 1, said
        assert re.search(case.line, errors[0]), errors[0]
    after = _digests(w)
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    unexpected = [k for k in changed if not any(fnmatch.fnmatch(k, g) for g in case.changes)]
    assert not unexpected, f"files changed: {unexpected}"
