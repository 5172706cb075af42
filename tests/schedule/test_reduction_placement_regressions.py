"""Issue 12: reductions placed where they run too often or too early.

decompose_reduction must not hoist an init above a loop the block is not bound to, and
reverse_compute_at must give each iteration of the producer's loop only the consumer iterations
that iteration makes ready, each run exactly once for a split reduction. Every case either runs
like the original (interpreter and C) or is refused with the schedule left as it was.
"""

import pytest

from tessel import te, topi
from tessel.ir.structural import assert_structural_equal
from tessel.schedule import Schedule, ScheduleError
from tessel.script import tir as T
from tessel.testing import check_same_results


def _conv_with_padding(batch=1):
    x = te.placeholder((batch, 2, 5, 5), name="x")
    w = te.placeholder((3, 2, 3, 3), name="w")
    out = topi.nn.conv2d_nchw(x, w, 1, 1, 1)
    return te.create_prim_func([x, w, out])


def _refused(sch, rule, action):
    before = sch.func
    with pytest.raises(ScheduleError) as err:
        action()
    assert err.value.rule == rule
    assert_structural_equal(sch.func, before)
    assert sch.func is before


@T.prim_func
def padded_window_sum(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
    P = T.alloc_buffer((10,))
    for i in range(10):
        with T.block("P"):
            vi = T.axis.spatial(10, i)
            P[vi] = T.if_then_else(1 <= vi and vi < 9, A[vi - 1], T.float32(0))
    for i, r in T.grid(8, 3):
        with T.block("C"):
            vi, vr = T.axis.remap("SR", [i, r])
            with T.init():
                C[vi] = T.float32(0)
            C[vi] = C[vi] + P[vi + vr]


@T.prim_func
def padded_window_sum_twice(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
    # The producer rewrites P on every iteration of `t`; nothing the consumer computes depends on t.
    P = T.alloc_buffer((10,))
    for t, i in T.grid(2, 10):
        with T.block("P"):
            vi = T.axis.spatial(10, i)
            P[vi] = T.if_then_else(1 <= vi and vi < 9, A[vi - 1], T.float32(0))
    for i, r in T.grid(8, 3):
        with T.block("C"):
            vi, vr = T.axis.remap("SR", [i, r])
            with T.init():
                C[vi] = T.float32(0)
            C[vi] = C[vi] + P[vi + vr]


@T.prim_func
def sum_under_a_repeat_loop(A: T.Buffer((8, 4), "float32"), C: T.Buffer((8,), "float32")):
    for t, i, k in T.grid(3, 8, 4):
        with T.block("C"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                C[vi] = T.float32(0)
            C[vi] = C[vi] + A[vi, vk]


# ---------------------------------------------------------------------------- decompose_reduction


def test_decompose_reduction_refuses_a_loop_the_block_is_not_bound_to():
    sch = Schedule(sum_under_a_repeat_loop)
    block = sch.get_block("C")
    t, _, _ = sch.get_loops(block)
    _refused(sch, "decompose_reduction.unbound-loop", lambda: sch.decompose_reduction(block, t))


def test_decompose_reduction_inside_the_unbound_loop_still_runs_like_the_original():
    sch = Schedule(sum_under_a_repeat_loop)
    block = sch.get_block("C")
    _, i, _ = sch.get_loops(block)
    sch.decompose_reduction(block, i)
    check_same_results(sum_under_a_repeat_loop, sch.func)


def test_decompose_reduction_refuses_the_producer_loop_after_reverse_compute_at():
    sch = Schedule(padded_window_sum_twice)
    t, _ = sch.get_loops(sch.get_block("P"))
    sch.reverse_compute_at(sch.get_block("C"), t)
    check_same_results(padded_window_sum_twice, sch.func)  # the move itself is fine
    block = sch.get_block("C")
    _refused(sch, "decompose_reduction.unbound-loop", lambda: sch.decompose_reduction(block, t))
    _, i, _ = sch.get_loops(block)
    sch.decompose_reduction(block, i)
    check_same_results(padded_window_sum_twice, sch.func)


# ---------------------------------------------------------------------------- reverse_compute_at


def test_reverse_compute_at_refuses_a_window_reduction_under_its_padding_loop():
    sch = Schedule(padded_window_sum)
    (i,) = sch.get_loops(sch.get_block("P"))
    _refused(
        sch,
        "reverse_compute_at.reads-unwritten",
        lambda: sch.reverse_compute_at(sch.get_block("C"), i),
    )


@pytest.mark.parametrize("level", [2, 3])
def test_reverse_compute_at_refuses_a_conv_under_the_padding_row_loops(level):
    conv = _conv_with_padding()
    sch = Schedule(conv)
    loops = sch.get_loops(sch.get_block("pad_temp"))
    _refused(
        sch,
        "reverse_compute_at.reads-unwritten",
        lambda: sch.reverse_compute_at(sch.get_block("conv2d_nchw"), loops[level]),
    )


@pytest.mark.parametrize("level", [0, 1])
def test_reverse_compute_at_conv_under_padding_batch_or_channel_loop_runs_like_the_original(level):
    conv = _conv_with_padding(batch=2)
    sch = Schedule(conv)
    loops = sch.get_loops(sch.get_block("pad_temp"))
    sch.reverse_compute_at(sch.get_block("conv2d_nchw"), loops[level])
    check_same_results(conv, sch.func)
    block = sch.get_block("conv2d_nchw")
    sch.decompose_reduction(block, sch.get_loops(block)[1])  # above every reduction loop
    check_same_results(conv, sch.func)


def test_reverse_compute_at_refuses_a_stencil_whose_windows_straddle_producer_tiles():
    @T.prim_func
    def stencil(A: T.Buffer((32,), "float32"), C: T.Buffer((31,), "float32")):
        B = T.alloc_buffer((32,))
        for i in range(32):
            with T.block("B"):
                vi = T.axis.spatial(32, i)
                B[vi] = A[vi] + T.float32(1)
        for i in range(31):
            with T.block("C"):
                vi = T.axis.spatial(31, i)
                C[vi] = B[vi] * B[vi + 1]

    sch = Schedule(stencil)
    (i,) = sch.get_loops(sch.get_block("B"))
    i0, _ = sch.split(i, [None, 8])
    _refused(
        sch,
        "reverse_compute_at.uncovered-iterations",
        lambda: sch.reverse_compute_at(sch.get_block("C"), i0),
    )


def test_reverse_compute_at_refuses_a_split_reduction_repeated_by_an_inner_loop():
    @T.prim_func
    def rewritten(
        A: T.Buffer((4,), "float32"), B: T.Buffer((8, 4), "float32"), C: T.Buffer((8,), "float32")
    ):
        P = T.alloc_buffer((4,))
        for k, t in T.grid(4, 2):
            with T.block("P"):
                vk = T.axis.spatial(4, k)
                P[vk] = A[vk] * T.float32(2)
        for i, k in T.grid(8, 4):
            with T.block("C"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    C[vi] = T.float32(0)
                C[vi] = C[vi] + P[vk] * B[vi, vk]

    sch = Schedule(rewritten)
    k, t = sch.get_loops(sch.get_block("P"))
    _refused(
        sch,
        "reverse_compute_at.repeated-reduction",
        lambda: sch.reverse_compute_at(sch.get_block("C"), t),
    )
    sch.reverse_compute_at(sch.get_block("C"), k)  # one partial sum per k: exactly once each
    check_same_results(rewritten, sch.func)


@T.prim_func
def row_then_sum(A: T.Buffer((12, 5), "float32"), C: T.Buffer((12,), "float32")):
    B = T.alloc_buffer((12, 5))
    for i, j in T.grid(12, 5):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(3)
    for i, k in T.grid(12, 5):
        with T.block("C"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                C[vi] = T.float32(0)
            C[vi] = C[vi] + B[vi, vk]


def test_reverse_compute_at_under_an_inner_split_loop_runs_like_the_original():
    sch = Schedule(row_then_sum)
    i, _ = sch.get_loops(sch.get_block("B"))
    _, i1 = sch.split(i, [None, 4])
    sch.reverse_compute_at(sch.get_block("C"), i1)
    check_same_results(row_then_sum, sch.func)


def test_reverse_compute_at_splits_a_reduction_over_uneven_producer_tiles_exactly_once():
    sch = Schedule(row_then_sum)
    _, j = sch.get_loops(sch.get_block("B"))
    j0, _ = sch.split(j, [None, 2])  # tiles of 2 over 5 columns: the last one is guarded
    sch.reverse_compute_at(sch.get_block("C"), j0)
    check_same_results(row_then_sum, sch.func)
    block = sch.get_block("C")
    inner = sch.get_loops(block)[-1]
    _refused(sch, "decompose_reduction.loop-height", lambda: sch.decompose_reduction(block, inner))
    sch.decompose_reduction(block, j0)
    check_same_results(row_then_sum, sch.func)


def test_decompose_reduction_refuses_a_loop_under_which_points_repeat():
    # Fuzz seed 3, case 2656: compute_at with overlapping windows recomputes T3[1] under i0;
    # with the init hoisted above i0 that point would accumulate twice.
    a0 = te.placeholder((5,), "int32", name="A0")
    a1 = te.placeholder((5,), "int32", name="A1")
    t2 = te.compute((5,), lambda i0: a0[i0] * a1[i0], name="T2")
    r = te.reduce_axis((0, 3), name="r")
    t3 = te.compute((3,), lambda i0: te.sum(t2[i0 + r], axis=r), name="T3")
    s = te.reduce_axis((0, 2), name="s")
    t4 = te.compute((2,), lambda i0: te.sum(t3[i0 + s], axis=s), name="T4")
    func = te.create_prim_func([a0, a1, t4])
    sch = Schedule(func)
    t4_loops = sch.get_loops(sch.get_block("T4"))
    sch.compute_at(sch.get_block("T3"), t4_loops[0], preserve_unit_loops=False)
    before = sch.func
    block = sch.get_block("T3")
    with pytest.raises(ScheduleError) as info:
        sch.decompose_reduction(block, sch.get_loops(block)[0])
    assert info.value.rule.endswith("repeated-instances")
    assert sch.func is before
    check_same_results(func, sch.func)
