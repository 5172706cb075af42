"""InferType over the whole functional language, in the text format (issue 27, build item 1):
unannotated parameters solved by unification, closures returned and passed as values, let-bound
functions, `if` choosing functions, functions in tuples, module functions used as values; errors
that name the expression; a 10,000-node chain typed in linear time."""

# ruff: noqa: E501 - the programs keep their lines whole

import time

import numpy as np
import pytest

from tessel.graph import Call, Function, InferType, Op, TensorType, Var, evaluate, parse
from tessel.graph.passes import TypeInferenceError
from tessel.graph.traversal import post_order_exprs
from tessel.graph.type_util import is_complete, type_str
from tessel.ir import IRModule
from tessel.ir.expr import GlobalVar

HEADER = '#[version = "0.0.5"]\n'
T = "Tensor[(2), float32]"
T_STR = "Tensor[(2,), float32]"


def typed(text):
    mod = InferType()(parse(HEADER + text))
    for func in mod.functions.values():
        for node in post_order_exprs(func):
            if not isinstance(node, GlobalVar):
                assert node.checked_type is not None and is_complete(node.checked_type)
    return mod


def main_type(text):
    return type_str(typed(text)["main"].checked_type)


X = np.array([0.5, -1.5], "float32")
Y = np.array([2.0, 3.0], "float32")


def test_unannotated_parameter_of_a_let_bound_function():
    program = f"def @main(%x: {T}) {{ let %f = fn (%g) {{ add(%g, %g) }}; %f(%x) }}"
    mod = typed(program)
    assert type_str(mod["main"].body.var.checked_type) == f"fn ({T_STR}) -> {T_STR}"
    np.testing.assert_allclose(evaluate(mod, X), X + X)


def test_closure_returned_then_applied():
    program = f"""def @main(%x: {T}, %y: {T}) {{
      let %make = fn (%a) {{ fn (%b) {{ add(%a, %b) }} }};
      let %add_x = %make(%x);
      %add_x(%y)
    }}"""
    mod = typed(program)
    make = mod["main"].body.var
    assert type_str(make.checked_type) == f"fn ({T_STR}) -> fn ({T_STR}) -> {T_STR}"
    np.testing.assert_allclose(evaluate(mod, X, Y), X + Y)


def test_curried_call_of_a_returned_closure():
    program = f"""def @main(%x: {T}, %y: {T}) {{
      let %make = fn (%a) {{ fn (%b) {{ subtract(%a, %b) }} }};
      %make(%x)(%y)
    }}"""
    assert main_type(program) == f"fn ({T_STR}, {T_STR}) -> {T_STR}"


def test_closures_passed_as_arguments_and_composed():
    program = f"""def @main(%x: {T}) {{
      let %compose = fn (%f, %g) {{ fn (%v) {{ %f(%g(%v)) }} }};
      let %h = %compose(fn (%p) {{ negative(%p) }}, fn (%q) {{ exp(%q) }});
      %h(%x)
    }}"""
    mod = typed(program)
    np.testing.assert_allclose(evaluate(mod, X), -np.exp(X), rtol=1e-6)


def test_if_choosing_between_closures():
    program = f"""def @main(%c: bool, %x: {T}) {{
      let %pick = fn (%b) {{ if (%b) {{ fn (%u) {{ negative(%u) }} }} else {{ fn (%w) {{ exp(%w) }} }} }};
      %pick(%c)(%x)
    }}"""
    mod = typed(program)
    assert type_str(mod["main"].checked_type) == f"fn (Tensor[(), bool], {T_STR}) -> {T_STR}"
    np.testing.assert_allclose(evaluate(mod, np.array(True), X), -X)


def test_function_in_a_tuple_passed_to_an_unannotated_parameter():
    program = f"""def @main(%x: {T}) {{
      let %apply = fn (%t) {{ %0 = %t.0; %0(%t.1) }};
      %apply((fn (%z) {{ negative(%z) }}, %x))
    }}"""
    mod = typed(program)
    apply = mod["main"].body.var
    assert type_str(apply.checked_type) == f"fn ((fn ({T_STR}) -> {T_STR}, {T_STR})) -> {T_STR}"


def test_unannotated_module_functions_higher_order_and_recursive():
    program = f"""def @apply(%h, %v) {{ %h(%v) }}
    def @repeat(%n, %x) {{ if (less(%n, 1)) {{ %x }} else {{ @repeat(subtract(%n, 1), add(%x, %x)) }} }}
    def @main(%k: int32, %x: {T}) {{ @apply(fn (%z) {{ @repeat(%k, %z) }}, %x) }}"""
    mod = typed(program)
    assert (
        type_str(mod["apply"].checked_type) == f"fn (fn ({T_STR}) -> {T_STR}, {T_STR}) -> {T_STR}"
    )
    assert type_str(mod["repeat"].checked_type) == f"fn (Tensor[(), int32], {T_STR}) -> {T_STR}"
    np.testing.assert_allclose(evaluate(mod, np.array(2, "int32"), X), 4 * X)


def test_module_function_bound_by_let_as_a_value():
    program = f"""def @double(%p: {T}) {{ add(%p, %p) }}
    def @main(%x: {T}) {{ let %g = @double; %g(%x) }}"""
    mod = typed(program)
    assert type_str(mod["main"].body.var.checked_type) == f"fn ({T_STR}) -> {T_STR}"
    assert mod["main"].body.value is next(gv for gv in mod.functions if gv.name_hint == "double")


# -- errors name the expression --------------------------------------------------------------


def test_let_bound_function_used_at_two_types_names_call_and_parameter():
    program = f"""def @main(%x: {T}, %y: Tensor[(3), float32]) {{
      let %f = fn (%g) {{ add(%g, %g) }};
      let %a = %f(%x);
      let %b = %f(%y);
      (%a, %b)
    }}"""
    with pytest.raises(TypeInferenceError, match=r"call of %f: argument `%g` has type") as info:
        typed(program)
    assert info.value.span.line == 5
    assert info.value.rule == "graph.call-arg"


def test_self_application_is_an_infinite_type_error():
    program = f"def @main(%x: {T}) {{ let %f = fn (%g) {{ %g(%g) }}; %x }}"
    with pytest.raises(TypeInferenceError, match="call of %g: it is applied to itself") as info:
        typed(program)
    assert info.value.rule == "graph.infinite-type"


def test_calling_a_tensor_names_the_callee():
    with pytest.raises(TypeInferenceError, match=r"call of %x: it is not a function"):
        typed(f"def @main(%x: {T}) {{ %x(%x) }}")


def test_if_branches_tensor_and_closure_are_an_error():
    program = (
        f"def @main(%c: bool, %x: {T}) {{ if (%c) {{ %x }} else {{ fn (%q) {{ exp(%q) }} }} }}"
    )
    with pytest.raises(TypeInferenceError, match="if: the branches have different types"):
        typed(program)


def test_parameter_nothing_constrains_is_reported_by_name():
    program = f"def @main(%x: {T}) {{ let %f = fn (%g) {{ %g }}; %x }}"
    with pytest.raises(TypeInferenceError, match="cannot infer the type of `%"):
        typed(program)


# -- scale -----------------------------------------------------------------------------------


def test_ten_thousand_node_chain_types_in_linear_time():
    def chain(length):
        x = Var("x", TensorType((2,)))
        value = x
        for _ in range(length):
            value = Call(Op("add"), (value, x))
        return IRModule({GlobalVar("main"): Function((x,), value)})

    small, large = chain(1_000), chain(10_000)
    start = time.perf_counter()
    InferType()(small)
    small_time = time.perf_counter() - start
    start = time.perf_counter()
    mod = InferType()(large)
    large_time = time.perf_counter() - start
    assert type_str(mod["main"].checked_type) == f"fn ({T_STR}) -> {T_STR}"
    assert large_time < 30 * small_time + 0.5, (small_time, large_time)  # linear, not quadratic
