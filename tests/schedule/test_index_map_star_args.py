"""Index-map lambdas with `*args` take their number of indices from the buffer's rank (or the
block's iterators), as in TVM: `lambda *indices: ...`, `lambda i, *rest: ...`, and keyword-only
parameters after `*args` taking the last indices (`lambda *indices, k: ...`)."""

from tessel.script import tir as T
from tessel.testing import check_layout_schedule, check_schedule


@T.prim_func
def summation(A: T.Buffer((2, 3, 8), "float32"), B: T.Buffer((1,), "float32")):
    for i, j, k in T.grid(2, 3, 8):
        with T.block("compute"):
            vi, vj, vk = T.axis.remap("SSS", [i, j, k])
            B[0] = B[0] + A[vi, vj, vk]


@T.prim_func
def scale(A: T.Buffer((4, 6), "float32"), C: T.Buffer((4, 6), "float32")):
    for i, j in T.grid(4, 6):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = A[vi, vj] * T.float32(2)


def test_transform_layout_with_keyword_index_after_star_args_splits_the_last_axis():
    @T.prim_func
    def expected(A: T.Buffer((2, 3, 2, 4), "float32"), B: T.Buffer((1,), "float32")):
        for i, j, k in T.grid(2, 3, 8):
            with T.block("compute"):
                vi, vj, vk = T.axis.remap("SSS", [i, j, k])
                B[0] = B[0] + A[vi, vj, vk // 4, vk % 4]

    check_layout_schedule(
        summation,
        lambda sch: sch.transform_layout(
            index_map=lambda *indices, k: [*indices, k // 4, k % 4], block="compute", buffer="A"
        ),
        expected,
    )


def test_transform_layout_with_star_rest_moves_the_first_axis_last():
    @T.prim_func
    def expected(A: T.Buffer((6, 4), "float32"), C: T.Buffer((4, 6), "float32")):
        for i, j in T.grid(4, 6):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = A[vj, vi] * T.float32(2)

    check_layout_schedule(
        scale,
        lambda sch: sch.transform_layout("B", ("read", 0), lambda i, *rest: (*rest, i)),
        expected,
    )


def test_transform_block_layout_with_star_args_fuses_the_iterators():
    @T.prim_func
    def expected(A: T.Buffer((4, 6), "float32"), C: T.Buffer((4, 6), "float32")):
        for ax0 in range(24):
            with T.block("B"):
                v0 = T.axis.spatial(24, ax0)
                C[v0 // 6, v0 % 6] = A[v0 // 6, v0 % 6] * T.float32(2)

    check_schedule(
        scale,
        lambda sch: sch.transform_block_layout("B", lambda *iters: (iters[0] * 6 + iters[1],)),
        expected,
    )
