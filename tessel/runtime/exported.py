"""An exported model loaded back: `load_model(directory)` runs what `CompiledModel.export` wrote
(model.so and its weights) through the model's C API, with nothing of the compiler.

The library describes itself (`tessel_model_num_inputs`, `tessel_model_input_info`, ...: the C
API of tessel.graph.c_api), so the loader needs no metadata besides the files: it reads the
inputs' and outputs' names, shapes and dtypes from model.so, creates the model's handle from
params.safetensors (else params.bin; none when the weights are linked into model.so), and calls
`tessel_model_run` with one pointer per input and output.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tessel.runtime.errors import BuildError, RuntimeCallError
from tessel.support.dtype import DataType
from tessel.support.errors import UserError

# The files of an export (tessel.graph.export writes them under these names).
LIBRARY, HEADER, SAFETENSORS, RAW_PARAMS = "model.so", "model.h", "params.safetensors", "params.bin"


class _TensorInfo(ctypes.Structure):
    """The C API's `tessel_model_tensor_info` (tessel.graph.c_api.TENSOR_INFO_TYPE)."""

    _fields_ = [
        ("name", ctypes.c_void_p),
        ("name_length", ctypes.c_size_t),
        ("dtype", ctypes.c_char_p),
        ("ndim", ctypes.c_int32),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("nbytes", ctypes.c_size_t),
    ]


@dataclass(frozen=True)
class TensorSpec:
    """One input or output of an exported model: its name (ONNX's), shape and dtype."""

    name: str
    shape: tuple[int, ...]
    dtype: str


class ExportedModel:
    """A model exported by `CompiledModel.export`, loaded: call it with one array per input
    (NumPy arrays or `__dlpack__` tensors, positional or by name); returns a NumPy array, or a
    tuple of them when the model has several outputs. `inputs` and `outputs` describe them."""

    def __init__(self, directory: str | Path, params: str | Path | None = None) -> None:
        self.directory = Path(directory)
        library_path = self.directory / LIBRARY
        try:
            self._library = lib = ctypes.CDLL(str(library_path.resolve()))
        except OSError as err:
            raise BuildError(
                f"cannot load {library_path}: {err}",
                rule="runtime.load-model",
                hint="give the directory that CompiledModel.export wrote",
            ) from err
        try:
            _declare(lib)
        except AttributeError as err:
            raise BuildError(
                f"{library_path} has no model C API ({err})", rule="runtime.load-model"
            ) from err
        self.inputs = _specs(lib.tessel_model_input_info, lib.tessel_model_num_inputs())
        self.outputs = _specs(lib.tessel_model_output_info, lib.tessel_model_num_outputs())
        self._numpy_outputs = tuple((s.shape, DataType.of(s.dtype).numpy) for s in self.outputs)
        self.params_path = self._params_path(params)
        path = None if self.params_path is None else str(self.params_path).encode()
        self._handle = lib.tessel_model_create(path)
        if not self._handle:
            raise UserError(
                f"cannot load the model in {self.directory}: {self._last_error()}",
                rule="runtime.load-model",
            )

    def _params_path(self, params: str | Path | None) -> Path | None:
        """The weights file: `params`, else the export's params.safetensors or params.bin; None
        when there is neither (the weights are linked into model.so, or there are none)."""
        if params is not None:
            return Path(params)
        for name in (SAFETENSORS, RAW_PARAMS):
            if (self.directory / name).is_file():
                return self.directory / name
        return None

    def _last_error(self) -> str:
        return (self._library.tessel_model_last_error() or b"").decode("utf-8", "replace")

    def __call__(self, *args: Any, **named: Any) -> Any:
        inputs = [_as_input(spec, value) for spec, value in _match(self.inputs, args, named)]
        outputs = [np.empty(shape, dtype) for shape, dtype in self._numpy_outputs]
        pointers = (ctypes.c_void_p * max(len(inputs), 1))(*(a.ctypes.data for a in inputs))
        results = (ctypes.c_void_p * max(len(outputs), 1))(*(a.ctypes.data for a in outputs))
        if self._library.tessel_model_run(self._handle, pointers, results) != 0:
            raise RuntimeCallError("tessel_model_run", self._last_error())
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def close(self) -> None:
        """Free the model's weights (the handle); the model cannot run afterwards."""
        handle, self._handle = getattr(self, "_handle", None), None
        if handle:
            self._library.tessel_model_destroy(handle)

    def __del__(self) -> None:
        self.close()

    def __repr__(self) -> str:
        names = ", ".join(s.name for s in self.inputs)
        return f"<tessel exported model {self.directory}({names})>"


def load_model(directory: str | Path, params: str | Path | None = None) -> ExportedModel:
    """Load the model `CompiledModel.export(directory)` wrote, to run it with NumPy arrays;
    `params` names the weights file when it is not the export's own (safetensors, or raw
    `.bin`). Needs only tessel.runtime, tessel.support and NumPy."""
    return ExportedModel(directory, params)


def _declare(lib: ctypes.CDLL) -> None:
    """The C API's signatures (an AttributeError names a missing function)."""
    info = ctypes.POINTER(_TensorInfo)
    lib.tessel_model_num_inputs.restype = ctypes.c_int
    lib.tessel_model_num_outputs.restype = ctypes.c_int
    for getter in (lib.tessel_model_input_info, lib.tessel_model_output_info):
        getter.restype, getter.argtypes = info, [ctypes.c_int]
    lib.tessel_model_create.restype = ctypes.c_void_p
    lib.tessel_model_create.argtypes = [ctypes.c_char_p]
    lib.tessel_model_destroy.restype = None
    lib.tessel_model_destroy.argtypes = [ctypes.c_void_p]
    lib.tessel_model_run.restype = ctypes.c_int
    lib.tessel_model_run.argtypes = [ctypes.c_void_p] + [ctypes.POINTER(ctypes.c_void_p)] * 2
    lib.tessel_model_last_error.restype = ctypes.c_char_p


def _specs(getter: Any, count: int) -> tuple[TensorSpec, ...]:
    specs = []
    for index in range(count):
        info = getter(index).contents
        name = ctypes.string_at(info.name, info.name_length).decode("utf-8", "surrogatepass")
        shape = tuple(int(info.shape[k]) for k in range(info.ndim))
        specs.append(TensorSpec(name, shape, info.dtype.decode()))
    return tuple(specs)


def _match(
    specs: tuple[TensorSpec, ...], args: tuple[Any, ...], named: dict[str, Any]
) -> list[tuple[TensorSpec, Any]]:
    """Each input's spec with its value: positional first, then by name."""
    unknown = sorted(set(named) - {s.name for s in specs})
    if unknown:
        raise UserError(
            f"no input named {unknown}; the inputs are {[s.name for s in specs]}",
            rule="runtime.input-name",
        )
    if len(args) > len(specs):
        raise UserError(
            f"{len(args)} arguments, but the model has {len(specs)} inputs",
            rule="runtime.input-count",
        )
    pairs = []
    for k, spec in enumerate(specs):
        if k < len(args) and spec.name in named:
            raise UserError(f"input `{spec.name}` given twice", rule="runtime.input-name")
        if k >= len(args) and spec.name not in named:
            raise UserError(f"no value for input `{spec.name}`", rule="runtime.input-missing")
        pairs.append((spec, args[k] if k < len(args) else named[spec.name]))
    return pairs


def _as_input(spec: TensorSpec, value: Any) -> np.ndarray:
    """`value` as the C-contiguous array the model reads, checked against `spec`."""
    if hasattr(value, "__dlpack__") and not isinstance(value, np.ndarray):
        value = np.from_dlpack(value)
    array = np.asarray(value)
    want = np.dtype(DataType.of(spec.dtype).numpy)
    if array.shape != spec.shape:
        raise UserError(
            f"input `{spec.name}`: expected shape {spec.shape}, got {array.shape}",
            rule="runtime.input-shape",
        )
    if array.dtype != want:
        raise UserError(
            f"input `{spec.name}`: expected dtype {want}, got {array.dtype}",
            rule="runtime.input-dtype",
            hint=f"convert it first, e.g. x.astype('{want}')",
        )
    # A read-only input is copied, as CompiledModel does: main's signature says it may write it.
    if not array.flags.c_contiguous or not array.flags.writeable:
        array = np.array(array, order="C", copy=True)
    return array


__all__ = ["ExportedModel", "TensorSpec", "load_model"]
