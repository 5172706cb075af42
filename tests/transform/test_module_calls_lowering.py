"""Calls between module functions through lowering (tessel.tir.module_calls): the calling rules
are checked before any pass, views of an arena at constant offsets survive FlattenBuffer,
StorageRewrite and LowerMemoryScopes, the memory report counts the arena and the callees, and
the script form `Module.kernel(...)` round-trips."""

import pytest

from tessel.ir.expr import Call, GlobalVar
from tessel.ir.functor import post_order
from tessel.ir.node import with_changes
from tessel.ir.structural import structural_equal
from tessel.script import parse
from tessel.script.errors import ParseError
from tessel.script.printer import script
from tessel.testing.differential import check_same_results
from tessel.tir import builtin
from tessel.tir.module_calls import ModuleCallError, call_global, is_module_call
from tessel.tir.stmt import Allocate, Evaluate
from tessel.transform import lower
from tessel.transform.memory_usage import memory_usage

KERNELS = """
    @T.prim_func
    def add_one(a: T.Buffer((8,), "float32"), b: T.Buffer((8,), "float32")):
        for i in range(8):
            b[i] = a[i] + T.float32(1)

    @T.prim_func
    def scale(a: T.Buffer((8,), "float32"), b: T.Buffer((8,), "float32"), s: T.float32):
        scratch = T.allocate([100], "float32", "global.workspace")
        S = T.decl_buffer((100,), "float32", data=scratch)
        for i in range(8):
            S[i] = a[i] * s
        for i in range(8):
            b[i] = S[i]
"""

TWO_VIEWS = (
    """
@I.ir_module
class Module:
    @T.prim_func
    def main(x: T.Buffer((8,), "float32"), y: T.Buffer((8,), "float32")):
        arena = T.allocate([64], "uint8", "global.workspace")
        t0 = T.decl_buffer((8,), "float32", data=arena.data)
        t1 = T.decl_buffer((8,), "float32", data=arena.data, elem_offset=8)
        Module.add_one(x.data, T.address_of(t0[0]))
        Module.scale(T.address_of(t0[0]), T.address_of(t1[0]), T.float32(3))
        Module.add_one(T.address_of(t1[0]), y.data)
"""
    + KERNELS
)


FLOATS = 'x: T.Buffer((8,), "float32"), y: T.Buffer((8,), "float32")'


def _module(main_body: str, params: str = FLOATS):
    return parse(
        f"@I.ir_module\nclass Module:\n    @T.prim_func\n    def main({params}):\n"
        + "".join(f"        {line}\n" for line in main_body.strip().splitlines())
        + KERNELS
    )


def test_views_of_an_arena_survive_lowering_and_agree_with_the_interpreter():
    mod = parse(TWO_VIEWS)
    lowered = lower(mod, verify=True)
    main = lowered["main"]
    calls = [n for n in post_order(main.body) if is_module_call(n)]
    assert [c.op.name_hint for c in calls] == ["add_one", "scale", "add_one"]
    # FlattenBuffer folds each view's offset into the address it passes
    addresses = [a for c in calls for a in c.args if isinstance(a, Call)]
    assert all(a.op is builtin.address_of_op for a in addresses)
    assert sorted({a.args[0].indices[0].value for a in addresses}) == [0, 8]
    # StorageRewrite keeps the arena (only calls use it) and LowerMemoryScopes places it
    allocations = [n for n in post_order(main.body) if isinstance(n, Allocate)]
    assert [a.buffer_var.name for a in allocations] == ["arena"]
    assert allocations[0].annotations["placement"] == "workspace"
    check_same_results(mod, lowered, name="main")


def test_memory_report_counts_the_arena_and_the_callees_during_their_calls():
    report = memory_usage(lower(parse(TWO_VIEWS)))
    assert report["scale"].workspace_bytes == 400
    assert report["add_one"].workspace_bytes == 0
    assert report["main"].workspace_bytes == 64 + 400  # the arena stays live across the calls


def test_script_form_round_trips():
    mod = parse(TWO_VIEWS)
    text = script(mod)
    assert "Module.scale(T.address_of(t0[0]), T.address_of(t1[0]), T.float32(3.0))" in text
    again = parse(text)
    assert structural_equal(mod, again)
    lowered = lower(mod)
    assert structural_equal(parse(script(lowered)), lowered)


def test_calls_use_the_modules_global_vars():
    mod = parse(TWO_VIEWS)
    call = next(n for n in post_order(mod["main"].body) if is_module_call(n))
    assert call.op is mod.get_global_var("add_one")
    assert isinstance(call.op, GlobalVar)
    assert str(call.dtype) == "int32"


@pytest.mark.parametrize(
    ("body", "rule", "message"),
    [
        ("Module.add_one(x.data)", "module-call.arity", "with 1 arguments, but it takes 2"),
        (
            "Module.scale(x.data, y.data, x.data)",
            "module-call.argument-kind",
            "`s` is a float32 scalar",
        ),
        ("Module.add_one(x.data, T.float32(1))", "module-call.argument-kind", "`b` is a buffer"),
        (
            "Module.scale(x.data, y.data, T.int64(3))",
            "module-call.argument-dtype",
            "`s` is float32",
        ),
        (
            "T.evaluate(Module.add_one(x.data, y.data) + 1)",
            "module-call.position",
            "inside an expression",
        ),
        (
            "Module.add_one(T.address_of(x[0]), T.address_of(x[4]))",
            "module-call.overlap",
            "overlapping memory",
        ),
    ],
)
def test_broken_calls_are_refused_before_lowering(body, rule, message):
    mod = _module(body)
    with pytest.raises(ModuleCallError, match=message) as info:
        lower(mod)
    assert info.value.rule == rule


def test_a_call_of_a_function_outside_the_module_is_refused():
    mod = parse(TWO_VIEWS)
    main = mod["main"]
    x, y = (main.buffer_map[p] for p in main.params)
    body = Evaluate(call_global("missing", x.data, y.data))
    mod = mod.with_function("main", with_changes(main, body=body))
    with pytest.raises(ModuleCallError, match="`missing`, which is not a function") as info:
        lower(mod)
    assert info.value.rule == "module-call.unknown-function"
    assert "T.call_extern" in info.value.hint


def test_the_parser_names_an_unknown_module_function():
    with pytest.raises(ParseError, match="`Module` has no attribute `missing`"):
        _module("Module.missing(x.data, y.data)")


def test_a_pointer_of_another_element_type_is_refused():
    mod = _module(
        "Module.add_one(x.data, T.address_of(y[0]))",
        params='x: T.Buffer((8,), "float32"), y: T.Buffer((8,), "int32")',
    )
    with pytest.raises(ModuleCallError, match="points to int32") as info:
        lower(mod)
    assert info.value.rule == "module-call.argument-dtype"


def test_recursion_is_refused():
    mod = parse("""
@I.ir_module
class Module:
    @T.prim_func
    def main(x: T.Buffer((8,), "float32")):
        Module.ping(x.data)

    @T.prim_func
    def ping(x: T.Buffer((8,), "float32")):
        Module.pong(x.data)

    @T.prim_func
    def pong(x: T.Buffer((8,), "float32")):
        Module.ping(x.data)
""")
    with pytest.raises(ModuleCallError, match="ping -> pong -> ping") as info:
        lower(mod)
    assert info.value.rule == "module-call.recursion"


def test_a_callee_with_an_unknowable_size_is_refused():
    mod = parse("""
@I.ir_module
class Module:
    @T.prim_func
    def main(x: T.Buffer((8,), "float32")):
        Module.kernel(x.data)

    @T.prim_func
    def kernel(a: T.handle):
        n = T.int32()
        A = T.match_buffer(a, (n,), "float32")
        for i in range(n):
            A[i] = T.float32(0)
""")
    with pytest.raises(ModuleCallError, match="`n`") as info:
        lower(mod)
    assert info.value.rule == "module-call.size-symbol"


def test_a_callee_whose_extent_is_an_expression_of_its_scalars_is_called_and_checked():
    # The kernel's rows are n * 2 for its scalar n: a caller passing pointers gives it by n;
    # its entry, called alone, checks an array's rows against n * 2.
    import numpy as np

    from tessel.driver import build

    mod = parse("""
@I.ir_module
class Module:
    @T.prim_func
    def main(x: T.Buffer((6,), "float32"), y: T.Buffer((6,), "float32")):
        Module.kernel(x.data, y.data, 3)

    @T.prim_func
    def kernel(a: T.handle, b: T.handle, n: T.int32):
        A = T.match_buffer(a, (n * 2,), "float32")
        B = T.match_buffer(b, (n * 2,), "float32")
        for i in range(n * 2):
            B[i] = A[i] * T.float32(2)
""")
    check_same_results(mod, mod, name="main")
    library = build(mod)
    x = np.arange(6, dtype="float32")
    y = np.zeros(6, "float32")
    library["main"](x, y)
    np.testing.assert_array_equal(y, x * 2)
    with pytest.raises(Exception, match=r"axis 0 of `A` must be n \* 2"):
        library["kernel"](np.zeros(5, "float32"), np.zeros(6, "float32"), 3)


def test_a_lone_function_calling_a_module_function_fails_in_the_interpreter():
    import numpy as np

    from tessel.tir import interpreter
    from tessel.tir.interpreter.errors import InterpreterError

    main = parse(TWO_VIEWS)["main"]
    x, y = np.zeros(8, "float32"), np.zeros(8, "float32")
    with pytest.raises(InterpreterError, match="run the IRModule"):
        interpreter.run(main, x, y)
