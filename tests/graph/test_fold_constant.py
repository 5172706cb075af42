"""FoldConstant: Before/Expected in the text format, and the same values before and after."""

import numpy as np
from graph_pass_checks import check_pass

from tessel.graph import Call, Constant, Function, Op, Tuple, Var, const, parse
from tessel.graph.passes import FoldConstant
from tessel.graph.traversal import post_order_exprs
from tessel.graph.ty import TensorType
from tessel.ir.module import IRModule


def test_chain_of_scalar_operators_folds_to_one_constant():
    before = """
    def @main(%x: Tensor[(3), float32]) {
      %0 = add(1f, 2f);
      %1 = multiply(%0, 4f);
      add(%x, %1)
    }"""
    expected = """
    def @main(%x: Tensor[(3), float32]) {
      add(%x, 12f)
    }"""
    check_pass(FoldConstant(), before, expected)


def test_tensor_constants_fold_through_shape_operators():
    w = np.arange(6, dtype="float32").reshape(2, 3)
    meta = {"relay.Constant": [w, w.T.copy() * 2.0]}
    before = """
    def @main(%x: Tensor[(3, 2), float32]) {
      %0 = transpose(meta[relay.Constant][0]);
      %1 = multiply(%0, 2f);
      add(%x, %1)
    }"""
    expected = """
    def @main(%x: Tensor[(3, 2), float32]) {
      add(%x, meta[relay.Constant][1])
    }"""
    check_pass(FoldConstant(), before, expected, meta)


def test_tuple_of_constants_and_projection_fold():
    before = """
    def @main(%x: Tensor[(2), float32]) {
      %0 = (1f, 2f);
      %1 = %0.1;
      %2 = negative(%1);
      (%2, add(%x, %1))
    }"""
    expected = """
    def @main(%x: Tensor[(2), float32]) {
      (-2f, add(%x, 2f))
    }"""
    check_pass(FoldConstant(), before, expected)


def test_let_bound_constant_is_substituted_and_its_binding_dropped():
    before = """
    def @main(%x: Tensor[(2), float32]) {
      let %c = exp(0f);
      let %y = add(%x, %c);
      multiply(%y, %c)
    }"""
    expected = """
    def @main(%x: Tensor[(2), float32]) {
      let %y = add(%x, 1f);
      multiply(%y, 1f)
    }"""
    check_pass(FoldConstant(), before, expected)


def test_operator_with_tuple_result_folds_to_a_tuple_of_constants():
    meta = {"relay.Constant": [np.arange(4, dtype="float32"), np.arange(2, 4, dtype="float32")]}
    before = """
    def @main(%x: Tensor[(2), float32]) {
      %0 = split(meta[relay.Constant][0], indices_or_sections=2);
      %1 = %0.1;
      add(%x, %1)
    }"""
    expected = """
    def @main(%x: Tensor[(2), float32]) {
      add(%x, meta[relay.Constant][1])
    }"""
    check_pass(FoldConstant(), before, expected, meta)


def test_if_on_a_constant_condition_keeps_the_taken_branch():
    before = """
    def @main(%x: Tensor[(2), float32]) {
      %0 = greater(2f, 1f);
      if (%0) { exp(%x) } else { log(%x) }
    }"""
    expected = """
    def @main(%x: Tensor[(2), float32]) {
      exp(%x)
    }"""
    check_pass(FoldConstant(), before, expected)


def test_folded_value_has_the_dtype_the_type_relation_gives():
    mod = FoldConstant()(parse("def @main() { cast(3, dtype='int8') }".replace("'", '"')))
    body = mod["main"].body
    assert isinstance(body, Constant)
    assert body.data.dtype == np.int8
    assert int(body.data) == 3


def test_expressions_with_free_variables_are_left_alone():
    before = """
    def @main(%x: Tensor[(2), float32]) {
      %0 = add(%x, 1f);
      %1 = fn (%y: Tensor[(2), float32]) { multiply(%y, %0) };
      %1(%x)
    }"""
    check_pass(FoldConstant(), before)


def test_primitive_function_bodies_are_not_folded():
    before = """
    def @main(%x: Tensor[(2), float32]) {
      %0 = fn (%p0: Tensor[(2), float32], Primitive=1) {
        %1 = add(1f, 1f);
        add(%p0, %1)
      };
      %0(%x)
    }"""
    check_pass(FoldConstant(), before)


def test_folding_inside_nested_functions():
    before = """
    def @main(%x: Tensor[(2), float32]) {
      %0 = fn (%y: Tensor[(2), float32]) {
        %1 = sqrt(4f);
        multiply(%y, %1)
      };
      %0(%x)
    }"""
    expected = """
    def @main(%x: Tensor[(2), float32]) {
      %0 = fn (%y: Tensor[(2), float32]) { multiply(%y, 2f) };
      %0(%x)
    }"""
    check_pass(FoldConstant(), before, expected)


def test_deep_constant_chain_folds_without_hitting_the_recursion_limit():
    lines = ["%0 = add(1f, 1f);"] + [f"%{i} = add(%{i - 1}, 1f);" for i in range(1, 3000)]
    before = "def @main() {\n" + "\n".join(lines) + "\n%2999\n}"
    body = FoldConstant()(parse(before))["main"].body
    assert isinstance(body, Constant)
    assert float(body.data) == 3001.0


def call(name: str, *args, **attrs) -> Call:
    return Call(Op(name), args, attrs)


def test_a_weight_folded_from_one_named_constant_is_named_after_it():
    """A chain of folds (transpose, then times an unnamed 2f) reading one weight named `w`
    yields one Constant named `w_folded`, with the folded value; the module carries nothing
    else (no side channel)."""
    w = np.arange(6, dtype="float32").reshape(2, 3)
    x = Var("x", TensorType((3, 2), "float32"))
    doubled = call("multiply", call("transpose", Constant(w, name_hint="w")), const(2.0))
    mod = IRModule.from_dict({"main": Function((x,), call("add", x, doubled))})
    folded = FoldConstant()(mod)
    (constant,) = [n for n in post_order_exprs(folded["main"]) if isinstance(n, Constant)]
    assert constant.name_hint == "w_folded"
    np.testing.assert_array_equal(constant.data, w.T * 2)
    assert dict(folded.attrs) == dict(mod.attrs)


def test_a_constant_combined_from_two_named_weights_is_unnamed():
    """concatenate((a, b)) is neither weight: it gets no name (exports call it constant_k)."""
    a, b = np.ones((2, 2), "float32"), np.zeros((1, 2), "float32")
    x = Var("x", TensorType((3, 2), "float32"))
    both = Tuple((Constant(a, name_hint="a"), Constant(b, name_hint="b")))
    body = call("add", x, call("concatenate", both, axis=0))
    folded = FoldConstant()(IRModule.from_dict({"main": Function((x,), body)}))
    (constant,) = [n for n in post_order_exprs(folded["main"]) if isinstance(n, Constant)]
    assert constant.name_hint == ""
    np.testing.assert_array_equal(constant.data, np.concatenate([a, b]))
