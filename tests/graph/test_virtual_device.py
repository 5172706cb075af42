"""VirtualDevice, on_device and device_copy (issue 27, build item 1): the join/default laws,
TVM's PlanDevices test programs (tests/python/relay/test_pass_plan_devices.py) read and printed
unchanged, structural equality that sees devices, type inference, evaluation and lowering."""

# ruff: noqa: E501 - TVM's programs keep their long lines, as test_pass_plan_devices.py has them

import textwrap

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tessel import te
from tessel.graph import (
    Call,
    Function,
    InferType,
    Let,
    Op,
    TensorType,
    Var,
    astext,
    evaluate,
    parse,
    parse_expr,
)
from tessel.graph.op import OpPattern, OpTypeError, get_op
from tessel.graph.type_util import type_str
from tessel.ir import Target, VirtualDevice, assert_structural_equal, structural_equal
from tessel.ir.structural import structural_digest, structural_hash
from tessel.script.errors import ParseError
from tessel.support.errors import UserError
from tessel.transform.errors import LoweringError

# TVM's test devices (HOST/CPU carry a target there too; Tessel has only the C target).
CPU = VirtualDevice.for_target(Target()).join(VirtualDevice("cpu", 0))
GPU = VirtualDevice("cuda", 0)
CPU_SCOPE_A = CPU.with_memory_scope("scopeA")
CPU_SCOPE_B = CPU.with_memory_scope("scopeB")
HEADER = '#[version = "0.0.5"]\n'
T57 = "Tensor[(5, 7), float32]"


def tensor(*shape, dtype="float32"):
    return TensorType(shape, dtype)


# -- VirtualDevice ---------------------------------------------------------------------------


def test_fields_names_and_repr():
    assert VirtualDevice("cuda", 1) == VirtualDevice(2, 1)
    assert VirtualDevice(12).device_name == "ext_dev"
    assert VirtualDevice().device_name == ""
    assert repr(VirtualDevice()) == "VirtualDevice()"
    assert repr(GPU) == "VirtualDevice(device_type=cuda, virtual_device_id=0)"
    assert repr(CPU_SCOPE_A) == (
        "VirtualDevice(device_type=cpu, virtual_device_id=0, target=Target(kind='c'), "
        "memory_scope='scopeA')"
    )
    assert VirtualDevice.fully_unconstrained().is_fully_unconstrained
    assert CPU_SCOPE_A.is_fully_constrained
    assert not CPU.is_fully_constrained


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"device_type": "tpu"}, "unknown device type 'tpu'"),
        ({"device_type": 0}, "not a DLPack device type"),
        ({"virtual_device_id": -2}, "virtual_device_id must be an int >= -1"),
        ({"memory_scope": None}, "memory_scope must be a string"),
        ({"device_type": "cuda", "target": Target()}, "runs on device type cpu, not cuda"),
        ({"target": Target()}, "runs on device type cpu, not an unconstrained one"),
    ],
)
def test_invalid_devices_are_user_errors(kwargs, message):
    with pytest.raises(UserError, match=message):
        VirtualDevice(**kwargs)


def test_join_and_default_examples():
    assert VirtualDevice("cuda").join(VirtualDevice(-1, 3)) == VirtualDevice("cuda", 3)
    assert VirtualDevice("cuda").join(VirtualDevice("cpu")) is None
    assert CPU_SCOPE_A.join(CPU_SCOPE_B) is None
    assert CPU.join(CPU_SCOPE_A) == CPU_SCOPE_A
    assert GPU.default(CPU_SCOPE_A) == VirtualDevice("cuda", 0, memory_scope="scopeA")
    assert VirtualDevice().default(CPU) == CPU


_devices = st.builds(
    lambda kind, device_id, with_target, scope: VirtualDevice(
        kind, device_id, Target() if with_target and kind == 1 else None, scope
    ),
    st.sampled_from([-1, 1, 2, 12]),
    st.sampled_from([-1, 0, 1]),
    st.booleans(),
    st.sampled_from(["", "global", "scopeA"]),
)
_FIELDS = ("device_type", "virtual_device_id", "target", "memory_scope")
_UNSET = (-1, -1, None, "")


@given(_devices, _devices)
def test_join_is_commutative(a, b):
    assert a.join(b) == b.join(a)


@given(_devices)
def test_join_is_idempotent_and_unconstrained_is_its_unit(a):
    assert a.join(a) == a
    assert a.join(VirtualDevice()) == a
    assert a.default(a) == a
    assert VirtualDevice().default(a) == a


@given(_devices, _devices, _devices)
def test_join_is_associative(a, b, c):
    ab, bc = a.join(b), b.join(c)
    left = None if ab is None else ab.join(c)
    right = None if bc is None else a.join(bc)
    assert left == right


@given(_devices, _devices)
def test_join_is_an_upper_bound_and_agrees_with_default(a, b):
    joined = a.join(b)
    if joined is None:  # some field is constrained differently on the two sides
        assert any(
            getattr(a, f) != u and getattr(b, f) != u and getattr(a, f) != getattr(b, f)
            for f, u in zip(_FIELDS, _UNSET, strict=True)
        )
        return
    assert joined.join(a) == joined
    assert joined.join(b) == joined
    assert joined == a.default(b)


@given(_devices, _devices)
def test_default_never_loses_a_constrained_field(a, b):
    result = a.default(b)
    for name, unset in zip(_FIELDS, _UNSET, strict=True):
        if getattr(a, name) != unset:
            assert getattr(result, name) == getattr(a, name)
        elif name != "target" or result.device_type in (-1, 1):
            # gaps are filled from `b`; its target only where the device type fits it
            assert getattr(result, name) == getattr(b, name)


# -- TVM's PlanDevices programs, read and printed ------------------------------------------

# (name, program, metatable): the programs as test_pass_plan_devices.py writes them.
PROGRAMS = [
    ("plain", f"""
def @main(%a {{virtual_device=meta[VirtualDevice][1]}}: {T57}, %b {{virtual_device=meta[VirtualDevice][1]}}: {T57},
          %c {{virtual_device=meta[VirtualDevice][1]}}: {T57}, %d {{virtual_device=meta[VirtualDevice][1]}}: {T57},
          virtual_device=meta[VirtualDevice][1]) {{
  %0 = add(%a, %b);
  %1 = add(%c, %d);
  subtract(%0, %1)
}}
""", [CPU, GPU]),
    ("left_add_on_cpu", f"""
def @main(%a {{virtual_device= meta[VirtualDevice][0]}}: {T57}, %b {{virtual_device= meta[VirtualDevice][0]}}: {T57},
          %c {{virtual_device= meta[VirtualDevice][1]}}: {T57}, %d {{virtual_device= meta[VirtualDevice][1]}}: {T57},
          virtual_device=meta[VirtualDevice][1]) {{
  %0 = add(%a, %b);
  %1 = on_device(%0, virtual_device=meta[VirtualDevice][0], constrain_result=True);
  %2 = device_copy(%1, src_virtual_device=meta[VirtualDevice][0], dst_virtual_device=meta[VirtualDevice][1]);
  %3 = add(%c, %d);
  subtract(%2, %3)
}}
""", [CPU, GPU]),
    ("let_on_cpu", f"""
def @main(%a {{virtual_device=meta[VirtualDevice][0]}}: {T57}, %b {{virtual_device=meta[VirtualDevice][0]}}: {T57},
          %c {{virtual_device=meta[VirtualDevice][1]}}: {T57}, %d {{virtual_device=meta[VirtualDevice][1]}}: {T57},
          virtual_device=meta[VirtualDevice][1]) {{
  %0 = add(%a, %b);
  let %l = on_device(%0, virtual_device=meta[VirtualDevice][0], constrain_result=True);
  let %r = on_device(add(%c, %d), virtual_device=meta[VirtualDevice][1], constrain_result=True);
  %1 = device_copy(%l, src_virtual_device=meta[VirtualDevice][0], dst_virtual_device=meta[VirtualDevice][1]);
  subtract(%1, %r)
}}
""", [CPU, GPU]),
    ("func_param_on_cpu", f"""
def @main(%a {{virtual_device=meta[VirtualDevice][0]}}: {T57}, %b {{virtual_device=meta[VirtualDevice][0]}}: {T57},
          %c {{virtual_device=meta[VirtualDevice][0]}}: {T57}, %d {{virtual_device=meta[VirtualDevice][0]}}: {T57},
          virtual_device=meta[VirtualDevice][0]) {{
  let %f = fn (%x {{virtual_device=meta[VirtualDevice][0]}}, %y {{virtual_device=meta[VirtualDevice][0]}},
               virtual_device=meta[VirtualDevice][0]) {{
    add(%x, %y)
  }};
  %0 = %f(%a, %b);
  %1 = add(%c, %d);
  subtract(%0, %1)
}}
""", [CPU, GPU]),
    ("conditional", f"""
def @main(%x {{virtual_device=meta[VirtualDevice][0]}}: bool, %y {{virtual_device=meta[VirtualDevice][0]}}: {T57},
          %z {{virtual_device=meta[VirtualDevice][0]}}: {T57}, virtual_device=meta[VirtualDevice][0]) {{
  let %f = fn (%a {{virtual_device=meta[VirtualDevice][0]}}: {T57}, virtual_device=meta[VirtualDevice][0]) {{
    add(%a, %y)
  }};
  let %g = fn (%a1 {{virtual_device=meta[VirtualDevice][0]}}: {T57}, virtual_device=meta[VirtualDevice][0]) {{
    subtract(%a1, %y)
  }};
  let %h = on_device(if (%x) {{
    %f
  }} else {{
    %g
  }}, virtual_device=meta[VirtualDevice][0], constrain_result=True);
  %h(%z)
}}
""", [CPU, GPU]),
    ("global", f"""
def @f(%a {{virtual_device=meta[VirtualDevice][1]}}: {T57}, %b {{virtual_device=meta[VirtualDevice][0]}}: {T57},
       virtual_device=meta[VirtualDevice][1]) -> {T57} {{
  %0 = device_copy(%b, src_virtual_device=meta[VirtualDevice][0], dst_virtual_device=meta[VirtualDevice][1]);
  add(%a, %0)
}}

def @main(%x {{virtual_device=meta[VirtualDevice][0]}}: {T57}, %y {{virtual_device=meta[VirtualDevice][1]}}: {T57},
          virtual_device=meta[VirtualDevice][1]) -> {T57} {{
  @f(%y, %x)
}}
""", [CPU, GPU]),
    ("tuple_get_item", """
def @main(%x {virtual_device=meta[VirtualDevice][0]}: Tensor[(3, 3, 4), float32],
          virtual_device=meta[VirtualDevice][1]) {
  %0 = split(%x, indices_or_sections=3);
  let %t = on_device(%0, virtual_device=meta[VirtualDevice][0], constrain_result=True);
  %1 = %t.0;
  %2 = %t.1;
  %3 = subtract(%1, %2);
  device_copy(%3, src_virtual_device=meta[VirtualDevice][0], dst_virtual_device=meta[VirtualDevice][1])
}
""", [CPU, GPU]),
    ("free_on_device", f"""
def @on_scope_b(%x {{virtual_device=meta[VirtualDevice][2]}}: {T57},
                virtual_device=meta[VirtualDevice][2]) -> {T57} {{
  %x
}}

def @main(%a {{virtual_device=meta[VirtualDevice][0]}}: {T57}, %b {{virtual_device=meta[VirtualDevice][1]}}: {T57},
          %c {{virtual_device=meta[VirtualDevice][2]}}: {T57}, virtual_device=meta[VirtualDevice][1]) {{
  // %a's memory scope is unconstrained, so it takes "scopeB"
  %0 = @on_scope_b(on_device(%a, virtual_device=meta[VirtualDevice][0], constrain_body=False));
  // %b's memory scope is "scopeA", so it needs a "scopeA" -> "scopeB" copy
  %1 = @on_scope_b(on_device(%b, virtual_device=meta[VirtualDevice][0], constrain_body=False));
  %2 = @on_scope_b(on_device(%c, virtual_device=meta[VirtualDevice][0], constrain_body=False));
  %3 = add(add(%0, %1), %2);
  on_device(%3, virtual_device=meta[VirtualDevice][0], constrain_body=False)
}}
""", [CPU, CPU_SCOPE_A, CPU_SCOPE_B]),
]  # fmt: skip


def _parse(name):
    _, program, devices = next(p for p in PROGRAMS if p[0] == name)
    return parse(HEADER + program, {"VirtualDevice": devices})


@pytest.mark.parametrize("name", [p[0] for p in PROGRAMS])
def test_plan_devices_programs_round_trip(name):
    mod = _parse(name)
    printed = astext(mod)
    assert "#[metadata]" in printed
    assert '"VirtualDevice"' in printed
    again = parse(printed)  # the metadata section alone resolves the devices
    assert_structural_equal(again, mod)
    assert astext(again) == printed


def test_devices_land_on_vars_functions_and_attributes():
    mod = _parse("left_add_on_cpu")
    main = mod["main"]
    assert [p.virtual_device for p in main.params] == [CPU, CPU, GPU, GPU]
    assert main.virtual_device == GPU
    copy = main.body.args[0]
    assert copy.op.name == "device_copy"
    assert dict(copy.attrs) == {"src_virtual_device": CPU, "dst_virtual_device": GPU}
    on_device = copy.args[0]
    assert dict(on_device.attrs) == {"virtual_device": CPU, "constrain_result": True}
    inner = _parse("func_param_on_cpu")["main"].body.value
    assert inner.virtual_device == CPU
    assert inner.params[0].virtual_device == CPU
    assert inner.params[0].type_annotation is None


def test_printed_metadata_keeps_targets_and_scopes():
    printed = astext(_parse("free_on_device"))
    assert '"target": {"kind": "c"}' in printed
    assert '"memory_scope": "scopeB"' in printed
    assert printed.count('"device_type_int": 1') == 3


def test_device_copy_with_a_constant_uses_both_metadata_kinds():
    program = HEADER + textwrap.dedent(
        """\
        def @main(%x: Tensor[(5, 7), float32]) {
          %0 = device_copy(%x, src_virtual_device=meta[VirtualDevice][0], dst_virtual_device=meta[VirtualDevice][1]);
          add(%0, meta[relay.Constant][0])
        }
        """
    )
    table = {"VirtualDevice": [CPU, GPU], "relay.Constant": [np.ones((5, 7), "float32")]}
    mod = parse(program, table)
    printed = astext(mod)
    assert '"relay.Constant"' in printed
    assert '"VirtualDevice"' in printed
    assert_structural_equal(parse(printed), mod)


def test_let_bound_and_free_vars_print_their_devices():
    x = Var("x", tensor(2), virtual_device=GPU)
    y = Var("y", tensor(2), virtual_device=CPU)
    body = Let(
        y, Call(Op("device_copy"), (x,), {"src_virtual_device": GPU, "dst_virtual_device": CPU}), y
    )
    func = Function((x,), body, virtual_device=CPU)
    printed = astext(func)
    assert "let %y {virtual_device=meta[VirtualDevice][1]}: Tensor[(2), float32] =" in printed
    assert_structural_equal(parse_expr(printed), func)


def test_metadata_json_in_tvm_attribute_form():
    program = HEADER + "def @main(%x {virtual_device=meta[VirtualDevice][0]}: float32) { %x }\n"
    section = (
        '#[metadata]\n{"VirtualDevice": [{"device_type_int": "2", "virtual_device_id": "1", '
        '"memory_scope": "global"}]}\n'
    )
    assert parse(program + section)["main"].params[0].virtual_device == VirtualDevice(
        "cuda", 1, memory_scope="global"
    )
    targeted = '#[metadata]\n{"VirtualDevice": [{"device_type_int": 1, "target": "c"}]}\n'
    assert parse(program + targeted)["main"].params[0].virtual_device.target == Target()
    by_dicts = {"VirtualDevice": [{"device_type_int": 1, "target": {"kind": "c", "cores": 4}}]}
    assert parse(program, by_dicts)["main"].params[0].virtual_device.target == Target(cores=4)


# -- structural equality sees devices ------------------------------------------------------


def test_programs_differing_only_in_devices_are_not_equal():
    program = HEADER + next(p[1] for p in PROGRAMS if p[0] == "left_add_on_cpu")
    on_cpu = parse(program, {"VirtualDevice": [CPU, GPU]})
    assert structural_equal(on_cpu, parse(program, {"VirtualDevice": [CPU, GPU]}))
    assert not structural_equal(on_cpu, parse(program, {"VirtualDevice": [CPU_SCOPE_A, GPU]}))
    assert not structural_equal(on_cpu, parse(program, {"VirtualDevice": [CPU, CPU]}))
    with pytest.raises(AssertionError, match="virtual_device"):
        assert_structural_equal(on_cpu, parse(program, {"VirtualDevice": [GPU, GPU]}))
    x, y = Var("x", tensor(2)), Var("x", tensor(2), virtual_device=GPU)
    assert not structural_equal(Function((x,), x), Function((y,), y))
    assert not structural_equal(Function((x,), x), Function((x,), x, virtual_device=GPU))
    assert structural_hash(Function((x,), x)) != structural_hash(Function((y,), y))
    assert structural_digest(Function((x,), x)) != structural_digest(Function((y,), y))


def test_an_unconstrained_device_is_no_device():
    x = Var("x", tensor(2), virtual_device=VirtualDevice())
    assert x.virtual_device is None
    assert Function((x,), x, virtual_device=VirtualDevice()).virtual_device is None
    assert "virtual_device" not in astext(Function((x,), x))
    with pytest.raises(UserError, match="virtual_device must be a VirtualDevice"):
        Var("x", tensor(2), virtual_device="cuda")


# -- types, evaluation, lowering -----------------------------------------------------------


def test_types_flow_through_on_device_and_device_copy():
    mod = InferType()(_parse("left_add_on_cpu"))
    main = mod["main"]
    assert type_str(main.body.args[0].checked_type) == "Tensor[(5, 7), float32]"
    assert main.params[0].virtual_device == CPU  # inference keeps the devices
    tuples = InferType()(_parse("tuple_get_item"))["main"]
    assert type_str(tuples.body.value.checked_type) == (
        "(Tensor[(1, 3, 4), float32], Tensor[(1, 3, 4), float32], Tensor[(1, 3, 4), float32])"
    )
    assert type_str(tuples.checked_type).endswith("-> Tensor[(1, 3, 4), float32]")
    functions = InferType()(_parse("conditional"))["main"]  # on_device of a function value
    assert type_str(functions.body.value.checked_type) == f"fn ({T57}) -> {T57}"


def test_device_attributes_must_be_devices():
    with pytest.raises(OpTypeError, match="on_device: attribute `virtual_device` must be a Vi"):
        get_op("on_device").infer_type((tensor(2),), {"virtual_device": "cuda"})
    attrs = get_op("device_copy").normalize_attrs({})
    assert attrs.src_virtual_device == attrs.dst_virtual_device == VirtualDevice()
    assert get_op("on_device").normalize_attrs({}).constrain_body is True


def test_the_evaluator_treats_them_as_identity():
    rng = np.random.default_rng(0)
    a, b, c, d = (rng.standard_normal((5, 7)).astype("float32") for _ in range(4))
    result = evaluate(_parse("left_add_on_cpu"), a, b, c, d)
    np.testing.assert_allclose(result, (a + b) - (c + d), rtol=1e-6)
    x = rng.standard_normal((3, 3, 4)).astype("float32")
    np.testing.assert_allclose(evaluate(_parse("tuple_get_item"), x), x[:1] - x[1:2])
    np.testing.assert_allclose(evaluate(_parse("conditional"), np.array(False), a, b), b - a)


def test_device_copy_lowers_to_a_copy_and_on_device_refuses():
    x = te.placeholder((2, 3), "float32", name="x")
    y = te.placeholder((4,), "int32", name="y")
    copy = get_op("device_copy").lower_to_te([x], {})
    assert copy is not x
    assert copy.const_shape() == (2, 3)
    copies = get_op("device_copy").lower_to_te([[x, y]], {})
    assert [t.const_shape() for t in copies] == [(2, 3), (4,)]
    with pytest.raises(LoweringError, match="on_device .* is a device annotation") as info:
        get_op("on_device").lower_to_te([x], {"virtual_device": GPU})
    assert info.value.rule == "lower_te.on-device"
    assert get_op("on_device").pattern == get_op("device_copy").pattern == OpPattern.OPAQUE


# -- parse errors --------------------------------------------------------------------------

BAD = [
    ("index_out_of_range", """
def @main(%x {virtual_device=meta[VirtualDevice][9]}: float32) {  // error
  %x
}""", "9]", "no entry 9 in meta[VirtualDevice]: it has 2 entries"),
    ("device_as_expression", """
def @main(%x: float32) {
  add(%x, meta[VirtualDevice][0])  // error
}""", "VirtualDevice", "is not an expression"),
    ("constant_as_device", """
def @main(%x: float32) {
  on_device(%x, virtual_device=meta[relay.Constant][0])  // error
}""", "relay.Constant", "is not an attribute value"),
    ("other_var_attribute", """
def @main(%x {device=meta[VirtualDevice][0]}: float32) {  // error
  %x
}""", "device=", "expected `virtual_device=meta[VirtualDevice][i]` in the braces after `%x`"),
    ("var_device_not_meta", """
def @main(%x {virtual_device=2}: float32) {  // error
  %x
}""", "2}", "expected `virtual_device=meta[VirtualDevice][i]`"),
    ("function_device_not_meta", """
def @main(%x: float32, virtual_device="cuda") {  // error
  %x
}""", "virtual_device=", "a function's `virtual_device=` must be `meta[VirtualDevice][i]`"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "source", "at", "message"), BAD, ids=[b[0] for b in BAD])
def test_malformed_device_text_gives_a_located_parse_error(name, source, at, message):
    text = HEADER + source.lstrip("\n")
    number, line = next((n, s) for n, s in enumerate(text.splitlines(), 1) if "// error" in s)
    column = line.index(at) + 1
    table = {"VirtualDevice": [CPU, GPU], "relay.Constant": [np.zeros(2, "float32")]}
    with pytest.raises(ParseError) as info:
        parse(text, table, source_name="bad.relay")
    err = info.value
    assert message in err.message, err.message
    assert (err.span.line, err.span.column) == (number, column), str(err)
    rendered = str(err).splitlines()
    assert rendered[0].startswith(f"bad.relay:{number}:{column}: error: ")
    assert rendered[1] == line
    assert rendered[2].startswith(" " * (column - 1) + "^")


def test_a_malformed_metadata_entry_is_located_at_the_entry():
    text = HEADER + textwrap.dedent(
        """\
        def @main(%x {virtual_device=meta[VirtualDevice][1]}: float32) { %x }
        #[metadata]
        {
          "relay.Constant": [],
          "VirtualDevice": [
            {"device_type_int": 1, "virtual_device_id": 0},
            {"device_type_int": 2, "virtual_device_id": -7}
          ]
        }
        """
    )
    with pytest.raises(ParseError) as info:
        parse(text)
    err = info.value
    assert "meta[VirtualDevice][1] is not a valid VirtualDevice" in err.message
    assert "virtual_device_id must be an int >= -1, got -7" in err.message
    assert (err.span.line, err.span.column) == (8, 5), str(err)
    assert str(err).splitlines()[2] == "    ^"


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"device_type": 2}, "has the unknown key `device_type`"),
        ({"device_type_int": "gpu"}, "unknown device type 'gpu'"),
        ({"device_type_int": 1, "target": {"kind": "c", "arch": "x"}}, "a target is null"),
        ({"device_type_int": 2, "target": "c"}, "runs on device type cpu, not cuda"),
        ("cuda", "must be a VirtualDevice or an object"),
    ],
)
def test_malformed_entries_in_the_initial_table(entry, message):
    program = HEADER + "def @main(%x {virtual_device=meta[VirtualDevice][0]}: float32) { %x }"
    with pytest.raises(ValueError, match=f"init_meta_table: .*{message}"):
        parse(program, {"VirtualDevice": [entry]})
