"""Axis separators in C: N-d physical buffers as chunk tables (Hexagon-style discontiguous memory).

FlattenBuffer gives a separated buffer one physical axis per group; the C backend realises a
local one as chunks of the last physical axis (a 2-D C array on the stack, a table of separately
allocated chunks in the workspace) and reads a separated parameter as consecutive chunks of the
caller's contiguous array. Every program here runs in the interpreter and as C, against NumPy.
"""

from __future__ import annotations

import numpy as np
import pytest

import tessel
from tessel.codegen.c_source import generate
from tessel.codegen.errors import CodegenError
from tessel.driver import generate_c_source
from tessel.ir.module import IRModule
from tessel.ir.target import Target
from tessel.runtime import BuildError
from tessel.runtime.errors import RuntimeCallError
from tessel.schedule import Schedule
from tessel.script import parse
from tessel.script import tir as T
from tessel.testing import check_same_results
from tessel.tir.index_map import IndexMap
from tessel.transform import LoweringError

NO_STACK = Target("c", max_stack_alloca_size=0)

TWO_STAGE = """
@T.prim_func
def two_stage(A: T.Buffer((4, 4, 4, 4), "float32"), C: T.Buffer((4, 4, 4, 4), "float32")):
    B = T.alloc_buffer((4, 4, 4, 4), "float32", scope="{scope}")
    for i, j, k, l in T.grid(4, 4, 4, 4):
        with T.block("B"):
            vi, vj, vk, vl = T.axis.remap("SSSS", [i, j, k, l])
            B[vi, vj, vk, vl] = A[vi, vj, vk, vl] * T.float32(2)
    for i, j, k, l in T.grid(4, 4, 4, 4):
        with T.block("C"):
            vi, vj, vk, vl = T.axis.remap("SSSS", [i, j, k, l])
            C[vi, vj, vk, vl] = B[vi, vj, vk, vl] + T.float32(1)
"""


def _separated(scope="global", b_separators=(2,), c_separators=()):
    before = parse(TWO_STAGE.format(scope=scope))
    sch = Schedule(before)
    sch.set_axis_separator(sch.get_block("B"), "B", list(b_separators))
    if c_separators:
        sch.set_axis_separator(sch.get_block("C"), "C", list(c_separators))
    return before, sch.func


def _runs_like_numpy(func, target="c"):
    a = np.random.default_rng(0).uniform(-1, 1, (4, 4, 4, 4)).astype("float32")
    c = np.zeros_like(a)
    tessel.build(func, target)(a, c)
    np.testing.assert_allclose(c, a * 2 + 1, rtol=1e-6)


def test_small_separated_buffer_is_a_stack_array_whose_rows_are_the_chunks():
    before, func = _separated()
    source = generate_c_source(func)
    assert "float B[16][16] __attribute__((aligned(64)));" in source  # 1024 bytes: the stack
    assert "B[((i * 4) + j)][((k * 4) + l)] = " in source
    _runs_like_numpy(func)
    check_same_results(before, func)


def test_workspace_chunks_are_allocated_one_by_one_null_checked_and_freed():
    before, func = _separated()
    source = generate_c_source(func, NO_STACK)
    assert "float** B = (float**)tessel_workspace_alloc((size_t)(16) * sizeof(float*));" in source
    assert "B[B_chunk] = (float*)tessel_workspace_alloc(" in source
    assert "if (B == NULL) {" in source
    assert "if (B[B_chunk] == NULL) {" in source
    assert 'tessel_set_error("out of memory allocating a chunk of `B`");' in source
    # an error return frees what was allocated (the table's NULL entries are skipped), and the
    # end of the scope frees everything
    assert (
        source.count(
            "for (int64_t B_free = 0; B_free < 16; ++B_free) tessel_workspace_free(B[B_free]);"
        )
        == 2
    )
    assert "float B[" not in source
    _runs_like_numpy(func, NO_STACK)


@pytest.mark.parametrize(
    ("scope", "target", "on_stack"),
    [("global.workspace", "c", False), ("global.stack", NO_STACK, True)],
)
def test_memory_scope_decides_where_the_chunks_live(scope, target, on_stack):
    before, func = _separated(scope=scope)
    source = generate_c_source(func, target)
    assert ("float B[16][16]" in source) is on_stack
    assert ("tessel_workspace_alloc((size_t)" in source) is not on_stack
    _runs_like_numpy(func, target)


def test_separated_parameter_is_read_as_consecutive_chunks_of_the_callers_array():
    before, func = _separated(c_separators=(1, 3))
    source = generate_c_source(func)
    # C's physical shape is (4, 16, 4): chunk (i, j * 4 + k) starts 4 * (i * 16 + j * 4 + k) in
    assert "(C + (((i_1 * 16) + ((j_1 * 4) + k_1)) * 4))[l_1] = " in source
    _runs_like_numpy(func)
    check_same_results(before, func)


def test_three_physical_axes_index_the_chunks_by_the_flattened_outer_axes():
    before, func = _separated(b_separators=(1, 2))  # B: (4, 4, 16) physical
    source = generate_c_source(func)
    assert "float B[16][16]" in source
    assert "B[((i * 4) + j)][((k * 4) + l)]" in source
    _runs_like_numpy(func)
    workspace = generate_c_source(func, NO_STACK)
    assert "tessel_workspace_alloc((size_t)(16) * sizeof(float*))" in workspace
    _runs_like_numpy(func, NO_STACK)
    check_same_results(before, func)


def test_transform_layout_with_an_axis_separator_marker_runs_like_the_original():
    before = parse(TWO_STAGE.format(scope="global"))
    sch = Schedule(before)
    sch.transform_layout(
        sch.get_block("B"), "B", lambda i, j, k, m: (m, k, IndexMap.AXIS_SEPARATOR, j * 4 + i)
    )
    source = generate_c_source(sch.func)
    assert "B[((l * 4) + k)][((j * 4) + i)]" in source
    check_same_results(before, sch.func)


DYNAMIC = """
@T.prim_func
def dynamic(a: T.handle, c: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (n, 8), "float32")
    C = T.match_buffer(c, (n, 8), "float32")
    B = T.alloc_buffer((n, 8), "float32", scope="{scope}", axis_separators=[1])
    for i, j in T.grid(n, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] + T.float32(1)
    for i, j in T.grid(n, 8):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] * T.float32(3)
"""


def test_symbolic_number_of_chunks_is_computed_once_and_allocated_in_the_workspace():
    func = parse(DYNAMIC.format(scope="global"))
    source = generate_c_source(func)
    assert "int64_t B_rows = ((int64_t)(n));" in source
    assert "B[i][j] = " in source
    assert "tessel_workspace_alloc((size_t)(B_rows) * sizeof(float*))" in source
    for n in (0, 1, 5):
        check_same_results(func, func, shape_vars={"n": n})


def test_symbolic_separated_buffer_on_the_stack_is_refused():
    with pytest.raises(LoweringError, match="global.stack") as err:
        generate_c_source(parse(DYNAMIC.format(scope="global.stack")))
    assert err.value.rule == "lower_memory_scopes.dynamic-stack"


@T.prim_func
def _chunks_in_a_parallel_loop(A: T.Buffer((4, 16), "float32"), C: T.Buffer((4, 16), "float32")):
    for p in T.parallel(4):
        with T.allocate([16], "float32", "global.workspace") as B:
            B_1 = T.decl_buffer((4, 4), "float32", axis_separators=[1], data=B)
            for i, j in T.grid(4, 4):
                B_1[i, j] = A[p, i * 4 + j] + T.float32(1)
            for i, j in T.grid(4, 4):
                C[p, i * 4 + j] = B_1[j, i] * T.float32(2)


def test_chunks_allocated_in_a_parallel_loop_abort_on_failure_instead_of_returning():
    source = generate_c_source(_chunks_in_a_parallel_loop)
    assert "if (B[B_chunk] == NULL) abort();" in source
    assert "return -1" not in source
    check_same_results(_chunks_in_a_parallel_loop, _chunks_in_a_parallel_loop)


@T.prim_func
def _huge_chunks(A: T.Buffer((2,), "float32"), n: T.int64):
    with T.allocate([n * T.int64(4)], "float32", "global") as B:
        B_1 = T.decl_buffer((T.int64(4), n), "float32", axis_separators=[1], data=B)
        B_1[0, 0] = A[0]
        A[1] = B_1[0, 0]


def test_a_chunk_that_cannot_be_allocated_is_reported_and_nothing_leaks():
    module = tessel.build(_huge_chunks)
    a = np.array([3.0, 0.0], "float32")
    module(a, 4)
    assert a[1] == 3.0
    with pytest.raises(RuntimeCallError, match="out of memory allocating a chunk of `B`"):
        module(a, 2**60)


@T.prim_func
def _vector_chunk_access(A: T.Buffer((4, 8), "float32"), C: T.Buffer((4, 8), "float32")):
    with T.allocate([4, 8], "float32", "global") as B:
        B_1 = T.decl_buffer((4, 8), "float32", axis_separators=[1], data=B)
        for i in range(4):
            B_1[i, T.Ramp(0, 1, 8)] = A[i, T.Ramp(0, 1, 8)] * T.Broadcast(T.float32(2), 8)
        for i in range(4):
            C[i, T.Ramp(0, 1, 8)] = B_1[i, T.Ramp(0, 1, 8)]


def test_vector_access_within_one_chunk_is_one_contiguous_copy():
    source = generate_c_source(_vector_chunk_access)
    assert "__builtin_memcpy((B[i] + 0), &tessel_v, sizeof(tessel_v));" in source  # the store
    assert "__builtin_memcpy(&tessel_v, (B[i_1] + 0), sizeof(tessel_v));" in source  # the load
    check_same_results(_vector_chunk_access, _vector_chunk_access)


@T.prim_func
def _vector_across_chunks(A: T.Buffer((4, 4), "float32")):
    with T.allocate([4, 4], "float32", "global") as B:
        B_1 = T.decl_buffer((4, 4), "float32", axis_separators=[1], data=B)
        for j in range(4):
            B_1[T.Ramp(0, 1, 4), j] = T.Broadcast(T.float32(1), 4)
        for i, j in T.grid(4, 4):
            A[i, j] = B_1[i, j]


def test_vector_access_across_chunks_is_refused():
    with pytest.raises(BuildError, match="outer physical axis") as err:
        generate_c_source(_vector_across_chunks)
    assert err.value.rule == "codegen.vector-across-chunks"


def test_vectorized_loop_over_a_separated_buffer_runs_like_numpy():
    # VectorizeLoop vectorizes flat accesses only; a loop writing chunks stays scalar.
    before, func = _separated()
    sch = Schedule(func)
    sch.vectorize(sch.get_loops(sch.get_block("B"))[-1])
    sch.vectorize(sch.get_loops(sch.get_block("C"))[-1])
    _runs_like_numpy(sch.func)
    check_same_results(before, sch.func)


@T.prim_func
def _flat_view_of_chunks(A: T.Buffer((16,), "float32")):
    with T.allocate([4, 4], "float32", "global") as B:
        B_1 = T.decl_buffer((16,), "float32", data=B)
        for i in range(16):
            A[i] = B_1[i]


def test_flat_access_to_chunked_memory_is_refused():
    with pytest.raises(CodegenError, match="allocated as chunks along 2 physical axes") as err:
        generate(IRModule.from_func(_flat_view_of_chunks))  # not lowered: the IR as written
    assert err.value.rule == "codegen.chunk-rank"


@T.prim_func
def _unflattened(A: T.Buffer((4, 4), "float32")):
    for i, j in T.grid(4, 4):
        A[i, j] = T.float32(0)


def test_multi_index_access_to_a_buffer_without_separators_still_needs_flattening():
    with pytest.raises(CodegenError, match="flat") as err:
        generate(IRModule.from_func(_unflattened))
    assert err.value.rule == "codegen.not-flattened"
