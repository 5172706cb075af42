"""Static output types of one node, from ONNX's own per-node shape inference.

The importer knows every input's static type and the arrays of the small constant ones, so ONNX's
inference (the reference for each operator's shape rules, including Reshape's 0/-1 and pooling's
ceil_mode) yields static output types without Tessel restating those rules per operator.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import onnx

from tessel.frontend.onnx.errors import OnnxImportError
from tessel.frontend.onnx.values import Value, dtype_of_elem_type, tensor_type_proto
from tessel.graph.expr import Constant
from tessel.graph.ty import TensorType
from tessel.ir.expr import Var

# Constant inputs up to this many elements are handed to inference as data (shapes, axes, pads).
_DATA_LIMIT = 4096
# Ops whose converters compute their own output types: onnx 1.23's Slice inference crashes the
# process (a segmentation fault) on steps near INT64_MAX, so it never sees Slice's data.
_NO_DATA_OPS = frozenset({"Slice"})
_SUBGRAPH_OPS = frozenset({"If", "Loop", "Scan"})
# Ops whose scalar inputs may come as 1-element vectors: the spec wants scalars and ONNX's
# inference rejects [1], but exporters (ONNX's own expanded AffineGrid) feed Range [1]-shaped
# start/limit/delta and onnxruntime accepts them (shape [1] only, not [1, 1]); inference sees
# them as the scalars they hold, and the converter reads them so.
_SCALAR_INPUT_OPS = frozenset({"Range"})
# Attribute defaults of the schema that onnx 1.23's inference does not apply when the attribute
# is absent: STFT's onesided defaults to 1, but its inference counts frame_length bins then.
_UNAPPLIED_DEFAULTS: dict[str, dict[str, int]] = {"STFT": {"onesided": 1}}


def infer_output_types(
    proto: onnx.NodeProto,
    name: str,
    inputs: Sequence[Value | None],
    opset_imports: Sequence[onnx.OperatorSetIdProto],
    opset: int,
    symbols: Mapping[str, Var] | None = None,
) -> tuple[TensorType | None, ...]:
    """The type of each output of `proto`; None where the output is omitted or its shape does
    not follow (then the converter must give the type, or fold). A dimension ONNX infers as a
    `dim_param` that names one of `symbols` is that shape symbol."""
    types, data = {}, {}
    for input_name, value in zip(proto.input, inputs, strict=True):
        if value is None:
            continue
        ty = value.type
        if proto.op_type in _SCALAR_INPUT_OPS and ty.shape == (1,):
            ty = TensorType((), ty.dtype)
        types[input_name] = tensor_type_proto(ty)
        small = isinstance(value.expr, Constant) and value.data.size <= _DATA_LIMIT
        if small and proto.op_type not in _NO_DATA_OPS:
            array = value.data.reshape(ty.shape)
            data[input_name] = onnx.numpy_helper.from_array(array, input_name)
    try:
        schema = onnx.defs.get_schema(proto.op_type, opset, proto.domain)
        inferred = onnx.shape_inference.infer_node_outputs(
            schema, _with_defaults(proto), types, data, opset_imports=list(opset_imports)
        )
    except (
        onnx.shape_inference.InferenceError,
        onnx.defs.SchemaError,
        onnx.checker.ValidationError,
        RuntimeError,
    ) as err:
        raise OnnxImportError(
            f"{proto.op_type} node `{name}`: ONNX shape inference rejects it: {err}",
            rule="onnx.invalid-node",
        ) from err
    return tuple(_static_type(proto, name, out, inferred, symbols or {}) for out in proto.output)


def _with_defaults(proto: onnx.NodeProto) -> onnx.NodeProto:
    """`proto`, or a copy with the defaults in _UNAPPLIED_DEFAULTS it omits set explicitly."""
    given = {a.name for a in proto.attribute}
    missing = {
        k: v for k, v in _UNAPPLIED_DEFAULTS.get(proto.op_type, {}).items() if k not in given
    }
    if not missing:
        return proto
    copy = onnx.NodeProto()
    copy.CopyFrom(proto)
    copy.attribute.extend(onnx.helper.make_attribute(k, v) for k, v in missing.items())
    return copy


def _static_type(
    proto: onnx.NodeProto,
    name: str,
    output: str,
    inferred: dict[str, onnx.TypeProto],
    symbols: Mapping[str, Var],
) -> TensorType | None:
    if output == "":
        return None
    type_proto = inferred.get(output)
    known = type_proto is not None and type_proto.HasField("tensor_type")
    if not known and proto.op_type in _SUBGRAPH_OPS:
        return None  # ONNX may not infer through a subgraph; the converter imports it and knows
    if not known:
        raise OnnxImportError(
            f"{proto.op_type} node `{name}`: the type of output `{output}` cannot be inferred",
            rule="onnx.dynamic-shape",
        )
    tensor = type_proto.tensor_type
    dims = [
        d.dim_value if d.HasField("dim_value") else symbols.get(d.dim_param)
        for d in tensor.shape.dim
    ]
    if not tensor.HasField("shape") or any(d is None for d in dims):
        return None
    if any(isinstance(d, int) and d < 0 for d in dims):
        return None  # inferred from invalid inputs (STFT's frame_step 0): the converter says which
    dtype = dtype_of_elem_type(tensor.elem_type, f"output `{output}` of node `{name}`")
    return TensorType(tuple(dims), dtype)
