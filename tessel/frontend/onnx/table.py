"""The one table of the importer: ONNX op type -> converter, per range of the model's opset.

An op type maps to (first opset, last opset, converter) entries; the model's opset for the op's
domain picks the entry. Opsets 11-21 are covered; an op's entry splits where its semantics
changed (Softmax at 13, Pad's axes at 18, ...) unless the converter reads the opset itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tessel.frontend.onnx.converters import (
    conv_pool,
    elementwise,
    indexing,
    linear,
    normalization,
    reduce,
    shape,
    tensor,
)
from tessel.frontend.onnx.node import OnnxNode

Converter = Callable[[OnnxNode], Any]
Entry = tuple[int, int, Converter]

FIRST_OPSET, LAST_OPSET = 11, 21


def _all(converter: Converter, first: int = FIRST_OPSET) -> tuple[Entry, ...]:
    """One converter for every opset from `first` to the last covered."""
    return ((first, LAST_OPSET, converter),)


CONVERTERS: dict[str, tuple[Entry, ...]] = {
    # values known at import
    "Constant": _all(shape.convert_constant),
    "Shape": _all(shape.convert_shape),  # start/end attributes from 15
    "Size": _all(shape.convert_size),
    "ConstantOfShape": _all(shape.convert_constant_of_shape),
    "Range": _all(shape.convert_range),
    # elementwise
    **{op: _all(elementwise.convert_unary) for op in elementwise.UNARY},
    **{op: _all(elementwise.convert_binary) for op in elementwise.BINARY},
    **{op: _all(elementwise.convert_variadic) for op in elementwise.VARIADIC},
    "Mod": _all(elementwise.convert_mod),
    "Reciprocal": _all(elementwise.convert_reciprocal),
    "Clip": _all(elementwise.convert_clip),  # min/max are inputs from 11
    "LeakyRelu": _all(elementwise.convert_leaky_relu),
    "HardSigmoid": _all(elementwise.convert_hard_sigmoid),
    "HardSwish": _all(elementwise.convert_hard_swish, first=14),
    "Gelu": _all(elementwise.convert_gelu, first=20),
    "IsInf": _all(elementwise.convert_is_inf),  # opset 20 adds only dtypes
    "Where": _all(elementwise.convert_where),
    "Cast": _all(elementwise.convert_cast),
    "Identity": _all(elementwise.convert_identity),
    "Dropout": _all(elementwise.convert_dropout),  # ratio/training_mode inputs from 12
    # matrix products
    "Gemm": _all(linear.convert_gemm),
    "MatMul": _all(linear.convert_matmul),
    # convolution and pooling
    "Conv": _all(conv_pool.convert_conv),
    "MaxPool": _all(conv_pool.convert_max_pool),
    "AveragePool": _all(conv_pool.convert_average_pool),  # dilations from 19
    "GlobalAveragePool": _all(conv_pool.convert_global_average_pool),
    "GlobalMaxPool": _all(conv_pool.convert_global_max_pool),
    # normalisation
    "BatchNormalization": _all(normalization.convert_batch_norm),
    "LayerNormalization": _all(normalization.convert_layer_norm, first=17),
    "Softmax": (
        (11, 12, normalization.convert_softmax),  # flattens at `axis` (default 1)
        (13, LAST_OPSET, normalization.convert_softmax),  # one axis (default -1)
    ),
    "LogSoftmax": (
        (11, 12, normalization.convert_log_softmax),
        (13, LAST_OPSET, normalization.convert_log_softmax),
    ),
    # reductions: axes are an attribute before 13 (ReduceSum) / 18 (others), then an input
    **{op: _all(reduce.convert_reduce) for op in reduce.REDUCTIONS},
    "ReduceL1": _all(reduce.convert_reduce_norm),
    "ReduceL2": _all(reduce.convert_reduce_norm),
    "ReduceSumSquare": _all(reduce.convert_reduce_norm),
    "ArgMax": _all(reduce.convert_arg_reduce),
    "ArgMin": _all(reduce.convert_arg_reduce),
    "CumSum": _all(reduce.convert_cumsum),
    # layout
    "Reshape": _all(tensor.convert_reshape),  # allowzero from 14
    "Flatten": _all(tensor.convert_flatten),
    "Squeeze": _all(tensor.convert_squeeze),  # axes input from 13
    "Unsqueeze": _all(tensor.convert_unsqueeze),  # axes input from 13
    "Expand": _all(tensor.convert_expand),
    "Transpose": _all(tensor.convert_transpose),
    "Concat": _all(tensor.convert_concat),
    "Split": _all(tensor.convert_split),  # split input from 13, num_outputs from 18
    "Tile": _all(tensor.convert_tile),
    "Pad": _all(tensor.convert_pad),  # pads as inputs from 11, axes input from 18
    "Trilu": _all(tensor.convert_trilu, first=14),
    # indexing
    "Gather": _all(indexing.convert_gather),
    "Slice": _all(indexing.convert_slice),
    "GatherElements": _all(indexing.convert_gather_elements),
    "GatherND": _all(indexing.convert_gather_nd),  # batch_dims from 12
    "ScatterElements": _all(indexing.convert_scatter_elements),  # reduction from 16 (max/min 18)
    "ScatterND": _all(indexing.convert_scatter_nd),  # reduction from 16 (max/min 18)
}


def lookup(op_type: str, domain: str, opset: int) -> Converter | None:
    """The converter for `op_type` at the model's `opset`, or None."""
    if domain not in ("", "ai.onnx"):
        return None
    for first, last, converter in CONVERTERS.get(op_type, ()):
        if first <= opset <= last:
            return converter
    return None


def opset_range(op_type: str) -> tuple[int, int] | None:
    """The first and last opsets the importer covers for `op_type`, or None if it never does."""
    entries: Sequence[Entry] = CONVERTERS.get(op_type, ())
    if not entries:
        return None
    return min(e[0] for e in entries), max(e[1] for e in entries)


def supported_operators() -> dict[str, tuple[int, int]]:
    """Every op type the importer converts, with its range of opsets."""
    ranges = {op: opset_range(op) for op in CONVERTERS}
    return {op: r for op, r in sorted(ranges.items()) if r is not None}
