"""tensorize and the tensor intrinsic registry: match, replace, run, replay; refusals."""

import pytest

from tessel.ir.structural import assert_structural_equal
from tessel.schedule import Schedule, ScheduleError
from tessel.schedule.tensor_intrin import TensorIntrin, TensorIntrinError
from tessel.script import tir as T
from tessel.testing import check_schedule


@T.prim_func
def mma_desc(a: T.handle, b: T.handle, c: T.handle):
    A = T.match_buffer(a, (4, 4), "float32")
    B = T.match_buffer(b, (4, 4), "float32")
    C = T.match_buffer(c, (4, 4), "float32")
    with T.block("root"):
        T.reads(C[0:4, 0:4], A[0:4, 0:4], B[0:4, 0:4])
        T.writes(C[0:4, 0:4])
        for i, j, k in T.grid(4, 4, 4):
            with T.block("update"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


@T.prim_func
def mma_impl(a: T.handle, b: T.handle, c: T.handle):
    # The same sum, written differently: k outermost, i unrolled, j spelled out.
    A = T.match_buffer(a, (4, 4), "float32")
    B = T.match_buffer(b, (4, 4), "float32")
    C = T.match_buffer(c, (4, 4), "float32")
    with T.block("root"):
        T.reads(C[0:4, 0:4], A[0:4, 0:4], B[0:4, 0:4])
        T.writes(C[0:4, 0:4])
        for k in range(4):
            for i in T.unroll(4):
                C[i, 0] = C[i, 0] + A[i, k] * B[k, 0]
                C[i, 1] = C[i, 1] + A[i, k] * B[k, 1]
                C[i, 2] = C[i, 2] + A[i, k] * B[k, 2]
                C[i, 3] = C[i, 3] + A[i, k] * B[k, 3]


MMA = TensorIntrin.register("test_tensorize.mma_4x4x4", mma_desc, mma_impl).name


@T.prim_func
def matmul(
    A: T.Buffer((16, 16), "float32"),
    B: T.Buffer((16, 16), "float32"),
    C: T.Buffer((16, 16), "float32"),
):
    for i, j, k in T.grid(16, 16, 16):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


def tile_4x4x4(sch: Schedule, name: str = "C"):
    """Split every loop by 4, put the 4x4x4 tile innermost, and take the init out of it."""
    block = sch.get_block(name)
    i, j, k = sch.get_loops(block)
    i0, i1 = sch.split(i, [None, 4])
    j0, j1 = sch.split(j, [None, 4])
    k0, k1 = sch.split(k, [None, 4])
    sch.reorder(i0, j0, k0, i1, j1, k1)
    sch.decompose_reduction(block, k0)
    return i1


def test_tensorize_the_inner_tile_of_a_matmul():
    @T.prim_func
    def expected(
        A: T.Buffer((16, 16), "float32"),
        B: T.Buffer((16, 16), "float32"),
        C: T.Buffer((16, 16), "float32"),
    ):
        for i_0, j_0 in T.grid(4, 4):
            for i_1_init, j_1_init in T.grid(4, 4):
                with T.block("C_init"):
                    vi_init = T.axis.spatial(16, i_0 * 4 + i_1_init)
                    vj_init = T.axis.spatial(16, j_0 * 4 + j_1_init)
                    C[vi_init, vj_init] = T.float32(0)
            for k_0 in range(4):
                with T.block("C_o"):
                    vi_o, vj_o, vk_o = T.axis.remap("SSR", [i_0, j_0, k_0])
                    T.reads(
                        C[vi_o * 4 : vi_o * 4 + 4, vj_o * 4 : vj_o * 4 + 4],
                        A[vi_o * 4 : vi_o * 4 + 4, vk_o * 4 : vk_o * 4 + 4],
                        B[vk_o * 4 : vk_o * 4 + 4, vj_o * 4 : vj_o * 4 + 4],
                    )
                    T.writes(C[vi_o * 4 : vi_o * 4 + 4, vj_o * 4 : vj_o * 4 + 4])
                    A_1 = T.match_buffer(
                        A[vi_o * 4 : vi_o * 4 + 4, vk_o * 4 : vk_o * 4 + 4], (4, 4), "float32"
                    )
                    B_1 = T.match_buffer(
                        B[vk_o * 4 : vk_o * 4 + 4, vj_o * 4 : vj_o * 4 + 4], (4, 4), "float32"
                    )
                    C_1 = T.match_buffer(
                        C[vi_o * 4 : vi_o * 4 + 4, vj_o * 4 : vj_o * 4 + 4], (4, 4), "float32"
                    )
                    for k in range(4):
                        for i in T.unroll(4):
                            C_1[i, 0] = C_1[i, 0] + A_1[i, k] * B_1[k, 0]
                            C_1[i, 1] = C_1[i, 1] + A_1[i, k] * B_1[k, 1]
                            C_1[i, 2] = C_1[i, 2] + A_1[i, k] * B_1[k, 2]
                            C_1[i, 3] = C_1[i, 3] + A_1[i, k] * B_1[k, 3]

    def steps(sch):
        sch.tensorize(tile_4x4x4(sch), MMA)

    sch = check_schedule(matmul, steps)
    assert_structural_equal(sch.func, expected.with_name("matmul"))
    assert "sch.tensorize(l5, 'test_tensorize.mma_4x4x4')" in str(sch.trace)


def test_tensorize_a_block_blockized_before():
    def by_loop(sch):
        sch.tensorize(tile_4x4x4(sch), MMA)

    def by_block(sch):
        sch.tensorize(sch.blockize(tile_4x4x4(sch)), MMA)

    by_loop_sch = check_schedule(matmul, by_loop)
    assert_structural_equal(check_schedule(matmul, by_block).func, by_loop_sch.func)


def test_each_use_of_an_intrinsic_gets_its_own_copy_of_the_impl():
    @T.prim_func
    def two_matmuls(
        A: T.Buffer((16, 16), "float32"),
        B: T.Buffer((16, 16), "float32"),
        C: T.Buffer((16, 16), "float32"),
        D: T.Buffer((16, 16), "float32"),
    ):
        for i, j, k in T.grid(16, 16, 16):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
        for i, j, k in T.grid(16, 16, 16):
            with T.block("D"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    D[vi, vj] = T.float32(0)
                D[vi, vj] = D[vi, vj] + B[vi, vk] * A[vk, vj]

    def steps(sch):
        sch.tensorize(tile_4x4x4(sch, "C"), MMA)
        sch.tensorize(tile_4x4x4(sch, "D"), MMA)

    sch = check_schedule(two_matmuls, steps)  # verified well-formed after every step
    matches = [
        m for name in ("C_o", "D_o") for m in sch.block(sch.get_block(name)).block.match_buffers
    ]
    assert len({id(m.buffer) for m in matches}) == 6


def _refused(sch: Schedule, loop, intrin: str) -> ScheduleError:
    before = sch.func
    with pytest.raises(ScheduleError) as err:
        sch.tensorize(loop, intrin)
    assert sch.func is before  # the blockize it started with is undone too
    return err.value


def test_tensorize_refuses_a_desc_that_subtracts():
    @T.prim_func
    def msub_desc(a: T.handle, b: T.handle, c: T.handle):
        A = T.match_buffer(a, (4, 4), "float32")
        B = T.match_buffer(b, (4, 4), "float32")
        C = T.match_buffer(c, (4, 4), "float32")
        with T.block("root"):
            T.reads(C[0:4, 0:4], A[0:4, 0:4], B[0:4, 0:4])
            T.writes(C[0:4, 0:4])
            for i, j, k in T.grid(4, 4, 4):
                with T.block("update"):
                    vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                    C[vi, vj] = C[vi, vj] - A[vi, vk] * B[vk, vj]

    TensorIntrin.register("test_tensorize.msub_4x4x4", msub_desc, mma_impl)
    sch = Schedule(matmul)
    err = _refused(sch, tile_4x4x4(sch), "test_tensorize.msub_4x4x4")
    assert err.rule == "tensorize.mismatch"
    assert "(Add, float32) where the desc computes" in err.message
    assert "(Sub, float32)" in err.message


def test_tensorize_refuses_a_desc_of_another_dtype():
    @T.prim_func
    def half_desc(a: T.handle, b: T.handle, c: T.handle):
        A = T.match_buffer(a, (4, 4), "float16")
        B = T.match_buffer(b, (4, 4), "float16")
        C = T.match_buffer(c, (4, 4), "float16")
        with T.block("root"):
            T.reads(C[0:4, 0:4], A[0:4, 0:4], B[0:4, 0:4])
            T.writes(C[0:4, 0:4])
            for i, j, k in T.grid(4, 4, 4):
                with T.block("update"):
                    vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                    C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    @T.prim_func
    def half_impl(a: T.handle, b: T.handle, c: T.handle):
        A = T.match_buffer(a, (4, 4), "float16")
        B = T.match_buffer(b, (4, 4), "float16")
        C = T.match_buffer(c, (4, 4), "float16")
        with T.block("root"):
            for i, j, k in T.grid(4, 4, 4):
                C[i, j] = C[i, j] + A[i, k] * B[k, j]

    TensorIntrin.register("test_tensorize.mma_4x4x4_f16", half_desc, half_impl)
    sch = Schedule(matmul)
    err = _refused(sch, tile_4x4x4(sch), "test_tensorize.mma_4x4x4_f16")
    assert err.rule == "tensorize.mismatch"
    assert "is float32 in scope `global` where the desc's `C` is float16" in err.message


def test_tensorize_refuses_a_tile_of_another_size():
    sch = Schedule(matmul)
    block = sch.get_block("C")
    i, j, k = sch.get_loops(block)
    i0, i1 = sch.split(i, [None, 8])
    j0, j1 = sch.split(j, [None, 4])
    k0, k1 = sch.split(k, [None, 4])
    sch.reorder(i0, j0, k0, i1, j1, k1)
    sch.decompose_reduction(block, k0)
    err = _refused(sch, i1, MMA)
    assert err.rule == "tensorize.mismatch"
    assert "extent of loop `i_1` is `8` in the block but `4` in the desc" in err.message


def test_tensorize_names_an_unknown_intrinsic_and_the_known_ones():
    sch = Schedule(matmul)
    err = _refused(sch, tile_4x4x4(sch), "no_such_intrin")
    assert err.rule == "tensorize.unknown-intrin"
    assert MMA in err.message


def test_registering_a_name_twice_is_an_error():
    with pytest.raises(TensorIntrinError, match="already registered") as err:
        TensorIntrin.register(MMA, mma_desc, mma_impl)
    assert err.value.rule == "tensor_intrin.duplicate"
    assert MMA in err.value.message
    assert TensorIntrin.get(MMA).impl is mma_impl


def test_registering_buffers_that_disagree_is_an_error():
    @T.prim_func
    def small_impl(a: T.handle, b: T.handle, c: T.handle):
        A = T.match_buffer(a, (2, 2), "float32")
        B = T.match_buffer(b, (2, 2), "float32")
        C = T.match_buffer(c, (2, 2), "float32")
        with T.block("root"):
            for i, j, k in T.grid(2, 2, 2):
                C[i, j] = C[i, j] + A[i, k] * B[k, j]

    with pytest.raises(TensorIntrinError, match="buffer 0") as err:
        TensorIntrin.register("test_tensorize.bad_pair", mma_desc, small_impl)
    assert err.value.rule == "tensor_intrin.invalid"
    assert "test_tensorize.bad_pair" not in TensorIntrin.names()
