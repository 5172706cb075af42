"""`from_onnx`: an ONNX model to a graph IRModule whose `main` takes the model's inputs.

Nodes convert in the graph's (topological) order. Each node's output types come from ONNX's
per-node inference on static input types; nodes whose inputs are all known at import fold to
constants, so shape subgraphs (Shape -> Gather -> Concat -> Reshape, ...) never reach the graph.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from tessel.frontend.onnx.converters.sequence import (
    SequenceValue,
    sequence_elem_type,
    touches_sequences,
)
from tessel.frontend.onnx.errors import (
    DynamicInputError,
    OnnxImportError,
    UnsupportedOperatorError,
    UnsupportedUse,
)
from tessel.frontend.onnx.half import computes_on_half, convert_in_float32
from tessel.frontend.onnx.inference import infer_output_types
from tessel.frontend.onnx.input_dims import checked_dims, fix_named, input_dims
from tessel.frontend.onnx.loading import load_model
from tessel.frontend.onnx.node import OnnxNode, attribute_values, node_name
from tessel.frontend.onnx.symbolic import (
    ExprTyper,
    converted_with_fallback,
    is_symbolic_array,
    symbolic_value,
)
from tessel.frontend.onnx.table import lookup, opset_range
from tessel.frontend.onnx.values import Derived, Value, constant_value, dtype_of_elem_type
from tessel.graph.expr import OUTPUT_NAMES, Constant, Expr, Function, Tuple, Var
from tessel.graph.op.op_def import OpTypeError
from tessel.graph.op.random import RANDOM_STATE, STATE_TYPE
from tessel.graph.ty import TensorType, TupleType
from tessel.ir.expr import PrimExpr
from tessel.ir.module import IRModule
from tessel.support.errors import InternalError

ShapeDict = Mapping[str, Sequence[int]]


def from_onnx(
    model: onnx.ModelProto | str | Path,
    shape: ShapeDict | None = None,
    dtype: str | Mapping[str, str] = "float32",
    freeze_params: bool = True,
    dims: Mapping[str, int | tuple[int, int] | None] | None = None,
) -> tuple[IRModule, dict[str, np.ndarray]]:
    """Import an ONNX model (a ModelProto or a file path) as an IRModule with a `main` function.

    `shape` gives static shapes for graph inputs (required for inputs with dynamic dimensions);
    `dims` gives sizes to named dynamic dimensions (ONNX's `dim_param`: {"batch": 1, "seq": 128}
    fixes them in every input naming them, as onnxruntime's free dimension overrides do), a
    shape given for an input taking precedence; a name given None or bounds (min, max) stays
    a shape symbol (tessel/arith/dims.py: {"batch": None, "seq": (1, 512)}; max None: no upper
    bound), one per name, and `main` takes any size in the bounds (from 1 without them);
    `dtype` is the element type of inputs whose type the model leaves out (a dict: per input,
    overriding the model). With `freeze_params`, initializers become Constants and the returned
    params are empty; otherwise floating-point initializers become extra parameters of `main`
    (after the graph inputs) whose values are returned in params. Integer initializers (shapes,
    axes, indices) are always Constants, since Tessel's graphs are static. A file or model that
    is not a usable ONNX model (empty, no graph, no outputs, missing external data) raises
    OnnxImportError naming it.
    """
    prefix = "" if isinstance(model, onnx.ModelProto) else f"{model}: "  # messages name the file
    model = load_model(model)
    opsets = {
        imp.domain if imp.domain != "ai.onnx" else "": imp.version for imp in model.opset_import
    }
    check_supported(model.graph, opsets)
    shapes = dict(shape or {})
    sizes, symbols = checked_dims(dims or {}, model.graph.input, prefix)
    importer = _GraphImporter(model, opsets, shapes, dtype, freeze_params, prefix, sizes, symbols)
    return importer.run()


def check_supported(graph: onnx.GraphProto, opsets: Mapping[str, int]) -> None:
    """Raise UnsupportedOperatorError listing every node the importer has no converter for."""
    missing: dict[tuple[str, str, int], list[str]] = {}
    for index, proto in enumerate(graph.node):
        opset = opsets.get(proto.domain if proto.domain != "ai.onnx" else "", 0)
        if lookup(proto.op_type, proto.domain, opset) is None:
            key = (proto.op_type, proto.domain, opset)
            missing.setdefault(key, []).append(node_name(proto, index))
    if missing:
        uses = tuple(
            UnsupportedUse(
                op_type,
                domain,
                opset,
                tuple(names),
                opset_range(op_type) if domain in ("", "ai.onnx") else None,
            )
            for (op_type, domain, opset), names in missing.items()
        )
        raise UnsupportedOperatorError(uses)


class _GraphImporter:
    """The state of one import: the Value of every ONNX tensor name seen so far."""

    def __init__(
        self,
        model: onnx.ModelProto,
        opsets: dict[str, int],
        shapes: dict[str, Any],
        dtype: str | Mapping[str, str],
        freeze_params: bool,
        prefix: str = "",
        sizes: Mapping[str, int] | None = None,
        symbols: Mapping[str, Var] | None = None,
    ) -> None:
        self.model, self.graph, self.opsets = model, model.graph, opsets
        self.shapes, self.dtype, self.freeze_params = shapes, dtype, freeze_params
        self.prefix = prefix  # "<path>: " when read from a file: messages name the file
        self.sizes = dict(sizes or {})  # named dimensions' sizes (input_dims.py)
        self.symbols = dict(symbols or {})  # named dimensions kept symbolic
        # Symbolic imports type converted expressions by the graph's relations (symbolic.py).
        self.typer = ExprTyper() if self.symbols else None
        self.values: dict[str, Value] = {}
        self.derived = Derived()  # transposed weights and the like, shared by every node
        self.inputs: list[Var] = []
        self.weights: list[Var] = []
        self.params: dict[str, np.ndarray] = {}
        self.read = {name for proto in self.graph.node for name in proto.input}
        self.read |= {out.name for out in self.graph.output}
        self._random_state: Var | None = None
        self._random_streams = 0

    def random_state(self) -> Var:
        """main's random-state parameter (tessel/graph/op/random.py), added at the first draw,
        after the graph's inputs; the executor fills it each call."""
        if self._random_state is None:
            self._random_state = Var(RANDOM_STATE, STATE_TYPE)
            self.inputs.append(self._random_state)
        return self._random_state

    def random_stream(self) -> int:
        """A stream number no other random node of this import has."""
        self._random_streams += 1
        return self._random_streams - 1

    def run(self) -> tuple[IRModule, dict[str, np.ndarray]]:
        self._add_initializers()
        self._add_inputs()
        for index, proto in enumerate(self.graph.node):
            self._convert(index, proto)
        outputs = [self._value(out.name, "the graph's outputs") for out in self.graph.output]
        for proto, value in zip(self.graph.output, outputs, strict=True):
            _check_output_dtype(proto, value)
        if len(outputs) == 1 and not isinstance(outputs[0], SequenceValue):
            body, ret_type = outputs[0].expr, outputs[0].type
        else:
            body = Tuple(tuple(v.expr for v in outputs))
            ret_type = TupleType(tuple(v.type for v in outputs))
        # The ONNX output names travel with main, so a compiled model's outputs keep them.
        names = tuple(out.name for out in self.graph.output)
        main = Function(tuple(self.inputs + self.weights), body, ret_type, {OUTPUT_NAMES: names})
        return IRModule.from_dict({"main": main}), self.params

    def _value(self, name: str, reader: str) -> Value:
        if name not in self.values:
            raise OnnxImportError(
                f"{reader} read tensor `{name}`, which no earlier node, input or initializer "
                "defines",
                rule="onnx.undefined-tensor",
                hint="the graph must be topologically sorted (onnx.checker.check_model)",
            )
        return self.values[name]

    def _add_initializers(self) -> None:
        for tensor in self.graph.initializer:
            dtype_of_elem_type(tensor.data_type, f"initializer `{tensor.name}`")
            array = onnx.numpy_helper.to_array(tensor)
            if self.freeze_params or array.dtype.kind != "f":
                # Named, so a compiled model's weight keeps the initializer's name.
                constant = Constant(array, name_hint=tensor.name)
                self.values[tensor.name] = Value(constant, constant.tensor_type)
            elif tensor.name in self.read:
                var = Var(tensor.name, TensorType(array.shape, str(array.dtype)))
                self.weights.append(var)
                self.params[tensor.name] = array
                self.values[tensor.name] = Value(var, var.type_annotation)
                if self.typer is not None:
                    self.typer.remember(self.values[tensor.name])

    def _add_inputs(self) -> None:
        names = [i.name for i in self.graph.input if i.name not in self.values]
        unknown = sorted(set(self.shapes) - set(names))
        if unknown:
            raise OnnxImportError(
                f"shapes given for {unknown}, which are not inputs of the graph; its inputs are "
                f"{names}",
                rule="onnx.unknown-input",
            )
        for proto in self.graph.input:
            if proto.name in self.values:  # an initializer listed as an input (IR version < 4)
                continue
            given = self.shapes.get(proto.name)
            if sequence_elem_type(proto.type) is not None:
                self.values[proto.name] = self._sequence_input(proto, given)
                continue
            ty = _input_type(
                proto, given, self._input_dtype(proto), self.prefix, self.sizes, self.symbols
            )
            var = Var(proto.name, ty)
            self.inputs.append(var)
            self.values[proto.name] = Value(var, ty)
            if self.typer is not None:
                self.typer.remember(self.values[proto.name])

    def _sequence_input(self, proto: onnx.ValueInfoProto, given: Any) -> SequenceValue:
        """A sequence graph input: one parameter per tensor (`<name>_<k>`), of the shapes given
        for it (a list of shapes: Tessel's graphs are static, so the length is fixed too)."""
        elem = sequence_elem_type(proto.type)
        dtype = dtype_of_elem_type(elem, f"graph input `{proto.name}`")
        if given is None:
            raise DynamicInputError(
                f"{self.prefix}graph input `{proto.name}` is a sequence; give the shape of each "
                "of its tensors",
                proto.name,
                None,
            )
        items = []
        for k, dims in enumerate(given):
            var = Var(f"{proto.name}_{k}", TensorType(tuple(int(d) for d in dims), dtype))
            self.inputs.append(var)
            items.append(Value(var, var.type_annotation))
        return SequenceValue.of(items, dtype)

    def _input_dtype(self, proto: onnx.ValueInfoProto) -> str:
        if isinstance(self.dtype, Mapping) and proto.name in self.dtype:
            return self.dtype[proto.name]
        elem_type = proto.type.tensor_type.elem_type
        if elem_type:
            return dtype_of_elem_type(elem_type, f"graph input `{proto.name}`")
        return self.dtype if isinstance(self.dtype, str) else "float32"

    def _convert(self, index: int, proto: onnx.NodeProto) -> None:
        name = node_name(proto, index)
        reader = f"{proto.op_type} node `{name}`"
        inputs = tuple(self._value(i, reader) if i else None for i in proto.input)
        opset = self.opsets[proto.domain if proto.domain != "ai.onnx" else ""]
        on_sequences = touches_sequences(proto, inputs)
        if on_sequences:
            # ONNX's per-node inference takes tensors; the converter gives sequence types
            output_types: tuple = (None,) * len(proto.output)
        else:
            output_types = infer_output_types(
                proto, name, inputs, self.model.opset_import, opset, self.symbols
            )
        node = OnnxNode(
            proto,
            name,
            opset,
            inputs,
            attribute_values(proto),
            output_types,
            tuple(bool(out) and out in self.read for out in proto.output),
            self.derived,
            scope=self,
        )
        converter = lookup(proto.op_type, proto.domain, opset)
        assert converter is not None, "check_supported runs before conversion"
        values = converted_with_fallback(node, lambda n: _converted(n, converter, on_sequences))
        for out, value in zip(proto.output, values, strict=True):
            if value is not None:
                if self.typer is not None and isinstance(value, Value):
                    value = _typed(self.typer, out, value)
                self.values[out] = value


def _converted(node: OnnxNode, converter: Any, on_sequences: bool) -> list[Any]:
    """The Values of the node's outputs (None for the omitted ones)."""
    if not on_sequences and computes_on_half(node):
        return convert_in_float32(node, converter, _output_value)
    results = converter(node)
    if not isinstance(results, list | tuple):
        results = [results]
    return [
        _output_value(node, position, results) if out else None
        for position, out in enumerate(node.proto.output)
    ]


def _typed(typer: ExprTyper, tensor: str, value: Value) -> Value:
    """In a symbolic import: an expression with the type the graph's relations give it (a
    converter's own Value is typed again: it may have computed a static type)."""
    if value.known is None and not isinstance(value.expr, Constant):
        ty = typer.type_of(value.expr)
        if not isinstance(ty, TensorType):
            raise InternalError(f"tensor `{tensor}` imports as {ty}, not a tensor")
        value = Value(value.expr, ty)
    typer.remember(value)
    return value


def _check_output_dtype(proto: onnx.ValueInfoProto, value: Value) -> None:
    """The element type the model declares for a graph output is the one imported: a converter
    that gives another is Tessel's bug, reported rather than returned as a wrong result."""
    elem_type = proto.type.tensor_type.elem_type if proto.type.HasField("tensor_type") else 0
    if not elem_type or isinstance(value, SequenceValue):
        return
    declared = dtype_of_elem_type(elem_type, f"graph output `{proto.name}`")
    if declared != value.type.dtype:
        raise InternalError(
            f"graph output `{proto.name}` is declared {declared} but imports as {value.type.dtype}"
        )


def _output_value(
    node: OnnxNode, position: int, results: Sequence[Value | Expr | np.ndarray | None]
) -> Value | None:
    """The Value of output `position`: an array folds to a Constant (checked against ONNX's
    inferred type), an expression takes the inferred type, a Value (a converter that knows
    better than ONNX's inference) stays as it is."""
    result = results[position] if position < len(results) else None
    if isinstance(result, Value):
        return result
    if result is None:
        if node.output_used(position):
            raise InternalError(f"converter of {node.op_type} gave nothing for output {position}")
        return None  # an output no one reads
    if isinstance(result, PrimExpr | int | float):
        # One element of an object array of dimensions that NumPy folding took out.
        result = np.array(result, dtype=object if isinstance(result, PrimExpr) else None)
    if isinstance(result, np.ndarray | np.generic):
        return _folded_value(node, position, np.asarray(result))
    typer = getattr(node.scope, "typer", None)
    if typer is not None:  # a symbolic import: the graph's relations give the type
        return _symbolic_output(node, position, result, typer)
    return Value(result, node.out_type(position))


def _folded_value(node: OnnxNode, position: int, array: np.ndarray) -> Value:
    """An output folded at import: a Constant checked against ONNX's inferred type, or a
    symbolic value (a shape computation on symbolic dimensions)."""
    if is_symbolic_array(array) or _integers_in_objects(array):
        return symbolic_value(array)
    ty = node.output_types[position]
    if ty is None:
        return constant_value(array)
    if array.shape != ty.shape:
        raise InternalError(
            f"{node.op_type} node `{node.name}` folded to shape {array.shape}, but ONNX "
            f"infers {ty.shape}"
        )
    if ty.dtype == "string":  # an object array of str (Constant checks the elements)
        return constant_value(array)
    return constant_value(array.astype(ty.dtype, copy=False))


def _integers_in_objects(array: np.ndarray) -> bool:
    """An object array of plain integers: a fold on dimensions that came out all numbers."""
    flat = array.reshape(-1)
    return (
        array.dtype == object
        and flat.size > 0  # an empty one keeps its type: ONNX's (strings, ...) says what it is
        and all(isinstance(v, int | np.integer) and not isinstance(v, bool) for v in flat)
    )


def _symbolic_output(node: OnnxNode, position: int, result: Expr, typer: ExprTyper) -> Value:
    """Output `position` of a symbolic import, typed by the graph's relations; a call they
    refuse (sizes not proved to agree) is an error naming the node."""
    try:
        ty = typer.type_of(result)
    except OpTypeError as err:
        raise node.error(err.message, hint=err.hint) from err
    if not isinstance(ty, TensorType):
        raise InternalError(f"{node.op_type} output {position} imports as {ty}, not a tensor")
    return Value(result, ty)


def _input_type(
    proto: onnx.ValueInfoProto,
    given: Sequence[int] | None,
    dtype: str,
    prefix: str = "",
    sizes: Mapping[str, int] | None = None,
    symbols: Mapping[str, Var] | None = None,
) -> TensorType:
    """The type of a graph input: the shape given for it, or the model's with its named
    dimensions given `sizes` or kept as `symbols`."""
    dims = input_dims(proto)
    if given is not None:
        _check_given_shape(proto.name, dims, tuple(int(d) for d in given))
        return TensorType(tuple(int(d) for d in given), dtype)
    if dims is None:
        raise DynamicInputError(
            f"{prefix}graph input `{proto.name}` has no shape in the model", proto.name, None
        )
    dims = fix_named(dims, {**(symbols or {}), **(sizes or {})})
    assert dims is not None
    dynamic = [(i, d) for i, d in enumerate(dims) if isinstance(d, str)]
    if dynamic:
        suggestion = tuple(1 if not isinstance(d, int) else d for d in dims)
        where = ", ".join(f"{i} (`{d}`)" for i, d in dynamic)
        raise DynamicInputError(
            f"{prefix}graph input `{proto.name}` has dynamic "
            f"dimension{'s' if len(dynamic) > 1 else ''} {where} in shape "
            f"{input_dims(proto)}",
            proto.name,
            suggestion,
            names=tuple(dict.fromkeys(d for _, d in dynamic if d != "?")),
        )
    return TensorType(tuple(dims), dtype)


def _check_given_shape(name: str, dims: list[int | str] | None, given: tuple[int, ...]) -> None:
    if dims is None:
        return
    if len(dims) != len(given):
        raise OnnxImportError(
            f"shape {list(given)} given for input `{name}` has rank {len(given)}, but the model "
            f"declares rank {len(dims)} ({dims})",
            rule="onnx.input-shape",
        )
    clashes = [
        i for i, (d, g) in enumerate(zip(dims, given, strict=True)) if isinstance(d, int) and d != g
    ]
    if clashes:
        raise OnnxImportError(
            f"shape {list(given)} given for input `{name}` differs from the model's static "
            f"shape {dims} in dimension {clashes[0]}",
            rule="onnx.input-shape",
        )
