"""The Reduce* operators, ArgMax/ArgMin, CumSum/CumProd, Hardmax and Einsum against onnxruntime,
through the graph evaluator and the compiled C; reductions over an empty axis (which once
returned uninitialised memory) give each reduction's identity."""

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx_testing import check_against_onnxruntime, make_model, run_onnxruntime, single_op_model

from tessel.frontend.onnx import OnnxImportError, from_onnx
from tessel.graph.executor import compile as compile_graph
from tessel.graph.expr import Call
from tessel.graph.traversal import post_order_exprs

REDUCE_OPS = ("ReduceSum", "ReduceProd", "ReduceMax", "ReduceMin", "ReduceMean", "ReduceL1",
              "ReduceL2", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp")  # fmt: skip


def _every_reduction(shape, axes, opset=18, constant=None, elem_type=TensorProto.FLOAT, **attrs):
    """One model reducing input `x` (or the initializer `constant`) with every Reduce op."""
    nodes = [helper.make_node(op, ["x", "axes"], [op], **attrs) for op in REDUCE_OPS]
    inits = {"axes": np.array(axes, np.int64)}
    inputs = [helper.make_tensor_value_info("x", elem_type, shape)]
    if constant is not None:
        inits["x"], inputs = constant, []
    outputs = [helper.make_empty_tensor_value_info(op) for op in REDUCE_OPS]
    return make_model(nodes, inputs, outputs, inits, opset)


IDENTITY = {"ReduceSum": 0, "ReduceProd": 1, "ReduceMax": -np.inf, "ReduceMin": np.inf,
            "ReduceMean": np.nan, "ReduceL1": 0, "ReduceL2": 0, "ReduceSumSquare": 0,
            "ReduceLogSum": -np.inf, "ReduceLogSumExp": -np.inf}  # fmt: skip


def _run_compiled(model, inputs):
    mod, params = from_onnx(model)
    result = compile_graph(mod, params)(**inputs)
    return list(result) if isinstance(result, tuple) else [result]


def _compare_compiled(model, inputs, rtol=1e-5):
    """The compiled model's outputs equal onnxruntime's (infinities and NaNs in place)."""
    ours = _run_compiled(model, inputs)
    for got, want in zip(ours, run_onnxruntime(model, inputs), strict=True):
        assert (got.shape, got.dtype) == (want.shape, want.dtype)
        np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-6)


def _check_identities(outputs, shape):
    """Each reduction's identity (the mean of nothing is NaN, as onnx's reference computes it;
    onnxruntime gives 0 there, and agrees on the others)."""
    for op, got in zip(REDUCE_OPS, outputs, strict=True):
        np.testing.assert_array_equal(got, np.full(shape, IDENTITY[op], np.float32), err_msg=op)


def test_reductions_over_an_empty_axis_give_the_identity_compiled():
    """Regression: the reduction loop over the empty axis never ran, and never wrote the
    identity (ReduceSum gave garbage, ReduceProd inf, ReduceMax 0)."""
    x = np.zeros((2, 0, 4), np.float32)
    _check_identities(_run_compiled(_every_reduction([2, 0, 4], [1]), {"x": x}), (2, 1, 4))


def test_reductions_of_an_empty_constant_fold_to_the_identity():
    """Regression: folding ReduceMax / ReduceMin of an empty constant raised NumPy's ValueError."""
    model = _every_reduction([2, 0, 4], [1], keepdims=0, constant=np.zeros((2, 0, 4), np.float32))
    _check_identities(_run_compiled(model, {}), (2, 4))


def test_reductions_with_negative_axes_no_keepdims_compiled():
    model = _every_reduction([3, 4, 5], [-1, 0], keepdims=0)
    x = np.random.default_rng(0).uniform(0.5, 2, (3, 4, 5)).astype(np.float32)
    _compare_compiled(model, {"x": x})


def test_noop_with_empty_axes_applies_only_the_elementwise_part():
    model = _every_reduction([2, 3], [], noop_with_empty_axes=1)
    x = np.random.default_rng(1).uniform(0.5, 2, (2, 3)).astype(np.float32)
    mod, params = from_onnx(model)
    result = compile_graph(mod, params)(x=x)
    expected = {"ReduceL1": np.abs(x), "ReduceL2": np.abs(x), "ReduceSumSquare": x * x,
                "ReduceLogSum": np.log(x), "ReduceLogSumExp": x}  # fmt: skip
    for op, got in zip(REDUCE_OPS, result, strict=True):
        np.testing.assert_allclose(got, expected.get(op, x), rtol=1e-5)


def test_reductions_at_opset_13_take_axes_as_attributes_except_reduce_sum():
    nodes = [
        helper.make_node("ReduceSum", ["x", "axes"], ["s"], keepdims=0),
        helper.make_node("ReduceLogSumExp", ["x"], ["l"], axes=[1], keepdims=0),
    ]
    model = make_model(
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_empty_tensor_value_info(n) for n in "sl"],
        {"axes": np.array([1], np.int64)},
        opset=13,
    )
    check_against_onnxruntime(model)


def test_log_sum_exp_is_shifted_by_the_maximum():
    model = single_op_model("ReduceLogSumExp", {"x": (2, 3)}, opset=13, axes=[1], keepdims=1)
    x = np.array([[1000, 1001, 999], [-1000, -np.inf, -999]], np.float32)
    check_against_onnxruntime(model, inputs={"x": x}, compiled=True)


@pytest.mark.parametrize("op", ["ReduceMean", "ReduceL2", "ReduceProd", "ReduceMax"])
def test_integer_reductions_match_onnxruntime(op):
    model = _int_model(op, TensorProto.INT32, axes=[1], keepdims=0)
    x = np.array([[7, -3, 2], [5, 6, -9]], np.int32)
    check_against_onnxruntime(model, inputs={"x": x}, compiled=True)


def _int_model(op, elem_type, opset=13, **attrs):
    node = helper.make_node(op, ["x"], ["y"], **attrs)
    return make_model(
        [node],
        [helper.make_tensor_value_info("x", elem_type, [2, 3])],
        [helper.make_empty_tensor_value_info("y")],
        opset=opset,
    )


def test_log_reductions_refuse_integers():
    with pytest.raises(OnnxImportError, match="floating-point"):
        from_onnx(_int_model("ReduceLogSum", TensorProto.INT32, axes=[1]))


@pytest.mark.parametrize("select_last_index", [0, 1])
def test_arg_reductions_break_ties_as_asked(select_last_index):
    nodes = [
        helper.make_node(op, ["x"], [op], axis=1, select_last_index=select_last_index)
        for op in ("ArgMax", "ArgMin")
    ]
    model = make_model(
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_empty_tensor_value_info(n) for n in ("ArgMax", "ArgMin")],
    )
    x = np.array([[1, 3, 3, 1], [2, 2, 0, 0]], np.float32)
    check_against_onnxruntime(model, inputs={"x": x}, compiled=True)


def test_arg_reduction_over_an_empty_axis_is_refused():
    model = single_op_model("ArgMax", {"x": (2, 0)}, axis=1)
    with pytest.raises(OnnxImportError, match="empty"):
        from_onnx(model)


@pytest.mark.parametrize(("exclusive", "reverse"), [(0, 0), (1, 1)])
def test_cumprod_matches_onnxruntime(exclusive, reverse):
    model = single_op_model(
        "CumProd",
        {"x": (2, 4)},
        opset=26,
        initializers={"axis": np.array(-1, np.int64)},
        exclusive=exclusive,
        reverse=reverse,
    )
    x = np.array([[1, 2, 0, 3], [-1, 2, 2, 0.5]], np.float32)
    check_against_onnxruntime(model, inputs={"x": x}, compiled=True)


@pytest.mark.parametrize("opset", [11, 13])
def test_hardmax_is_one_at_the_first_maximum(opset):
    model = single_op_model("Hardmax", {"x": (2, 2, 3)}, opset=opset, axis=1)
    x = np.array([[[1, 5, 5], [5, 1, 0]], [[0, 0, 0], [0, 0, 0]]], np.float32)
    check_against_onnxruntime(model, inputs={"x": x}, compiled=True)


@pytest.mark.parametrize(
    ("equation", "shapes"),
    [
        ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
        ("...ii->...i", [(2, 3, 3)]),
        ("ij,jk,kl", [(2, 3), (3, 4), (4, 2)]),
        ("i,j->ij", [(3,), (2,)]),
        ("...j,j->...", [(2, 1, 3), (3,)]),
    ],
)
def test_einsum_matches_onnxruntime(equation, shapes):
    names = [f"x{i}" for i in range(len(shapes))]
    model = single_op_model(
        "Einsum", dict(zip(names, shapes, strict=True)), opset=12, equation=equation
    )
    check_against_onnxruntime(model, compiled=equation.startswith("bij"))


def test_integer_einsum_is_exact():
    node = helper.make_node("Einsum", ["a", "b"], ["y"], equation="ij,jk->ik")
    model = make_model(
        [node],
        [
            helper.make_tensor_value_info(n, TensorProto.INT64, s)
            for n, s in (("a", [2, 3]), ("b", [3, 2]))
        ],
        [helper.make_empty_tensor_value_info("y")],
        opset=12,
    )
    a = np.array([[2**40, 1, -3], [4, 5, 6]], np.int64)
    b = np.array([[1, 2], [3, 4], [5, 6]], np.int64)
    check_against_onnxruntime(model, inputs={"a": a, "b": b}, compiled=True)


@pytest.mark.parametrize(
    ("equation", "shapes"),
    [("...ii,...i->...i", [(2, 3, 3), (1, 3)]), ("bij,bjk->bki", [(2, 3, 4), (2, 4, 2)])],
)
def test_integer_einsum_is_one_einsum_call_and_matches_onnxruntime(equation, shapes):
    names = [f"x{i}" for i in range(len(shapes))]
    node = helper.make_node("Einsum", names, ["y"], equation=equation)
    model = make_model(
        [node],
        [
            helper.make_tensor_value_info(n, TensorProto.INT32, s)
            for n, s in zip(names, shapes, strict=True)
        ],
        [helper.make_empty_tensor_value_info("y")],
        opset=12,
    )
    calls = [
        c.op for c in post_order_exprs(from_onnx(model)[0]["main"].body) if isinstance(c, Call)
    ]
    assert [getattr(op, "name", op) for op in calls] == ["einsum"]
    rng = np.random.default_rng(3)
    inputs = {
        n: rng.integers(-9, 10, s).astype(np.int32) for n, s in zip(names, shapes, strict=True)
    }
    check_against_onnxruntime(model, inputs=inputs, compiled=True)


def test_einsum_over_an_empty_contraction_is_zero_compiled():
    """Regression: batch_matmul over an empty axis leaves its output unwritten; the einsum sums
    the broadcast product instead, which writes 0."""
    node = helper.make_node("Einsum", ["a", "b"], ["y"], equation="ij,jk->ik")
    model = make_model(
        [node],
        [
            helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 0]),
            helper.make_tensor_value_info("b", TensorProto.FLOAT, [0, 3]),
        ],
        [helper.make_empty_tensor_value_info("y")],
        opset=12,
    )
    a, b = np.zeros((2, 0), np.float32), np.zeros((0, 3), np.float32)
    np.testing.assert_array_equal(_run_compiled(model, {"a": a, "b": b})[0], np.zeros((2, 3)))
