"""Step-by-step buffer primitives (TY-NNP thread): get_buffer_axes, buffer_split, buffer_fuse,
buffer_reorder compose into one IndexMap, match a single transform_layout, and record the
graph-level steps (reshape, pad, transpose) and their reverse."""

import numpy as np
import pytest

from tessel.ir.structural import assert_structural_equal
from tessel.schedule import Schedule, ScheduleError
from tessel.script import tir as T
from tessel.testing import check_layout_schedule


@T.prim_func
def conv2d(
    x: T.Buffer((1, 3, 12, 12), "int32"),
    weight: T.Buffer((32, 3, 7, 7), "int32"),
    y: T.Buffer((1, 32, 6, 6), "int32"),
):
    for n, o, h, w, i, kh, kw in T.grid(1, 32, 6, 6, 3, 7, 7):
        with T.block("conv"):
            vn, vo, vh, vw, vi, vkh, vkw = T.axis.remap("SSSSRRR", [n, o, h, w, i, kh, kw])
            with T.init():
                y[vn, vo, vh, vw] = 0
            y[vn, vo, vh, vw] = (
                y[vn, vo, vh, vw] + x[vn, vi, vh + vkh, vw + vkw] * weight[vo, vi, vkh, vkw]
            )


def tile_weight_step_by_step(sch):
    block = sch.get_block("conv")
    o, i, h, w = sch.get_buffer_axes(block, "weight")
    o_outer, o_inner = sch.buffer_split(o, factors=[None, 4])
    i_outer, i_inner = sch.buffer_split(i, factors=[None, 4], pad_value=0)
    sch.buffer_reorder(o_outer, i_outer, o_inner, i_inner, h, w)


def tile_weight_at_once(sch):
    sch.transform_layout(
        sch.get_block("conv"),
        "weight",
        lambda o, i, h, w: (o // 4, i // 4, o % 4, i % 4, h, w),
        pad_value=0,
    )


def test_seed_weight_steps_give_the_same_function_as_one_transform_layout():
    stepwise = check_layout_schedule(conv2d, tile_weight_step_by_step)
    at_once = check_layout_schedule(conv2d, tile_weight_at_once)
    weight = stepwise.func.buffer_map[stepwise.func.params[1]]
    assert [int(e.value) for e in weight.shape] == [8, 1, 4, 4, 7, 7]
    assert_structural_equal(stepwise.func, at_once.func)


def test_seed_weight_steps_are_reshape_pad_reshape_transpose_and_round_trip():
    sch = Schedule(conv2d)
    tile_weight_step_by_step(sch)
    record = sch.layout_records()["weight"]
    kinds = [type(step).__name__ for step in record.steps]
    assert kinds == ["Reshape", "Pad", "Reshape", "Transpose"]
    assert record.new_shape == (8, 1, 4, 4, 7, 7)
    w = np.random.default_rng(0).integers(-128, 128, (32, 3, 7, 7)).astype(np.int8)
    forward = record.forward(w)
    assert forward.shape == (8, 1, 4, 4, 7, 7)
    np.testing.assert_array_equal(record.reverse(forward), w)
    o, i = np.meshgrid(np.arange(32), np.arange(3), indexing="ij")
    np.testing.assert_array_equal(forward[o // 4, i // 4, o % 4, i % 4], w[o, i])
    assert (forward[:, 0, :, 3] == 0).all()  # the padded input channel


def test_buffer_steps_compose_into_one_index_map_and_are_traced():
    sch = Schedule(conv2d)
    tile_weight_step_by_step(sch)
    imap = sch.buffer_index_map("weight")
    assert len(imap.final_indices) == 6
    text = str(sch.trace)
    assert "buffer_split" in text and "buffer_reorder" in text and "get_buffer_axes" in text


def test_buffer_fuse_merges_consecutive_axes():
    def steps(sch):
        _, _, h, w = sch.get_buffer_axes(sch.get_block("conv"), "weight")
        sch.buffer_fuse(h, w)

    sch = check_layout_schedule(conv2d, steps)
    weight = sch.func.buffer_map[sch.func.params[1]]
    assert [int(e.value) for e in weight.shape] == [32, 3, 49]
    assert [type(s).__name__ for s in sch.layout_records()["weight"].steps] == ["Reshape"]


def test_stale_axis_and_non_consecutive_fuse_are_refused():
    sch = Schedule(conv2d)
    o, i, h, w = sch.get_buffer_axes(sch.get_block("conv"), "weight")
    sch.buffer_split(o, factors=[None, 4])
    with pytest.raises(ScheduleError) as info:
        sch.buffer_split(o, factors=[2, 2])
    assert info.value.rule == "buffer_split.stale-handle"
    with pytest.raises(ScheduleError) as info:
        sch.buffer_fuse(i, w)
    assert info.value.rule == "buffer_fuse.consecutive-axes"


def test_padding_split_without_pad_value_is_refused():
    sch = Schedule(conv2d)
    _, i, _, _ = sch.get_buffer_axes(sch.get_block("conv"), "weight")
    before = sch.func
    with pytest.raises(ScheduleError) as info:
        sch.buffer_split(i, factors=[None, 4])
    assert info.value.rule == "buffer_split.padding-needs-pad-value"
    assert sch.func is before
