"""Helpers for the ONNX importer tests: building models with onnx.helper, running the imported
graph, comparing with onnxruntime, and listing the calls of an imported graph."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from tessel.frontend.onnx import from_onnx
from tessel.graph.evaluate import evaluate
from tessel.graph.executor import compile as compile_graph
from tessel.graph.expr import Call
from tessel.graph.passes import InferType
from tessel.graph.traversal import post_order_exprs
from tessel.graph.type_util import type_equal
from tessel.ir.module import IRModule

FLOAT = TensorProto.FLOAT
INT64 = TensorProto.INT64


def tensor(
    name: str, shape: Sequence[int | str] | None, elem_type: int = FLOAT
) -> onnx.ValueInfoProto:
    """A graph input or output declaration."""
    return helper.make_tensor_value_info(name, elem_type, shape)


def make_model(
    nodes: Sequence[onnx.NodeProto],
    inputs: Sequence[onnx.ValueInfoProto],
    outputs: Sequence[onnx.ValueInfoProto],
    initializers: Mapping[str, np.ndarray] | None = None,
    opset: int = 17,
) -> onnx.ModelProto:
    """A checked single-graph model at `opset`; outputs without a type get ONNX's inference."""
    graph = helper.make_graph(
        list(nodes),
        "test",
        list(inputs),
        list(outputs),
        [numpy_helper.from_array(np.asarray(v), k) for k, v in (initializers or {}).items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    if any(not out.type.tensor_type.HasField("shape") for out in model.graph.output):
        model = onnx.shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)
    onnx.checker.check_model(model)
    return model


def single_op_model(
    op_type: str,
    input_shapes: Mapping[str, Sequence[int]],
    output_count: int = 1,
    initializers: Mapping[str, np.ndarray] | None = None,
    opset: int = 17,
    input_names: Sequence[str] | None = None,
    **attrs: Any,
) -> onnx.ModelProto:
    """A model of one node; float inputs from `input_shapes`, constant inputs from initializers."""
    initializers = dict(initializers or {})
    names = list(input_names) if input_names is not None else [*input_shapes, *initializers]
    node = helper.make_node(op_type, names, [f"y{i}" for i in range(output_count)], **attrs)
    inputs = [tensor(n, s) for n, s in input_shapes.items()]
    outputs = [helper.make_empty_tensor_value_info(f"y{i}") for i in range(output_count)]
    return make_model([node], inputs, outputs, initializers, opset)


def random_inputs(
    model: onnx.ModelProto, shape: Mapping[str, Sequence[int]] | None = None, seed: int = 0
) -> dict[str, np.ndarray]:
    """Random values for the graph inputs that are not initializers."""
    rng = np.random.default_rng(seed)
    init = {i.name for i in model.graph.initializer}
    values = {}
    for proto in model.graph.input:
        if proto.name in init:
            continue
        tensor_type = proto.type.tensor_type
        dims = (shape or {}).get(proto.name) or [d.dim_value for d in tensor_type.shape.dim]
        dtype = helper.tensor_dtype_to_np_dtype(tensor_type.elem_type)
        if np.issubdtype(dtype, np.integer):
            values[proto.name] = rng.integers(0, 8, size=dims).astype(dtype)
        elif dtype == np.bool_:
            values[proto.name] = rng.random(dims) < 0.5
        else:
            values[proto.name] = rng.standard_normal(dims).astype(dtype)
    return values


def run_onnxruntime(model: onnx.ModelProto, inputs: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """The model's outputs computed by onnxruntime (CPU)."""
    import onnxruntime

    session = onnxruntime.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    return session.run(None, dict(inputs))


def evaluate_main(mod: IRModule, args: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """Run `main` with the graph evaluator on arrays named like its parameters (a list out)."""
    result = evaluate(mod, params=dict(args))
    return [np.asarray(r) for r in result] if isinstance(result, tuple) else [np.asarray(result)]


def check_types(mod: IRModule) -> None:
    """InferType accepts `main`, and its type is the one the importer declared."""
    typed = InferType()(mod)["main"]
    assert type_equal(typed.body.checked_type, mod["main"].ret_type), (
        typed.body.checked_type,
        mod["main"].ret_type,
    )


def check_against_onnxruntime(
    model: onnx.ModelProto,
    shape: Mapping[str, Sequence[int]] | None = None,
    inputs: Mapping[str, np.ndarray] | None = None,
    rtol: float = 1e-4,
    freeze_params: bool = True,
    compiled: bool = False,
) -> IRModule:
    """Import `model`, type it, run it on random inputs and compare every output with
    onnxruntime: max |ours - ort| <= rtol * max |ort| per output (exact for ints and bools).
    With `compiled`, the model compiled to C by tessel.graph.compile is compared too."""
    mod, params = from_onnx(model, shape=shape, freeze_params=freeze_params)
    check_types(mod)
    inputs = dict(inputs) if inputs is not None else random_inputs(model, shape)
    expected = run_onnxruntime(model, inputs)
    _compare(evaluate_main(mod, {**inputs, **params}), expected, rtol)
    if compiled:
        compiled_model = compile_graph(mod, params)
        result = compiled_model(**inputs)
        _compare(list(result) if isinstance(result, tuple) else [result], expected, rtol)
    return mod


def _compare(actual: list[np.ndarray], expected: list[np.ndarray], rtol: float) -> None:
    assert len(actual) == len(expected)
    for ours, ref in zip(actual, expected, strict=True):
        assert ours.shape == ref.shape, (ours.shape, ref.shape)
        assert ours.dtype == ref.dtype, (ours.dtype, ref.dtype)
        if ref.dtype == object:  # strings
            assert ours.tolist() == ref.tolist()
            continue
        if ref.dtype.kind in "biu":
            np.testing.assert_array_equal(ours, ref)
            continue
        scale = max(float(np.max(np.abs(ref), initial=0.0)), 1e-6)
        error = float(np.max(np.abs(ours.astype(np.float64) - ref), initial=0.0)) / scale
        assert error <= rtol, f"max relative error {error:.3g} > {rtol}"


def calls(mod: IRModule) -> list[str]:
    """The operator names called by `main`, in evaluation order."""
    return [e.op.name for e in post_order_exprs(mod["main"].body) if isinstance(e, Call)]


def the_call(mod: IRModule, name: str) -> Call:
    """The one call of operator `name` in `main`."""
    found = [
        e for e in post_order_exprs(mod["main"].body) if isinstance(e, Call) and e.op.name == name
    ]
    assert len(found) == 1, f"{len(found)} calls of {name}: {calls(mod)}"
    return found[0]
