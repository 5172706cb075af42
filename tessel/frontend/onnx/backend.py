"""Tessel as an ONNX backend (`onnx.backend.base.Backend`): what ONNX's conformance suite
(`onnx.backend.test.BackendTest`) and onnx-based tools drive.

`prepare` imports the model and compiles it to C once; the rep's `run` calls the library. A model
whose import needs the value of a graph input (a Reshape's shape, a reduction's axes, Pad's pads,
fed as inputs, as the conformance tests do) cannot compile before those values are known, since
Tessel's graphs are static: its rep compiles at the first `run`, with those inputs bound to the
values given, and keeps one library per distinct set of values (the few most recent).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx
from onnx.backend.base import Backend, BackendRep, namedtupledict

from tessel.frontend.onnx.converters.sequence import sequence_elem_type
from tessel.frontend.onnx.errors import OnnxImportError, ValueNeededError
from tessel.frontend.onnx.importer import from_onnx
from tessel.graph.executor import CompiledModel
from tessel.graph.executor import compile as compile_graph

DEVICES = ("CPU",)
# Libraries a rep keeps for models compiled per value of their value inputs.
SPECIALIZATIONS_KEPT = 8

_Key = tuple[tuple[str, str, tuple[int, ...], bytes], ...]


class TesselBackendRep(BackendRep):
    """A prepared model: `run(inputs)` returns its outputs, in the graph's order, as a named
    tuple of NumPy arrays."""

    def __init__(self, model: onnx.ModelProto, target: str = "c") -> None:
        self.model, self.target = model, target
        initialized = {t.name for t in model.graph.initializer}
        self.input_names = tuple(i.name for i in model.graph.input if i.name not in initialized)
        self.output_names = tuple(o.name for o in model.graph.output)
        # Graph inputs whose values the import needs: bound at `run`, one library per value.
        self.value_inputs: tuple[str, ...] = ()
        # Sequence inputs: a library per list of their tensors' shapes (graphs are static).
        self.sequence_inputs = tuple(
            i.name for i in model.graph.input if sequence_elem_type(i.type) is not None
        )
        self._libraries: OrderedDict[_Key, CompiledModel] = OrderedDict()
        if self.sequence_inputs:
            return
        try:
            self._libraries[()] = self._compile({})
        except ValueNeededError as err:
            self._need(err)

    def run(self, inputs: Any, **kwargs: Any) -> tuple[Any, ...]:
        """The model's outputs for `inputs` (a sequence in the graph's input order, a mapping by
        name, or one array for a one-input model)."""
        values = self._by_name(inputs)
        library = self._library(values)
        names = [n for n in self.input_names if n not in self.value_inputs]
        args = [a for n in names for a in (values[n] if n in self.sequence_inputs else [values[n]])]
        result = library(*args)
        outputs = result if isinstance(result, tuple) else (result,)
        # A sequence output is a list of arrays, as onnxruntime gives it.
        outputs = [list(o) if isinstance(o, tuple) else o for o in outputs]
        return namedtupledict("Outputs", self.output_names)(*outputs)

    def _by_name(self, inputs: Any) -> dict[str, np.ndarray]:
        if isinstance(inputs, Mapping):
            given = dict(inputs)
        else:
            if isinstance(inputs, np.ndarray):
                inputs = [inputs]
            if len(inputs) != len(self.input_names):
                raise ValueError(
                    f"the model takes {len(self.input_names)} inputs {list(self.input_names)}, "
                    f"but {len(inputs)} were given"
                )
            given = dict(zip(self.input_names, inputs, strict=True))
        missing = [n for n in self.input_names if n not in given]
        if missing:
            raise ValueError(f"no value given for inputs {missing}")
        return {
            n: [np.asarray(a) for a in given[n]]
            if n in self.sequence_inputs
            else np.asarray(given[n])
            for n in self.input_names
        }

    def _library(self, values: dict[str, np.ndarray]) -> CompiledModel:
        while True:
            key = tuple(
                (n, str(values[n].dtype), values[n].shape, values[n].tobytes())
                for n in self.value_inputs
            ) + self._shapes_key(values)
            if key in self._libraries:
                self._libraries.move_to_end(key)
                return self._libraries[key]
            try:
                shapes = self._static_shapes(values)
                library = self._compile({n: values[n] for n in self.value_inputs}, shapes)
            except ValueNeededError as err:
                self._need(err)  # another input's value is needed: bind it too
                continue
            self._libraries[key] = library
            while len(self._libraries) > SPECIALIZATIONS_KEPT:
                self._libraries.popitem(last=False)
            return library

    def _shapes_key(self, values: dict[str, Any]) -> _Key:
        """With sequence inputs, every input's shapes (a library per shapes), else nothing."""
        shapes = self._static_shapes(values) or {}
        return tuple(
            (n, "", tuple(map(tuple, s)) if n in self.sequence_inputs else tuple(s), b"")
            for n, s in shapes.items()
        )

    def _shape_of(self, value: Any) -> Any:
        return tuple(a.shape for a in value) if isinstance(value, list) else value.shape

    def _static_shapes(self, values: dict[str, Any]) -> dict[str, Any] | None:
        """With sequence inputs, every input's shape as given (the model compiles per shapes)."""
        if not self.sequence_inputs:
            return None
        return {
            n: (list(self._shape_of(values[n])) if n in self.sequence_inputs else values[n].shape)
            for n in self.input_names
            if n not in self.value_inputs
        }

    def _need(self, err: ValueNeededError) -> None:
        new = [n for n in err.inputs if n in self.input_names and n not in self.value_inputs]
        if not new:
            raise err
        self.value_inputs += tuple(new)

    def _compile(self, bound: dict[str, np.ndarray], shapes: dict | None = None) -> CompiledModel:
        model = self.model
        if bound:
            model = onnx.ModelProto()
            model.CopyFrom(self.model)
            # An initializer named like a graph input gives that input its value (the importer
            # reads it as a constant; onnx's IR version 3 form).
            for name, array in bound.items():
                model.graph.initializer.append(onnx.numpy_helper.from_array(array, name))
        mod, params = from_onnx(model, shape=shapes)
        compiled = compile_graph(mod, params, target=self.target)
        compiled.seed_random(0)  # a prepared model's draws repeat from one prepare to the next
        return compiled


class TesselBackend(Backend):
    """The `onnx.backend` interface of Tessel's compiler (on this machine's CPU)."""

    @classmethod
    def is_compatible(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> bool:
        return cls.supports_device(device)

    @classmethod
    def prepare(
        cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any
    ) -> TesselBackendRep:
        """Check, import and compile `model` (at the first `run` when its import needs input
        values)."""
        if not cls.supports_device(device):
            raise OnnxImportError(
                f"device {device!r} is not supported; Tessel's ONNX backend runs on {DEVICES}",
                rule="onnx.backend.device",
            )
        super().prepare(model, device, **kwargs)
        return TesselBackendRep(model)

    @classmethod
    def run_model(
        cls, model: onnx.ModelProto, inputs: Any, device: str = "CPU", **kwargs: Any
    ) -> tuple[Any, ...]:
        """Prepare `model` and run it once on `inputs`."""
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(
        cls,
        node: onnx.NodeProto,
        inputs: Any,
        device: str = "CPU",
        outputs_info: Sequence[tuple[np.dtype, tuple[int, ...]]] | None = None,
        **kwargs: Any,
    ) -> tuple[Any, ...]:
        """Run one node on `inputs` (a model of that node alone, typed by the inputs)."""
        super().run_node(node, inputs, device=device, outputs_info=outputs_info, **kwargs)
        arrays = [np.asarray(a) for a in inputs]
        names = [n for n in node.input if n]
        graph_inputs = [
            onnx.helper.make_tensor_value_info(
                n, onnx.helper.np_dtype_to_tensor_dtype(a.dtype), a.shape
            )
            for n, a in zip(names, arrays, strict=True)
        ]
        outputs = [onnx.helper.make_empty_tensor_value_info(n) for n in node.output if n]
        graph = onnx.helper.make_graph([node], "node", graph_inputs, outputs)
        opset = kwargs.get("opset_version", onnx.defs.onnx_opset_version())
        model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", opset)])
        model = onnx.shape_inference.infer_shapes(model)
        return cls.run_model(model, arrays, device)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        """True for "CPU": Tessel's models compile to C for this machine."""
        return device.upper() in DEVICES


prepare = TesselBackend.prepare
run_model = TesselBackend.run_model
run_node = TesselBackend.run_node
supports_device = TesselBackend.supports_device
