"""The workspace allocator belongs to the C runtime (docs/architecture.md §6): every workspace
allocation goes through it, the host can replace it for a scope, and running out of memory is a
clear error."""

import numpy as np
import pytest

import tessel
from tessel.ir.target import Target
from tessel.runtime import RuntimeCallError
from tessel.script import parse

TWO_STAGE = """
@T.prim_func
def two_stage(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    tmp = T.alloc_buffer((64,), "float32", scope="{scope}")
    for i in range(64):
        with T.block("tmp"):
            vi = T.axis.spatial(64, i)
            tmp[vi] = A[vi] * T.float32(2)
    for i in range(64):
        with T.block("B"):
            vi = T.axis.spatial(64, i)
            B[vi] = tmp[vi] + T.float32(1)
"""

NO_STACK = Target(max_stack_alloca_size=0)


class RecordingAllocator:
    """Allocates from NumPy arrays and records every request and release."""

    def __init__(self, fail=False):
        self.fail = fail
        self.requests, self.freed, self.live = [], [], {}

    def alloc(self, nbytes, alignment):
        self.requests.append((nbytes, alignment))
        if self.fail:
            return 0
        block = np.empty(nbytes + alignment, np.uint8)
        address = block.ctypes.data + (-block.ctypes.data) % alignment
        self.live[address] = block
        return address

    def free(self, address):
        self.freed.append(address)
        del self.live[address]


def _module(scope="global", target=NO_STACK):
    return tessel.build(parse(TWO_STAGE.format(scope=scope)), target)


def _check_result(module):
    a, b = np.arange(64, dtype="float32"), np.zeros(64, "float32")
    module(a, b)
    np.testing.assert_array_equal(b, a * 2 + 1)


def test_workspace_buffers_are_allocated_and_freed_through_the_hosts_allocator():
    module, allocator = _module(), RecordingAllocator()
    with module.workspace_allocator(allocator.alloc, allocator.free):
        _check_result(module)
    assert allocator.requests == [(256, 64)]
    assert len(allocator.freed) == 1 and not allocator.live


def test_stack_buffers_never_reach_the_workspace_allocator():
    module, allocator = _module(target=Target()), RecordingAllocator()
    with module.workspace_allocator(allocator.alloc, allocator.free):
        _check_result(module)
    assert allocator.requests == []


def test_global_workspace_scope_uses_the_allocator_under_the_default_target():
    module, allocator = _module("global.workspace", Target()), RecordingAllocator()
    with module.workspace_allocator(allocator.alloc, allocator.free):
        _check_result(module)
    assert allocator.requests == [(256, 64)]


def test_out_of_memory_is_an_error_naming_the_buffer_and_the_default_allocator_returns():
    module, allocator = _module(), RecordingAllocator(fail=True)
    with (
        module.workspace_allocator(allocator.alloc, allocator.free),
        pytest.raises(RuntimeCallError, match="out of memory allocating `tmp` in the workspace"),
    ):
        _check_result(module)
    assert allocator.freed == []  # nothing was allocated, nothing is freed
    _check_result(module)  # after the scope: the library's own allocator again


CHUNKED = """
@T.prim_func
def chunked(A: T.Buffer((4, 16), "float32"), B: T.Buffer((4, 16), "float32")):
    tmp = T.alloc_buffer((4, 16), "float32", axis_separators=[1])
    for i, j in T.grid(4, 16):
        with T.block("tmp"):
            vi, vj = T.axis.remap("SS", [i, j])
            tmp[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(4, 16):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = tmp[vi, vj] + T.float32(1)
"""


class FailingAfter(RecordingAllocator):
    """Succeeds `count` times, then runs out of memory."""

    def __init__(self, count):
        super().__init__()
        self.count = count

    def alloc(self, nbytes, alignment):
        self.fail = len(self.requests) >= self.count
        return super().alloc(nbytes, alignment)


def test_a_chunk_failing_frees_the_chunks_and_table_allocated_before_it():
    module = tessel.build(parse(CHUNKED), NO_STACK)
    a, b = np.arange(64, dtype="float32").reshape(4, 16), np.zeros((4, 16), "float32")
    allocator = FailingAfter(3)  # the table, two chunks, then out of memory
    with (
        module.workspace_allocator(allocator.alloc, allocator.free),
        pytest.raises(RuntimeCallError, match="out of memory allocating a chunk of `tmp`"),
    ):
        module(a, b)
    assert [n for n, _ in allocator.requests] == [4 * 8, 64, 64, 64]
    assert len(allocator.freed) == 3 and not allocator.live
    complete = RecordingAllocator()
    with module.workspace_allocator(complete.alloc, complete.free):
        module(a, b)
    assert len(complete.requests) == len(complete.freed) == 5 and not complete.live
    np.testing.assert_array_equal(b, a * 2 + 1)


PER_ROW = """
@T.prim_func
def per_row(A: T.Buffer((64, 48), "float32"), B: T.Buffer((64, 48), "float32")):
    for i in T.parallel(64):
        with T.block("row"):
            vi = T.axis.spatial(64, i)
            small = T.alloc_buffer((48,), "float32", scope="global.workspace")
            large = T.alloc_buffer((96,), "float32", scope="global.workspace")
            for j in range(48):
                with T.block("small"):
                    vj = T.axis.spatial(48, j)
                    small[vj] = A[vi, vj] + T.float32(1)
            for j in range(96):
                with T.block("large"):
                    vj = T.axis.spatial(96, j)
                    large[vj] = A[vi, vj % 48] * T.float32(3)
            for j in range(48):
                with T.block("B"):
                    vj = T.axis.spatial(48, j)
                    B[vi, vj] = small[vj] + large[vj + 48]
"""


def test_default_allocator_with_per_row_buffers_of_two_sizes_gives_right_results():
    # Two workspace buffers of different sizes, allocated and freed at every row of a parallel
    # loop: the default allocator hands freed blocks out again (same size only).
    module = tessel.build(parse(PER_ROW), Target())
    a = np.random.default_rng(0).normal(size=(64, 48)).astype("float32")
    for _ in range(3):
        b = np.zeros_like(a)
        module(a, b)
        np.testing.assert_allclose(b, (a + 1) + a * 3, rtol=1e-6)
