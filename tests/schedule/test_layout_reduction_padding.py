"""Reduction-axis padding: the 127 matmul of the RFC 77 thread padded to 128 on all three
axes, accepted with the identity of `+` and refused otherwise; other combiners."""

import pytest

from tessel.schedule import Schedule, ScheduleError
from tessel.script import tir as T
from tessel.testing import check_layout_schedule


@T.prim_func
def matmul(
    A: T.Buffer((127, 127), "float32"),
    B: T.Buffer((127, 127), "float32"),
    C: T.Buffer((127, 127), "float32"),
):
    for i, j, k in T.grid(127, 127, 127):
        with T.block("compute"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


@T.prim_func
def row_max(A: T.Buffer((14, 14), "float32"), M: T.Buffer((14,), "float32")):
    for i, k in T.grid(14, 14):
        with T.block("max"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                M[vi] = T.float32(-3.4028234663852886e38)
            M[vi] = T.max(M[vi], A[vi, vk])


def pad_to_32(a, b):
    """RFC 77's map: the identity on indices, but over a box that rounds 127 up to 128."""
    return ((a // 32) * 32 + a % 32, (b // 32) * 32 + b % 32)


def split_and_fuse(sch):
    """RFC 77's trick: loops of 128 with `T.where(... < 127)`."""
    block = sch.get_block("compute")
    i, j, k = sch.get_loops(block)
    sch.fuse(*sch.split(i, factors=[4, 32]))
    sch.fuse(*sch.split(j, factors=[4, 32]))
    sch.fuse(*sch.split(k, factors=[4, 32]))
    return block


def pad_all(pad_value):
    def steps(sch):
        block = split_and_fuse(sch)
        for name in ("A", "B", "C"):
            sch.transform_layout(block, name, pad_to_32, pad_value=pad_value)

    return steps


def test_matmul_padded_to_128_on_all_axes_with_zero_gives_numpy_result():
    sch = check_layout_schedule(matmul, pad_all(0.0), rtol=1e-4, atol=1e-4)
    shapes = [tuple(int(e.value) for e in b.shape) for b in sch.func.buffer_map.values()]
    assert shapes == [(128, 128)] * 3
    script = sch.func.script()
    assert "A_assumption" in script and "B_assumption" in script


def test_matmul_reduction_padding_with_one_is_refused_naming_the_identity():
    sch = Schedule(matmul)
    block = split_and_fuse(sch)
    before = sch.func
    with pytest.raises(ScheduleError) as info:
        sch.transform_layout(block, "A", pad_to_32, pad_value=1.0)
    assert info.value.rule == "transform_layout.reduction-padding-identity"
    message = str(info.value)
    assert "the combiner is `+`, whose identity is 0" in message
    assert sch.func is before


def test_padding_only_a_spatial_axis_needs_no_identity():
    def steps(sch):
        sch.transform_layout(
            sch.get_block("compute"), "A", lambda a, b: ((a // 32) * 32 + a % 32, b), pad_value=5.0
        )

    check_layout_schedule(matmul, steps, rtol=1e-4, atol=1e-4)


def test_max_reduction_accepts_lowest_value_and_refuses_zero():
    def steps(sch):
        sch.transform_layout(
            sch.get_block("max"), "A", lambda i, k: (i, k // 4, k % 4), pad_value=float("-inf")
        )

    check_layout_schedule(row_max, steps)
    sch = Schedule(row_max)
    with pytest.raises(ScheduleError) as info:
        sch.transform_layout(
            sch.get_block("max"), "A", lambda i, k: (i, k // 4, k % 4), pad_value=0.0
        )
    assert "`max`" in str(info.value)


def test_user_written_reduction_is_checked_by_its_update():
    @T.prim_func
    def sum_of_squares(A: T.Buffer((14,), "int32"), S: T.Buffer((1,), "int32")):
        for k in range(14):
            with T.block("sum"):
                vk = T.axis.reduce(14, k)
                with T.init():
                    S[0] = 0
                S[0] = S[0] + A[vk] * A[vk] * 3

    def steps(pad):
        return lambda sch: sch.transform_layout(
            sch.get_block("sum"), "A", lambda k: (k // 4, k % 4), pad_value=pad
        )

    check_layout_schedule(sum_of_squares, steps(0))
    with pytest.raises(ScheduleError):
        steps(2)(Schedule(sum_of_squares))


def test_seed_padding_without_a_pad_value_is_refused_and_with_a_lambda_is_accepted():
    sch = Schedule(matmul)
    block = split_and_fuse(sch)
    with pytest.raises(ScheduleError) as info:
        sch.transform_layout(block, "A", pad_to_32)
    assert info.value.rule == "transform_layout.padding-needs-pad-value"
    sch.transform_layout(block, "A", pad_to_32, pad_value=lambda i, k: T.float32(0))
    assert "A_assumption" in sch.func.script()


def test_padded_matmul_prints_and_parses_back_to_the_same_function():
    from tessel.ir.structural import assert_structural_equal
    from tessel.script import parse

    sch = Schedule(matmul)
    pad_all(0.0)(sch)
    assert_structural_equal(parse(sch.func.script()), sch.func)
