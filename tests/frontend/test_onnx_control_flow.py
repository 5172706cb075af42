"""Control flow resolved at import: If (a known condition takes its branch; a computed one
selects with `where`), Loop (unrolled), Scan (unrolled), and subgraphs reading outer names."""

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx_testing import calls, check_against_onnxruntime, make_model, tensor

from tessel.frontend.onnx import from_onnx
from tessel.frontend.onnx.errors import ValueNeededError

BOOL = TensorProto.BOOL


def _branch(name, op_type, inputs, shape=(2, 3)):
    """A one-node subgraph computing `op_type(inputs)`; names come from the outer scope."""
    node = helper.make_node(op_type, inputs, [f"{name}_out"])
    return helper.make_graph([node], name, [], [tensor(f"{name}_out", shape)])


def _if_model(cond_given, else_shape=(2, 3)):
    then = _branch("then", "Add", ["x", "x"])
    other = _branch("else", "Abs" if else_shape == (2, 3) else "Shape", ["x"], else_shape)
    node = helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)
    inits = {} if cond_given else {"c": np.array(False)}
    inputs = [tensor("x", (2, 3))] + ([tensor("c", (), BOOL)] if cond_given else [])
    return make_model([node], inputs, [helper.make_empty_tensor_value_info("y")], inits)


def test_if_with_a_known_condition_takes_its_branch():
    mod = check_against_onnxruntime(_if_model(cond_given=False))
    assert calls(mod) == ["abs"]


@pytest.mark.parametrize("value", [True, False])
def test_if_with_a_computed_condition_selects(value):
    inputs = {"x": np.array([[1, -2, 3], [-4, 5, -6]], "float32"), "c": np.array(value)}
    mod = check_against_onnxruntime(_if_model(cond_given=True), inputs=inputs, compiled=True)
    assert calls(mod)[-1] == "where"


def test_if_whose_branches_differ_in_type_needs_its_condition():
    then = _branch("then", "Add", ["x", "x"], (2, 3))
    other = _branch("else", "ReduceSum", ["x"], (1, 1))
    node = helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)
    model = make_model(
        [node],
        [tensor("x", (2, 3)), tensor("c", (), BOOL)],
        [helper.make_empty_tensor_value_info("y")],
    )
    with pytest.raises(ValueNeededError, match="condition") as err:
        from_onnx(model)
    assert err.value.inputs == ("c",)


def _loop_model(trip_count=3, initializers=True):
    """y_out = y_in + x[i] for i < M; scan output: each iteration's y_out."""
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
            helper.make_node("Gather", ["x", "i"], ["row"]),
            helper.make_node("Add", ["y_in", "row"], ["y_out"]),
            helper.make_node("Identity", ["y_out"], ["scan"]),
        ],
        "body",
        [tensor("i", (), TensorProto.INT64), tensor("cond_in", (), BOOL), tensor("y_in", (2,))],
        [tensor("cond_out", (), BOOL), tensor("y_out", (2,)), tensor("scan", (2,))],
    )
    node = helper.make_node("Loop", ["M", "cond", "y"], ["y_final", "ys"], body=body)
    inits = {"M": np.array(trip_count), "cond": np.array(True)} if initializers else {}
    inputs = [tensor("x", (4, 2)), tensor("y", (2,))]
    if not initializers:
        inputs += [tensor("M", (), TensorProto.INT64), tensor("cond", (), BOOL)]
    outputs = [tensor("y_final", (2,)), tensor("ys", (trip_count, 2) if initializers else ("N", 2))]
    return make_model([node], inputs, outputs, inits, opset=13)


def test_loop_is_unrolled_with_scan_outputs():
    mod = check_against_onnxruntime(_loop_model(), compiled=True)
    assert calls(mod).count("take") == 3


def test_loop_whose_trip_count_is_a_graph_input_needs_its_value():
    with pytest.raises(ValueNeededError) as err:
        from_onnx(_loop_model(initializers=False))
    assert set(err.value.inputs) <= {"M", "cond"}


@pytest.mark.parametrize("opset", [8, 9])
def test_scan_sums_and_reverses(opset):
    body = helper.make_graph(
        [
            helper.make_node("Add", ["s_in", "v"], ["s_out"]),
            helper.make_node("Identity", ["s_out"], ["scan"]),
        ],
        "body",
        [tensor("s_in", (2,)), tensor("v", (2,))],
        [tensor("s_out", (2,)), tensor("scan", (2,))],
    )
    if opset == 8:
        node = helper.make_node(
            "Scan", ["", "s", "xs"], ["s_final", "ys"], body=body, num_scan_inputs=1, directions=[1]
        )
        inputs = [tensor("s", (1, 2)), tensor("xs", (1, 3, 2))]
    else:
        node = helper.make_node(
            "Scan",
            ["s", "xs"],
            ["s_final", "ys"],
            body=body,
            num_scan_inputs=1,
            scan_input_axes=[1],
            scan_output_directions=[1],
        )
        inputs = [tensor("s", (2,)), tensor("xs", (2, 3))]
    outputs = [
        helper.make_empty_tensor_value_info("s_final"),
        helper.make_empty_tensor_value_info("ys"),
    ]
    check_against_onnxruntime(make_model([node], inputs, outputs, opset=opset))


def test_sequences_in_a_branch_resolve_at_import():
    """SplitToSequence, SequenceInsert/Erase/At/Length and ConcatFromSequence as tuples of
    values inside a subgraph (the main graph's inference takes tensors only)."""
    nodes = [
        helper.make_node("SplitToSequence", ["x"], ["parts"], axis=1, keepdims=0),
        helper.make_node("SequenceInsert", ["parts", "row", "at"], ["more"]),
        helper.make_node("SequenceErase", ["more", "last"], ["fewer"]),
        helper.make_node("SequenceAt", ["fewer", "at"], ["picked"]),
        helper.make_node("SequenceLength", ["fewer"], ["count"]),
        helper.make_node("ConcatFromSequence", ["fewer"], ["stacked"], axis=-1, new_axis=1),
        helper.make_node("Cast", ["count"], ["scale"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["stacked", "scale"], ["scaled"]),
        helper.make_node("Unsqueeze", ["picked", "minus_one"], ["picked_column"]),
        helper.make_node("Add", ["scaled", "picked_column"], ["branch_out"]),
    ]
    then = helper.make_graph(nodes, "then", [], [tensor("branch_out", (2, 3))])
    other = _branch("else", "Abs", ["x"])
    node = helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)
    inits = {"c": np.array(True), "at": np.array(1), "last": np.array(-1),
             "minus_one": np.array([-1])}  # fmt: skip
    model = make_model(
        [node], [tensor("x", (2, 3)), tensor("row", (2,))], [tensor("y", (2, 3))], inits
    )
    check_against_onnxruntime(model, compiled=True)


def test_if_nested_in_a_loop_body_reads_every_enclosing_scope():
    """The If reads `y_in` (the body's) and `x` (the main graph's); its condition, the
    iteration number compared with 1, is known at each unrolled iteration."""
    then = _branch("then", "Add", ["y_in", "x"], (2,))
    other = _branch("else", "Sub", ["y_in", "x"], (2,))
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
            helper.make_node("Equal", ["i", "one"], ["is_one"]),
            helper.make_node("If", ["is_one"], ["y_out"], then_branch=then, else_branch=other),
        ],
        "body",
        [tensor("i", (), TensorProto.INT64), tensor("cond_in", (), BOOL), tensor("y_in", (2,))],
        [tensor("cond_out", (), BOOL), tensor("y_out", (2,))],
    )
    node = helper.make_node("Loop", ["M", "", "y"], ["y_final"], body=body)
    inits = {"M": np.array(3), "one": np.array(1)}
    model = make_model(
        [node], [tensor("x", (2,)), tensor("y", (2,))], [tensor("y_final", (2,))], inits, opset=13
    )
    mod = check_against_onnxruntime(model)
    assert calls(mod) == ["subtract", "add", "subtract"]


def test_optional_holding_a_value_is_that_value():
    """Optional/OptionalHasElement/OptionalGetElement in a branch (opset 18)."""
    nodes = [
        helper.make_node("Optional", ["x"], ["opt"]),
        helper.make_node("OptionalGetElement", ["opt"], ["got"]),
        helper.make_node("OptionalHasElement", ["opt"], ["has"]),
        helper.make_node("Cast", ["has"], ["one"], to=TensorProto.FLOAT),
        helper.make_node("Add", ["got", "one"], ["branch_out"]),
    ]
    then = helper.make_graph(nodes, "then", [], [tensor("branch_out", (2, 3))])
    node = helper.make_node(
        "If", ["c"], ["y"], then_branch=then, else_branch=_branch("else", "Abs", ["x"])
    )
    model = make_model(
        [node], [tensor("x", (2, 3))], [tensor("y", (2, 3))], {"c": np.array(True)}, opset=18
    )
    assert calls(check_against_onnxruntime(model)) == ["add"]
