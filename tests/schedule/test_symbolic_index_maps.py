"""Index maps over symbolic extents go through iterator-map detection, as in TVM: a fuse with a
symbolic stride (`y * n + w`, n a shape variable) has the fused iterator's extent, so
transform_layout and transform_block_layout accept it; each result runs like the original for a
concrete n. A symbolic divisor of unknown sign stays refused, unchanged."""

import pytest

from tessel.ir.structural import assert_structural_equal
from tessel.schedule import Schedule, ScheduleError
from tessel.script import tir as T
from tessel.testing import check_schedule


@T.prim_func
def nt_matmul(a: T.handle, b: T.handle, c: T.handle):
    n = T.int64()
    A = T.match_buffer(a, (T.int64(1), T.int64(4), T.int64(1), T.int64(8)), "float32")
    B = T.match_buffer(b, (T.int64(1), T.int64(4), n, T.int64(8)), "float32")
    C = T.match_buffer(c, (T.int64(1), T.int64(4), T.int64(1), n), "float32")
    for i0, i1, i2, i3, k in T.grid(T.int64(1), T.int64(4), T.int64(1), n, T.int64(8)):
        with T.block("NT_matmul"):
            v_i0, v_i1, v_i2, v_i3, v_k = T.axis.remap("SSSSR", [i0, i1, i2, i3, k])
            with T.init():
                C[v_i0, v_i1, v_i2, v_i3] = T.float32(0)
            C[v_i0, v_i1, v_i2, v_i3] = (
                C[v_i0, v_i1, v_i2, v_i3] + A[v_i0, v_i1, v_i2, v_k] * B[v_i0, v_i1, v_i3, v_k]
            )


@T.prim_func
def staged(a: T.handle, c: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (4, n), "float32")
    C = T.match_buffer(c, (4, n), "float32")
    B = T.alloc_buffer((4, n), "float32")
    for i, j in T.grid(4, n):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(4, n):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + T.float32(1)


def _n(func, param):
    return next(e for e in func.buffer_map[func.params[param]].shape if not hasattr(e, "value"))


def test_transform_layout_fuses_axes_with_a_symbolic_stride():
    @T.prim_func
    def expected(a: T.handle, c: T.handle):
        n = T.int32()
        A = T.match_buffer(a, (4, n), "float32")
        C = T.match_buffer(c, (4, n), "float32")
        B = T.alloc_buffer((n * 4,), "float32")
        for i, j in T.grid(4, n):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi * n + vj] = A[vi, vj] * T.float32(2)
        for i, j in T.grid(4, n):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = B[n * vi + vj] + T.float32(1)  # the simplifier's term order

    n = _n(staged, 0)
    check_schedule(
        staged,
        lambda sch: sch.transform_layout("B", "B", lambda i, j: (i * n + j,)),
        expected,
        shape_vars={"n": 5},
    )


def test_transform_block_layout_fuses_iterators_with_a_symbolic_bound():
    @T.prim_func
    def expected(a: T.handle, b: T.handle, c: T.handle):
        n = T.int64()
        A = T.match_buffer(a, (T.int64(1), T.int64(4), T.int64(1), T.int64(8)), "float32")
        B = T.match_buffer(b, (T.int64(1), T.int64(4), n, T.int64(8)), "float32")
        C = T.match_buffer(c, (T.int64(1), T.int64(4), T.int64(1), n), "float32")
        for ax0, ax1 in T.grid(n * T.int64(4), T.int64(8)):
            with T.block("NT_matmul"):
                v0, v1 = T.axis.remap("SR", [ax0, ax1])
                with T.init():
                    C[T.int64(0), v0 // n, T.int64(0), v0 % n] = T.float32(0)
                C[T.int64(0), v0 // n, T.int64(0), v0 % n] = (
                    C[T.int64(0), v0 // n, T.int64(0), v0 % n]
                    + A[T.int64(0), v0 // n, T.int64(0), v1] * B[T.int64(0), v0 // n, v0 % n, v1]
                )

    n = _n(nt_matmul, 1)
    check_schedule(
        nt_matmul,
        lambda sch: sch.transform_block_layout(
            "NT_matmul", lambda x, y, z, w, k: (x * 4 * n + y * n + z * n + w, k)
        ),
        expected,
        shape_vars={"n": 3},
    )


def test_transform_layout_refuses_a_divisor_of_unknown_sign():
    n = _n(staged, 0)
    sch = Schedule(staged)
    with pytest.raises(ScheduleError) as err:
        sch.transform_layout("B", "B", lambda i, j: (i, j // n, j % n), pad_value=0.0)
    assert err.value.rule == "transform_layout.index-map-not-invertible"
    assert_structural_equal(sch.func, staged)
