"""StorageRewrite: local allocations with disjoint lifetimes share memory, within one scope,
dtype and attach scope; the rest is left alone; results agree (interpreter, C)."""

import pytest

from tessel.ir.functor import post_order
from tessel.ir.module import IRModule
from tessel.ir.node import with_changes
from tessel.ir.substitute import substitute
from tessel.script import tir as T
from tessel.support.errors import InternalError
from tessel.testing import assert_structural_equal, check_same_results
from tessel.tir.stmt import Allocate, DeclBuffer, For
from tessel.transform import LoweringError
from tessel.transform.postconditions import check_postcondition
from tessel.transform.storage_rewrite import StorageRewrite, views_outside_allocations


def _rewrite(func):
    return StorageRewrite()(IRModule.from_func(func))[func.name]


def _check(before, expected):
    after = _rewrite(before)
    assert_structural_equal(with_changes(after, attrs=expected.attrs), expected)
    check_same_results(before, after)
    check_postcondition(IRModule.from_func(after), "storage_rewrite")
    assert _rewrite(after) is after  # idempotent: nothing more to share
    return after


def _allocations(func):
    return [n for n in post_order(func.body) if isinstance(n, Allocate)]


@T.prim_func
def sequential_pair_before(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    X = T.allocate([64], "float32", "global")
    Y = T.allocate([64], "float32", "global")
    for i in range(64):
        X[i] = A[i] * T.float32(2)
    for i in range(64):
        B[i] = X[i] + T.float32(1)
    for i in range(64):
        Y[i] = B[i] * T.float32(3)
    for i in range(64):
        B[i] = B[i] + Y[i]


@T.prim_func
def sequential_pair_expected(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    X = T.allocate([64], "float32", "global")
    Y = T.decl_buffer((64,), "float32", data=X.data)
    for i in range(64):
        X[i] = A[i] * T.float32(2)
    for i in range(64):
        B[i] = X[i] + T.float32(1)
    for i in range(64):
        Y[i] = B[i] * T.float32(3)
    for i in range(64):
        B[i] = B[i] + Y[i]


def test_two_sequential_temporaries_of_the_same_size_share_one_allocation():
    _check(sequential_pair_before, sequential_pair_expected)


def test_overlapping_lifetimes_keep_their_own_allocations():
    @T.prim_func
    def before(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
        X = T.allocate([64], "float32", "global")
        Y = T.allocate([64], "float32", "global")
        for i in range(64):
            X[i] = A[i] * T.float32(2)
        for i in range(64):
            Y[i] = A[i] * T.float32(3)
        for i in range(64):
            B[i] = X[i] + Y[i]

    assert _rewrite(before) is before


def test_a_statement_that_reads_one_and_writes_the_other_is_an_overlap():
    @T.prim_func
    def before(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
        X = T.allocate([64], "float32", "global")
        Y = T.allocate([64], "float32", "global")
        for i in range(64):
            X[i] = A[i] * T.float32(2)
        for i in range(64):
            Y[63 - i] = X[i]
        for i in range(64):
            B[i] = Y[i]

    assert _rewrite(before) is before


def test_different_memory_scopes_are_never_shared():
    @T.prim_func
    def before(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
        X = T.allocate([64], "float32", "global")
        Y = T.allocate([64], "float32", "global.workspace")
        for i in range(64):
            B[i] = A[i] * T.float32(2)
        for i in range(64):
            X[i] = B[i]
        for i in range(64):
            B[i] = X[i] + T.float32(1)
        for i in range(64):
            Y[i] = B[i]
        for i in range(64):
            B[i] = Y[i] * T.float32(2)

    assert _rewrite(before) is before


def test_different_dtypes_are_not_shared():
    @T.prim_func
    def before(A: T.Buffer((64,), "int32"), B: T.Buffer((64,), "int32")):
        X = T.allocate([64], "int32", "global")
        Y = T.allocate([64], "float32", "global")
        for i in range(64):
            X[i] = A[i] * 2
        for i in range(64):
            B[i] = X[i] + 1
        for i in range(64):
            Y[i] = T.Cast("float32", B[i])
        for i in range(64):
            B[i] = T.Cast("int32", Y[i] * T.float32(0.5))

    assert _rewrite(before) is before


@T.prim_func
def after_loop_before(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    X = T.allocate([16], "float32", "global")
    Y = T.allocate([16], "float32", "global")
    for k in range(4):
        for i in range(16):
            X[i] = A[i] * T.Cast("float32", k)
        for i in range(16):
            B[i] = B[i] + X[i]
    for i in range(16):
        Y[i] = B[i] * T.float32(2)
    for i in range(16):
        B[i] = Y[15 - i]


@T.prim_func
def after_loop_expected(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    X = T.allocate([16], "float32", "global")
    Y = T.decl_buffer((16,), "float32", data=X.data)
    for k in range(4):
        for i in range(16):
            X[i] = A[i] * T.Cast("float32", k)
        for i in range(16):
            B[i] = B[i] + X[i]
    for i in range(16):
        Y[i] = B[i] * T.float32(2)
    for i in range(16):
        B[i] = Y[15 - i]


def test_temporary_used_inside_a_loop_shares_with_one_used_after_the_loop():
    _check(after_loop_before, after_loop_expected)


def test_access_inside_a_loop_keeps_a_buffer_allocated_outside_live_for_the_whole_loop():
    # Inside one iteration X dies before Y is born, but X (allocated outside the loop) carries
    # its value to the next iteration: sharing would let Y overwrite it.
    @T.prim_func
    def before(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
        X = T.allocate([16], "float32", "global")
        Y = T.allocate([16], "float32", "global")
        for i in range(16):
            X[i] = T.float32(0)
        for _k in range(4):
            for i in range(16):
                X[i] = X[i] + A[i]
            for i in range(16):
                Y[i] = A[i] * T.float32(2)
            for i in range(16):
                B[i] = Y[i] + X[i] * T.float32(0)
        for i in range(16):
            B[i] = B[i] + X[i]

    assert _rewrite(before) is before


@T.prim_func
def loop_body_before(A: T.Buffer((4, 16), "float32"), B: T.Buffer((4, 16), "float32")):
    for k in range(4):
        X = T.allocate([16], "float32", "global")
        for i in range(16):
            X[i] = A[k, i] * T.float32(2)
        for i in range(16):
            B[k, i] = X[15 - i]
        Y = T.allocate([16], "float32", "global")
        for i in range(16):
            Y[i] = B[k, i] + T.float32(1)
        for i in range(16):
            B[k, i] = Y[15 - i]


@T.prim_func
def loop_body_expected(A: T.Buffer((4, 16), "float32"), B: T.Buffer((4, 16), "float32")):
    for k in range(4):
        X = T.allocate([16], "float32", "global")
        for i in range(16):
            X[i] = A[k, i] * T.float32(2)
        for i in range(16):
            B[k, i] = X[15 - i]
        Y = T.decl_buffer((16,), "float32", data=X.data)
        for i in range(16):
            Y[i] = B[k, i] + T.float32(1)
        for i in range(16):
            B[k, i] = Y[15 - i]


def test_temporaries_allocated_in_a_loop_body_share_inside_the_body():
    _check(loop_body_before, loop_body_expected)


@T.prim_func
def sibling_loops_before(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    B[0] = T.float32(0)
    for _k in range(2):
        X = T.allocate([16], "float32", "global")
        for i in range(16):
            X[i] = A[i] * T.float32(2)
        for i in range(16):
            B[i] = B[i] + X[15 - i]
    for _k in range(3):
        Y = T.allocate([16], "float32", "global")
        for i in range(16):
            Y[i] = B[i] + T.float32(1)
        for i in range(16):
            B[i] = Y[15 - i]
    B[1] = B[1] + T.float32(1)


@T.prim_func
def sibling_loops_expected(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    B[0] = T.float32(0)
    with T.allocate([16], "float32", "global") as X_data:
        for _k in range(2):
            X = T.decl_buffer((16,), "float32", data=X_data)
            for i in range(16):
                X[i] = A[i] * T.float32(2)
            for i in range(16):
                B[i] = B[i] + X[15 - i]
        for _k in range(3):
            Y = T.decl_buffer((16,), "float32", data=X_data)
            for i in range(16):
                Y[i] = B[i] + T.float32(1)
            for i in range(16):
                B[i] = Y[15 - i]
    B[1] = B[1] + T.float32(1)


def test_temporaries_in_sibling_loops_share_one_allocation_around_both_loops():
    _check(sibling_loops_before, sibling_loops_expected)


@T.prim_func
def branches_before(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32"), c: T.int32):
    if c > 0:
        X = T.allocate([16], "float32", "global")
        for i in range(16):
            X[i] = A[i] * T.float32(2)
        for i in range(16):
            B[i] = X[15 - i]
    else:
        Y = T.allocate([8], "float32", "global")
        for i in range(8):
            Y[i] = A[i] + T.float32(1)
        for i in range(8):
            B[i] = Y[7 - i]


@T.prim_func
def branches_expected(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32"), c: T.int32):
    with T.allocate([16], "float32", "global") as X_data:
        if c > 0:
            X = T.decl_buffer((16,), "float32", data=X_data)
            for i in range(16):
                X[i] = A[i] * T.float32(2)
            for i in range(16):
                B[i] = X[15 - i]
        else:
            Y = T.decl_buffer((8,), "float32", data=X_data)
            for i in range(8):
                Y[i] = A[i] + T.float32(1)
            for i in range(8):
                B[i] = Y[7 - i]


def test_temporaries_in_different_branches_share():
    after = _rewrite(branches_before)
    assert_structural_equal(with_changes(after, attrs=branches_expected.attrs), branches_expected)
    for c in (-1, 1):
        check_same_results(branches_before, after, scalars={"c": c})


@pytest.mark.parametrize("kind", ["parallel", "vectorized"])
def test_temporaries_in_a_parallel_body_share_only_inside_it(kind):
    loop = T.parallel if kind == "parallel" else T.vectorized

    @T.prim_func
    def before(A: T.Buffer((4, 16), "float32"), B: T.Buffer((4, 16), "float32")):
        Z = T.allocate([16], "float32", "global")
        for i in range(16):
            Z[i] = A[0, i]
        for i in range(16):
            B[0, i] = Z[15 - i]
        for k in loop(4):
            X = T.allocate([16], "float32", "global")
            for i in range(16):
                X[i] = A[k, i] * T.float32(2)
            for i in range(16):
                B[k, i] = B[k, i] + X[15 - i]
            Y = T.allocate([16], "float32", "global")
            for i in range(16):
                Y[i] = B[k, i] + T.float32(1)
            for i in range(16):
                B[k, i] = Y[15 - i]

    after = _rewrite(before)
    allocations = _allocations(after)
    assert sorted(a.buffer_var.name for a in allocations) == ["X", "Z"]  # Y shares X; Z alone
    (loop_node,) = [
        n for n in post_order(after.body) if isinstance(n, For) and n.kind.value == kind
    ]
    (shared,) = [a for a in allocations if a.buffer_var.name == "X"]
    assert shared in list(post_order(loop_node.body))  # still one per iteration
    if kind == "parallel":
        check_same_results(before, after)
    assert _rewrite(after) is after


def test_a_buffer_outside_a_parallel_loop_does_not_share_with_one_inside():
    @T.prim_func
    def before(A: T.Buffer((4, 16), "float32"), B: T.Buffer((4, 16), "float32")):
        for k in T.parallel(4):
            X = T.allocate([16], "float32", "global")
            for i in range(16):
                X[i] = A[k, i] * T.float32(2)
            for i in range(16):
                B[k, i] = X[15 - i]
        Y = T.allocate([16], "float32", "global")
        for i in range(16):
            Y[i] = B[0, i] + T.float32(1)
        for i in range(16):
            B[1, i] = Y[15 - i]

    assert _rewrite(before) is before


@T.prim_func
def larger_smaller_before(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    X = T.allocate([16], "float32", "global")
    Y = T.allocate([64], "float32", "global")
    for i in range(16):
        X[i] = A[i] * T.float32(2)
    for i in range(16):
        B[i] = X[15 - i]
    for i in range(64):
        Y[i] = A[i] + B[i]
    for i in range(64):
        B[i] = Y[63 - i]


@T.prim_func
def larger_smaller_expected(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    with T.allocate([64], "float32", "global") as X_data:
        X = T.decl_buffer((16,), "float32", data=X_data)
        Y = T.decl_buffer((64,), "float32", data=X_data)
        for i in range(16):
            X[i] = A[i] * T.float32(2)
        for i in range(16):
            B[i] = X[15 - i]
        for i in range(64):
            Y[i] = A[i] + B[i]
        for i in range(64):
            B[i] = Y[63 - i]


def test_a_larger_and_a_smaller_temporary_share_an_allocation_of_the_larger_size():
    _check(larger_smaller_before, larger_smaller_expected)


def test_three_temporaries_in_a_row_share_one_allocation():
    @T.prim_func
    def before(A: T.Buffer((32,), "float32"), B: T.Buffer((32,), "float32")):
        X = T.allocate([32], "float32", "global")
        Y = T.allocate([8], "float32", "global")
        Z = T.allocate([32], "float32", "global")
        for i in range(32):
            X[i] = A[i] * T.float32(2)
        for i in range(32):
            B[i] = X[31 - i]
        for i in range(8):
            Y[i] = B[i] + T.float32(1)
        for i in range(8):
            B[i] = Y[7 - i]
        for i in range(32):
            Z[i] = B[i] * B[i]
        for i in range(32):
            B[i] = Z[31 - i]

    after = _rewrite(before)
    (allocation,) = _allocations(after)
    assert allocation.extents[0].value == 32
    check_same_results(before, after)


def test_a_freed_allocation_goes_to_the_temporary_it_fits_best():
    # When Z is born, both X (64) and Y (8) are dead: Z (8) takes Y's, leaving X's for W (64).
    @T.prim_func
    def before(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
        X = T.allocate([64], "float32", "global")
        Y = T.allocate([8], "float32", "global")
        Z = T.allocate([8], "float32", "global")
        W = T.allocate([64], "float32", "global")
        for i in range(64):
            X[i] = A[i]
        for i in range(8):
            Y[i] = A[i] * T.float32(2)
        for i in range(64):
            B[i] = X[i] + Y[i % 8]
        for i in range(8):
            Z[i] = B[i] + T.float32(1)
        for i in range(64):
            W[i] = B[63 - i] * Z[i % 8]
        for i in range(64):
            B[i] = W[i] + Z[i % 8]

    after = _rewrite(before)
    sizes = {a.buffer_var.name: a.extents[0].value for a in _allocations(after)}
    assert sizes == {"X": 64, "Y": 8}
    declared = {
        n.buffer.name: n.buffer.data.name
        for n in post_order(after.body)
        if isinstance(n, DeclBuffer)
    }
    assert declared == {"X": "X", "Y": "Y", "Z": "Y", "W": "X"}
    check_same_results(before, after)


def test_constants_are_never_shared():
    @T.prim_func
    def before(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        C = T.allocate_const([1.0, 2.0, 3.0, 4.0], "float32", [4])
        X = T.allocate([4], "float32", "global")
        for i in range(4):
            B[i] = A[i] * C[i]
        for i in range(4):
            X[i] = B[i] + T.float32(1)
        for i in range(4):
            B[i] = X[3 - i]

    assert _rewrite(before) is before


def test_allocations_of_dynamic_size_are_skipped():
    @T.prim_func
    def before(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32"), n: T.int32):
        X = T.allocate([n], "float32", "global")
        Y = T.allocate([n], "float32", "global")
        for i in range(T.min(n, 64)):
            X[i] = A[i] * T.float32(2)
        for i in range(T.min(n, 64)):
            B[i] = X[i]
        for i in range(T.min(n, 64)):
            Y[i] = B[i] + T.float32(1)
        for i in range(T.min(n, 64)):
            B[i] = Y[i]

    assert _rewrite(before) is before


def test_a_buffer_whose_address_escapes_is_not_shared():
    @T.prim_func
    def before(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
        X = T.allocate([64], "float32", "global")
        Y = T.allocate([64], "float32", "global")
        for i in range(64):
            X[i] = A[i]
        T.evaluate(T.call_extern("int32", "consume", X.data))
        for i in range(64):
            Y[i] = A[i] * T.float32(2)
        for i in range(64):
            B[i] = Y[i]

    assert _rewrite(before) is before


def test_function_with_blocks_is_rejected():
    @T.prim_func
    def before(A: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.block("A"):
                vi = T.axis.remap("S", [i])
                A[vi] = T.float32(1)

    with pytest.raises(LoweringError, match="block `A` remains") as err:
        _rewrite(before)
    assert err.value.rule == "storage_rewrite.no-blocks"


def test_postcondition_reports_a_view_larger_than_its_shared_allocation():
    @T.prim_func
    def broken(A: T.Buffer((64,), "float32")):
        X = T.allocate([16], "float32", "global")
        Y = T.decl_buffer((64,), "float32", data=X.data)
        for i in range(64):
            Y[i] = A[i]

    assert "reaches 256 bytes into `X`, which has 64" in views_outside_allocations(broken)
    with pytest.raises(InternalError, match="after pass `storage_rewrite`"):
        check_postcondition(IRModule.from_func(broken), "storage_rewrite")


def test_a_variable_allocated_twice_keeps_its_own_memory():
    # Not SSA (fuzz campaign 10, case 13510, before UnswitchGuards renamed its copies): giving
    # one allocation of X's variable other memory would rewrite the other one's accesses too.
    @T.prim_func
    def before(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
        for j in range(2):
            X = T.allocate([8], "float32", "global")
            for i in range(8):
                X[i] = A[i]
            for i in range(8):
                B[i] = X[i]
        Y = T.allocate([8], "float32", "global")
        for i in range(8):
            Y[i] = B[i] * T.float32(2)
        for i in range(8):
            B[i] = Y[i]
        Z = T.allocate([8], "float32", "global")
        for i in range(8):
            Z[i] = B[i] + T.float32(1)
        for i in range(8):
            B[i] = Z[i]

    x_var, _, z_var = (a.buffer_var for a in _allocations(before))
    twice = substitute(before, {z_var: x_var})
    assert sum(a.buffer_var is x_var for a in _allocations(twice)) == 2
    after = _rewrite(twice)
    assert [a.buffer_var for a in _allocations(after)].count(x_var) == 2  # neither merged away
    check_same_results(twice, after)
