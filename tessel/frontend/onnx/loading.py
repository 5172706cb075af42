"""Reading an ONNX model and checking it is one: a bad file (empty, not ONNX, no graph, no
outputs, external data that is missing) is one `OnnxImportError` naming the file and the problem,
never an empty model or a protobuf traceback."""

from __future__ import annotations

from pathlib import Path

import onnx
from google.protobuf.message import DecodeError
from onnx.external_data_helper import load_external_data_for_model, uses_external_data

from tessel.frontend.onnx.errors import OnnxImportError

_REEXPORT = (
    "export the model again (torch.onnx.export, tf2onnx, ...) and check it with "
    "onnx.checker.check_model"
)


def load_model(model: onnx.ModelProto | str | Path) -> onnx.ModelProto:
    """The model (read from a path with its external data), checked to be a usable one."""
    if isinstance(model, onnx.ModelProto):
        _check_no_unloaded_external_data(model)
        _check_structure(model, "the ModelProto", "is empty")
        return model
    path = Path(model)
    proto = _read(path)
    _check_structure(proto, str(path), "is not an ONNX model")
    _load_external_data(proto, path)
    return proto


def _read(path: Path) -> onnx.ModelProto:
    """The ModelProto in `path`, without its external data (checked and loaded after)."""
    if not path.exists():
        raise OnnxImportError(f"{path}: no such file", rule="onnx.no-file")
    if path.is_dir():
        raise OnnxImportError(f"{path} is a directory, not an .onnx file", rule="onnx.no-file")
    if path.stat().st_size == 0:
        raise OnnxImportError(
            f"{path} is empty (0 bytes), not an ONNX model",
            rule="onnx.empty-file",
            hint=f"the program that wrote it may have failed; {_REEXPORT}",
        )
    try:
        return onnx.load(str(path), load_external_data=False)
    except DecodeError as err:
        raise OnnxImportError(
            f"{path} is not an ONNX model: its bytes are not an ONNX ModelProto ({err})",
            rule="onnx.not-onnx",
            hint="Tessel reads binary ONNX files (.onnx), as torch.onnx.export writes them",
        ) from err


def _check_structure(model: onnx.ModelProto, source: str, no_model: str) -> None:
    """A graph with outputs; `no_model` says what `source` is when it has nothing at all."""
    if not model.HasField("graph"):
        if model.ir_version == 0:  # bytes that happen to parse as a protobuf message
            raise OnnxImportError(
                f"{source} {no_model}: it has no IR version and no graph",
                rule="onnx.not-onnx",
                hint=_REEXPORT,
            )
        raise OnnxImportError(
            f"{source} has no graph: there is nothing to compile",
            rule="onnx.no-graph",
            hint=_REEXPORT,
        )
    if not model.graph.output:
        raise OnnxImportError(
            f"{source}: its graph `{model.graph.name}` declares no outputs, so it computes nothing",
            rule="onnx.no-outputs",
            hint="list the tensors the model returns in graph.output, then " + _REEXPORT,
        )


def _external_initializers(model: onnx.ModelProto) -> list[tuple[str, str]]:
    """(initializer name, data file location) for each initializer kept in another file."""
    found = []
    for tensor in model.graph.initializer:
        if uses_external_data(tensor):
            location = {e.key: e.value for e in tensor.external_data}.get("location", "")
            found.append((tensor.name, location))
    return found


def _load_external_data(model: onnx.ModelProto, path: Path) -> None:
    """Read the initializers kept beside the model, after checking each file is there."""
    external = _external_initializers(model)
    if not external:
        return
    base = path.parent
    for name, location in external:
        if not (base / location).is_file():
            raise OnnxImportError(
                f"{path}: initializer `{name}` keeps its data in the external file "
                f"`{location}`, which is missing (looked for {(base / location).absolute()})",
                rule="onnx.external-data",
                hint="copy the data file next to the model, as the export wrote it",
            )
    try:
        load_external_data_for_model(model, str(base))
    except (OSError, ValueError) as err:
        raise OnnxImportError(
            f"{path}: cannot read the external data of its initializers: {err}",
            rule="onnx.external-data",
        ) from err


def _check_no_unloaded_external_data(model: onnx.ModelProto) -> None:
    external = _external_initializers(model)
    if external:
        name, location = external[0]
        raise OnnxImportError(
            f"the ModelProto's initializer `{name}` keeps its data in the external file "
            f"`{location}`, which was not loaded",
            rule="onnx.external-data",
            hint="pass the model's path to from_onnx, or load it with onnx.load(path), which "
            "reads its external data",
        )
