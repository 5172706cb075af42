"""InlineFunctions and PlaceForExecution (issue 27): Before/Expected programs in the text format,
each evaluated before and after on random inputs and compiled; a recursive function is refused;
a first-order program is left alone."""

import numpy as np
import pytest

from tessel.graph import InferType, compile, evaluate, parse
from tessel.graph.memory_plan import HOST as HOST_PLACE
from tessel.graph.memory_plan import Place
from tessel.graph.passes.host_interface import PlaceForExecution
from tessel.graph.passes.inline_functions import InlineFunctions, needs_inlining
from tessel.graph.passes.plan_devices import PlanDevices
from tessel.ir import Target, VirtualDevice, assert_structural_equal
from tessel.support.errors import UserError

HEADER = '#[version = "0.0.5"]\n'
T = "Tensor[(3, 4), float32]"
EXT = VirtualDevice("ext_dev", 0)
HOST = VirtualDevice("cpu", 0, Target())


def _parse(text, devices=()):
    return parse(HEADER + text, {"VirtualDevice": list(devices)} if devices else None)


def _inputs(mod, seed):
    rng = np.random.default_rng(seed)
    values = []
    for p in InferType()(mod)["main"].params:
        ty = p.checked_type
        if ty.dtype == "bool":
            values.append(np.array(seed % 2 == 0))
        else:
            values.append(rng.standard_normal(ty.shape).astype(ty.dtype))
    return values


def check_inline(before, expected):
    """Inline `before`, compare with `expected`, then run both and the compiled program."""
    mod = _parse(before)
    inlined = InlineFunctions()(mod)
    assert_structural_equal(inlined["main"].body, _parse(expected)["main"].body)
    assert not needs_inlining(inlined)
    model = compile(mod)
    for seed in range(2):
        inputs = _inputs(mod, seed)
        want = evaluate(mod, *inputs)
        np.testing.assert_allclose(evaluate(inlined, *inputs), want, rtol=1e-6)
        np.testing.assert_allclose(model(*inputs), want, rtol=1e-5)


def test_a_let_bound_closure_is_inlined_at_each_call():
    check_inline(
        f"""def @main(%x: {T}, %y: {T}) {{
          let %f = fn (%a: {T}) {{ multiply(%a, %y) }};
          add(%f(%x), %f(%y))
        }}""",
        f"""def @main(%x: {T}, %y: {T}) {{
          add(multiply(%x, %y), multiply(%y, %y))
        }}""",
    )


def test_a_global_function_is_inlined_with_its_lets():
    text = f"""def @square(%a: {T}) {{
          let %b = multiply(%a, %a);
          %b
        }}
        def @main(%x: {T}) {{ negative(@square(@square(%x))) }}"""
    expected = f"""def @main(%x: {T}) {{
          %0 = multiply(%x, %x);
          negative(multiply(%0, %0))
        }}"""
    check_inline(text, expected)


def test_a_module_function_used_as_a_value_evaluates_and_inlines():
    check_inline(
        f"""def @double(%a: {T}) {{ add(%a, %a) }}
        def @main(%x: {T}) {{
          let %g = @double;
          %g(%g(%x))
        }}""",
        f"""def @main(%x: {T}) {{
          %0 = add(%x, %x);
          add(%0, %0)
        }}""",
    )


def test_a_function_taken_from_a_tuple_and_a_function_passed_as_argument():
    check_inline(
        f"""def @main(%x: {T}) {{
          let %fs = (fn (%a: {T}) {{ exp(%a) }}, fn (%a: {T}) {{ negative(%a) }});
          let %apply = fn (%g: fn ({T}) -> {T}, %v: {T}) {{ %g(%v) }};
          %apply(%fs.1, %fs.0(%x))
        }}""",
        f"""def @main(%x: {T}) {{ negative(exp(%x)) }}""",
    )


def test_an_if_on_tensors_selects_with_where_and_a_called_if_calls_in_each_branch():
    check_inline(
        f"""def @main(%c: bool, %x: {T}) {{
          let %f = if (%c) {{ fn (%a: {T}) {{ exp(%a) }} }} else {{ fn (%a: {T}) {{ negative(%a) }} }};
          if (%c) {{ %f(%x) }} else {{ %x }}
        }}""",
        f"""def @main(%c: bool, %x: {T}) {{
          where(%c, where(%c, exp(%x), negative(%x)), %x)
        }}""",
    )


def test_recursion_is_refused_naming_the_function():
    mod = _parse(
        f"""def @loop(%a: {T}) -> {T} {{ @loop(%a) }}
        def @main(%x: {T}) {{ @loop(%x) }}"""
    )
    with pytest.raises(UserError, match="@loop calls itself"):
        InlineFunctions()(mod)


def test_a_first_order_program_is_left_alone():
    mod = _parse(f"def @main(%x: {T}) {{ let %a = exp(%x); negative(%a) }}")
    assert not needs_inlining(mod)
    assert InlineFunctions()(mod) is mod


def test_parameters_and_result_on_the_second_device_move_to_the_host_with_copies():
    dev = "meta[VirtualDevice][0]"
    mod = _parse(f"def @main(%x: {T}) {{ on_device(exp(%x), virtual_device={dev}) }}", [EXT])
    planned = PlaceForExecution(HOST)(mod)
    main = planned["main"]
    assert Place.of(main.virtual_device) == HOST_PLACE
    assert [Place.of(p.virtual_device) for p in main.params] == [HOST_PLACE]
    again = PlanDevices(default_device=HOST)(planned)
    assert_structural_equal(again, planned)  # planning the result changes nothing
    x = _inputs(mod, 0)[0]
    np.testing.assert_allclose(evaluate(planned, x), np.exp(x), rtol=1e-6)
    model = compile(mod)
    np.testing.assert_allclose(model(x), np.exp(x), rtol=1e-5)
    assert model.device_copies == 2  # the parameter in, the result out
