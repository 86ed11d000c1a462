"""Runtime artifacts made once per run: the ONNX export and its FP16 variant (and, through ``make``, any other
a runner needs, such as the INT8 runtimes' calibration states and quantized models).

The FP16 ONNX is made from the FP32 export by a small, explicit graph rewrite rather than a
generic converter: the model's uint8 input and its in-graph Cast to float (the /255 scaling)
must survive, and onnxconverter-common's converter retypes that Cast's output without changing
its ``to`` attribute (the result does not load). Every float initializer and Constant becomes
float16, every Cast to float becomes a Cast to float16, a float32 input (another task's observation) is cast to
float16 first, and one final Cast returns float32 outputs, so all runtimes take and hand back the same dtypes.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def run_folder(base, label: str, run_id: str) -> Path:
    """The artifacts folder private to one run: ``<base>/<run id>`` (``base`` defaults to
    ``artifacts/<slug(label)>``). Two runs at once, one label or one ``--artifacts`` folder, never read each
    other's files; the run's repeats and its ``--resume`` find them again through the stored run id."""
    from rtreport.labels import slug

    return (Path(base) if base else Path("artifacts") / slug(label)) / run_id


def convert_onnx_to_fp16(model: onnx.ModelProto) -> onnx.ModelProto:
    model = onnx.ModelProto.FromString(model.SerializeToString())  # a copy
    graph = model.graph
    for init in graph.initializer:
        if init.data_type == TensorProto.FLOAT:
            init.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(init).astype(np.float16), init.name))
    for node in graph.node:
        for attr in node.attribute:
            if node.op_type == "Cast" and attr.name == "to" and attr.i == TensorProto.FLOAT:
                attr.i = TensorProto.FLOAT16
            if node.op_type == "Constant" and attr.name == "value" and attr.t.data_type == TensorProto.FLOAT:
                attr.t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(attr.t).astype(np.float16), attr.t.name))
    for graph_input in graph.input:  # a float32 observation (any task but the Atari ones) is cast once, first
        if graph_input.type.tensor_type.elem_type != TensorProto.FLOAT:
            continue
        half_name = graph_input.name + "_fp16"
        for node in graph.node:
            node.input[:] = [half_name if i == graph_input.name else i for i in node.input]
        graph.node.insert(
            0,
            helper.make_node(
                "Cast", [graph_input.name], [half_name], to=TensorProto.FLOAT16, name=graph_input.name + "_to_fp16"
            ),
        )
    for output in graph.output:
        if output.type.tensor_type.elem_type != TensorProto.FLOAT:
            continue
        half_name = output.name + "_fp16"
        for node in graph.node:
            node.output[:] = [half_name if o == output.name else o for o in node.output]
        graph.node.append(
            helper.make_node("Cast", [half_name], [output.name], to=TensorProto.FLOAT, name=output.name + "_to_fp32")
        )
    del graph.value_info[:]
    onnx.checker.check_model(model)
    return model


class Artifacts:
    """The artifacts folder of one run; each artifact is made at most once and its cost recorded."""

    def __init__(self, folder: Path, onnx_source, made: dict | None = None):
        """``onnx_source``: a path to an ONNX file, or a callable that writes one to a given path.
        ``made``: what another process's ``Artifacts`` already made here (``made()``), used as is."""
        self.folder = Path(folder)
        self._onnx_source = onnx_source
        self._made: dict[str, tuple[Path, float]] = dict(made or {})

    def made(self) -> dict[str, tuple[Path, float]]:
        return dict(self._made)

    def make(self, name: str, build) -> tuple[Path, float]:
        """The artifact ``name`` in the folder, written by ``build(path)`` once per run (and per process, unless
        ``made`` carried it over); with the seconds its making took."""
        return self._make(name, build)

    def _make(self, name: str, build) -> tuple[Path, float]:
        """While ``build`` writes, a marker ``.NAME.PID.making`` says so: stopped or failed, the artifact's files
        (``unfinished``) are removed, and those of a process killed outright go when another makes an artifact
        here."""
        if name not in self._made:
            self.folder.mkdir(parents=True, exist_ok=True)
            remove_unfinished(self.folder)
            path = self.folder / name
            marker = self.folder / f".{name}.{os.getpid()}.making"
            marker.touch()
            start = time.perf_counter()
            try:
                build(path)
            except BaseException:
                for p in unfinished(self.folder, name):
                    p.unlink(missing_ok=True)
                raise
            finally:
                marker.unlink(missing_ok=True)
            self._made[name] = (path, time.perf_counter() - start)
        return self._made[name]

    def onnx_fp32(self) -> tuple[Path, float]:
        """The FP32 ONNX model and the seconds its export took (0 for a user's ONNX file)."""
        if not callable(self._onnx_source):
            return Path(self._onnx_source), 0.0
        return self._make("model.onnx", self._onnx_source)

    def onnx_fp16(self) -> tuple[Path, float]:
        src, _ = self.onnx_fp32()
        return self._make(
            "model_fp16.onnx", lambda path: onnx.save(convert_onnx_to_fp16(onnx.load(str(src))), str(path))
        )


def unfinished(folder: Path, name: str) -> list[Path]:
    """The files an artifact being made may have written: ``NAME`` itself and files of its stem with another
    suffix (OpenVINO's ``.bin`` beside its ``.xml``, a calibration set's ``.json`` and ``.tmp``, ONNX external
    data ``NAME.data``)."""
    stem = name.rsplit(".", 1)[0]
    return [p for p in folder.iterdir() if p.is_file() and (p.name == name or p.name.startswith(stem + "."))]


def remove_unfinished(folder: Path) -> None:
    """Remove what processes killed while making an artifact here left (their ``.NAME.PID.making`` marker and the
    artifact's files); a live process's are left alone."""
    for marker in folder.glob(".*.making"):
        name, _, pid = marker.name[1 : -len(".making")].rpartition(".")
        if not pid.isdigit() or not name or (int(pid) != os.getpid() and _alive(int(pid))):
            continue
        for p in unfinished(folder, name):
            p.unlink(missing_ok=True)
        marker.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
