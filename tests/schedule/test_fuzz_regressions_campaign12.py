"""Fuzzer regressions found while making blockize and the unit-iterator flags follow TVM."""

import pytest

from tessel import te
from tessel.ir.functor import post_order
from tessel.ir.target import Target
from tessel.schedule import Schedule, ScheduleError
from tessel.testing.fuzz.case import check_result
from tessel.tir.block import Block


def _window_of_sums():
    a0 = te.placeholder((5, 3, 5), "float32", name="A0")
    r = te.reduce_axis((0, 3), name="r")
    t1 = te.compute((5, 5), lambda i0, i1: te.sum(a0[i0, r, i1], axis=r), name="T1")
    r2 = te.reduce_axis((0, 5), name="r")
    t2 = te.compute((5,), lambda i0: te.sum(t1[r2, i0], axis=r2), name="T2")
    return te.create_prim_func([a0, t2])


def test_padding_block_of_a_cache_goes_into_the_block_that_allocates_it():
    """Seed 5, case 198: a cache read inside a blockized block is allocated there; padding it
    (buffer_split) put the padding block at the root, outside the buffer's scope."""
    func = _window_of_sums()
    sch = Schedule(func)
    sch.blockize(sch.get_loops(sch.get_block("T1"))[2])
    sch.cache_read(sch.get_block("T1"), 1, "global")
    axes = sch.get_buffer_axes(sch.get_block("T1"), ("read", 1))
    sch.buffer_split(axes[0], [None, 3], pad_value=0.0)
    owner = next(
        n
        for n in post_order(sch.func.body)
        if isinstance(n, Block) and any(b.name == "A0_global" for b in n.alloc_buffers)
    )
    assert any(
        isinstance(n, Block) and n.name_hint == "buffer_A0_global_padding"
        for n in post_order(owner.body)
    )
    check_result(func, sch, target=Target())


def test_blocks_in_a_blockized_init_are_not_scheduled_on_their_own():
    """Seed 0, case 106: cache_write of the init block that blockize puts in the outer block's
    `T.init()` failed an assertion; such a block is refused by every primitive."""
    func = _window_of_sums()
    sch = Schedule(func)
    sch.blockize(sch.get_loops(sch.get_block("T2"))[1])
    before = sch.func
    with pytest.raises(ScheduleError) as err:
        sch.cache_write(sch.get_block("T2_init"), 0, "local")
    assert err.value.rule == "cache_write.in-init"
    assert "decompose_reduction" in str(err.value)
    assert sch.func is before
    sch.decompose_reduction(sch.get_block("T2_o"), sch.get_loops(sch.get_block("T2_o"))[0])
    check_result(func, sch, target=Target())


def test_producers_and_consumers_of_an_init_block_are_refused_not_a_crash():
    """Seed 21, cases 5503 and 11657: get_consumers / get_producers of the init block that
    blockize makes raised StopIteration (it is not among its scope's child blocks)."""
    func = _window_of_sums()
    sch = Schedule(func)
    sch.blockize(sch.get_loops(sch.get_block("T1"))[0], preserve_unit_iters=False)
    for query in (sch.get_consumers, sch.get_producers):
        with pytest.raises(ScheduleError) as err:
            query(sch.get_block("T1_init"))
        assert err.value.rule.endswith(".in-init")
