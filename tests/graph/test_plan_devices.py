"""PlanDevices (issue 27, build item 2): Before/Expected programs in the text format, each planned
twice (planning is idempotent) and, where the graph evaluates, run before and after planning on
random inputs (the evaluator treats on_device and device_copy as the identity); conflicting
constraints; the device_of API; a 10,000-deep chain planned without recursion."""

# ruff: noqa: E501 - the programs keep their long parameter lists on one line

import time

import numpy as np
import pytest
from test_virtual_device import HEADER as TVM_HEADER
from test_virtual_device import PROGRAMS as TVM_PROGRAMS

from tessel.graph import Call, Function, InferType, Op, TensorType, Var, compile, evaluate, parse
from tessel.graph.passes import DevicePlanningError, PlanDevices, default_pipeline, plan_of
from tessel.graph.traversal import post_order_exprs
from tessel.ir import IRModule, Target, VirtualDevice, assert_structural_equal
from tessel.ir.expr import GlobalVar

CPU = VirtualDevice("cpu", 0, Target())
GPU = VirtualDevice("cuda", 0)
EXT = VirtualDevice("ext_dev", 0)  # the GPU's stand-in when a program runs
# TVM's example scopes have no allocator in C: programs using them run in these two.
RUN_SCOPES = {"scopeA": "global.workspace", "scopeB": "global"}
SCOPE_A = CPU.with_memory_scope("scopeA")
SCOPE_B = CPU.with_memory_scope("scopeB")
HEADER = '#[version = "0.0.5"]\n'
T = "Tensor[(5, 7), float32]"
# meta[VirtualDevice][0] is CPU, [1] is GPU in every program unless a test says otherwise.
ON_CPU = "virtual_device=meta[VirtualDevice][0]"
ON_GPU = "virtual_device=meta[VirtualDevice][1]"
CPU_TO_GPU = "src_virtual_device=meta[VirtualDevice][0], dst_virtual_device=meta[VirtualDevice][1]"


def _parse(text, devices=(CPU, GPU), constants=()):
    table = {"VirtualDevice": list(devices)}
    if constants:
        table["relay.Constant"] = list(constants)
    return parse(HEADER + text, table)


def _random_inputs(mod, seed=0):
    rng = np.random.default_rng(seed)
    inputs = []
    for param in InferType()(mod)["main"].params:
        ty = param.checked_type
        if ty.dtype == "bool":
            inputs.append(np.array(rng.random() < 0.5))
        else:
            inputs.append(rng.standard_normal(ty.shape).astype(ty.dtype))
    return inputs


def check_plan(
    before, expected, *, devices=(CPU, GPU), default=GPU, constants=(), run=True, execute=True
):
    """Plan `before`, compare with `expected`, plan again (idempotence), compare results; then
    compile it with the GPU played by the ext_dev stand-in and run it across the two devices."""
    mod = _parse(before, devices, constants)
    planned = PlanDevices(default_device=default)(mod)
    assert_structural_equal(planned, _parse(expected, devices, constants))
    assert_structural_equal(PlanDevices(default_device=default)(planned), planned)
    if run:
        for seed in range(2):
            inputs = _random_inputs(mod, seed)
            np.testing.assert_allclose(
                evaluate(planned, *inputs), evaluate(mod, *inputs), rtol=1e-6
            )
    if execute:
        run_across_devices(before, devices, constants)
    return planned


def run_across_devices(text, devices, constants=()):
    """`text` compiled with every GPU of `devices` replaced by the ext_dev stand-in, run on
    random inputs: the outputs of the one-device evaluator, with the planned copies made."""
    on_ext = [
        EXT
        if d.device_type == GPU.device_type
        else d.with_memory_scope(RUN_SCOPES.get(d.memory_scope, d.memory_scope))
        for d in devices
    ]
    mod = _parse(text, on_ext, constants)
    model = compile(mod)
    assert {a.place.device_type for a in model.plan.arenas} <= {1, EXT.device_type}
    for seed in range(2):
        inputs = _random_inputs(mod, seed)
        before = model.copies_made().copies
        np.testing.assert_allclose(model(*inputs), evaluate(mod, *inputs), rtol=1e-5)
        assert model.copies_made().copies - before == model.device_copies


# -- plain dataflow, annotated expressions and parameters -------------------------------------


def test_unconstrained_program_goes_to_the_default_device():
    check_plan(
        f"def @main(%a: {T}, %b: {T}) {{ add(%a, %b) }}",
        f"def @main(%a {{{ON_GPU}}}: {T}, %b {{{ON_GPU}}}: {T}, {ON_GPU}) {{ add(%a, %b) }}",
    )


def test_left_operand_annotated_on_cpu_is_copied_to_the_default_device():
    check_plan(
        f"""def @main(%a: {T}, %b: {T}, %c: {T}, %d: {T}) {{
          %0 = add(%a, %b);
          %1 = on_device(%0, {ON_CPU});
          subtract(%1, add(%c, %d))
        }}""",
        f"""def @main(%a {{{ON_CPU}}}: {T}, %b {{{ON_CPU}}}: {T}, %c {{{ON_GPU}}}: {T}, %d {{{ON_GPU}}}: {T}, {ON_GPU}) {{
          %0 = add(%a, %b);
          %1 = device_copy(%0, {CPU_TO_GPU});
          subtract(%1, add(%c, %d))
        }}""",
    )


def test_right_operand_on_cpu_and_annotated_parameters():
    check_plan(
        f"""def @main(%a {{{ON_GPU}}}: {T}, %b: {T}, %c {{{ON_CPU}}}: {T}, %d: {T}) {{
          %0 = add(%c, %d);
          subtract(add(%a, %b), on_device(%0, {ON_CPU}, constrain_body=False))
        }}""",
        f"""def @main(%a {{{ON_GPU}}}: {T}, %b {{{ON_GPU}}}: {T}, %c {{{ON_CPU}}}: {T}, %d {{{ON_CPU}}}: {T}, {ON_GPU}) {{
          %0 = add(%c, %d);
          subtract(add(%a, %b), device_copy(%0, {CPU_TO_GPU}))
        }}""",
    )


def test_fixed_annotation_moves_the_whole_computation():
    # on_device with both constraints allows no copy: the subtraction follows to the CPU
    check_plan(
        f"""def @main(%a: {T}, %b: {T}) {{
          negative(on_device(add(%a, %b), {ON_CPU}, constrain_result=True))
        }}""",
        f"def @main(%a {{{ON_CPU}}}: {T}, %b {{{ON_CPU}}}: {T}, {ON_CPU}) {{ negative(add(%a, %b)) }}",
    )


def test_existing_copy_is_kept_and_fixes_both_sides():
    check_plan(
        f"""def @main(%a: {T}, %b: {T}) {{
          add(device_copy(%a, {CPU_TO_GPU}), %b)
        }}""",
        f"""def @main(%a {{{ON_CPU}}}: {T}, %b {{{ON_GPU}}}: {T}, {ON_GPU}) {{
          add(device_copy(%a, {CPU_TO_GPU}), %b)
        }}""",
        default=CPU,
    )


def test_free_on_device_copies_only_between_different_memory_scopes():
    # TVM's free_on_device: %a's scope is open so it joins scopeB; %b is in scopeA, so copied
    devices = (CPU, SCOPE_A, SCOPE_B)
    a, b = "meta[VirtualDevice][1]", "meta[VirtualDevice][2]"
    check_plan(
        f"""def @on_scope_b(%x {{virtual_device={b}}}: {T}, virtual_device={b}) -> {T} {{ %x }}
        def @main(%a {{{ON_CPU}}}: {T}, %b {{virtual_device={a}}}: {T}, %c {{virtual_device={b}}}: {T}, virtual_device={a}) {{
          %0 = @on_scope_b(on_device(%a, {ON_CPU}, constrain_body=False));
          %1 = @on_scope_b(on_device(%b, {ON_CPU}, constrain_body=False));
          %2 = @on_scope_b(on_device(%c, {ON_CPU}, constrain_body=False));
          on_device(add(add(%0, %1), %2), {ON_CPU}, constrain_body=False)
        }}""",
        f"""def @on_scope_b(%x {{virtual_device={b}}}: {T}, virtual_device={b}) -> {T} {{ %x }}
        def @main(%a {{virtual_device={b}}}: {T}, %b {{virtual_device={a}}}: {T}, %c {{virtual_device={b}}}: {T}, virtual_device={a}) {{
          %0 = @on_scope_b(%a);
          %1 = @on_scope_b(device_copy(%b, src_virtual_device={a}, dst_virtual_device={b}));
          %2 = @on_scope_b(%c);
          device_copy(add(add(%0, %1), %2), src_virtual_device={b}, dst_virtual_device={a})
        }}""",
        devices=devices,
        default=CPU,
    )


# -- functions -------------------------------------------------------------------------------


def test_function_result_constrained_flows_to_its_parameters_and_arguments():
    check_plan(
        f"""def @main(%a: {T}, %b: {T}, %c {{{ON_GPU}}}: {T}) {{
          let %f = fn (%x, %y, {ON_CPU}) {{ add(%x, %y) }};
          %0 = %f(%a, %b);
          add(on_device(%0, {ON_CPU}), %c)
        }}""",
        f"""def @main(%a {{{ON_CPU}}}: {T}, %b {{{ON_CPU}}}: {T}, %c {{{ON_GPU}}}: {T}, {ON_GPU}) {{
          let %f = fn (%x {{{ON_CPU}}}, %y {{{ON_CPU}}}, {ON_CPU}) {{ add(%x, %y) }};
          %0 = %f(%a, %b);
          add(device_copy(%0, {CPU_TO_GPU}), %c)
        }}""",
    )


def test_function_parameter_constrained_flows_to_the_argument():
    check_plan(
        f"""def @main(%a: {T}, %b: {T}) {{
          let %f = fn (%x {{{ON_CPU}}}, %y) {{ add(device_copy(%x, {CPU_TO_GPU}), %y) }};
          %f(%a, %b)
        }}""",
        f"""def @main(%a {{{ON_CPU}}}: {T}, %b {{{ON_GPU}}}: {T}, {ON_GPU}) {{
          let %f = fn (%x {{{ON_CPU}}}, %y {{{ON_GPU}}}, {ON_GPU}) {{ add(device_copy(%x, {CPU_TO_GPU}), %y) }};
          %f(%a, %b)
        }}""",
    )


def test_higher_order_constraint_flows_back_through_a_closure_to_the_callers_argument():
    # %f wants its parameter on the CPU; %apply passes %v to it, so %x, main's argument for %v,
    # is placed on the CPU although nothing in main mentions a device for it
    check_plan(
        f"""def @main(%x: {T}, %y: {T}) {{
          let %apply = fn (%g, %v) {{ %g(%v) }};
          let %f = fn (%p) {{ negative(on_device(%p, {ON_CPU}, constrain_result=True)) }};
          %0 = %apply(%f, %x);
          add(on_device(%0, {ON_CPU}), %y)
        }}""",
        f"""def @main(%x {{{ON_CPU}}}: {T}, %y {{{ON_GPU}}}: {T}, {ON_GPU}) {{
          let %apply = fn (%g {{{ON_CPU}}}, %v {{{ON_CPU}}}, {ON_CPU}) {{ %g(%v) }};
          let %f = fn (%p {{{ON_CPU}}}, {ON_CPU}) {{ negative(%p) }};
          %0 = %apply(%f, %x);
          add(device_copy(%0, {CPU_TO_GPU}), %y)
        }}""",
    )


def test_closure_returned_by_a_function_keeps_its_captured_device():
    check_plan(
        f"""def @main(%x {{{ON_CPU}}}: {T}, %y: {T}) {{
          let %make = fn (%a) {{ fn (%b) {{ add(%a, %b) }} }};
          let %add_x = %make(%x);
          %add_x(%y)
        }}""",
        f"""def @main(%x {{{ON_CPU}}}: {T}, %y {{{ON_CPU}}}: {T}, {ON_CPU}) {{
          let %make = fn (%a {{{ON_CPU}}}, {ON_CPU}) {{ fn (%b {{{ON_CPU}}}, {ON_CPU}) {{ add(%a, %b) }} }};
          let %add_x = %make(%x);
          %add_x(%y)
        }}""",
    )


def test_functions_in_a_tuple_live_with_the_tuple():
    check_plan(
        f"""def @main(%a {{{ON_CPU}}}: {T}) {{
          let %t = (fn (%x) {{ negative(%x) }}, %a);
          %0 = %t.0;
          %0(%t.1)
        }}""",
        f"""def @main(%a {{{ON_CPU}}}: {T}, {ON_CPU}) {{
          let %t = (fn (%x {{{ON_CPU}}}, {ON_CPU}) {{ negative(%x) }}, %a);
          %0 = %t.0;
          %0(%t.1)
        }}""",
    )


def test_primitive_call_with_a_parameter_in_a_memory_scope_pulls_its_arguments_there():
    # the kernel's %a is in scopeA: its argument, computed in scopeB, is copied into scopeA, and
    # the kernel's other argument and its result join %a (a kernel runs in one place)
    a, b = "meta[VirtualDevice][1]", "meta[VirtualDevice][2]"
    check_plan(
        f"""def @main(%x: {T}, %y: {T}) {{
          %0 = fn (%a {{virtual_device={a}}}: {T}, %b: {T}, Primitive=1) {{ add(%a, %b) }};
          %1 = on_device(negative(%x), virtual_device={b});
          negative(%0(%1, %y))
        }}""",
        f"""def @main(%x {{virtual_device={b}}}: {T}, %y {{virtual_device={a}}}: {T}, virtual_device={a}) {{
          %0 = fn (%a {{virtual_device={a}}}: {T}, %b {{virtual_device={a}}}: {T}, Primitive=1, virtual_device={a}) {{
            add(%a, %b)
          }};
          %1 = device_copy(negative(%x), src_virtual_device={b}, dst_virtual_device={a});
          negative(%0(%1, %y))
        }}""",
        devices=(CPU, SCOPE_A, SCOPE_B),
        default=CPU,
    )


def test_global_function_with_parameters_on_two_devices():
    # TVM's `global` program: @f's parameters are placed, so are the arguments main passes
    check_plan(
        f"""def @f(%a {{{ON_GPU}}}: {T}, %b {{{ON_CPU}}}: {T}, {ON_GPU}) -> {T} {{
          add(%a, device_copy(%b, {CPU_TO_GPU}))
        }}
        def @main(%x: {T}, %y: {T}) -> {T} {{ @f(%y, %x) }}""",
        f"""def @f(%a {{{ON_GPU}}}: {T}, %b {{{ON_CPU}}}: {T}, {ON_GPU}) -> {T} {{
          add(%a, device_copy(%b, {CPU_TO_GPU}))
        }}
        def @main(%x {{{ON_CPU}}}: {T}, %y {{{ON_GPU}}}: {T}, {ON_GPU}) -> {T} {{ @f(%y, %x) }}""",
        default=CPU,
    )


# -- let, if, constants ----------------------------------------------------------------------


def test_let_bound_value_on_another_device_keeps_a_fixed_on_device():
    check_plan(
        f"""def @main(%a: {T}, %b: {T}, %c: {T}) {{
          let %l = on_device(add(%a, %b), {ON_CPU});
          let %r = negative(%c);
          subtract(device_copy(%l, {CPU_TO_GPU}), %r)
        }}""",
        f"""def @main(%a {{{ON_CPU}}}: {T}, %b {{{ON_CPU}}}: {T}, %c {{{ON_GPU}}}: {T}, {ON_GPU}) {{
          let %l = on_device(add(%a, %b), {ON_CPU}, constrain_result=True);
          let %r = negative(%c);
          subtract(device_copy(%l, {CPU_TO_GPU}), %r)
        }}""",
    )


def test_if_keeps_condition_and_branches_together():
    check_plan(
        f"""def @main(%c: bool, %x: {T}, %y {{{ON_CPU}}}: {T}, %w: {T}) {{
          let %z = if (%c) {{ add(%x, %y) }} else {{ subtract(%x, %y) }};
          add(on_device(%z, {ON_CPU}), %w)
        }}""",
        f"""def @main(%c {{{ON_CPU}}}: bool, %x {{{ON_CPU}}}: {T}, %y {{{ON_CPU}}}: {T}, %w {{{ON_GPU}}}: {T}, {ON_GPU}) {{
          let %z = on_device(if (%c) {{ add(%x, %y) }} else {{ subtract(%x, %y) }}, {ON_CPU}, constrain_result=True);
          add(device_copy(%z, {CPU_TO_GPU}), %w)
        }}""",
    )


def test_if_choosing_between_closures():
    check_plan(
        f"""def @main(%c: bool, %x: {T}, %y: {T}) {{
          let %f = fn (%a) {{ add(%a, %y) }};
          let %g = fn (%b) {{ subtract(%b, %y) }};
          let %h = if (%c) {{ %f }} else {{ %g }};
          %h(on_device(%x, {ON_CPU}, constrain_result=True))
        }}""",
        f"""def @main(%c {{{ON_CPU}}}: bool, %x {{{ON_CPU}}}: {T}, %y {{{ON_CPU}}}: {T}, {ON_CPU}) {{
          let %f = fn (%a {{{ON_CPU}}}, {ON_CPU}) {{ add(%a, %y) }};
          let %g = fn (%b {{{ON_CPU}}}, {ON_CPU}) {{ subtract(%b, %y) }};
          let %h = if (%c) {{ %f }} else {{ %g }};
          %h(%x)
        }}""",
    )


def test_constants_live_where_they_are_used_or_where_they_are_put():
    weights = [np.ones((5, 7), "float32"), np.full((5, 7), 2.0, "float32")]
    check_plan(
        f"""def @main(%x: {T}) {{
          let %k = on_device(meta[relay.Constant][0], {ON_CPU});
          add(add(%x, meta[relay.Constant][1]), device_copy(%k, {CPU_TO_GPU}))
        }}""",
        f"""def @main(%x {{{ON_GPU}}}: {T}, {ON_GPU}) {{
          let %k = on_device(meta[relay.Constant][0], {ON_CPU}, constrain_result=True);
          add(add(%x, meta[relay.Constant][1]), device_copy(%k, {CPU_TO_GPU}))
        }}""",
        constants=weights,
    )


# -- errors ----------------------------------------------------------------------------------


def test_operands_on_two_devices_without_a_copy_is_an_error_naming_both():
    mod = _parse(f"def @main(%a {{{ON_CPU}}}: {T}, %b {{{ON_GPU}}}: {T}) {{ add(%a, %b) }}")
    with pytest.raises(DevicePlanningError) as info:
        PlanDevices()(mod)
    message = str(info.value)
    assert "`add(%a, %b)` must live on" in message
    assert "device_type=cpu" in message and "device_type=cuda" in message
    assert "the virtual_device of %a" in message and "the virtual_device of %b" in message
    assert info.value.rule == "plan_devices.conflict"
    assert info.value.span is not None


def test_closure_parameter_conflicting_with_its_argument_is_an_error():
    mod = _parse(
        f"""def @main(%a {{{ON_GPU}}}: {T}) {{
          let %f = fn (%x {{{ON_CPU}}}) {{ negative(%x) }};
          %f(%a)
        }}"""
    )
    with pytest.raises(DevicePlanningError, match=r"`%f\(%a\)` must live on"):
        PlanDevices()(mod)


def test_fixed_annotation_conflicting_with_a_parameter_is_an_error():
    mod = _parse(
        f"def @main(%a {{{ON_GPU}}}: {T}) {{ negative(on_device(%a, {ON_CPU}, constrain_result=True)) }}"
    )
    with pytest.raises(DevicePlanningError, match="on_device at"):
        PlanDevices()(mod)


# -- the API and scale -----------------------------------------------------------------------


def test_plan_of_a_planned_module_gives_every_sub_expression_its_device():
    mod = _parse(
        f"""def @main(%a: {T}, %b: {T}, %c: {T}) {{
          let %l = on_device(add(%a, %b), {ON_CPU});
          subtract(device_copy(%l, {CPU_TO_GPU}), negative(%c))
        }}"""
    )
    planned = InferType()(PlanDevices(default_device=GPU)(mod))
    plan = plan_of(planned, default_device=GPU)
    devices = {}
    for node in post_order_exprs(planned["main"]):
        if isinstance(node, Call) and isinstance(node.op, Op):
            devices[node.op.name] = plan.device_of(node)
    assert devices == {
        "add": CPU,
        "on_device": CPU,
        "device_copy": GPU,
        "negative": GPU,
        "subtract": GPU,
    }
    assert plan.device_of(planned["main"].params[0]) == CPU


def test_planning_without_devices_is_not_in_the_default_pipeline():
    assert not any(isinstance(p, PlanDevices) for p in default_pipeline())


def test_planning_leaves_a_planned_module_unchanged_object():
    mod = PlanDevices()(_parse(f"def @main(%a: {T}) {{ negative(%a) }}"))
    assert PlanDevices()(mod) is mod


def test_ten_thousand_deep_chain_plans_iteratively_and_quickly():
    x, y = Var("x", TensorType((2,))), Var("y", TensorType((2,)))
    expr = x
    for k in range(10_000):
        expr = Call(Op("add"), (expr, x if k <= 5_000 else y))
        if k == 5_000:  # the first half on the GPU, copied to the CPU for the rest
            expr = Call(Op("on_device"), (expr,), {"virtual_device": GPU})
    mod = IRModule({GlobalVar("main"): Function((x, y), expr)})
    start = time.perf_counter()
    planned = PlanDevices(default_device=CPU)(mod)
    elapsed = time.perf_counter() - start
    main = planned["main"]
    assert main.virtual_device == CPU
    assert [p.virtual_device for p in main.params] == [GPU, CPU]
    copies = [
        n
        for n in post_order_exprs(main)
        if isinstance(n, Call) and isinstance(n.op, Op) and n.op.name == "device_copy"
    ]
    assert len(copies) == 1
    # About 1 s on a quiet 2-core machine; the bound only catches quadratic work, since the
    # test suite runs on busy machines too.
    assert elapsed < 20.0, f"planning took {elapsed:.2f} s"


@pytest.mark.parametrize("name", [p[0] for p in TVM_PROGRAMS])
def test_tvm_programs_plan_idempotently_evaluate_unchanged_and_run_across_devices(name):
    # TVM's planned programs keep some on_device calls that the plan implies; planning drops
    # those and nothing else, then leaves its own result alone
    _, program, devices = next(p for p in TVM_PROGRAMS if p[0] == name)
    mod = parse(TVM_HEADER + program, {"VirtualDevice": devices})
    planned = PlanDevices(default_device=devices[0])(mod)
    assert_structural_equal(PlanDevices(default_device=devices[0])(planned), planned)
    inputs = _random_inputs(mod)
    np.testing.assert_allclose(evaluate(planned, *inputs), evaluate(mod, *inputs), rtol=1e-6)
    run_across_devices(program, devices)
