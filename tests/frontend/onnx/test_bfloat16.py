"""bfloat16 models: tensors stored as bfloat16, arithmetic in float32 (tessel.frontend.onnx.half),
compiled to C and compared with NumPy in float32 rounded to bfloat16 by ml_dtypes (onnxruntime's
CPU provider has few bfloat16 kernels)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx_testing import evaluate_main, make_model, tensor

from tessel.frontend.onnx import from_onnx
from tessel.graph.executor import compile as compile_graph
from tessel.ir.target import Target

BF16 = TensorProto.BFLOAT16
bf16 = ml_dtypes.bfloat16


def _wide(array: np.ndarray) -> np.ndarray:
    return array.astype(np.float32)


def _mlp_model(weights: dict[str, np.ndarray]):
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"]),
        helper.make_node("Add", ["h", "b"], ["a"]),
        helper.make_node("Relu", ["a"], ["r"]),
        helper.make_node("Transpose", ["r"], ["y"], perm=[1, 0]),  # runs on bfloat16 itself
    ]
    return make_model(nodes, [tensor("x", [4, 8], BF16)], [tensor("y", None, BF16)], weights)


def _mlp_reference(x, w, b):
    """Each node in float32, its output rounded to bfloat16, as the importer computes it."""
    h = (_wide(x) @ _wide(w)).astype(bf16)
    return np.maximum(_wide(h) + _wide(b), 0).astype(bf16).T


def _same_bits(actual: np.ndarray, expected: np.ndarray) -> None:
    assert actual.dtype == expected.dtype == bf16, (actual.dtype, expected.dtype)
    np.testing.assert_array_equal(actual.view(np.uint16), expected.view(np.uint16))


def test_bfloat16_mlp_in_c_matches_float32_rounded_to_bfloat16_exactly():
    # Multiples of 1/16 of at most 8 bits: every float32 product and sum is exact, so the result
    # does not depend on the order of the sums and must match bit for bit.
    rng = np.random.default_rng(0)
    w = (rng.integers(-16, 17, (8, 6)) / 16).astype(bf16)
    b = (rng.integers(-16, 17, 6) / 8).astype(bf16)
    x = (rng.integers(-16, 17, (4, 8)) / 16).astype(bf16)
    mod, params = from_onnx(_mlp_model({"w": w, "b": b}))
    expected = _mlp_reference(x, w, b)
    _same_bits(compile_graph(mod, params)(x), expected)
    _same_bits(evaluate_main(mod, {"x": x, **params})[0], expected)


def test_bfloat16_mlp_on_random_values_is_within_one_rounding():
    rng = np.random.default_rng(1)
    w, b = rng.standard_normal((8, 6)).astype(bf16), rng.standard_normal(6).astype(bf16)
    x = rng.standard_normal((4, 8)).astype(bf16)
    mod, params = from_onnx(_mlp_model({"w": w, "b": b}))
    result = compile_graph(mod, params)(x)
    assert result.dtype == bf16
    # float32 sums in another order may round to the neighbouring bfloat16: 2**-8 relative.
    np.testing.assert_allclose(
        _wide(result), _wide(_mlp_reference(x, w, b)), rtol=2**-7, atol=2**-7
    )


def test_bfloat16_tensors_stay_bfloat16_between_nodes():
    weights = {"w": np.ones((8, 6), bf16), "b": np.zeros(6, bf16)}
    mod, _ = from_onnx(_mlp_model(weights))
    main = mod["main"]
    assert main.params[0].type_annotation.dtype == "bfloat16"
    assert main.ret_type.dtype == "bfloat16"
    assert "float32" in str(main)  # computed wide,
    assert main.body.op.name == "transpose"  # moved as bfloat16


def test_cast_to_bfloat16_and_back_rounds_to_nearest_even_like_ml_dtypes():
    node = helper.make_node("Cast", ["x"], ["y"], to=BF16)
    back = helper.make_node("Cast", ["y"], ["z"], to=TensorProto.FLOAT)
    model = make_model(
        [node, back], [tensor("x", [3, 37])], [tensor("y", None, BF16), tensor("z", None)]
    )
    x = np.random.default_rng(2).standard_normal((3, 37)).astype(np.float32) * 1000
    special = np.array(
        [
            0x3F808000,
            0x3F818000,
            0x7F7F8000,
            0x7F7FFFFF,
            0x7FC00001,
            0xFF800001,
            0x00000001,
            0x80008001,
            0x7F800000,
            0x80000000,
        ],
        np.uint32,
    )
    x[0, : special.size] = special.view(np.float32)  # ties, overflow, NaN, subnormals, inf, -0
    mod, params = from_onnx(model)
    y, z = compile_graph(mod, params)(x)
    with np.errstate(all="ignore"):
        expected = x.astype(bf16)
    _same_bits(y, expected)
    widened = expected.view(np.uint16).astype(np.uint32) << 16  # bfloat16 is float32's top half
    np.testing.assert_array_equal(z.view(np.uint32), widened)


def test_storage_operators_move_bfloat16_bits_unchanged():
    # Concat, Gather, Slice and Expand copy bfloat16 as it is: NaN payloads stay.
    nodes = [
        helper.make_node("Concat", ["a", "b"], ["c"], axis=0),
        helper.make_node("Gather", ["c", "rows"], ["g"], axis=0),
        helper.make_node("Slice", ["g", "starts", "ends", "axes"], ["s"]),
        helper.make_node("Expand", ["s", "shape"], ["y"]),
    ]
    table = {"rows": np.array([3, 0, 2], np.int64), "starts": np.array([1], np.int64),
             "ends": np.array([4], np.int64), "axes": np.array([1], np.int64),
             "shape": np.array([2, 3, 3], np.int64)}  # fmt: skip
    model = make_model(
        nodes,
        [tensor("a", [2, 5], BF16), tensor("b", [2, 5], BF16)],
        [tensor("y", None, BF16)],
        table,
    )
    rng = np.random.default_rng(3)
    a = rng.integers(0, 2**16, (2, 5), dtype=np.uint64).astype(np.uint16).view(bf16)
    b = rng.integers(0, 2**16, (2, 5), dtype=np.uint64).astype(np.uint16).view(bf16)
    mod, params = from_onnx(model)
    assert "float32" not in str(mod["main"])
    c = np.concatenate([a, b]).view(np.uint16)
    expected = np.broadcast_to(c[[3, 0, 2], 1:4], (2, 3, 3))
    np.testing.assert_array_equal(compile_graph(mod, params)(a, b).view(np.uint16), expected)


@pytest.mark.parametrize("link_params", [False, True])
def test_bfloat16_weights_reach_the_c_code_as_their_bits(link_params):
    # A Gather keeps its table bfloat16: a weight passed in, or linked into the library's blob.
    rng = np.random.default_rng(4)
    table = rng.integers(0, 2**16, (10, 4), dtype=np.uint64).astype(np.uint16).view(bf16)
    gather = helper.make_node("Gather", ["table", "ids"], ["y"])
    model = make_model(
        [gather],
        [tensor("ids", [3], TensorProto.INT64)],
        [tensor("y", None, BF16)],
        {"table": table},
    )
    mod, params = from_onnx(model)
    ids = np.array([7, 0, 9])
    result = compile_graph(mod, params, target=Target(link_params=link_params))(ids)
    np.testing.assert_array_equal(result.view(np.uint16), table[ids].view(np.uint16))
