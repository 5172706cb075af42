"""get_child_blocks, get_producers, get_consumers: answers by buffer relations within a scope."""

import pytest

from tessel.ir.structural import assert_structural_equal
from tessel.schedule import Schedule, ScheduleError
from tessel.script import tir as T
from tessel.testing import check_schedule


@T.prim_func
def two_stages(A: T.Buffer((16, 8), "float32"), C: T.Buffer((16,), "float32")):
    B = T.alloc_buffer((16, 8))
    for i, k in T.grid(16, 8):
        with T.block("B"):
            vi, vk = T.axis.remap("SS", [i, k])
            B[vi, vk] = A[vi, vk] * T.float32(2)
    for i, k in T.grid(16, 8):
        with T.block("C"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                C[vi] = T.float32(0)
            C[vi] = C[vi] + B[vi, vk]


def _names(blocks):
    return [b.name for b in blocks]


def test_child_blocks_of_the_root_and_of_a_loop():
    def steps(sch):
        assert _names(sch.get_child_blocks(sch.get_block("root"))) == ["B", "C"]
        i, _ = sch.get_loops(sch.get_block("C"))
        assert _names(sch.get_child_blocks(i)) == ["C"]

    sch = check_schedule(two_stages, steps, two_stages)
    assert "get_child_blocks" in str(sch.trace)


def test_producers_and_consumers_follow_buffer_reads_and_writes():
    def steps(sch):
        assert _names(sch.get_producers(sch.get_block("C"))) == ["B"]
        assert _names(sch.get_consumers(sch.get_block("B"))) == ["C"]
        assert sch.get_producers(sch.get_block("B")) == []
        assert sch.get_consumers(sch.get_block("C")) == []

    check_schedule(two_stages, steps, two_stages)


def test_producers_of_the_root_block_are_refused():
    sch = Schedule(two_stages)
    with pytest.raises(ScheduleError, match="root block") as err:
        sch.get_producers(sch.get_block("root"))
    assert err.value.rule == "get_producers.root-block"
    assert_structural_equal(sch.func, two_stages)
