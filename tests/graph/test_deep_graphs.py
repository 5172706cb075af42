"""Deep graphs and programs compile with Python's default recursion limit (issue 25): every walk
from ONNX import to C is iterative or bounded, so a model's size never becomes stack depth."""

import sys
import time

import numpy as np
import pytest
from onnx import TensorProto, helper

import tessel.graph as graph
from tessel.frontend.onnx import from_onnx
from tessel.graph import Call, Function, Op, TensorType, Var, astext, const, parse
from tessel.ir.expr import Add, Mul
from tessel.ir.expr import Var as TirVar
from tessel.ir.module import IRModule
from tessel.ir.structural import assert_structural_equal, structural_equal, structural_hash
from tessel.ir.target import Target
from tessel.tir.function import PrimFunc

_UNARY = {  # ONNX op, its NumPy reference
    "Relu": lambda x: np.maximum(x, 0),
    "Neg": np.negative,
    "Abs": np.abs,
    "Sigmoid": lambda x: 1 / (1 + np.exp(-x)),
}


def test_the_recursion_limit_is_pythons_default():
    assert sys.getrecursionlimit() == 1000  # what every test here runs under


def _onnx_chain(length: int):
    """An ONNX model: `length` unary operators in a chain, cycling through `_UNARY`."""
    ops = list(_UNARY)
    nodes, prev = [], "x"
    for k in range(length):
        nodes.append(helper.make_node(ops[k % len(ops)], [prev], [f"t{k}"]))
        prev = f"t{k}"
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])]
    outputs = [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [4])]
    body = helper.make_graph(nodes, "chain", inputs, outputs)
    return helper.make_model(body, opset_imports=[helper.make_opsetid("", 17)])


def test_an_onnx_chain_of_10000_operators_compiles_and_matches_numpy():
    mod, params = from_onnx(_onnx_chain(10_000))
    start = time.perf_counter()
    model = graph.compile(mod, params)
    elapsed = time.perf_counter() - start
    x = np.array([-2.0, -0.5, 0.25, 3.0], "float32")
    expected = x.astype("float64")
    ops = list(_UNARY.values())
    for k in range(10_000):
        expected = ops[k % len(ops)](expected)
    np.testing.assert_allclose(model(x), expected, rtol=1e-5, atol=1e-6)
    assert elapsed < 180, f"compiling took {elapsed:.0f} s"


def _dense_chain(kernels: int) -> tuple[IRModule, dict[str, np.ndarray]]:
    """`main(x)`: `kernels` times x = tanh(dense(x, w)) with one shared 4x4 weight `w`; dense
    does not fuse with dense, so each pair is its own kernel."""
    x, w = Var("x", TensorType((1, 4), "float32")), Var("w", TensorType((4, 4), "float32"))
    body = x
    for _ in range(kernels):
        body = Call(Op("tanh"), (Call(Op("nn.dense"), (body, w), {"units": 4}),))
    weight = np.random.default_rng(0).standard_normal((4, 4)).astype("float32")
    return IRModule.from_dict({"main": Function((x, w), body)}), {"w": weight}


def test_a_model_of_2000_kernels_compiles_quickly_and_runs():
    mod, params = _dense_chain(2000)
    start = time.perf_counter()
    model = graph.compile(mod, params)
    elapsed = time.perf_counter() - start
    x = np.array([[0.5, -1.0, 2.0, 0.25]], "float32")
    expected = x.astype("float64")
    for _ in range(2000):
        expected = np.tanh(expected @ params["w"].T.astype("float64"))
    np.testing.assert_allclose(model(x), expected, rtol=1e-4, atol=1e-5)
    assert len(model.plan.calls) == 2000
    kernels = [f for f in model.aot.mod.functions.values() if isinstance(f, PrimFunc)]
    assert len(kernels) <= 4  # structurally identical kernels share one function
    assert elapsed < 180, f"compiling took {elapsed:.0f} s"


def test_150_linked_weights_compile_with_the_detected_target():
    x = Var("x", TensorType((1, 4), "float32"))
    params, body = [], x
    rng = np.random.default_rng(1)
    weights = {}
    for k in range(150):
        w = Var(f"w{k}", TensorType((4, 4), "float32"))
        params.append(w)
        weights[f"w{k}"] = (rng.standard_normal((4, 4)) * 0.5).astype("float32")
        body = Call(Op("nn.relu"), (Call(Op("nn.dense"), (body, w), {"units": 4}),))
    mod = IRModule.from_dict({"main": Function((x, *params), body)})
    model = graph.compile(mod, weights, Target.detect(link_params=True))
    assert [p.kind for p in model.aot.params] == ["input", "output"]
    data = np.array([[1.0, -2.0, 0.5, 3.0]], "float32")
    expected = data.astype("float64")
    for k in range(150):
        expected = np.maximum(expected @ weights[f"w{k}"].T.astype("float64"), 0)
    np.testing.assert_allclose(model(data), expected, rtol=1e-4, atol=1e-5)


def _tir_chain(depth: int, leaf: TirVar, step: TirVar):
    expr = leaf
    for k in range(depth):
        expr = Add(expr, step) if k % 2 else Mul(expr, step)  # built raw: no folding
    return expr


def test_structural_equality_and_hash_of_a_10000_deep_expression():
    a = _tir_chain(10_000, TirVar("x"), TirVar("y"))
    b = _tir_chain(10_000, TirVar("x"), TirVar("y"))
    assert structural_equal(a, b)
    assert structural_hash(a) == structural_hash(b)
    x, y = TirVar("x"), TirVar("y")
    c = _tir_chain(10_000, x, y)
    assert not structural_equal(a, Add(c.a, x))  # the last step adds the other variable
    with pytest.raises(AssertionError, match="differs structurally"):
        assert_structural_equal(Add(c.a, x), a)


def test_a_10000_node_graph_prints_and_parses_back():
    x = Var("x", TensorType((4,), "float32"))
    body = x
    for k in range(10_000):
        op = ("nn.relu", "negative", "abs", "sigmoid")[k % 4]
        body = Call(Op(op), (body,))
    body = Call(Op("add"), (body, const(np.ones(4, "float32"))))
    mod = IRModule.from_dict({"main": Function((x,), body)})
    text = astext(mod)
    assert text.count("\n") > 10_000
    parsed = parse(text)
    assert_structural_equal(parsed["main"], mod["main"])
    assert astext(parsed) == text
