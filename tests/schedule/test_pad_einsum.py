"""pad_einsum: a block's spatial iterators padded to multiples of tile sizes (Before/Expected),
results unchanged in the interpreter and in C on random shapes, the trace replays, and every
refusal names its rule and leaves the schedule unchanged."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tessel import te, topi
from tessel.driver import build
from tessel.schedule import Schedule, ScheduleError
from tessel.script import tir as T
from tessel.testing import check_schedule
from tessel.tir.index_map import IndexMap


@T.prim_func
def matmul_13(
    A: T.Buffer((13, 13), "float32"),
    B: T.Buffer((13, 13), "float32"),
    C: T.Buffer((13, 13), "float32"),
):
    for i, j, k in T.grid(13, 13, 13):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


@T.prim_func
def matmul_13_padded(
    A: T.Buffer((13, 13), "float32"),
    B: T.Buffer((13, 13), "float32"),
    C: T.Buffer((13, 13), "float32"),
):
    C_pad = T.alloc_buffer((16, 16), "float32")
    A_pad = T.alloc_buffer((16, 13), "float32")
    B_pad = T.alloc_buffer((13, 16), "float32")
    for ax0, ax1 in T.grid(16, 13):
        with T.block("A_pad"):
            v0, v1 = T.axis.remap("SS", [ax0, ax1])
            T.reads(A[v0, v1])
            T.writes(A_pad[v0, v1])
            A_pad[v0, v1] = T.if_then_else(v0 < 13, A[v0, v1], T.float32(0))
    for ax0, ax1 in T.grid(13, 16):
        with T.block("B_pad"):
            v0, v1 = T.axis.remap("SS", [ax0, ax1])
            T.reads(B[v0, v1])
            T.writes(B_pad[v0, v1])
            B_pad[v0, v1] = T.if_then_else(v1 < 13, B[v0, v1], T.float32(0))
    for i, j, k in T.grid(16, 16, 13):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            T.reads(A_pad[vi, vk], B_pad[vk, vj])
            T.writes(C_pad[vi, vj])
            with T.init():
                C_pad[vi, vj] = T.float32(0)
            C_pad[vi, vj] = C_pad[vi, vj] + A_pad[vi, vk] * B_pad[vk, vj]
    for ax0, ax1 in T.grid(13, 13):
        with T.block("C_unpad"):
            v0, v1 = T.axis.remap("SS", [ax0, ax1])
            T.reads(C_pad[v0, v1])
            T.writes(C[v0, v1])
            C[v0, v1] = C_pad[v0, v1]


def test_matmul_is_padded_to_the_tiles_with_padded_inputs_and_an_unpad_copy():
    check_schedule(
        matmul_13, lambda sch: sch.pad_einsum(sch.get_block("C"), [8, 16, 1]), matmul_13_padded
    )


def test_a_domain_the_factors_already_divide_is_left_alone():
    sch = Schedule(matmul_13)
    sch.pad_einsum(sch.get_block("C"), [13, 1, 1])
    assert sch.func is matmul_13


def test_a_read_that_stays_inside_its_buffer_is_not_copied():
    """B packed by transform_layout with padding ([j // 16, k, j % 16]) already holds the
    padded columns: only A, read past its rows, gets a padded copy."""

    def steps(sch):
        block = sch.get_block("C")
        sch.cache_read(block, 1, "global")
        sch.transform_layout(
            block,
            ("read", 1),
            IndexMap.from_func(lambda k, j: (j // 16, k, j % 16), ndim=2),
            pad_value=0.0,
        )
        sch.pad_einsum(block, [8, 16, 1])

    sch = check_schedule(matmul_13, steps)
    script = sch.func.script()
    assert "A_pad = T.alloc_buffer((16, 13)" in script
    assert "B_global_pad" not in script and "B_pad" not in script


@settings(max_examples=15, deadline=None)
@given(
    m=st.integers(1, 19),
    n=st.integers(1, 19),
    k=st.integers(1, 9),
    rows=st.integers(1, 8),
    columns=st.sampled_from([1, 4, 16]),
)
def test_padded_matmul_with_bias_gives_the_same_results(m, n, k, rows, columns):
    a, b = te.placeholder((m, k), name="a"), te.placeholder((k, n), name="b")
    bias = te.placeholder((n,), name="bias")
    out = topi.add(topi.matmul(a, b), bias)
    func = te.create_prim_func([a, b, bias, out])
    check_schedule(func, lambda sch: sch.pad_einsum(sch.get_block("T_matmul"), [rows, columns, 1]))


def test_padded_and_tiled_matmul_has_no_guard_in_its_tile_and_matches_numpy():
    def steps(sch):
        block = sch.get_block("C")
        sch.pad_einsum(block, [4, 8, 1])
        i, j, k = sch.get_loops(block)
        i_o, i_i = sch.split(i, [None, 4])
        j_o, j_i = sch.split(j, [None, 8])
        sch.reorder(i_o, j_o, k, i_i, j_i)
        sch.vectorize(j_i)
        sch.reverse_compute_at(sch.get_block("C_unpad"), j_o)

    sch = check_schedule(matmul_13, steps)
    update = sch.func.script().split('T.block("C")')[1].split("T.block")[0]
    assert "T.where" not in update
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 13, 13)).astype("float32")
    c = np.zeros((13, 13), "float32")
    build(sch.func)(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


@T.prim_func
def shifted_read(A: T.Buffer((15,), "float32"), B: T.Buffer((13,), "float32")):
    for i, r in T.grid(13, 3):
        with T.block("B"):
            vi, vr = T.axis.remap("SR", [i, r])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi + vr]


@pytest.mark.parametrize(
    ("func", "block", "padding", "rule"),
    [
        (matmul_13, "C", [8, 16, 2], "reduction-padding"),
        (matmul_13, "C", [8, 16], "padding-count"),
        (matmul_13, "C", [8, 0, 1], "padding-factor"),
        (shifted_read, "B", [16, 1], "not-einsum"),
    ],
)
def test_refusals_name_their_rule_and_leave_the_schedule_unchanged(func, block, padding, rule):
    sch = Schedule(func)
    with pytest.raises(ScheduleError, match=rf"pad_einsum\.{rule}"):
        sch.pad_einsum(sch.get_block(block), padding)
    assert sch.func is func


def test_a_split_nest_is_refused():
    sch = Schedule(matmul_13)
    i, *_ = sch.get_loops(sch.get_block("C"))
    sch.split(i, [None, 4])
    before = sch.func
    with pytest.raises(ScheduleError, match=r"pad_einsum\.plain-nest"):
        sch.pad_einsum(sch.get_block("C"), [8, 16, 1])
    assert sch.func is before


def test_an_iterator_that_does_not_index_the_output_is_not_padded():
    """Fuzz seed 0, 1603: padding a spatial iterator missing from the output's indices would
    add its padded iterations into the same element."""
    a = te.placeholder((1, 2), name="A0")
    r = te.reduce_axis((0, 2), name="r")
    out = te.compute((1, 1), lambda i0, i1: te.sum(a[i0, i1 + r], axis=r), name="T1")
    sch = Schedule(te.create_prim_func([a, out]))
    block = sch.get_block("T1")
    sch.transform_block_layout(block, lambda v0, v1, v2: (v2, v1, v0))
    before = sch.func
    with pytest.raises(ScheduleError, match=r"pad_einsum\.iterator-not-in-output"):
        sch.pad_einsum(block, [1, 8, 4])
    assert sch.func is before


def test_a_reduction_whose_init_was_decomposed_is_not_padded():
    """Fuzz seed 0, 597: the init block writes the unpadded output, which the padded block
    would no longer read."""
    sch = Schedule(matmul_13)
    block = sch.get_block("C")
    sch.decompose_reduction(block, sch.get_loops(block)[0])
    before = sch.func
    with pytest.raises(ScheduleError, match=r"pad_einsum\.output-written-elsewhere"):
        sch.pad_einsum(block, [8, 16, 1])
    assert sch.func is before


def test_an_input_written_in_part_is_not_copied():
    """Fuzz seed 0, 679: a reindex stage writes one element of five; a padded copy of the
    whole buffer would read the four nothing wrote."""
    a = te.placeholder((3,), "int32", name="A0")
    r = te.reduce_axis((0, 3), name="r")
    t1 = te.compute((1,), lambda i: te.sum(a[i + r], axis=r), name="T1")
    t2 = topi.nn.pad(t1, [2], [2], pad_value=0, name="T2")
    sch = Schedule(te.create_prim_func([a, t2]))
    block = sch.get_block("T2")
    sch.reindex(block, ("read", 0))
    before = sch.func
    with pytest.raises(ScheduleError, match=r"pad_einsum\.partial-input"):
        sch.pad_einsum(block, [4])
    assert sch.func is before
