"""FlattenBuffer: every access becomes 1-D; results agree before and after (interpreter, C)."""

from __future__ import annotations

import numpy as np
import pytest

from tessel.driver import build, generate_c_source
from tessel.ir import builders as B
from tessel.ir.expr import Var
from tessel.ir.functor import post_order
from tessel.ir.module import IRModule
from tessel.ir.node import with_changes
from tessel.ir.structural import structural_equal
from tessel.ir.transform import Sequential
from tessel.script import ParseError, parse
from tessel.script import tir as T
from tessel.support.dtype import int32, int64
from tessel.support.errors import InternalError
from tessel.testing import assert_structural_equal, check_same_results
from tessel.testing.ir_programs import TRUE, block, loops, matmul, prim_func, root, seq, store
from tessel.tir import interpreter
from tessel.tir.buffer import BufferLoad, decl_buffer
from tessel.tir.stmt import Allocate, BufferStore, DeclBuffer, For
from tessel.transform import (
    ConvertBlocksToOpaque,
    FlattenBuffer,
    LoweringError,
    LowerInitBlock,
    LowerMatchBuffer,
    LowerOpaqueBlock,
)
from tessel.transform.postconditions import check_postcondition

RNG = np.random.default_rng(4)


def _flatten(func):
    lower_blocks = Sequential(
        (LowerInitBlock(), ConvertBlocksToOpaque(), LowerMatchBuffer(), LowerOpaqueBlock())
    )
    mod = FlattenBuffer()(lower_blocks(IRModule.from_func(func)))
    return mod[func.name]


def _allocation(func):
    """The function's one Allocate (below the parameters' flat DeclBuffers)."""
    return next(n for n in post_order(func.body) if isinstance(n, Allocate))


def _accesses(func):
    return [n for n in post_order(func.body) if isinstance(n, BufferLoad | BufferStore)]


def _check_same(before, after, make_args, check):
    for func in (before, after):
        for run in (lambda f, *a: interpreter.run(f, *a), lambda f, *a: build(f)(*a)):
            args = make_args()
            run(func, *args)
            check(*args)


def test_matmul_accesses_become_one_dimensional_row_major_indices():
    before = matmul(12)
    after = _flatten(before)
    accesses = _accesses(after)
    assert accesses and all(len(a.indices) == 1 and len(a.buffer.shape) == 1 for a in accesses)
    i, j = (
        loop.loop_var for loop in [n for n in post_order(after.body) if isinstance(n, For)][:0:-1]
    )
    store_c = next(a for a in accesses if isinstance(a, BufferStore))
    assert structural_equal(store_c.indices[0], i * 12 + j)
    assert store_c.buffer.data is before.buffer_map[before.params[2]].data
    assert after.buffer_map is before.buffer_map  # the signature keeps its shapes
    a, b = (
        RNG.standard_normal((12, 12)).astype("float32"),
        RNG.standard_normal((12, 12)).astype("float32"),
    )

    def check(_a, _b, c):
        np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)

    _check_same(before, after, lambda: (a, b, np.zeros((12, 12), "float32")), check)


def test_strided_view_of_an_allocation_gets_strided_flat_indices():
    a_buf, out = decl_buffer((4, 16), "float32", "A"), decl_buffer((4, 16), "float32", "out")
    padded = decl_buffer((4, 16), "float32", "padded", strides=(20, 1))
    body = Allocate(
        padded.data,
        padded.dtype,
        (B.const(4), B.const(20)),
        TRUE,
        DeclBuffer(
            padded,
            seq(
                loops((4, 16), lambda i, j: store(padded, (i, j), a_buf[i, j] * 3.0)),
                loops((4, 16), lambda i, j: store(out, (i, j), padded[i, j] - 1.0)),
            ),
        ),
    )
    before = prim_func("strided", (a_buf, out), body)
    after = _flatten(before)
    assert B.is_const_int(_allocation(after).extents[0], 80)
    first_store = next(a for a in _accesses(after) if isinstance(a, BufferStore))
    i, j = (
        loop.loop_var
        for loop in [n for n in post_order(after.body) if isinstance(n, For)][:2][::-1]
    )
    assert structural_equal(first_store.indices[0], i * 20 + j)
    a = RNG.standard_normal((4, 16)).astype("float32")
    _check_same(
        before,
        after,
        lambda: (a, np.zeros((4, 16), "float32")),
        lambda _a, result: np.testing.assert_array_equal(result, a * 3 - 1),
    )


def test_rank_zero_accumulator_is_flattened_to_index_zero():
    a_buf, total = decl_buffer((50,), "int64", "A"), decl_buffer((1,), "int64", "total")
    acc = decl_buffer((), "int64", "acc")
    body = root(
        seq(
            block("init", "", (), (), lambda: store(acc, (), 0)),
            loops(
                (50,),
                lambda i: block(
                    "sum", "R", (i,), (50,), lambda v: store(acc, (), acc[()] + a_buf[v])
                ),
            ),
            block("out", "", (), (), lambda: store(total, (0,), acc[()])),
        ),
        (acc,),
    )
    before = prim_func("sum", (a_buf, total), body)
    after = _flatten(before)
    acc_accesses = [a for a in _accesses(after) if a.buffer.data is acc.data]
    assert acc_accesses and all(B.is_const_int(a.indices[0], 0) for a in acc_accesses)
    a = RNG.integers(-(2**40), 2**40, 50).astype("int64")
    _check_same(
        before,
        after,
        lambda: (a, np.zeros(1, "int64")),
        lambda _a, result: np.testing.assert_array_equal(result, [a.sum()]),
    )


def test_function_with_blocks_is_rejected_with_the_no_blocks_rule():
    with pytest.raises(LoweringError, match="run LowerOpaqueBlock first") as err:
        FlattenBuffer()(IRModule.from_func(matmul(4)))
    assert err.value.rule == "flatten_buffer.no-blocks"


def test_axis_separators_make_a_two_dimensional_physical_allocation():
    # Formerly refused (`flatten_buffer.axis-separators`); now one physical axis a group.
    a_buf = decl_buffer((4, 4), "float32", "A")
    sep = decl_buffer((4, 4), "float32", "sep", axis_separators=(1,))
    body = Allocate(
        sep.data,
        sep.dtype,
        sep.shape,
        TRUE,
        DeclBuffer(sep, loops((4, 4), lambda i, j: store(sep, (i, j), a_buf[i, j]))),
    )
    after = _flatten(prim_func("sep", (a_buf,), body))
    assert [e.value for e in _allocation(after).extents] == [4, 4]
    (store_sep,) = (a for a in _accesses(after) if isinstance(a, BufferStore))
    assert store_sep.buffer.axis_separators == (1,)
    assert len(store_sep.indices) == 2


def test_function_with_blocks_is_rejected_naming_the_block():
    with pytest.raises(LoweringError, match="block `C` remains"):
        FlattenBuffer()(IRModule.from_func(matmul(4)))


def _fill_program(shape, dtype="int8"):
    a_buf = decl_buffer(shape, dtype, "A")
    return prim_func("fill", (a_buf,), loops(shape, lambda *idx: store(a_buf, idx, 1)))


def test_buffer_larger_than_int32_max_elements_gets_int64_flat_indices():
    # 65536 * 32769 elements overflow int32 (the C code used to write far out of bounds); the
    # IR is checked instead of allocating 2 GiB.
    after = _flatten(_fill_program((65536, 32769)))
    (access,) = _accesses(after)
    assert access.indices[0].dtype == int64
    i, j = (
        loop.loop_var for loop in [n for n in post_order(after.body) if isinstance(n, For)][::-1]
    )
    assert structural_equal(
        access.indices[0], B.cast(i, int64) * B.const(32769, int64) + B.cast(j, int64)
    )
    assert "(int64_t)" in generate_c_source(_fill_program((65536, 32769)))


def test_small_buffer_keeps_int32_flat_indices():
    after = _flatten(_fill_program((64, 32)))
    (access,) = _accesses(after)
    assert access.indices[0].dtype == int32


def test_symbolic_shape_whose_product_may_exceed_int32_gets_int64_indices_and_runs():
    n, m = Var("n"), Var("m")
    a_buf, out = decl_buffer((n, m), "float32", "A"), decl_buffer((n, m), "float32", "out")
    before = prim_func(
        "scale", (a_buf, out), loops((n, m), lambda i, j: store(out, (i, j), a_buf[i, j] * 2.0))
    )
    after = _flatten(before)
    assert all(a.indices[0].dtype == int64 for a in _accesses(after))
    a = RNG.standard_normal((3, 5)).astype("float32")
    _check_same(
        before,
        after,
        lambda: (a, np.zeros((3, 5), "float32")),
        lambda _a, result: np.testing.assert_array_equal(result, a * 2),
    )


def test_one_dimensional_int32_symbolic_shape_keeps_int32_indices():
    # an int32 extent cannot exceed INT32_MAX, so neither can the index
    n = Var("n")
    a_buf = decl_buffer((n,), "float32", "A")
    after = _flatten(prim_func("fill", (a_buf,), loops((n,), lambda i: store(a_buf, (i,), 1.0))))
    (access,) = _accesses(after)
    assert access.indices[0].dtype == int32


def test_large_allocation_gets_an_int64_size():
    a_buf = decl_buffer((4,), "int8", "A")
    big = decl_buffer((65536, 32769), "int8", "big")
    body = Allocate(
        big.data, big.dtype, big.shape, TRUE, DeclBuffer(big, store(a_buf, (0,), big[0, 0]))
    )
    after = _flatten(prim_func("big", (a_buf,), body))
    (size,) = _allocation(after).extents
    assert size.dtype == int64 and B.is_const_int(size, 65536 * 32769)


# ---------------------------------------------------------------- axis separators
# Each group of logical axes becomes one physical axis (TVM's axis_separators): the buffer gets
# one dimension a group, and every access the row-major index within each group.


def _flatten_lowered(func):
    return FlattenBuffer()(IRModule.from_func(func))[func.name]


def _assert_flattens_to(before, expected):
    after = _flatten_lowered(before)
    assert_structural_equal(with_changes(after, attrs=expected.attrs), expected)  # names differ
    return after


def test_one_separator_makes_a_4d_local_buffer_2d_physical():
    @T.prim_func
    def before(A: T.Buffer((4, 4, 4, 4), "float32"), C: T.Buffer((4, 4, 4, 4), "float32")):
        with T.allocate([256], "float32", "global") as B:
            B_1 = T.decl_buffer((4, 4, 4, 4), "float32", axis_separators=[2], data=B)
            for i, j, k, m in T.grid(4, 4, 4, 4):
                B_1[i, j, k, m] = A[i, j, k, m] * T.float32(2)
            for i, j, k, m in T.grid(4, 4, 4, 4):
                C[i, j, k, m] = B_1[i, j, k, m] + T.float32(1)

    @T.prim_func
    def expected(A: T.Buffer((4, 4, 4, 4), "float32"), C: T.Buffer((4, 4, 4, 4), "float32")):
        A_1 = T.decl_buffer((256,), "float32", data=A.data)
        C_1 = T.decl_buffer((256,), "float32", data=C.data)
        with T.allocate([16, 16], "float32", "global") as B:
            B_1 = T.decl_buffer((16, 16), "float32", axis_separators=[1], data=B)
            for i, j, k, m in T.grid(4, 4, 4, 4):
                B_1[i * 4 + j, k * 4 + m] = A_1[i * 64 + j * 16 + k * 4 + m] * T.float32(2)
            for i, j, k, m in T.grid(4, 4, 4, 4):
                C_1[i * 64 + j * 16 + k * 4 + m] = B_1[i * 4 + j, k * 4 + m] + T.float32(1)

    after = _assert_flattens_to(before, expected)
    check_same_results(before, after)


def test_two_separators_make_a_4d_parameter_3d_physical_and_keep_the_signature():
    @T.prim_func
    def before(
        A: T.Buffer((4, 4, 4, 4), "float32"),
        C: T.Buffer((4, 4, 4, 4), "float32", axis_separators=[1, 3]),
    ):
        for i, j, k, m in T.grid(4, 4, 4, 4):
            C[i, j, k, m] = A[i, j, k, m] + T.float32(1)

    @T.prim_func
    def expected(
        A: T.Buffer((4, 4, 4, 4), "float32"),
        C: T.Buffer((4, 4, 4, 4), "float32", axis_separators=[1, 3]),
    ):
        A_1 = T.decl_buffer((256,), "float32", data=A.data)
        C_1 = T.decl_buffer((4, 16, 4), "float32", axis_separators=[1, 2], data=C.data)
        for i, j, k, m in T.grid(4, 4, 4, 4):
            C_1[i, j * 4 + k, m] = A_1[i * 64 + j * 16 + k * 4 + m] + T.float32(1)

    after = _assert_flattens_to(before, expected)
    assert after.buffer_map is before.buffer_map  # the caller still passes a 4-d array
    check_same_results(before, after)


def test_two_separators_make_a_local_buffer_3d_physical_and_flattening_again_changes_nothing():
    @T.prim_func
    def before(A: T.Buffer((2, 3, 4, 5), "int32"), C: T.Buffer((2, 3, 4, 5), "int32")):
        with T.allocate([120], "int32", "global") as B:
            B_1 = T.decl_buffer((2, 3, 4, 5), "int32", axis_separators=[1, 2], data=B)
            for i, j, k, m in T.grid(2, 3, 4, 5):
                B_1[i, j, k, m] = A[i, j, k, m] + 7
            for i, j, k, m in T.grid(2, 3, 4, 5):
                C[i, j, k, m] = B_1[i, j, k, m]

    after = _flatten_lowered(before)
    assert [e.value for e in _allocation(after).extents] == [2, 3, 20]
    separated = {
        a.buffer for a in _accesses(after) if a.buffer.data is _allocation(after).buffer_var
    }
    assert [b.axis_separators for b in separated] == [(1, 2)]
    assert_structural_equal(_flatten_lowered(after), after)
    check_same_results(before, after)


def test_explicit_compact_strides_on_a_separated_buffer_are_accepted():
    @T.prim_func
    def before(A: T.Buffer((4, 8), "float32"), C: T.Buffer((4, 8), "float32")):
        with T.allocate([32], "float32", "global") as B:
            B_1 = T.decl_buffer((4, 8), "float32", strides=(8, 1), axis_separators=[1], data=B)
            for i, j in T.grid(4, 8):
                B_1[i, j] = A[i, j] * T.float32(3)
            for i, j in T.grid(4, 8):
                C[i, j] = B_1[i, j]

    after = _flatten_lowered(before)
    assert [e.value for e in _allocation(after).extents] == [4, 8]
    check_same_results(before, after)


def test_a_group_larger_than_int32_gets_int64_indices_and_the_others_keep_int32():
    big = decl_buffer((65536, 32769, 4), "int8", "big", axis_separators=(2,))
    a_buf = decl_buffer((4,), "int8", "A")
    body = Allocate(
        big.data,
        big.dtype,
        big.shape,
        TRUE,
        DeclBuffer(big, loops((65536, 32769, 4), lambda i, j, k: store(big, (i, j, k), a_buf[k]))),
    )
    after = _flatten(prim_func("big", (a_buf,), body))
    (access,) = (a for a in _accesses(after) if isinstance(a, BufferStore))
    assert [index.dtype for index in access.indices] == [int64, int32]
    assert [e.dtype for e in _allocation(after).extents] == [int64, int32]


_SEPARATED_TEMPLATE = """
@T.prim_func
def f(A: T.Buffer((4, 4), "float32")):
    with T.allocate([{size}], "float32", "global") as B:
        B_1 = T.decl_buffer((4, 4), "float32", {fields}, data=B)
        {extra}
        for i, j in T.grid(4, 4):
            B_1[i, j] = A[i, j]
"""


@pytest.mark.parametrize(
    ("fields", "size", "extra", "rule", "message"),
    [
        ("axis_separators=[1], strides=(8, 1)", 32, "", "separated-strides", "dense inside"),
        ("axis_separators=[1], elem_offset=4", 20, "", "separated-offset", "element offset"),
        ("axis_separators=[1]", 20, "", "separated-allocation", "needs exactly 16"),
        (
            "axis_separators=[1]",
            16,
            'B_2 = T.decl_buffer((16,), "float32", data=B)\n        B_2[0] = T.float32(0)',
            "separated-views",
            "same physical shape",
        ),
    ],
    ids=["strides", "elem_offset", "allocation-size", "flat-view"],
)
def test_separated_buffer_that_is_not_dense_or_whose_memory_disagrees_is_refused(
    fields, size, extra, rule, message
):
    func = parse(_SEPARATED_TEMPLATE.format(fields=fields, size=size, extra=extra))
    with pytest.raises(LoweringError, match=message) as err:
        _flatten_lowered(func)
    assert err.value.rule == f"flatten_buffer.{rule}"
    assert "`B_1`" in str(err.value) or "`B`" in str(err.value)


def test_separators_out_of_order_are_refused_where_the_script_writes_them():
    # The parser refuses them, located, before FlattenBuffer (which refuses them too) runs.
    with pytest.raises(ParseError, match=r"axis_separators must be increasing, got \[2, 1\]"):

        @T.prim_func
        def func(A: T.Buffer((4, 4, 4), "float32")):
            with T.allocate([64], "float32", "global") as B:
                B_1 = T.decl_buffer((4, 4, 4), "float32", axis_separators=[2, 1], data=B)
                for i, j, k in T.grid(4, 4, 4):
                    B_1[i, j, k] = A[i, j, k]


def test_separated_view_of_a_constant_is_refused():
    @T.prim_func
    def func(A: T.Buffer((4, 4), "float32")):
        K = T.allocate_const([1.0] * 16, "float32", [4, 4])
        K_1 = T.decl_buffer((4, 4), "float32", axis_separators=[1], data=K)
        for i, j in T.grid(4, 4):
            A[i, j] = K_1[i, j]

    with pytest.raises(LoweringError, match="constants are flat arrays") as err:
        _flatten_lowered(func)
    assert err.value.rule == "flatten_buffer.separated-constant"


def test_postcondition_accepts_n_d_physical_accesses_and_names_an_unflattened_one():
    @T.prim_func
    def func(A: T.Buffer((4, 4), "float32", axis_separators=[1]), C: T.Buffer((4, 4), "float32")):
        for i, j in T.grid(4, 4):
            C[i, j] = A[i, j]

    check_postcondition(IRModule.from_func(_flatten_lowered(func)), "flatten_buffer")
    with pytest.raises(InternalError, match="access to `C` has 2 indices"):
        check_postcondition(IRModule.from_func(func), "flatten_buffer")
