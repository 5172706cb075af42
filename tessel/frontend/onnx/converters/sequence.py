"""Sequence operators, resolved at import: a sequence is a Python tuple of Values (the graph has no
sequence type), so every position that addresses it must be known at import.

SequenceEmpty, SequenceConstruct, SequenceAt, SequenceInsert, SequenceErase, SequenceLength,
SplitToSequence, ConcatFromSequence (SequenceMap is in control_flow.py); and the Optional
operators, where an optional that holds a value is that value (an empty one is refused).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import onnx

from tessel.frontend.onnx.node import OnnxNode
from tessel.frontend.onnx.opsets import Entry, every_opset
from tessel.frontend.onnx.relay import call, item, tuple_of
from tessel.frontend.onnx.values import Value, constant_value, dtype_of_elem_type
from tessel.graph.ty import TensorType, TupleType
from tessel.graph.type_util import type_equal


@dataclass(frozen=True)
class SequenceValue(Value):
    """An ONNX sequence at import: its tensors in order, and their element type (which an empty
    sequence needs). `expr` and `type` are the tuple of the items, as a graph output holds it."""

    items: tuple[Value, ...] = ()
    dtype: str = "float32"

    @staticmethod
    def of(items: list[Value] | tuple[Value, ...], dtype: str) -> SequenceValue:
        """The sequence of `items` (each of element type `dtype`)."""
        items = tuple(items)
        expr = tuple_of([v.expr for v in items])
        # a sequence's type is the tuple of its items
        return SequenceValue(expr, TupleType(tuple(v.type for v in items)), items, dtype)  # type: ignore[arg-type]


SEQUENCE_OPS = frozenset(
    {
        "SequenceEmpty",
        "SequenceConstruct",
        "SequenceAt",
        "SequenceInsert",
        "SequenceErase",
        "SequenceLength",
        "SplitToSequence",
        "ConcatFromSequence",
        "SequenceMap",
        "Optional",
        "OptionalHasElement",
        "OptionalGetElement",
    }
)


def sequence_elem_type(ty: onnx.TypeProto) -> int | None:
    """The element type of a sequence type (or of an optional holding a sequence), else None."""
    if ty.HasField("optional_type"):
        ty = ty.optional_type.elem_type
    if not ty.HasField("sequence_type"):
        return None
    return ty.sequence_type.elem_type.tensor_type.elem_type or onnx.TensorProto.FLOAT


def _typed_like_tensors(ty: onnx.TypeProto) -> bool:
    return ty.HasField("tensor_type") or not ty.WhichOneof("value")


def touches_sequences(proto: onnx.NodeProto, inputs: Sequence[Value | None]) -> bool:
    """True if a node reads or makes a sequence: a sequence operator, a node with a sequence
    input, or a control-flow node whose subgraph gives one (ONNX's per-node inference, which
    takes tensors only, cannot type it; its converter does)."""
    if proto.op_type in SEQUENCE_OPS or any(isinstance(v, SequenceValue) for v in inputs):
        return True
    graphs = [a.g for a in proto.attribute if a.type == onnx.AttributeProto.GRAPH]
    return any(not _typed_like_tensors(out.type) for g in graphs for out in g.output)


def _sequence(node: OnnxNode, index: int) -> SequenceValue:
    value = node.input(index)
    if not isinstance(value, SequenceValue):
        raise node.error(f"input {index} must be a sequence known at import")
    return value


def _position(node: OnnxNode, index: int, length: int, default: int, inclusive: bool) -> int:
    """A position in a sequence of `length` (negative from the end), known at import; up to
    `length` itself when `inclusive` (an insertion at the end)."""
    if not node.has_input(index):
        return default
    position = int(node.static(index, "position").reshape(-1)[0])
    bound = length + 1 if inclusive else length
    if not -length <= position < bound:
        raise node.error(f"position {position} is out of range for a sequence of {length}")
    return position + length if position < 0 else position


def convert_sequence_empty(node: OnnxNode) -> SequenceValue:
    """SequenceEmpty: no tensors, of the `dtype` attribute (float32 by default)."""
    elem_type = int(node.attr("dtype", onnx.TensorProto.FLOAT))
    return SequenceValue.of((), dtype_of_elem_type(elem_type, f"{node.op_type} `{node.name}`"))


def convert_sequence_construct(node: OnnxNode) -> SequenceValue:
    """SequenceConstruct: the inputs, in order (all of one element type)."""
    items = [node.input(i) for i in range(len(node.inputs))]
    dtypes = {v.type.dtype for v in items}
    if len(dtypes) != 1:
        raise node.error(f"its inputs have different element types {sorted(dtypes)}")
    return SequenceValue.of(items, dtypes.pop())


def convert_sequence_at(node: OnnxNode) -> Value:
    """SequenceAt: the tensor at a position known at import."""
    sequence = _sequence(node, 0)
    return sequence.items[_position(node, 1, len(sequence.items), 0, inclusive=False)]


def convert_sequence_insert(node: OnnxNode) -> SequenceValue:
    """SequenceInsert: the tensor inserted at a position (the end by default)."""
    sequence, tensor = _sequence(node, 0), node.input(1)
    if tensor.type.dtype != sequence.dtype:
        raise node.error(f"a {tensor.type.dtype} tensor cannot join a {sequence.dtype} sequence")
    items = list(sequence.items)
    at = _position(node, 2, len(items), len(items), inclusive=True)
    items.insert(at, tensor)
    return SequenceValue.of(items, sequence.dtype)


def convert_sequence_erase(node: OnnxNode) -> SequenceValue:
    """SequenceErase: the sequence without the tensor at a position (the last by default)."""
    sequence = _sequence(node, 0)
    items = list(sequence.items)
    if not items:
        raise node.error("the sequence is empty")
    del items[_position(node, 1, len(items), len(items) - 1, inclusive=False)]
    return SequenceValue.of(items, sequence.dtype)


def convert_sequence_length(node: OnnxNode) -> np.ndarray:
    """SequenceLength: the number of tensors (an int64 scalar)."""
    return np.array(len(_sequence(node, 0).items), dtype=np.int64)


def convert_optional(node: OnnxNode) -> Value:
    """Optional: an optional holding its input is that input; an empty one is refused."""
    if not node.has_input(0):
        raise node.error(
            "an empty optional is not supported; Tessel resolves optionals at "
            "import and needs a value"
        )
    return node.input(0)


def convert_optional_has_element(node: OnnxNode) -> np.ndarray:
    """OptionalHasElement: whether the input is given (an empty optional is never imported)."""
    return np.array(node.has_input(0))


def convert_optional_get_element(node: OnnxNode) -> Value:
    """OptionalGetElement: the value the optional holds (itself)."""
    return node.input(0)


def _split_sizes(node: OnnxNode, extent: int) -> tuple[list[int], bool]:
    """The size of each part, and whether the split axis is kept (keepdims applies only without
    a split input)."""
    if not node.has_input(1):
        return [1] * extent, bool(node.attr("keepdims", 1))
    split = node.static(1, "split")
    if split.ndim == 0:
        chunk = int(split)
        if chunk <= 0:
            raise node.error(f"split {chunk} must be positive")
        return [min(chunk, extent - start) for start in range(0, extent, chunk)], True
    sizes = [int(s) for s in split]
    if sum(sizes) != extent or any(s < 0 for s in sizes):
        raise node.error(f"split sizes {sizes} do not add up to the axis extent {extent}")
    return sizes, True


def convert_split_to_sequence(node: OnnxNode) -> SequenceValue:
    """SplitToSequence: the parts of a split along `axis` (size 1 parts, squeezed unless
    keepdims, without a split input)."""
    data = node.input(0)
    shape, dtype = data.type.shape, data.type.dtype
    axis = node.axis(int(node.attr("axis", 0)), len(shape))
    sizes, keep = _split_sizes(node, shape[axis])
    bounds = np.cumsum([0, *sizes])
    parts: list[Value] = []
    pieces = None
    if not data.is_constant and len(sizes) > 1:
        pieces = call(
            "split", data.expr, indices_or_sections=tuple(int(b) for b in bounds[1:-1]), axis=axis
        )
    for k, size in enumerate(sizes):
        part_shape = (*shape[:axis], size, *shape[axis + 1 :])
        if data.is_constant:
            part = constant_value(np.take(data.data, range(bounds[k], bounds[k + 1]), axis=axis))
        else:
            expr = data.expr if pieces is None else item(pieces, k)
            part = Value(expr, TensorType(part_shape, dtype))
        parts.append(part if keep else _squeeze(part, axis))
    return SequenceValue.of(parts, dtype)


def _squeeze(value: Value, axis: int) -> Value:
    shape = value.type.shape[:axis] + value.type.shape[axis + 1 :]
    if value.is_constant:
        return constant_value(np.squeeze(value.data, axis=axis))
    return Value(call("squeeze", value.expr, axis=(axis,)), TensorType(shape, value.type.dtype))


def convert_concat_from_sequence(node: OnnxNode) -> Value:
    """ConcatFromSequence: the tensors joined along `axis`, or stacked on a new one (new_axis)."""
    sequence = _sequence(node, 0)
    if not sequence.items:
        raise node.error("the sequence is empty; its concatenation has no shape")
    new_axis = bool(node.attr("new_axis", 0))
    first = sequence.items[0].type
    axis = node.axis(int(node.attr("axis")), len(first.shape) + int(new_axis))
    items = list(sequence.items)
    if new_axis:
        return stack(node, items, axis)
    if all(v.is_constant for v in items):
        return constant_value(np.concatenate([v.data for v in items], axis=axis))
    extent = sum(v.type.shape[axis] for v in items)
    shape = (*first.shape[:axis], extent, *first.shape[axis + 1 :])
    expr = call("concatenate", tuple_of([v.expr for v in items]), axis=axis)
    return Value(expr, TensorType(shape, first.dtype))


def stack(node: OnnxNode, values: list[Value], axis: int) -> Value:
    """Values of one type (a scan output's, per iteration) stacked on a new `axis`."""
    first = values[0].type
    if any(not type_equal(v.type, first) for v in values):
        shapes = sorted({(v.type.dtype, v.type.shape) for v in values})
        raise node.error(
            f"a scan output changes type between iterations: {shapes}",
            hint="Tessel compiles static graphs: each iteration's must be the same",
        )
    if all(v.is_constant for v in values):
        return constant_value(np.stack([v.data for v in values], axis=axis))
    shape = (*first.shape[:axis], len(values), *first.shape[axis:])
    fields = [call("expand_dims", v.expr, axis=axis, num_newaxis=1) for v in values]
    joined = fields[0] if len(fields) == 1 else call("concatenate", tuple_of(fields), axis=axis)
    return Value(joined, TensorType(shape, first.dtype))


TABLE: dict[str, tuple[Entry, ...]] = {
    "SequenceEmpty": every_opset(convert_sequence_empty),
    "SequenceConstruct": every_opset(convert_sequence_construct),
    "SequenceAt": every_opset(convert_sequence_at),
    "SequenceInsert": every_opset(convert_sequence_insert),
    "SequenceErase": every_opset(convert_sequence_erase),
    "SequenceLength": every_opset(convert_sequence_length),
    "SplitToSequence": every_opset(convert_split_to_sequence),
    "ConcatFromSequence": every_opset(convert_concat_from_sequence),
    "Optional": every_opset(convert_optional),
    "OptionalHasElement": every_opset(convert_optional_has_element),
    "OptionalGetElement": every_opset(convert_optional_get_element),
}
