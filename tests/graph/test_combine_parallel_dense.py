"""CombineParallelDense: both strategies as Before/Expected (TVM's test programs, in the text
format), each checked on random inputs by the reference evaluator and by the compiled C, and
the cost model's choice."""

import numpy as np
import pytest
from graph_pass_checks import assert_same_values, check_pass, random_inputs

from tessel import graph
from tessel.graph import parse
from tessel.graph.expr import Call
from tessel.graph.passes import InferType
from tessel.graph.passes.combine_parallel_dense import (
    STRATEGY_CHOOSER,
    CombineParallelDense,
)
from tessel.graph.traversal import post_order_exprs
from tessel.ir.expr import Op
from tessel.ir.transform import PassContext
from tessel.support.errors import UserError

FOUR_DENSES = """def @main(%x: Tensor[(3, 4), float32], %w1: Tensor[(5, 4), float32],
                    %w2: Tensor[(5, 4), float32], %w3: Tensor[(6, 4), float32],
                    %w4: Tensor[(5, 4), float32]) {
  %0 = nn.dense(%x, %w1);
  %1 = nn.dense(%x, %w2);
  %2 = nn.dense(%x, %w3);
  %3 = nn.dense(%x, %w4);
  (%0, %1, %2, %3)
}"""

FOUR_DENSES_BATCHED = """def @main(%x: Tensor[(3, 4), float32], %w1: Tensor[(5, 4), float32],
                    %w2: Tensor[(5, 4), float32], %w3: Tensor[(6, 4), float32],
                    %w4: Tensor[(5, 4), float32]) {
  %0 = stack((%x, %x, %x), axis=0);
  %1 = stack((%w1, %w2, %w4), axis=0);
  %2 = nn.batch_matmul(%0, %1);
  %3 = split(%2, indices_or_sections=3, axis=0);
  %4 = squeeze(%3.0, axis=[0]);
  %5 = squeeze(%3.1, axis=[0]);
  %6 = nn.dense(%x, %w3);
  %7 = squeeze(%3.2, axis=[0]);
  (%4, %5, %6, %7)
}"""

FOUR_DENSES_CONCATENATED = """def @main(%x: Tensor[(3, 4), float32], %w1: Tensor[(5, 4), float32],
                    %w2: Tensor[(5, 4), float32], %w3: Tensor[(6, 4), float32],
                    %w4: Tensor[(5, 4), float32]) {
  %0 = concatenate((%w1, %w2, %w3, %w4), axis=0);
  %1 = nn.dense(%x, %0, units=21);
  %2 = strided_slice(%1, begin=[0, 0], end=[-1, 5], strides=[1, 1], slice_mode="size");
  %3 = strided_slice(%1, begin=[0, 5], end=[-1, 5], strides=[1, 1], slice_mode="size");
  %4 = strided_slice(%1, begin=[0, 10], end=[-1, 6], strides=[1, 1], slice_mode="size");
  %5 = strided_slice(%1, begin=[0, 16], end=[-1, 5], strides=[1, 1], slice_mode="size");
  (%2, %3, %4, %5)
}"""


def test_batch_strategy_leaves_a_dense_of_another_width_alone():
    check_pass(
        CombineParallelDense(min_num_branches=2, to_batch=True), FOUR_DENSES, FOUR_DENSES_BATCHED
    )


def test_concat_strategy_combines_different_widths():
    check_pass(
        CombineParallelDense(min_num_branches=3, to_batch=False),
        FOUR_DENSES,
        FOUR_DENSES_CONCATENATED,
    )


TWO_LAYERS = """def @main(%x: Tensor[(3, 4), float32], %w1: Tensor[(5, 4), float32],
                    %w2: Tensor[(5, 4), float32], %v1: Tensor[(6, 10), float32],
                    %v2: Tensor[(6, 10), float32]) {
  %0 = nn.dense(%x, %w1);
  %1 = nn.dense(%x, %w2);
  %2 = concatenate((%0, %1), axis=1);
  %3 = nn.dense(%2, %v1);
  %4 = nn.dense(%2, %v2);
  (%3, %4)
}"""

TWO_LAYERS_CONCATENATED = """def @main(%x: Tensor[(3, 4), float32], %w1: Tensor[(5, 4), float32],
                    %w2: Tensor[(5, 4), float32], %v1: Tensor[(6, 10), float32],
                    %v2: Tensor[(6, 10), float32]) {
  %0 = concatenate((%w1, %w2), axis=0);
  %1 = nn.dense(%x, %0, units=10);
  %2 = strided_slice(%1, begin=[0, 0], end=[-1, 5], strides=[1, 1], slice_mode="size");
  %3 = strided_slice(%1, begin=[0, 5], end=[-1, 5], strides=[1, 1], slice_mode="size");
  %4 = concatenate((%2, %3), axis=1);
  %5 = concatenate((%v1, %v2), axis=0);
  %6 = nn.dense(%4, %5, units=12);
  %7 = strided_slice(%6, begin=[0, 0], end=[-1, 6], strides=[1, 1], slice_mode="size");
  %8 = strided_slice(%6, begin=[0, 6], end=[-1, 6], strides=[1, 1], slice_mode="size");
  (%7, %8)
}"""


def test_a_group_reading_another_groups_results_reads_them_combined():
    """Two layers' groups are combined in one round: the second layer's products read the
    first layer's slices of its combined product, not the separate products it replaced."""
    check_pass(
        CombineParallelDense(min_num_branches=2, to_batch=False),
        TWO_LAYERS,
        TWO_LAYERS_CONCATENATED,
    )


def test_fewer_branches_than_the_minimum_are_left_alone():
    check_pass(CombineParallelDense(min_num_branches=5, to_batch=False), FOUR_DENSES, None)
    # three of one width: fewer than 4 for the batch strategy
    check_pass(CombineParallelDense(min_num_branches=4, to_batch=True), FOUR_DENSES, None)


def test_products_of_different_inputs_are_left_alone():
    before = """def @main(%x: Tensor[(3, 4), float32], %y: Tensor[(3, 4), float32],
                          %z: Tensor[(2, 4), float32], %w1: Tensor[(5, 4), float32],
                          %w2: Tensor[(5, 4), float32], %w3: Tensor[(5, 4), float32]) {
      (nn.dense(%x, %w1), nn.dense(%y, %w2), nn.dense(%z, %w3))
    }"""
    check_pass(CombineParallelDense(min_num_branches=2, to_batch=False), before, None)
    check_pass(CombineParallelDense(min_num_branches=2, to_batch=True), before, None)


BIAS_ADD = """def @main(%x: Tensor[(3, 4), float32], %w1: Tensor[(5, 4), float32],
                    %w2: Tensor[(5, 4), float32], %b1: Tensor[{bias}, float32],
                    %b2: Tensor[{bias}, float32]) {{
  %0 = nn.dense(%x, %w1);
  %1 = nn.dense(%x, %w2);
  (add(%0, %b1), add(%1, %b2))
}}"""

BIAS_ADD_BATCHED = """def @main(%x: Tensor[(3, 4), float32], %w1: Tensor[(5, 4), float32],
                    %w2: Tensor[(5, 4), float32], %b1: Tensor[{bias}, float32],
                    %b2: Tensor[{bias}, float32]) {{
  %0 = stack((%x, %x), axis=0);
  %1 = stack((%w1, %w2), axis=0);
  %2 = nn.batch_matmul(%0, %1);
  %3 = stack(({b1}, {b2}), axis=0);
  %4 = add(%2, %3);
  %5 = split(%4, indices_or_sections=2, axis=0);
  (squeeze(%5.0, axis=[0]), squeeze(%5.1, axis=[0]))
}}"""


@pytest.mark.parametrize("bias", ["(5)", "(3, 5)"])
def test_batch_strategy_combines_the_bias_add(bias):
    raised = ("expand_dims(%b1, axis=0)", "expand_dims(%b2, axis=0)")
    b1, b2 = raised if bias == "(5)" else ("%b1", "%b2")
    expected = BIAS_ADD_BATCHED.format(bias=bias, b1=b1, b2=b2)
    check_pass(
        CombineParallelDense(min_num_branches=2, to_batch=True),
        BIAS_ADD.format(bias=bias),
        expected,
    )


SCALE_RESHAPE = """def @main(%x: Tensor[(3, 4), float32], %w1: Tensor[(5, 4), float32],
                    %w2: Tensor[({j2}, 4), float32], %b1: Tensor[(5), float32],
                    %b2: Tensor[({j2}), float32], %s1: Tensor[(1), float32],
                    %s2: Tensor[(1), float32]) {{
  %0 = nn.dense(%x, %w1);
  %1 = nn.dense(%x, %w2);
  %2 = add(%0, %b1);
  %3 = add(%1, %b2);
  %4 = multiply(%2, %s1);
  %5 = multiply(%3, %s2);
  (reshape(%4, newshape=[1, 1, 15]), reshape(%5, newshape=[1, 1, {n2}]))
}}"""


def test_batch_strategy_combines_bias_and_scale_then_reshapes_each_branch():
    expected = """def @main(%x: Tensor[(3, 4), float32], %w1: Tensor[(5, 4), float32],
                    %w2: Tensor[(5, 4), float32], %b1: Tensor[(5), float32],
                    %b2: Tensor[(5), float32], %s1: Tensor[(1), float32],
                    %s2: Tensor[(1), float32]) {
      %0 = nn.batch_matmul(stack((%x, %x), axis=0), stack((%w1, %w2), axis=0));
      %1 = stack((expand_dims(%b1, axis=0), expand_dims(%b2, axis=0)), axis=0);
      %2 = add(%0, %1);
      %3 = stack((expand_dims(%s1, axis=0), expand_dims(%s2, axis=0)), axis=0);
      %4 = multiply(%2, %3);
      %5 = split(%4, indices_or_sections=2, axis=0);
      %6 = reshape(squeeze(%5.0, axis=[0]), newshape=[1, 1, 15]);
      %7 = reshape(squeeze(%5.1, axis=[0]), newshape=[1, 1, 15]);
      (%6, %7)
    }"""
    check_pass(
        CombineParallelDense(min_num_branches=2, to_batch=True),
        SCALE_RESHAPE.format(j2=5, n2=15),
        expected,
    )


def test_concat_strategy_repeats_scales_and_concatenates_biases():
    expected = """def @main(%x: Tensor[(3, 4), float32], %w1: Tensor[(5, 4), float32],
                    %w2: Tensor[(10, 4), float32], %b1: Tensor[(5), float32],
                    %b2: Tensor[(10), float32], %s1: Tensor[(1), float32],
                    %s2: Tensor[(1), float32]) {
      %0 = nn.dense(%x, concatenate((%w1, %w2), axis=0), units=15);
      %1 = add(%0, concatenate((%b1, %b2), axis=0));
      %2 = repeat(%s1, repeats=5, axis=0);
      %3 = repeat(%s2, repeats=10, axis=0);
      %4 = multiply(%1, concatenate((%2, %3), axis=0));
      %5 = strided_slice(%4, begin=[0, 0], end=[-1, 5], strides=[1, 1], slice_mode="size");
      %6 = strided_slice(%4, begin=[0, 5], end=[-1, 10], strides=[1, 1], slice_mode="size");
      (reshape(%5, newshape=[1, 1, 15]), reshape(%6, newshape=[1, 1, 30]))
    }"""
    check_pass(
        CombineParallelDense(min_num_branches=2, to_batch=False),
        SCALE_RESHAPE.format(j2=10, n2=30),
        expected,
    )


# TVM's test_combine_parallel_dense_flat_biasadd shapes: j = 5, the second width 10.
BIAS_SHAPES = [
    ((), ()), ((1,), (1,)), ((5,), (1,)), ((1,), (10,)), ((3, 1), (3, 1)), ((3, 5), (3, 10)),
    ((3, 1), (3, 10)), ((3, 5), (3, 1)), ((9, 3, 5), (9, 3, 10)), ((9, 3, 5), (9, 3, 1)),
    ((9, 3, 1), (9, 3, 10)),
]  # fmt: skip


def _shape(shape):
    return "(" + ", ".join(map(str, shape)) + ")" if shape else "()"


def _widened(var, shape, width):
    if not shape:
        return f"repeat(expand_dims({var}, axis=-1), repeats={width}, axis=0)"
    if shape[-1] == 1:
        return f"repeat({var}, repeats={width}, axis={len(shape) - 1})"
    return var


@pytest.mark.parametrize(("shape1", "shape2"), BIAS_SHAPES, ids=str)
def test_concat_strategy_widens_each_bias_shape(shape1, shape2):
    params = f"""%x: Tensor[(3, 4), float32], %w1: Tensor[(5, 4), float32],
                %w2: Tensor[(10, 4), float32], %b1: Tensor[{_shape(shape1)}, float32],
                %b2: Tensor[{_shape(shape2)}, float32]"""
    before = f"""def @main({params}) {{
      (add(nn.dense(%x, %w1), %b1), add(nn.dense(%x, %w2), %b2))
    }}"""
    rank = max(len(shape1), 2)
    lead = ", ".join(["0"] * (rank - 1))
    ends = ", ".join(["-1"] * (rank - 1))
    axis = max(len(shape1) - 1, 0)
    expected = f"""def @main({params}) {{
      %0 = nn.dense(%x, concatenate((%w1, %w2), axis=0), units=15);
      %1 = concatenate(({_widened("%b1", shape1, 5)}, {_widened("%b2", shape2, 10)}), axis={axis});
      %2 = add(%0, %1);
      %3 = strided_slice(%2, begin=[{lead}, 0], end=[{ends}, 5], strides=[{", ".join(["1"] * rank)}], slice_mode="size");
      %4 = strided_slice(%2, begin=[{lead}, 5], end=[{ends}, 10], strides=[{", ".join(["1"] * rank)}], slice_mode="size");
      (%3, %4)
    }}"""  # noqa: E501
    check_pass(CombineParallelDense(min_num_branches=2, to_batch=False), before, expected)


def test_concat_strategy_combines_matmul_reshape_and_activation_of_nd_data():
    """nn.matmul with [K, N] weights concatenates along axis 1; a reshape that keeps the last
    axis and the activation after it are combined too; a shared scalar operand stays shared."""
    before = """def @main(%x: Tensor[(6, 8), float32], %w1: Tensor[(8, 4), float32],
                          %w2: Tensor[(8, 4), float32], %w3: Tensor[(8, 2), float32],
                          %s: Tensor[(), float32]) {
      %0 = nn.matmul(%x, %w1);
      %1 = nn.matmul(%x, %w2);
      %2 = nn.matmul(%x, %w3);
      %3 = reshape(%0, newshape=[2, 3, 4]);
      %4 = reshape(%1, newshape=[2, 3, 4]);
      %5 = reshape(%2, newshape=[2, 3, 2]);
      %6 = multiply(%3, %s);
      %7 = multiply(%4, %s);
      %8 = multiply(%5, %s);
      (sigmoid(%6), sigmoid(%7), sigmoid(%8))
    }"""
    expected = """def @main(%x: Tensor[(6, 8), float32], %w1: Tensor[(8, 4), float32],
                          %w2: Tensor[(8, 4), float32], %w3: Tensor[(8, 2), float32],
                          %s: Tensor[(), float32]) {
      %0 = nn.matmul(%x, concatenate((%w1, %w2, %w3), axis=1), units=10);
      %1 = sigmoid(multiply(reshape(%0, newshape=[2, 3, 10]), %s));
      (strided_slice(%1, begin=[0, 0, 0], end=[-1, -1, 4], strides=[1, 1, 1], slice_mode="size"),
       strided_slice(%1, begin=[0, 0, 4], end=[-1, -1, 4], strides=[1, 1, 1], slice_mode="size"),
       strided_slice(%1, begin=[0, 0, 8], end=[-1, -1, 2], strides=[1, 1, 1], slice_mode="size"))
    }"""
    check_pass(CombineParallelDense(min_num_branches=3, to_batch=False), before, expected)


def test_equal_data_computed_twice_counts_as_one_input():
    """Importers write one reshape per MatMul: products of equal reshapes of %x are combined."""
    before = """def @main(%x: Tensor[(1, 3, 4), float32], %w1: Tensor[(5, 4), float32],
                          %w2: Tensor[(5, 4), float32], %w3: Tensor[(5, 4), float32]) {
      (nn.dense(reshape(%x, newshape=[3, 4]), %w1), nn.dense(reshape(%x, newshape=[3, 4]), %w2),
       nn.dense(reshape(%x, newshape=[3, 4]), %w3))
    }"""
    after = check_pass(
        CombineParallelDense(to_batch=True),
        before,
        """
    def @main(%x: Tensor[(1, 3, 4), float32], %w1: Tensor[(5, 4), float32],
              %w2: Tensor[(5, 4), float32], %w3: Tensor[(5, 4), float32]) {
      %0 = reshape(%x, newshape=[3, 4]);
      %1 = nn.batch_matmul(stack((%0, %0, %0), axis=0), stack((%w1, %w2, %w3), axis=0));
      %2 = split(%1, indices_or_sections=3, axis=0);
      (squeeze(%2.0, axis=[0]), squeeze(%2.1, axis=[0]), squeeze(%2.2, axis=[0]))
    }""",
    )
    assert after is not None


def test_a_level_whose_operand_reads_another_branch_is_not_combined():
    before = """def @main(%x: Tensor[(3, 4), float32], %w1: Tensor[(5, 4), float32],
                          %w2: Tensor[(5, 4), float32], %w3: Tensor[(5, 4), float32]) {
      %0 = nn.dense(%x, %w1);
      %1 = nn.dense(%x, %w2);
      %2 = nn.dense(%x, %w3);
      %3 = nn.relu(%0);
      (add(%1, %3), add(%2, %3))
    }"""
    expected = """def @main(%x: Tensor[(3, 4), float32], %w1: Tensor[(5, 4), float32],
                          %w2: Tensor[(5, 4), float32], %w3: Tensor[(5, 4), float32]) {
      %0 = nn.dense(%x, concatenate((%w2, %w1, %w3), axis=0), units=15);
      %1 = strided_slice(%0, begin=[0, 0], end=[-1, 5], strides=[1, 1], slice_mode="size");
      %2 = strided_slice(%0, begin=[0, 5], end=[-1, 5], strides=[1, 1], slice_mode="size");
      %3 = nn.relu(%2);
      %4 = strided_slice(%0, begin=[0, 10], end=[-1, 5], strides=[1, 1], slice_mode="size");
      (add(%1, %3), add(%4, %3))
    }"""
    # products in evaluation order: the first output's %w2 before %w1
    check_pass(CombineParallelDense(min_num_branches=3, to_batch=False), before, expected)


def _chooser(strategy):
    return PassContext(config={STRATEGY_CHOOSER: lambda products: strategy})


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        ("batch", FOUR_DENSES_BATCHED),
        ("concat", FOUR_DENSES_CONCATENATED),
        ("separate", None),
    ],
)
def test_the_chooser_decides_when_to_batch_is_none(strategy, expected):
    mod = parse(FOUR_DENSES.replace("(6, 4)", "(5, 4)") if strategy == "batch" else FOUR_DENSES)
    after = CombineParallelDense(min_num_branches=3)(mod, _chooser(strategy))
    if expected is None:
        assert after is mod
    else:
        assert ("nn.batch_matmul" if strategy == "batch" else "concatenate") in str(after)
        assert_same_values(mod, after)


def test_a_chooser_asking_to_batch_unequal_widths_is_refused():
    with pytest.raises(UserError, match="weights of one shape"):
        CombineParallelDense(min_num_branches=3)(parse(FOUR_DENSES), _chooser("batch"))


def test_min_num_branches_below_two_is_refused():
    with pytest.raises(UserError, match="min_num_branches"):
        CombineParallelDense(min_num_branches=1, to_batch=False)(parse(FOUR_DENSES))


def _compiled_outputs(mod, inputs):
    compiled = graph.compile(mod)
    return compiled(*inputs)


@pytest.mark.parametrize("to_batch", [True, False])
@pytest.mark.parametrize("branches", [3, 4])
def test_combined_graphs_compile_to_the_same_results(to_batch, branches):
    """Both strategies, 3 and 4 branches with bias, scale and activation, compiled to C."""
    widths = [8] * branches if to_batch else [8, 16, 4, 12][:branches]
    params = ", ".join(
        [
            f"%w{k}: Tensor[({w}, 32), float32], %b{k}: Tensor[({w}), float32]"
            for k, w in enumerate(widths)
        ]
    )
    outputs = ", ".join(
        f"nn.relu(multiply(add(nn.dense(%x, %w{k}), %b{k}), 0.5f))" for k in range(branches)
    )
    text = f"def @main(%x: Tensor[(6, 32), float32], {params}) {{ ({outputs}) }}"
    before = InferType()(parse(text))
    after = CombineParallelDense(to_batch=to_batch)(before)
    assert ("nn.batch_matmul" if to_batch else "units=") in str(after)
    inputs = random_inputs(before, seed=3)
    expected = _compiled_outputs(before, inputs)
    for got, want in zip(_compiled_outputs(after, inputs), expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def _three_projections(path):
    """An ONNX model with Q/K/V-style projections of one input, each with a bias."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    nodes, weights = [], []
    for name in "qkv":
        weights.append(
            numpy_helper.from_array(rng.standard_normal((8, 8)).astype("float32"), f"w{name}")
        )
        weights.append(
            numpy_helper.from_array(rng.standard_normal(8).astype("float32"), f"b{name}")
        )
        nodes += [
            helper.make_node("MatMul", ["x", f"w{name}"], [f"m{name}"]),
            helper.make_node("Add", [f"m{name}", f"b{name}"], [name]),
        ]
    outputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [4, 8]) for n in "qkv"]
    model = helper.make_model(
        helper.make_graph(
            nodes,
            "qkv",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
            outputs,
            weights,
        ),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    model.ir_version = 8
    onnx.save(model, path)


def test_show_after_combine_parallel_dense_prints_the_chosen_strategy(
    tmp_path, capsys, monkeypatch
):
    """The default pipeline combines by the measured table (here one where concat wins)."""
    from tessel import cli
    from tessel.graph.passes import combine_cost

    table = {1: {"separate": 1.0, "concat": 0.5, "batch": 0.8}}
    monkeypatch.setattr(combine_cost, "measured_times", lambda sig, target, **_: table)
    _three_projections(tmp_path / "qkv.onnx")
    argv = ["show", str(tmp_path / "qkv.onnx"), "--after", "CombineParallelDense", "-q"]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert out.count("nn.dense") == 1
    assert "units=24" in out
    assert out.count("strided_slice") == 3


@pytest.mark.parametrize("shared", [True, False])
def test_batch_strategy_turns_bias_add_into_a_broadcast_add(shared):
    """nn.bias_add's axis counts from the front: on the batched [G, M, N] value it would name
    M; the batch strategy adds the (stacked) bias instead."""
    b2 = "%b1" if shared else "%b2"
    before = f"""def @main(%x: Tensor[(5, 4), float32], %w1: Tensor[(5, 4), float32],
                           %w2: Tensor[(5, 4), float32], %b1: Tensor[(5), float32],
                           %b2: Tensor[(5), float32]) {{
      (nn.bias_add(nn.dense(%x, %w1), %b1), nn.bias_add(nn.dense(%x, %w2), {b2}))
    }}"""
    bias = (
        "%b1" if shared else ("stack((expand_dims(%b1, axis=0), expand_dims(%b2, axis=0)), axis=0)")
    )
    expected = f"""def @main(%x: Tensor[(5, 4), float32], %w1: Tensor[(5, 4), float32],
                             %w2: Tensor[(5, 4), float32], %b1: Tensor[(5), float32],
                             %b2: Tensor[(5), float32]) {{
      %0 = nn.batch_matmul(stack((%x, %x), axis=0), stack((%w1, %w2), axis=0));
      %1 = split(add(%0, {bias}), indices_or_sections=2, axis=0);
      (squeeze(%1.0, axis=[0]), squeeze(%1.1, axis=[0]))
    }}"""
    check_pass(CombineParallelDense(min_num_branches=2, to_batch=True), before, expected)


def test_a_product_whose_weight_reads_a_sibling_is_left_out():
    before = """def @main(%x: Tensor[(4, 4), float32], %w1: Tensor[(4, 4), float32],
                          %w3: Tensor[(4, 4), float32], %w4: Tensor[(4, 4), float32]) {
      %0 = nn.dense(%x, %w1);
      (%0, nn.dense(%x, %0), nn.dense(%x, %w3), nn.dense(%x, %w4))
    }"""
    after = CombineParallelDense(min_num_branches=3, to_batch=False)(parse(before))
    assert str(after).count("nn.dense") == 2  # %w1, %w3, %w4 combined; the dense of %0 kept
    assert_same_values(parse(before), after)


@pytest.mark.parametrize(
    "body",
    [
        # products in a fused kernel: the kernel is kept whole
        """%0 = fn (%p0: Tensor[(4, 4), float32], %p1: Tensor[(4, 4), float32], Primitive=1) {
         (nn.dense(%p0, %p1), nn.dense(%p0, %p1), nn.dense(%p0, %p1))
       };
       %0(%x, %w)""",
        # products under lets: another scope could read a value where it is not bound
        """let %a = nn.dense(%x, %w);
       let %v = negative(%w);
       let %b = nn.dense(%x, %v);
       (%a, %b, nn.dense(%x, %w))""",
    ],
    ids=["primitive", "let"],
)
def test_products_in_other_scopes_are_left_alone(body):
    text = f"""def @main(%x: Tensor[(4, 4), float32], %w: Tensor[(4, 4), float32]) {{
      {body}
    }}"""
    mod = InferType()(parse(text))
    assert CombineParallelDense(min_num_branches=3, to_batch=False)(mod) is mod


def test_a_product_inside_a_closure_stays_there():
    text = """def @main(%x: Tensor[(4, 4), float32], %w: Tensor[(4, 4), float32]) {
      %0 = fn (%y: Tensor[(4, 4), float32]) { nn.dense(%x, %y) };
      (%0(%w), nn.dense(%x, %w), nn.dense(%x, %w), nn.dense(%x, %w))
    }"""
    mod = parse(text)
    after = CombineParallelDense(min_num_branches=3, to_batch=False)(mod)
    assert "fn (%y: Tensor[(4, 4), float32])" in str(after)
    assert str(after).count("nn.dense") == 2  # the closure's, and the three combined
    assert_same_values(mod, after)


def test_a_function_calling_a_global_is_typed_with_its_module_after_combining():
    """Each round types the rewritten function again, with the module only where it names a
    global function: here `main` calls `@scale`, whose type the round needs."""
    before = InferType()(
        parse("""
    def @scale(%y: Tensor[(4, 6), float32]) -> Tensor[(4, 6), float32] {
      multiply(%y, 2f)
    }
    def @main(%x: Tensor[(4, 8), float32], %w0: Tensor[(6, 8), float32],
              %w1: Tensor[(6, 8), float32], %w2: Tensor[(6, 8), float32]) {
      (@scale(nn.dense(%x, %w0)), nn.dense(%x, %w1), nn.dense(%x, %w2))
    }""")
    )
    after = CombineParallelDense(to_batch=False)(before)
    calls = [e for e in post_order_exprs(after["main"]) if isinstance(e, Call)]
    ops = [c.op.name for c in calls if isinstance(c.op, Op)]
    assert ops.count("nn.dense") == 1
    assert_same_values(before, after)
