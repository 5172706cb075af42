"""LowerInitBlock: `T.init()` becomes a guard on the first reduction iteration at the start of the
block's body; blocks stay; results agree before and after (interpreter, C)."""

from tessel.ir.module import IRModule
from tessel.ir.node import with_changes
from tessel.script import tir as T
from tessel.testing import assert_structural_equal, check_same_results
from tessel.transform import LowerInitBlock


def _lower_init(func):
    return LowerInitBlock()(IRModule.from_func(func))[func.name]


def _assert_lowers_to(before, expected):
    after = _lower_init(before)
    assert_structural_equal(with_changes(after, attrs=expected.attrs), expected)  # names differ
    check_same_results(before, after)


def test_matmul_init_runs_when_the_reduction_iterator_is_at_its_start():
    @T.prim_func
    def before(
        A: T.Buffer((8, 8), "float32"),
        B: T.Buffer((8, 8), "float32"),
        C: T.Buffer((8, 8), "float32"),
    ):
        for i, j, k in T.grid(8, 8, 8):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    @T.prim_func
    def expected(
        A: T.Buffer((8, 8), "float32"),
        B: T.Buffer((8, 8), "float32"),
        C: T.Buffer((8, 8), "float32"),
    ):
        for i, j, k in T.grid(8, 8, 8):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                # The regions stay those of the block with init, which leave C out (as TVM's).
                T.reads(A[vi, vk], B[vk, vj])
                T.writes(C[vi, vj])
                if vk == 0:
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    _assert_lowers_to(before, expected)


def test_init_guard_tests_every_reduction_iterator_against_its_domain_min():
    @T.prim_func
    def before(A: T.Buffer((4, 6, 5), "float32"), S: T.Buffer((4,), "float32")):
        for i, k, m in T.grid(4, 4, 5):
            with T.block("S"):
                vi = T.axis.spatial(4, i)
                vk = T.axis.reduce((2, 6), k + 2)
                vm = T.axis.reduce(5, m)
                with T.init():
                    S[vi] = T.float32(1)
                S[vi] = S[vi] + A[vi, vk, vm]

    @T.prim_func
    def expected(A: T.Buffer((4, 6, 5), "float32"), S: T.Buffer((4,), "float32")):
        for i, k, m in T.grid(4, 4, 5):
            with T.block("S"):
                vi = T.axis.spatial(4, i)
                vk = T.axis.reduce((2, 6), k + 2)
                vm = T.axis.reduce(5, m)
                T.reads(A[vi, vk, vm])
                T.writes(S[vi])
                if vk == 2 and vm == 0:
                    S[vi] = T.float32(1)
                S[vi] = S[vi] + A[vi, vk, vm]

    _assert_lowers_to(before, expected)


def test_init_of_a_block_without_reduction_iterators_runs_unconditionally():
    @T.prim_func
    def before(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
        for i in range(8):
            with T.block("B"):
                vi = T.axis.spatial(8, i)
                with T.init():
                    B[vi] = T.float32(0)
                B[vi] = B[vi] + A[vi]

    @T.prim_func
    def expected(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
        for i in range(8):
            with T.block("B"):
                vi = T.axis.spatial(8, i)
                T.reads(A[vi])
                T.writes(B[vi])
                B[vi] = T.float32(0)
                B[vi] = B[vi] + A[vi]

    _assert_lowers_to(before, expected)


def test_function_without_init_comes_back_as_the_same_object():
    @T.prim_func
    def func(A: T.Buffer((8,), "float32")):
        for i in range(8):
            with T.block("A"):
                vi = T.axis.spatial(8, i)
                A[vi] = T.float32(1)

    assert _lower_init(func) is func
