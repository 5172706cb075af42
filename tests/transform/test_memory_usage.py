"""memory_usage: peak stack and workspace bytes per function, split as code generation places
them, and constants counted once per module."""

import re

import pytest

from tessel.codegen import generate
from tessel.ir.module import IRModule
from tessel.ir.target import Target
from tessel.script import ir as I
from tessel.script import tir as T
from tessel.transform import ExtractConstants, LoweringError
from tessel.transform.memory_usage import memory_usage
from tessel.transform.storage_rewrite import StorageRewrite


@T.prim_func
def two_temporaries(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    X = T.allocate([64], "float32", "global")
    Y = T.allocate([64], "float32", "global")
    for i in range(64):
        X[i] = A[i] * T.float32(2)
    for i in range(64):
        B[i] = X[i] + T.float32(1)
    for i in range(64):
        Y[i] = B[i] * T.float32(3)
    for i in range(64):
        B[i] = B[i] + Y[i]


def test_two_256_byte_temporaries_count_256_bytes_once_they_share():
    mod = IRModule.from_func(two_temporaries)
    assert memory_usage(mod)["two_temporaries"].stack_bytes == 512
    shared = memory_usage(StorageRewrite()(mod))["two_temporaries"]
    assert (shared.stack_bytes, shared.workspace_bytes) == (256, 0)


@T.prim_func
def placements(A: T.Buffer((4,), "float32")):
    at_limit = T.allocate([256], "float32", "global")  # 1024 bytes
    over = T.allocate([257], "float32", "global")  # 1028 bytes
    heap = T.allocate([4], "float32", "global.workspace")
    stack = T.allocate([512], "float32", "global.stack")
    for i in range(4):
        at_limit[i] = A[i]
        over[i] = A[i]
        heap[i] = A[i]
        stack[i] = A[i]
    for i in range(4):
        A[i] = at_limit[i] + over[i] + heap[i] + stack[i]


def _c_placements(mod, target):
    """Where the generated C puts each allocation: a stack array or the workspace allocator."""
    source = generate(mod, target).source
    on_stack = set(re.findall(r"float (\w+)\[\d+\] __attribute__", source))
    on_heap = set(re.findall(r"float\* (\w+) = \(float\*\)tessel_workspace_alloc", source))
    return on_stack, on_heap


@pytest.mark.parametrize(
    ("target", "stack", "workspace"),
    [
        (Target(), 1024 + 2048, 1028 + 16),
        (Target(max_stack_alloca_size=0), 2048, 1024 + 1028 + 16),
        (Target(max_stack_alloca_size=1028), 1024 + 1028 + 2048, 16),
    ],
)
def test_stack_and_workspace_split_follows_max_stack_alloca_size_as_codegen_does(
    target, stack, workspace
):
    mod = IRModule.from_func(placements)
    report = memory_usage(mod, target)["placements"]
    assert (report.stack_bytes, report.workspace_bytes) == (stack, workspace)
    on_stack, on_heap = _c_placements(mod, target)
    sizes = {"at_limit": 1024, "over": 1028, "heap": 16, "stack": 2048}
    assert sum(sizes[name] for name in on_stack) == stack
    assert sum(sizes[name] for name in on_heap) == workspace


def test_allocations_in_sibling_scopes_peak_at_the_larger_one():
    @T.prim_func
    def siblings(A: T.Buffer((16,), "float32")):
        outer = T.allocate([4], "float32", "global")
        for _k in range(2):
            X = T.allocate([16], "float32", "global")
            for i in range(16):
                X[i] = A[i] + outer[i % 4]
            for i in range(16):
                A[i] = X[15 - i]
        for _k in range(2):
            Y = T.allocate([8], "float32", "global")
            for i in range(8):
                Y[i] = A[i]
            for i in range(8):
                A[i] = Y[7 - i]

    assert memory_usage(siblings)["siblings"].stack_bytes == 16 + 64


def test_symbolic_sizes_are_listed_not_counted():
    @T.prim_func
    def dynamic(A: T.Buffer((64,), "float32"), n: T.int32):
        X = T.allocate([n], "float32", "global")
        for i in range(T.min(n, 64)):
            X[i] = A[i]

    report = memory_usage(dynamic)
    assert report["dynamic"].workspace_bytes == 0
    assert report["dynamic"].dynamic_workspace == ("X",)
    assert "0+dyn" in str(report)


@I.ir_module
class TwoUsersOfOneConstant:
    @T.prim_func
    def scale(A: T.Buffer((4,), "float32")):
        W = T.allocate_const([1.0, 2.0, 3.0, 4.0], "float32", [4])
        for i in range(4):
            A[i] = A[i] * W[i]

    @T.prim_func
    def shift(A: T.Buffer((4,), "float32")):
        W = T.allocate_const([1.0, 2.0, 3.0, 4.0], "float32", [4])
        for i in range(4):
            A[i] = A[i] + W[i]


def test_an_extracted_constant_shared_by_two_functions_is_counted_once():
    inline = memory_usage(TwoUsersOfOneConstant)
    assert inline.constant_bytes == 32  # each function holds its own copy
    extracted = memory_usage(ExtractConstants()(TwoUsersOfOneConstant))
    assert [f.constant_bytes for f in extracted.functions] == [16, 16]
    assert [f.module_constants for f in extracted.functions] == [(0,), (0,)]
    assert extracted.constant_bytes == 16


def test_report_prints_one_row_per_function():
    text = str(memory_usage(StorageRewrite()(IRModule.from_func(two_temporaries))))
    lines = text.splitlines()
    assert lines[0] == "memory usage in bytes (target c, max_stack_alloca_size 1024)"
    assert lines[1].split() == ["function", "stack", "workspace", "constants"]
    assert lines[2].split() == ["two_temporaries", "256", "0", "0"]
    assert lines[3] == "constants of the module (extracted ones once): 0"


def test_function_with_blocks_is_rejected():
    @T.prim_func
    def blocks(A: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.block("A"):
                vi = T.axis.remap("S", [i])
                A[vi] = T.float32(1)

    with pytest.raises(LoweringError, match="block `A` remains") as err:
        memory_usage(blocks)
    assert err.value.rule == "memory_usage.not-lowered"
