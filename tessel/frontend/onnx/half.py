"""float16 and bfloat16 tensors: stored as such, computed in float32.

The C backend holds float16 (`_Float16`) and bfloat16 (its bits) in memory and converts them,
but C's math library has no float16 functions, C has no bfloat16 arithmetic at all, and a 16-bit
accumulator loses precision (onnxruntime's CPU kernels compute most float16 operators in float32
too). So a node that computes on either runs its converter on float32 copies of its 16-bit
float inputs and casts its 16-bit float outputs back (to bfloat16 rounding to nearest even): the
model's tensors keep their type and size, and each such node costs two conversions. Nodes that
only move or reinterpret data (`STORAGE_OPS`) run on float16 and bfloat16 directly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from tessel.frontend.onnx.node import OnnxNode
from tessel.frontend.onnx.relay import call
from tessel.frontend.onnx.values import Value, constant_value
from tessel.graph.ty import TensorType
from tessel.support.dtype import DataType

HALVES = frozenset({"float16", "bfloat16"})  # the 16-bit floats computed in float32
WIDE = "float32"

# Operators that move, select or convert elements without arithmetic on them.
STORAGE_OPS = frozenset(
    {
        "Cast",
        "CastLike",
        "Identity",
        "Reshape",
        "Flatten",
        "Squeeze",
        "Unsqueeze",
        "Transpose",
        "Concat",
        "Split",
        "Slice",
        "Gather",
        "GatherElements",
        "GatherND",
        "Expand",
        "Tile",
        "Shape",
        "Size",
        "Constant",
        "ConstantOfShape",
        "Dropout",
        "BitCast",
    }
)


# Operators with subgraphs: the nodes of their bodies are converted one by one, each by this rule.
SUBGRAPH_OPS = frozenset({"If", "Loop", "Scan", "SequenceMap"})


def computes_on_half(node: OnnxNode) -> bool:
    """True if `node` does arithmetic on a float16 or bfloat16 input or output."""
    if node.op_type in STORAGE_OPS or node.op_type in SUBGRAPH_OPS:
        return False
    types = [v.type for v in node.inputs if v is not None]
    types += [t for t in node.output_types if t is not None]
    return any(t.dtype in HALVES for t in types)


def _widen_value(value: Value | None) -> Value | None:
    if value is None or value.type.dtype not in HALVES:
        return value
    if value.is_constant:
        return constant_value(value.data.astype(WIDE))
    return Value(call("cast", value.expr, dtype=WIDE), TensorType(value.type.shape, WIDE))


def _widen_type(ty: TensorType | None) -> TensorType | None:
    return TensorType(ty.shape, WIDE) if ty is not None and ty.dtype in HALVES else ty


def convert_in_float32(
    node: OnnxNode,
    converter: Callable[[OnnxNode], Any],
    output_value: Callable[[OnnxNode, int, Sequence[Any]], Value | None],
) -> list[Value | None]:
    """The Values of `node`'s outputs, computed by `converter` in float32 (see the module's doc);
    `output_value` turns a converter's result into a Value, as the importer does."""
    wide = replace(
        node,
        inputs=tuple(_widen_value(v) for v in node.inputs),
        output_types=tuple(_widen_type(t) for t in node.output_types),
    )
    results = converter(wide)
    if not isinstance(results, list | tuple):
        results = [results]
    # An output whose type shape inference could not give (it follows from input values) is
    # the 16-bit type of the inputs when it is float32 now and no input was float32 before:
    # ONNX's type constraints tie it to them.
    input_dtypes = [v.type.dtype for v in node.inputs if v is not None]
    halves = [d for d in input_dtypes if d in HALVES]
    untyped_half = halves[0] if halves and WIDE not in input_dtypes else None
    values = []
    for position, ty in enumerate(node.output_types):
        value = output_value(wide, position, results) if node.proto.output[position] else None
        if value is None:
            values.append(value)
            continue
        if ty is None and untyped_half and value.type.dtype == WIDE:
            ty = TensorType(value.type.shape, untyped_half)
        if ty is not None and ty.dtype in HALVES:
            if value.is_constant:  # float32 -> bfloat16 rounds to nearest even, as Cast does
                value = constant_value(value.data.astype(DataType.of(ty.dtype).numpy))
            else:
                value = Value(call("cast", value.expr, dtype=ty.dtype), ty)
        values.append(value)
    return values
