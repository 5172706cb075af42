"""fuse and reorder legality (issue 12): each case that used to compute a wrong result or build
ill-formed IR now gives the same results or a ScheduleError that leaves the schedule unchanged;
a hypothesis property drives random fuse/split/reorder sequences over reductions."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tessel.ir.structural import assert_structural_equal
from tessel.schedule import Schedule, ScheduleError
from tessel.script import tir as T
from tessel.testing import check_same_results


@T.prim_func
def rowsum(A: T.Buffer((2, 3), "int32"), C: T.Buffer((2,), "int32")):
    for i, k in T.grid(2, 3):
        with T.block("C"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                C[vi] = 0
            C[vi] = C[vi] + A[vi, vk]


def _refused(sch, rule, step):
    """`step` raises a ScheduleError with `rule`, and the function is left as it was."""
    before = sch.func
    with pytest.raises(ScheduleError) as err:
        step()
    assert err.value.rule == rule
    assert_structural_equal(sch.func, before)


# ---- reorder ---------------------------------------------------------------------------------
def test_reorder_refuses_to_run_the_init_after_part_of_the_sum():
    sch = Schedule(rowsum)
    i, k = sch.get_loops(sch.get_block("C"))
    outer, inner = sch.split(sch.fuse(i, k), [None, 2])
    _refused(sch, "reorder.reduction-order", lambda: sch.reorder(inner, outer))
    check_same_results(rowsum, sch.func)


def test_reorder_of_pure_reduction_and_spatial_loops_is_accepted():
    sch = Schedule(rowsum)
    i, k = sch.get_loops(sch.get_block("C"))
    sch.reorder(k, i)  # the init still runs at k == 0, before any update of C[vi]
    check_same_results(rowsum, sch.func)


def test_reorder_of_a_mixed_loop_with_a_spatial_loop_is_accepted():
    @T.prim_func
    def rowsum2(A: T.Buffer((2, 3, 4), "int32"), C: T.Buffer((2, 4), "int32")):
        for i, k, j in T.grid(2, 3, 4):
            with T.block("C"):
                vi, vk, vj = T.axis.remap("SRS", [i, k, j])
                with T.init():
                    C[vi, vj] = 0
                C[vi, vj] = C[vi, vj] + A[vi, vk, vj]

    sch = Schedule(rowsum2)
    i, k, j = sch.get_loops(sch.get_block("C"))
    fused = sch.fuse(i, k)  # binds vi and vk
    sch.reorder(j, fused)
    check_same_results(rowsum2, sch.func)


def test_reorder_refuses_bindings_that_are_not_affine():
    @T.prim_func
    def product_index(A: T.Buffer((4, 4), "int32"), B: T.Buffer((16,), "int32")):
        for i, j in T.grid(4, 4):
            with T.block("B"):
                v = T.axis.spatial(16, i * j)
                B[v] = A[i, j]

    sch = Schedule(product_index)
    i, j = sch.get_loops(sch.get_block("B"))
    _refused(sch, "reorder.affine-binding", lambda: sch.reorder(j, i))


def test_reorder_refuses_a_predicate_over_the_reordered_loops():
    @T.prim_func
    def triangle(A: T.Buffer((4, 4), "int32"), C: T.Buffer((4,), "int32")):
        for i, k in T.grid(4, 4):
            with T.block("C"):
                vi, vk = T.axis.remap("SR", [i, k])
                T.where(k <= i)
                with T.init():
                    C[vi] = 0
                C[vi] = C[vi] + A[vi, vk]

    sch = Schedule(triangle)
    i, k = sch.get_loops(sch.get_block("C"))
    _refused(sch, "reorder.block-predicate", lambda: sch.reorder(k, i))


def test_reorder_accepts_the_predicate_of_a_split_that_does_not_divide():
    sch = Schedule(rowsum)
    i, k = sch.get_loops(sch.get_block("C"))
    k0, k1 = sch.split(k, [None, 2])  # 3 = 2 * 2 - 1: predicate k0 * 2 + k1 < 3
    sch.reorder(k1, i, k0)
    check_same_results(rowsum, sch.func)


def test_reorder_refuses_a_dependence_carried_by_a_spatial_block():
    @T.prim_func
    def wavefront(A: T.Buffer((4, 4), "int32"), B: T.Buffer((5, 5), "int32")):
        for i, j in T.grid(4, 4):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi + 1, vj] = B[vi, vj + 1] + A[vi, vj]

    sch = Schedule(wavefront)
    i, j = sch.get_loops(sch.get_block("B"))
    _refused(sch, "reorder.carried-dependence", lambda: sch.reorder(j, i))


def test_reorder_refuses_a_dependence_between_two_blocks_across_iterations():
    @T.prim_func
    def skewed(
        A: T.Buffer((4, 4), "int32"), B: T.Buffer((5, 5), "int32"), C: T.Buffer((4, 4), "int32")
    ):
        for i, j in T.grid(4, 4):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi + 1, vj] = A[vi, vj]
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = B[vi, vj + 1]

    sch = Schedule(skewed)
    i, j = sch.get_loops(sch.get_block("C"))
    _refused(sch, "reorder.carried-dependence", lambda: sch.reorder(j, i))


def test_reorder_accepts_a_producer_read_in_the_same_iteration():
    @T.prim_func
    def same_point(
        A: T.Buffer((4, 4), "int32"), B: T.Buffer((4, 4), "int32"), C: T.Buffer((4, 4), "int32")
    ):
        for i, j in T.grid(4, 4):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] * 2
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = B[vi, vj] + 1

    sch = Schedule(same_point)
    i, j = sch.get_loops(sch.get_block("C"))
    sch.reorder(j, i)
    check_same_results(same_point, sch.func)


def test_reorder_refuses_outer_bounds_that_use_an_inner_loop():
    @T.prim_func
    def lower_triangle(A: T.Buffer((4, 4), "int32"), B: T.Buffer((4, 4), "int32")):
        for i in range(4):
            for j in range(i + 1):
                with T.block("B"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    B[vi, vj] = A[vi, vj]

    sch = Schedule(lower_triangle)
    i, j = sch.get_loops(sch.get_block("B"))
    _refused(sch, "reorder.dependent-loop", lambda: sch.reorder(j, i))


# ---- fuse ------------------------------------------------------------------------------------
def test_fuse_refuses_an_inner_loop_whose_bounds_use_the_outer_one():
    @T.prim_func
    def lower_triangle(A: T.Buffer((4, 4), "int32"), B: T.Buffer((4, 4), "int32")):
        for i in range(4):
            for j in range(i + 1):
                with T.block("B"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    B[vi, vj] = A[vi, vj]

    sch = Schedule(lower_triangle)
    i, j = sch.get_loops(sch.get_block("B"))
    _refused(sch, "fuse.dependent-loop", lambda: sch.fuse(i, j))  # was an InternalError


@pytest.mark.parametrize(
    "mark",
    [
        lambda sch, loop: sch.bind(loop, "threadIdx.x"),
        lambda sch, loop: sch.parallel(loop),
        lambda sch, loop: sch.annotate(loop, "pragma_unroll", 4),
    ],
    ids=["thread_binding", "parallel", "annotation"],
)
def test_fuse_refuses_a_loop_it_would_strip_of_its_kind_or_annotations(mark):
    sch = Schedule(rowsum)
    i, k = sch.get_loops(sch.get_block("C"))
    mark(sch, i)
    _refused(sch, "fuse.plain-loops", lambda: sch.fuse(i, k))


def test_fuse_of_a_producer_and_consumer_nest_keeps_the_results():
    @T.prim_func
    def pair(
        A: T.Buffer((3, 4), "int32"), B: T.Buffer((3, 4), "int32"), C: T.Buffer((3, 4), "int32")
    ):
        for i, j in T.grid(3, 4):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] + 1
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = B[vi, vj] * 3

    sch = Schedule(pair)
    sch.fuse(*sch.get_loops(sch.get_block("C")))
    check_same_results(pair, sch.func)


# ---- the property ----------------------------------------------------------------------------
def _reduction(layout: str, n: int, m: int, p: int):
    """A ROWSUM-like reduction; `layout` is the loop order's iterator kinds."""
    if layout == "SR":

        @T.prim_func
        def func(A: T.Buffer((n, m), "int32"), C: T.Buffer((n,), "int32")):
            for i, k in T.grid(n, m):
                with T.block("C"):
                    vi, vk = T.axis.remap("SR", [i, k])
                    with T.init():
                        C[vi] = 0
                    C[vi] = C[vi] + A[vi, vk]

        return func
    if layout == "RS":

        @T.prim_func
        def func(A: T.Buffer((n, m), "int32"), C: T.Buffer((n,), "int32")):
            for k, i in T.grid(m, n):
                with T.block("C"):
                    vk, vi = T.axis.remap("RS", [k, i])
                    with T.init():
                        C[vi] = 0
                    C[vi] = C[vi] + A[vi, vk] * (vk + 1)

        return func

    @T.prim_func
    def func(A: T.Buffer((n, m, p), "int32"), C: T.Buffer((n, p), "int32")):
        for i, k, j in T.grid(n, m, p):
            with T.block("C"):
                vi, vk, vj = T.axis.remap("SRS", [i, k, j])
                with T.init():
                    C[vi, vj] = vj
                C[vi, vj] = C[vi, vj] + A[vi, vk, vj]

    return func


_extent = st.integers(1, 5)
_step = st.tuples(
    st.sampled_from(["fuse", "split", "reorder"]),
    st.integers(0, 7),
    st.integers(1, 3),
    st.permutations(range(8)),
    st.integers(2, 4),
)


def _apply(sch: Schedule, step) -> None:
    kind, pick, factor, permutation, count = step
    loops = sch.get_loops(sch.get_block("C"))
    if kind == "fuse" and len(loops) >= 2:
        at = pick % (len(loops) - 1)
        sch.fuse(loops[at], loops[at + 1])
    elif kind == "split":
        sch.split(loops[pick % len(loops)], [None, factor])
    elif kind == "reorder" and len(loops) >= 2:
        chosen = [loops[k] for k in permutation if k < len(loops)][: min(count, len(loops))]
        sch.reorder(*chosen)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(["SR", "RS", "SRS"]),
    _extent,
    _extent,
    st.integers(1, 3),
    st.lists(_step, min_size=1, max_size=5),
)
def test_random_fuse_split_reorder_either_refuses_or_keeps_the_results(layout, n, m, p, steps):
    original = _reduction(layout, n, m, p)
    sch = Schedule(original)
    for step in steps:
        before = sch.func
        try:
            _apply(sch, step)
        except ScheduleError:
            assert_structural_equal(sch.func, before)  # a refused step changes nothing
    check_same_results(original, sch.func)
    replayed = Schedule(original)
    sch.trace.apply_to_schedule(replayed)
    assert_structural_equal(replayed.func, sch.func)
