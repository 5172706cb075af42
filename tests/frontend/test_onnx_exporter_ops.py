"""The ONNX operators and patterns PyTorch's two exporters write (IsNaN, IsInf, GatherND,
GatherElements, ScatterND, ScatterElements, Where, Expand, Range, CumSum, Trilu,
LayerNormalization, Gelu, shape subgraphs), checked against onnxruntime through the reference
evaluator and the compiled C."""

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx_testing import (
    FLOAT,
    INT64,
    calls,
    check_against_onnxruntime,
    make_model,
    tensor,
)

from tessel.frontend.onnx import OnnxImportError, from_onnx

RNG = np.random.default_rng(25)


def _floats(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _check(model, inputs, rtol=1e-4):
    """Compare with onnxruntime in the evaluator and in compiled C; returns the module."""
    return check_against_onnxruntime(model, inputs=inputs, rtol=rtol, compiled=True)


def _one_node(op_type, inputs, output, initializers=None, opset=17, **attrs):
    """A one-node model whose graph inputs are the (name, shape, elem type) triples `inputs`
    that are not initializers; the output's type comes from ONNX's inference."""
    initializers = dict(initializers or {})
    names = [name for name, _, _ in inputs]
    node = helper.make_node(op_type, names, [output], **attrs)
    graph_inputs = [tensor(n, s, t) for n, s, t in inputs if n not in initializers]
    out = helper.make_empty_tensor_value_info(output)
    return make_model([node], graph_inputs, [out], initializers, opset)


# ----------------------------------------------------------------------------------------------
# IsNaN, IsInf


def _special_values(shape):
    x = _floats(*shape).reshape(-1)
    x[::3], x[1::5], x[2::7] = np.nan, np.inf, -np.inf
    return x.reshape(shape)


@pytest.mark.parametrize("opset", [13, 20])
def test_isnan_is_exact_in_compiled_c(opset):
    model = _one_node("IsNaN", [("x", (3, 17), FLOAT)], "y", opset=opset)
    mod = _check(model, {"x": _special_values((3, 17))})
    assert calls(mod) == ["isnan"]


@pytest.mark.parametrize(("positive", "negative"), [(1, 1), (1, 0), (0, 1), (0, 0)])
def test_isinf_detects_the_chosen_infinities(positive, negative):
    model = _one_node(
        "IsInf",
        [("x", (2, 19), FLOAT)],
        "y",
        detect_positive=positive,
        detect_negative=negative,
    )
    _check(model, {"x": _special_values((2, 19))})


def test_softmax_nan_guard_where_isnan():
    """PyTorch guards masked softmax rows with Where(IsNaN(p), 0, p)."""
    nodes = [
        helper.make_node("Softmax", ["x"], ["p"], axis=-1),
        helper.make_node("IsNaN", ["p"], ["nan"]),
        helper.make_node("Where", ["nan", "zero", "p"], ["y"]),
    ]
    model = make_model(
        nodes,
        [tensor("x", (2, 3, 8))],
        [tensor("y", (2, 3, 8))],
        {"zero": np.zeros((), np.float32)},
    )
    x = _floats(2, 3, 8)
    x[1, 2, :] = -np.inf  # a fully masked row: softmax gives NaN, the guard gives 0
    with np.errstate(invalid="ignore"):  # the NumPy reference meets the NaN too
        _check(model, {"x": x})


# ----------------------------------------------------------------------------------------------
# GatherElements, GatherND


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_elements_with_negative_indices(axis):
    shape, index_shape = (3, 4, 5), (2, 3, 4)
    extent = shape[axis]
    indices = RNG.integers(-extent, extent, index_shape)
    model = _one_node(
        "GatherElements",
        [("x", shape, FLOAT), ("i", index_shape, INT64)],
        "y",
        axis=axis,
    )
    mod = _check(model, {"x": _floats(*shape), "i": indices})
    assert calls(mod) == ["gather"]


def test_gather_elements_with_constant_indices_and_zero_size():
    model = _one_node(
        "GatherElements",
        [("x", (3, 4), FLOAT), ("i", (0, 4), INT64)],
        "y",
        {"i": np.zeros((0, 4), np.int64)},
    )
    check_against_onnxruntime(model, inputs={"x": _floats(3, 4)})


@pytest.mark.parametrize(
    ("data_shape", "index_shape", "batch_dims"),
    [
        ((4, 5), (3, 2), 0),  # whole elements
        ((4, 5, 2), (2, 3, 1), 0),  # slices
        ((2, 4, 5), (2, 3, 1), 1),  # batched, as BERT's dynamo export picks the [CLS] rows
        ((2, 3, 4, 5), (2, 3, 2), 2),
    ],
)
def test_gather_nd(data_shape, index_shape, batch_dims):
    depth = index_shape[-1]
    extents = np.array(data_shape[batch_dims : batch_dims + depth])
    indices = RNG.integers(-extents, extents, index_shape)  # negative ones count from the end
    model = _one_node(
        "GatherND",
        [("x", data_shape, FLOAT), ("i", index_shape, INT64)],
        "y",
        batch_dims=batch_dims,
        opset=12,
    )
    mod = _check(model, {"x": _floats(*data_shape), "i": indices})
    assert calls(mod) == ["transpose", "gather_nd"]


def test_gather_nd_with_constant_indices_folds_their_layout():
    indices = np.array([[[0, -1]], [[1, 2]]])
    model = _one_node(
        "GatherND",
        [("x", (2, 3, 4), FLOAT), ("i", indices.shape, INT64)],
        "y",
        {"i": indices},
        batch_dims=1,
    )
    mod = _check(model, {"x": _floats(2, 3, 4)})
    assert calls(mod) == ["gather_nd"]


# ----------------------------------------------------------------------------------------------
# ScatterElements, ScatterND


def _distinct_along(axis, shape, extent):
    """Indices of `shape` in [0, extent), distinct along `axis`."""
    others = shape[:axis] + shape[axis + 1 :]
    rows = [RNG.permutation(extent)[: shape[axis]] for _ in range(int(np.prod(others)))]
    return np.moveaxis(np.array(rows).reshape(*others, shape[axis]), -1, axis)


@pytest.mark.parametrize(
    ("reduction", "opset"),
    [("none", 13), ("add", 16), ("mul", 16), ("max", 18), ("min", 18)],
)
@pytest.mark.parametrize("axis", [0, -1])
def test_scatter_elements(reduction, opset, axis):
    shape, update_shape = (4, 5), (3, 4)
    extent = shape[axis]
    if reduction == "none":  # distinct targets, else the result is unspecified
        indices = _distinct_along(axis % 2, update_shape, extent) - extent
    else:
        indices = RNG.integers(-extent, extent, update_shape)
    attrs = {"reduction": reduction} if opset >= 16 else {}
    model = _one_node(
        "ScatterElements",
        [("x", shape, FLOAT), ("i", update_shape, INT64), ("u", update_shape, FLOAT)],
        "y",
        opset=opset,
        axis=axis,
        **attrs,
    )
    inputs = {"x": _floats(*shape), "i": indices, "u": _floats(*update_shape)}
    mod = _check(model, inputs)
    assert calls(mod) == ["scatter_elements"]


@pytest.mark.parametrize(
    ("reduction", "opset"),
    [("none", 11), ("none", 13), ("add", 16), ("mul", 16), ("max", 18), ("min", 18)],
)
def test_scatter_nd_slices(reduction, opset):
    data_shape, index_shape = (5, 3, 2), (2, 2, 1)  # 4 index tuples of depth 1: rows of (3, 2)
    if reduction == "none":
        indices = np.array([[[0], [-1]], [[2], [-4]]])
    else:
        indices = np.array([[[0], [-1]], [[4], [-5]]])  # rows 0 and 4 twice each
    attrs = {"reduction": reduction} if opset >= 16 else {}
    model = _one_node(
        "ScatterND",
        [("x", data_shape, FLOAT), ("i", index_shape, INT64), ("u", (2, 2, 3, 2), FLOAT)],
        "y",
        opset=opset,
        **attrs,
    )
    inputs = {"x": _floats(*data_shape), "i": indices, "u": _floats(2, 2, 3, 2)}
    _check(model, inputs)


def test_scatter_nd_elements_with_constant_indices():
    indices = np.array([[0, 1], [-1, -1], [1, 0]])
    model = _one_node(
        "ScatterND",
        [("x", (2, 3), FLOAT), ("i", indices.shape, INT64), ("u", (3,), FLOAT)],
        "y",
        {"i": indices},
    )
    mod = _check(model, {"x": _floats(2, 3), "u": _floats(3)})
    assert calls(mod) == ["scatter_nd"]


def test_scatter_with_no_updates_copies_the_data():
    model = _one_node(
        "ScatterND",
        [("x", (2, 3), FLOAT), ("i", (0, 1), INT64), ("u", (0, 3), FLOAT)],
        "y",
    )
    _check(model, {"x": _floats(2, 3), "i": np.zeros((0, 1), np.int64), "u": _floats(0, 3)})


# ----------------------------------------------------------------------------------------------
# Where, Expand, Range, CumSum, Trilu


def test_where_broadcasts_all_three_operands():
    model = _one_node(
        "Where",
        [("c", (2, 1, 4), TensorProto.BOOL), ("x", (3, 1), FLOAT), ("y", (1,), FLOAT)],
        "z",
    )
    inputs = {"c": RNG.random((2, 1, 4)) < 0.5, "x": _floats(3, 1), "y": _floats(1)}
    mod = _check(model, inputs)
    assert calls(mod) == ["where"]


def test_expand_to_a_shape_computed_from_shapes_folds():
    """Expand(x, Concat(Unsqueeze(Gather(Shape(y), 0)) * 2, [1, 4])), a two-way broadcast: the
    shape arithmetic folds at import, so only broadcast_to and the arithmetic on data remain."""
    nodes = [
        helper.make_node("Shape", ["y"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["batch"], axis=0),
        helper.make_node("Unsqueeze", ["batch", "axes"], ["b1"]),
        helper.make_node("Mul", ["b1", "two"], ["b2"]),
        helper.make_node("Concat", ["b2", "ones"], ["target"], axis=0),
        helper.make_node("Expand", ["x", "target"], ["e"]),
        helper.make_node("Add", ["e", "y2"], ["z"]),
    ]
    inits = {
        "zero": np.array(0),
        "axes": np.array([0]),
        "two": np.array([2]),
        "ones": np.array([1, 4]),
    }
    model = make_model(
        nodes,
        [tensor("x", (3, 1)), tensor("y", (3, 5)), tensor("y2", (6, 1, 4))],
        [tensor("z", (6, 3, 4))],
        inits,
    )
    inputs = {"x": _floats(3, 1), "y": _floats(3, 5), "y2": _floats(6, 1, 4)}
    mod = _check(model, inputs)
    assert calls(mod) == ["broadcast_to", "add"]


def test_attention_mask_subgraph_folds_range_and_comparisons():
    """The causal mask transformers builds: Range over a sequence length read from a shape,
    compared with itself unsqueezed, turned into a large negative bias with Where; it all folds
    to a constant."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "one"], ["n"], axis=0),
        helper.make_node("Range", ["start", "n", "step"], ["pos"]),
        helper.make_node("Unsqueeze", ["pos", "last"], ["col"]),
        helper.make_node("LessOrEqual", ["pos", "col"], ["causal"]),
        helper.make_node(
            "ConstantOfShape",
            ["s2"],
            ["fill"],
            value=helper.make_tensor("v", TensorProto.FLOAT, [1], [-1e9]),
        ),
        helper.make_node("Where", ["causal", "zeros", "fill"], ["mask"]),
        helper.make_node("Cast", ["n"], ["nf"], to=TensorProto.FLOAT),
        helper.make_node("Div", ["x", "nf"], ["xs"]),
        helper.make_node("Add", ["xs", "mask"], ["y"]),
    ]
    inits = {
        "one": np.array(1),
        "start": np.array(0),
        "step": np.array(1),
        "last": np.array([-1]),
        "s2": np.array([5, 5]),
        "zeros": np.zeros((), np.float32),
    }
    model = make_model(nodes, [tensor("x", (2, 5, 5))], [tensor("y", (2, 5, 5))], inits)
    mod = _check(model, {"x": _floats(2, 5, 5)})
    assert calls(mod) == ["divide", "add"]


@pytest.mark.parametrize(("exclusive", "reverse"), [(0, 0), (1, 0), (0, 1), (1, 1)])
@pytest.mark.parametrize("axis", [1, -1])
def test_cumsum(exclusive, reverse, axis):
    model = _one_node(
        "CumSum",
        [("x", (2, 5, 3), FLOAT), ("axis", (), INT64)],
        "y",
        {"axis": np.array(axis)},
        exclusive=exclusive,
        reverse=reverse,
    )
    _check(model, {"x": _floats(2, 5, 3)}, rtol=1e-5)


def test_cumsum_of_integers_as_position_ids():
    """Position ids from an attention mask: CumSum(mask, 1) * mask - 1."""
    model = _one_node(
        "CumSum",
        [("m", (2, 7), INT64), ("axis", (), TensorProto.INT32)],
        "y",
        {"axis": np.array(1, np.int32)},
    )
    _check(model, {"m": RNG.integers(0, 2, (2, 7))})


@pytest.mark.parametrize("upper", [0, 1])
@pytest.mark.parametrize("k", [None, 0, 2, -1, -9])
def test_trilu(upper, k):
    initializers = {} if k is None else {"k": np.array(k)}
    inputs = [("x", (2, 4, 5), FLOAT)] + ([] if k is None else [("k", (), INT64)])
    model = _one_node("Trilu", inputs, "y", initializers, opset=14, upper=upper)
    mod = _check(model, {"x": _floats(2, 4, 5)})
    assert calls(mod) == ["trilu"]


def test_trilu_with_k_from_the_graph_and_zero_rows():
    model = _one_node("Trilu", [("x", (0, 3), FLOAT), ("k", (), INT64)], "y", opset=14)
    check_against_onnxruntime(model, inputs={"x": _floats(0, 3), "k": np.array(1)}, compiled=True)
    model = _one_node("Trilu", [("x", (3, 3), FLOAT), ("k", (), INT64)], "y", opset=14, upper=0)
    _check(model, {"x": _floats(3, 3), "k": np.array(-1)})


# ----------------------------------------------------------------------------------------------
# LayerNormalization, Gelu and the erf form of GELU


@pytest.mark.parametrize("axis", [-1, -2, 1])
def test_layer_norm_with_mean_and_inv_std_dev(axis):
    shape = (2, 3, 4)
    scale_shape = shape[axis % 3 :]
    node = helper.make_node(
        "LayerNormalization", ["x", "w", "b"], ["y", "mean", "inv"], axis=axis, epsilon=1e-3
    )
    model = make_model(
        [node],
        [tensor("x", shape)],
        [helper.make_empty_tensor_value_info(n) for n in ("y", "mean", "inv")],
        {"w": _floats(*scale_shape), "b": _floats(*scale_shape)},
    )
    _check(model, {"x": _floats(*shape)})


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu(approximate):
    model = _one_node("Gelu", [("x", (3, 7), FLOAT)], "y", opset=20, approximate=approximate)
    _check(model, {"x": _floats(3, 7)})


def test_erf_gelu_pattern():
    """x * 0.5 * (1 + Erf(x / sqrt(2))), as the TorchScript exporter writes nn.GELU."""
    nodes = [
        helper.make_node("Div", ["x", "sqrt2"], ["s"]),
        helper.make_node("Erf", ["s"], ["e"]),
        helper.make_node("Add", ["e", "one"], ["p"]),
        helper.make_node("Mul", ["x", "p"], ["m"]),
        helper.make_node("Mul", ["m", "half"], ["y"]),
    ]
    inits = {
        "sqrt2": np.array(np.sqrt(2), np.float32),
        "one": np.array(1, np.float32),
        "half": np.array(0.5, np.float32),
    }
    model = make_model(nodes, [tensor("x", (4, 9))], [tensor("y", (4, 9))], inits)
    _check(model, {"x": _floats(4, 9) * 3})


# ----------------------------------------------------------------------------------------------
# Shape subgraphs fold at import


def test_reshape_to_a_shape_computed_from_shapes_leaves_only_the_reshape():
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "i0"], ["d0"], axis=0),
        helper.make_node("Gather", ["s", "i1"], ["d1"], axis=0),
        helper.make_node("Gather", ["s", "i2"], ["d2"], axis=0),
        helper.make_node("Mul", ["d1", "d2"], ["d12"]),
        helper.make_node("Unsqueeze", ["d0", "axes"], ["u0"]),
        helper.make_node("Unsqueeze", ["d12", "axes"], ["u12"]),
        helper.make_node("Concat", ["u0", "u12"], ["target"], axis=0),
        helper.make_node("Equal", ["target", "zeros"], ["is_zero"]),
        helper.make_node("Where", ["is_zero", "ones", "target"], ["safe"]),
        helper.make_node("Reshape", ["x", "safe"], ["y"]),
    ]
    inits = {
        "i0": np.array(0),
        "i1": np.array(1),
        "i2": np.array(2),
        "axes": np.array([0]),
        "zeros": np.zeros(2, np.int64),
        "ones": np.ones(2, np.int64),
    }
    model = make_model(nodes, [tensor("x", (2, 3, 4))], [tensor("y", (2, 12))], inits)
    mod = _check(model, {"x": _floats(2, 3, 4)})
    assert calls(mod) == ["reshape"]


@pytest.mark.parametrize(
    ("op_type", "indices"),
    [("GatherElements", [[0, 3]]), ("GatherND", [[0, 3]]), ("ScatterElements", [[-4, 0]])],
)
def test_known_indices_out_of_range_are_an_import_error(op_type, indices):
    indices = np.array(indices)
    inputs = [("x", (3, 3), FLOAT), ("i", indices.shape, INT64)]
    if op_type.startswith("Scatter"):
        inputs.append(("u", indices.shape, FLOAT))
    node = helper.make_node(op_type, [n for n, _, _ in inputs], ["y"])
    graph_inputs = [tensor(n, s, t) for n, s, t in inputs if n != "i"]
    model = make_model([node], graph_inputs, [tensor("y", None)], {"i": indices})
    with pytest.raises(OnnxImportError, match="out of range"):
        from_onnx(model)


def test_layer_norm_statistics_take_the_stash_type():
    """Mean and InvStdDev have stash_type's dtype (float32) whatever the input's."""
    node = helper.make_node(
        "LayerNormalization", ["x", "w"], ["y", "mean", "inv"], axis=1, stash_type=1
    )
    model = make_model(
        [node],
        [tensor("x", (2, 5), TensorProto.DOUBLE)],
        [helper.make_empty_tensor_value_info(n) for n in ("y", "mean", "inv")],
        {"w": RNG.standard_normal(5)},
    )
    _check(model, {"x": RNG.standard_normal((2, 5))})
