"""What the printer must keep so that `parse(print(f))` is `f` (issue 12, "Printer" items).

Each test starts from a script as a TVM user writes it (or IR built with the Python API, as
TVM's own printer tests do) and checks the printed text against what TVM prints, then that
the text reads back structurally equal.
"""

import ast
import dataclasses
from pathlib import Path

import pytest

from tessel.ir import IRModule, Var, builders, structural_equal, structural_hash
from tessel.ir.type import PointerType
from tessel.script import parse
from tessel.script.printer import script
from tessel.support.dtype import DataType, handle
from tessel.testing import assert_structural_equal
from tessel.tir import Allocate, BufferStore, Evaluate, PrimFunc, decl_buffer

CORPUS = sorted((Path(__file__).parent / "corpus").glob("*.py"))

HEADER = "from tessel.script import tir as T\n"


def _func(body: str) -> PrimFunc:
    return parse(HEADER + body)


def _round_trip(func):
    """Print `func`, parse the text back, and check it is the same program."""
    text = script(func)
    reparsed = parse(text, "<printed>")
    assert_structural_equal(reparsed, func)
    return text, reparsed


# --- match_buffer(..., data=...) -------------------------------------------------------------

SHARED_DATA = """
@T.prim_func
def main(a: T.handle, b: T.handle):
    A = T.match_buffer(a, (16,), "float32")
    B = T.match_buffer(b, (4, 4), "float32", data=A.data)
    for i in range(16):
        B[i // 4, i % 4] = A[i] + T.float32(1)
"""


def test_match_buffer_sharing_data_prints_data_keyword():
    func = _func(SHARED_DATA)
    text, reparsed = _round_trip(func)
    # TVM: two parameter buffers over one data var are both spelled with T.match_buffer
    assert "def main(a: T.handle, b: T.handle):" in text
    assert '    A = T.match_buffer(a, (16,), "float32")' in text
    assert '    B = T.match_buffer(b, (4, 4), "float32", data=A.data)' in text
    a, b = reparsed.param_buffers()
    assert b.data is a.data


def test_shared_data_is_not_structurally_equal_to_separate_buffers():
    shared = _func(SHARED_DATA)
    separate = _func(SHARED_DATA.replace(", data=A.data", ""))
    assert not structural_equal(shared, separate)


def test_match_buffer_data_alias_built_with_the_api():
    # the shape of TVM's test_prim_func_no_sugar_shared_buffer_data
    a, b = Var("a", handle), Var("b", handle)
    buffer_a = decl_buffer((128, 128), "float32", "A")
    buffer_b = decl_buffer((256, 256), "float32", "B", data=buffer_a.data)
    func = PrimFunc(
        (a, b),
        Evaluate(builders.const(0)),
        buffer_map={a: buffer_a, b: buffer_b},
        attrs={"global_symbol": "main"},
    )
    text, _ = _round_trip(func)
    assert text.splitlines()[2:] == [
        "@T.prim_func",
        "def main(a: T.handle, b: T.handle):",
        '    A = T.match_buffer(a, (128, 128), "float32")',
        '    B = T.match_buffer(b, (256, 256), "float32", data=A.data)',
        "    T.evaluate(0)",
    ]


def test_handle_named_in_the_body_keeps_match_buffer_form():
    # TVM's test_prim_func_no_sugar_inlined_buffer: `A: T.Buffer` would leave `a` undefined
    func = _func("""
@T.prim_func
def main(a: T.handle, B: T.Buffer((8,), "float32")):
    A = T.match_buffer(a, (8,), "float32")
    T.evaluate(a)
""")
    text, _ = _round_trip(func)
    assert 'def main(a: T.handle, B: T.Buffer((8,), "float32")):' in text
    assert '    A = T.match_buffer(a, (8,), "float32")' in text


# --- T.handle("float32") pointer types -------------------------------------------------------


def test_typed_handle_parameters_keep_their_pointer_type():
    func = _func("""
@T.prim_func
def main(a: T.handle("float32"), b: T.handle("float32", "global"), c: T.handle("int8", "shared"),
         d: T.handle):
    T.evaluate(0)
""")
    text, reparsed = _round_trip(func)
    # TVM prints a pointer type with its scope: T.handle("float32", "global")
    assert (
        'def main(a: T.handle("float32", "global"), b: T.handle("float32", "global"), '
        'c: T.handle("int8", "shared"), d: T.handle):'
    ) in text
    float32, int8 = DataType.of("float32"), DataType.of("int8")
    assert [p.type_annotation for p in reparsed.params] == [
        PointerType(float32, "global"),
        PointerType(float32, "global"),
        PointerType(int8, "shared"),
        None,
    ]


def test_typed_and_untyped_handles_differ_structurally():
    typed = _func('@T.prim_func\ndef main(a: T.handle("float32")):\n    T.evaluate(0)\n')
    untyped = _func("@T.prim_func\ndef main(a: T.handle):\n    T.evaluate(0)\n")
    assert not structural_equal(typed, untyped)


def test_typed_handle_with_match_buffer_keeps_its_type():
    func = _func("""
@T.prim_func
def main(a: T.handle("float32"), n: T.int32):
    A = T.match_buffer(a, (16,), "float32")
    for i in range(16):
        A[i] = T.float32(0)
""")
    text, reparsed = _round_trip(func)
    assert 'def main(a: T.handle("float32", "global"), n: T.int32):' in text
    assert '    A = T.match_buffer(a, (16,), "float32")' in text
    assert reparsed.params[0].type_annotation is not None


# --- T.Buffer(data=...) over an allocation ---------------------------------------------------


def _line_with(lines, text):
    """The index of the first line containing `text`."""
    return next(i for i, line in enumerate(lines) if text in line)


def test_buffer_over_an_allocation_prints_after_the_allocation():
    func = _func("""
@T.prim_func
def main(A: T.Buffer((16,), "float32")):
    B_data = T.allocate([16], "float32", "global")
    B = T.Buffer((4, 4), "float32", data=B_data)
    for i in range(16):
        B[i // 4, i % 4] = A[i]
    for i in range(16):
        A[i] = B[i // 4, i % 4] * T.float32(2)
""")
    text, _ = _round_trip(func)
    lines = text.splitlines()
    allocation, view = _line_with(lines, "B_data = T.allocate("), _line_with(lines, "= T.Buffer(")
    assert allocation < view
    assert lines[view].endswith('T.Buffer((4, 4), "float32", data=B_data.data)')


def test_buffer_over_a_with_allocation_prints_inside_it():
    func = _func("""
@T.prim_func
def main(A: T.Buffer((8,), "int32")):
    with T.allocate([8], "int32", "global") as x:
        X = T.Buffer((8,), "int32", data=x)
        X[0] = 1
        A[0] = X[0]
    A[1] = 2
""")
    text, _ = _round_trip(func)
    lines = text.splitlines()
    allocation = _line_with(lines, 'with T.allocate([8], "int32", "global") as x:')
    assert lines[allocation + 1].strip().endswith('T.Buffer((8,), "int32", data=x)')


def test_buffer_over_a_block_alloc_buffer_prints_after_it():
    func = _func("""
@T.prim_func
def main(A: T.Buffer((16,), "float32")):
    C = T.alloc_buffer((16,), "float32")
    D = T.Buffer((4, 4), "float32", data=C.data)
    for i in range(16):
        with T.block("c"):
            vi = T.axis.spatial(16, i)
            D[vi // 4, vi % 4] = A[vi]
""")
    text, _ = _round_trip(func)
    lines = text.splitlines()
    assert _line_with(lines, "C = T.alloc_buffer(") < _line_with(lines, "T.Buffer((4, 4)")
    assert lines[_line_with(lines, "T.Buffer((4, 4)")].endswith("data=C.data)")


def test_buffer_over_an_allocation_built_with_the_api():
    data = Var("buf", handle, PointerType(DataType.of("float32"), "global"))
    view = decl_buffer((4,), "float32", "V", data=data)
    body = Allocate(
        data,
        view.dtype,
        (builders.const(4),),
        builders.const(True),
        BufferStore(view, builders.const(1.0, "float32"), (builders.const(0),)),
    )
    func = PrimFunc((), body, attrs={"global_symbol": "main"})
    text, _ = _round_trip(func)
    assert text.splitlines()[4:6] == [
        '    with T.allocate([4], "float32", "global") as buf:',
        '        V = T.Buffer((4,), "float32", data=buf)',
    ]


# --- T.bool(True) in attributes --------------------------------------------------------------


def test_bool_attribute_values_print_as_t_bool():
    func = _func("""
@T.prim_func
def main(A: T.Buffer((16,), "float32")):
    T.func_attr({"tir.noalias": T.bool(True)})
    for i in T.serial(16, annotations={"pragma_flag": T.bool(False)}):
        with T.block("b"):
            vi = T.axis.spatial(16, i)
            T.block_attr({"flag": T.bool(True), "plain": True})
            A[vi] = T.float32(0)
""")
    text, reparsed = _round_trip(func)
    # what TVM prints for a PrimFunc marked noalias
    assert '    T.func_attr({"tir.noalias": T.bool(True)})' in text
    assert 'annotations={"pragma_flag": T.bool(False)}' in text
    assert 'T.block_attr({"flag": T.bool(True), "plain": True})' in text
    noalias = reparsed.attrs["tir.noalias"]
    assert noalias.dtype.is_bool
    assert noalias.value == 1


def test_typed_int_attribute_values_stay_apart_from_python_ints():
    func = _func("""
@T.prim_func
def main(A: T.Buffer((16,), "float32")):
    T.func_attr({"a": 1, "b": T.int32(1), "c": T.int64(2)})
    T.evaluate(0)
""")
    text, reparsed = _round_trip(func)
    assert 'T.func_attr({"a": 1, "b": T.int32(1), "c": T.int64(2)})' in text
    assert type(reparsed.attrs["a"]) is int


def test_bool_python_and_ir_attribute_values_differ_structurally():
    ir_bool = _func(
        '@T.prim_func\ndef f():\n    T.func_attr({"x": T.bool(True)})\n    T.evaluate(0)\n'
    )
    py_bool = _func('@T.prim_func\ndef f():\n    T.func_attr({"x": True})\n    T.evaluate(0)\n')
    assert not structural_equal(ir_bool, py_bool)


# --- empty module ----------------------------------------------------------------------------


def test_empty_module_prints_as_valid_python_that_parses_back():
    module = parse("from tessel.script import ir as I\n\n@I.ir_module\nclass M:\n    pass\n")
    assert isinstance(module, IRModule)
    assert not module.items()
    text = script(module)
    ast.parse(text)
    assert text.splitlines()[-3:] == ["@I.ir_module", "class Module:", "    pass"]
    _round_trip(module)


def test_empty_module_built_with_the_api_round_trips():
    _round_trip(IRModule.from_dict({}))


# --- match_buffer order ----------------------------------------------------------------------

OUT_OF_ORDER = """
@T.prim_func
def main(a: T.handle, b: T.handle, c: T.handle):
    n = T.int32()
    C = T.match_buffer(c, (n,), "float32")
    A = T.match_buffer(a, (n,), "float32")
    B = T.match_buffer(b, (n, 2), "float32", strides=(2, 1))
    for i in range(n):
        C[i] = A[i] + B[i, 1]
"""

IN_ORDER = """
@T.prim_func
def main(a: T.handle, b: T.handle, c: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (n,), "float32")
    B = T.match_buffer(b, (n, 2), "float32", strides=(2, 1))
    C = T.match_buffer(c, (n,), "float32")
    for i in range(n):
        C[i] = A[i] + B[i, 1]
"""


def test_match_buffer_lines_out_of_parameter_order_reparse_equal():
    func = _func(OUT_OF_ORDER)
    text, reparsed = _round_trip(func)
    assert script(reparsed) == text, "the printed text is a fixed point of parse + print"


def test_structural_equal_ignores_the_order_of_match_buffer_lines():
    out_of_order, in_order = _func(OUT_OF_ORDER), _func(IN_ORDER)
    assert list(out_of_order.buffer_map) != list(in_order.buffer_map)  # different map order
    assert structural_equal(out_of_order, in_order)
    assert structural_equal(in_order, out_of_order)
    assert structural_hash(out_of_order) == structural_hash(in_order)
    assert_structural_equal(out_of_order, in_order)


def test_match_buffer_order_does_not_hide_a_real_difference():
    swapped = OUT_OF_ORDER.replace(
        'C = T.match_buffer(c, (n,), "float32")',
        'C = T.match_buffer(c, (n,), "float32", align=128)',
    )
    assert not structural_equal(_func(swapped), _func(IN_ORDER))


def test_attribute_maps_compare_without_order():
    one = _func('@T.prim_func\ndef f():\n    T.func_attr({"x": 1, "y": "s"})\n    T.evaluate(0)\n')
    two = _func('@T.prim_func\ndef f():\n    T.func_attr({"y": "s", "x": 1})\n    T.evaluate(0)\n')
    assert structural_equal(one, two)
    assert structural_hash(one) == structural_hash(two)


# --- round-trip property over the corpus -----------------------------------------------------


def _functions(parsed):
    if isinstance(parsed, IRModule):
        return [func for _, func in parsed.items() if isinstance(func, PrimFunc)]
    return [parsed]


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_corpus_round_trips_with_buffer_map_in_any_order(path):
    """Every corpus function: reversing its buffer_map changes neither equality nor hash, and
    the reversed function still prints to text that parses back equal."""
    for func in _functions(parse(path.read_text(), str(path))):
        reversed_map = dict(reversed(list(func.buffer_map.items())))
        shuffled = dataclasses.replace(func, buffer_map=reversed_map)
        assert structural_equal(shuffled, func)
        assert structural_hash(shuffled) == structural_hash(func)
        _round_trip(shuffled)


FIDELITY_CONSTRUCTS = [
    "data=A.data",
    'T.handle("float32", "global")',
    "T.bool(True)",
    "= T.Buffer((",
]


def test_corpus_prints_the_fidelity_constructs():
    printed = "\n".join(script(parse(path.read_text(), str(path))) for path in CORPUS)
    missing = [construct for construct in FIDELITY_CONSTRUCTS if construct not in printed]
    assert not missing, f"no corpus script prints {missing}"
