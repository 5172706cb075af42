"""Memory in the interpreter: buffers as views of their data's storage (DeclBuffer, match_buffer,
strided parameters), rank-0 buffers, allocations and constants."""

from __future__ import annotations

import numpy as np
import pytest
from test_interpreter_programs import (
    SPATIAL,
    block,
    buffer,
    const,
    grid,
    prim_func,
    root,
    seq,
    store,
)

from tessel.ir import builders
from tessel.ir.expr import Cast, Var
from tessel.ir.module import IRModule
from tessel.ir.type import PointerType
from tessel.support.dtype import DataType, handle
from tessel.tir.block import MatchBufferRegion
from tessel.tir.buffer import BufferRegion, decl_buffer
from tessel.tir.interpreter import InterpreterError, run
from tessel.tir.stmt import Allocate, AllocateConst, DeclBuffer, While

RNG = np.random.default_rng(11)
FLOAT32 = DataType.of("float32")


def _data_var(name, dtype="float32"):
    return Var(name, handle, PointerType(DataType.of(dtype)))


def test_decl_buffer_with_another_shape_views_the_same_memory():
    a, b = buffer("A", (4, 4)), buffer("B", (16,))
    flat = decl_buffer((16,), "float32", "A_flat", data=a.data)
    body = DeclBuffer(flat, grid((16,), lambda k: store(b, (k,), flat[k] * const(2.0))))
    a_np, b_np = RNG.standard_normal((4, 4)).astype(np.float32), np.zeros(16, np.float32)
    run(prim_func([a, b], body), a_np, b_np)
    np.testing.assert_array_equal(b_np, a_np.reshape(-1) * 2)


def test_decl_buffer_with_strides_and_offset_writes_through_to_the_argument():
    """A (2, 3) view at offset 1 with row stride 4 over a (3, 4) argument."""
    a = buffer("A", (3, 4))
    window = decl_buffer((2, 3), "float32", "window", data=a.data, strides=(4, 1), elem_offset=1)
    body = DeclBuffer(window, grid((2, 3), lambda i, j: store(window, (i, j), const(-1.0))))
    a_np = np.zeros((3, 4), np.float32)
    run(prim_func([a], body), a_np)
    expected = np.zeros((3, 4), np.float32)
    expected[0:2, 1:4] = -1
    np.testing.assert_array_equal(a_np, expected)


def test_two_buffers_over_one_allocation_alias():
    out = buffer("out", (8,))
    data = _data_var("scratch")
    as_matrix = decl_buffer((2, 4), "float32", "as_matrix", data=data)
    as_vector = decl_buffer((8,), "float32", "as_vector", data=data)
    fill = grid((2, 4), lambda i, j: store(as_matrix, (i, j), Cast(FLOAT32, i * 10 + j)))
    copy = grid((8,), lambda k: store(out, (k,), as_vector[k]))
    body = Allocate(
        data,
        FLOAT32,
        (const(8),),
        const(True),
        DeclBuffer(as_matrix, DeclBuffer(as_vector, seq(fill, copy))),
    )
    out_np = np.zeros(8, np.float32)
    run(prim_func([out], body), out_np)
    np.testing.assert_array_equal(out_np, [0, 1, 2, 3, 10, 11, 12, 13])


def test_buffer_without_decl_buffer_is_bound_where_its_data_is_allocated():
    out = buffer("out", (4,))
    data = _data_var("tmp")
    tmp = decl_buffer((4,), "float32", "tmp", data=data)
    body = Allocate(
        data,
        FLOAT32,
        (const(4),),
        const(True),
        seq(
            grid((4,), lambda i: store(tmp, (i,), Cast(FLOAT32, i))),
            grid((4,), lambda i: store(out, (i,), tmp[3 - i])),
        ),
    )
    out_np = np.zeros(4, np.float32)
    run(prim_func([out], body), out_np)
    np.testing.assert_array_equal(out_np, [3, 2, 1, 0])


def test_match_buffer_of_a_row_region_is_a_view():
    a, b = buffer("A", (4, 8)), buffer("B", (4, 8))
    row = buffer("row", (8,))

    def body_of(vi):
        return grid((8,), lambda j: store(b, (vi, j), row[j] + const(1.0)), names="j")

    body = grid(
        (4,),
        lambda i: block(
            "rows",
            [(SPATIAL, 4, i)],
            body_of,
            match_buffers=lambda vi: [MatchBufferRegion(row, a[vi, 0:8])],
        ),
    )
    a_np, b_np = RNG.standard_normal((4, 8)).astype(np.float32), np.zeros((4, 8), np.float32)
    run(prim_func([a, b], root(body)), a_np, b_np)
    np.testing.assert_array_equal(b_np, a_np + 1)


def test_match_buffer_of_a_tile_binds_symbolic_strides_and_offset():
    """Each block writes a 2 x 4 tile of C through a match_buffer with symbolic strides."""
    c = buffer("C", (4, 8))
    s0, s1, offset = Var("s0"), Var("s1"), Var("offset")
    tile = decl_buffer((2, 4), "float32", "tile", strides=(s0, s1), elem_offset=offset)

    def fill(vi, vj):
        value = Cast(FLOAT32, s0 * 1000 + offset)
        return grid((2, 4), lambda x, y: store(tile, (x, y), value), names="xy")

    body = grid(
        (2, 2),
        lambda i, j: block(
            "tiles",
            [(SPATIAL, 2, i), (SPATIAL, 2, j)],
            fill,
            match_buffers=lambda vi, vj: [
                MatchBufferRegion(tile, c[vi * 2 : vi * 2 + 2, vj * 4 : vj * 4 + 4])
            ],
        ),
    )
    c_np = np.zeros((4, 8), np.float32)
    run(prim_func([c], root(body)), c_np)
    expected = np.zeros((4, 8), np.float32)
    for ti in range(2):
        for tj in range(2):
            expected[ti * 2 : ti * 2 + 2, tj * 4 : tj * 4 + 4] = 8 * 1000 + ti * 16 + tj * 4
    np.testing.assert_array_equal(c_np, expected)


def test_match_buffer_region_outside_the_source_raises():
    a = buffer("A", (4, 8))
    row = buffer("row", (8,))
    body = grid(
        (1,),
        lambda i: block(
            "bad",
            [(SPATIAL, 1, i)],
            lambda vi: store(row, (0,), 1.0),
            match_buffers=lambda vi: [
                MatchBufferRegion(row, BufferRegion.from_indices(a, (vi + 4, slice(0, 8))))
            ],
        ),
    )
    with pytest.raises(InterpreterError, match="outside `A`"):
        run(prim_func([a], root(body)), np.zeros((4, 8), np.float32))


def test_strided_parameter_is_a_view_of_the_caller_array():
    n, stride = Var("n"), Var("stride")
    a = decl_buffer((n,), "float32", "A", strides=(stride,))
    body = grid((n,), lambda i: store(a, (i,), a[i] * const(3.0)))
    base = np.arange(10, dtype=np.float32)
    run(prim_func([a], body), base[::2])
    np.testing.assert_array_equal(base, [0, 1, 6, 3, 12, 5, 18, 7, 24, 9])


def test_while_loop_counts_in_a_rank_0_buffer():
    out = buffer("out", (6,), "int32")
    counter = buffer("counter", (), "int32")
    step = seq(
        store(out, (counter[()],), counter[()] * counter[()]),
        store(counter, (), counter[()] + 1),
    )
    body = seq(store(counter, (), 0), While(counter[()] < 5, step))
    func = prim_func([out], root(body, alloc_buffers=[counter]))
    out_np = np.full(6, -1, np.int32)
    run(func, out_np)
    np.testing.assert_array_equal(out_np, [0, 1, 4, 9, 16, -1])


def _sum_of_constant(const_node_of):
    """out[0] = sum of the 4 constants, through an AllocateConst built by const_node_of."""
    out = buffer("out", (1,), "int32")
    data = _data_var("weights", "int32")
    weights = decl_buffer((4,), "int32", "weights", data=data)
    total = builders.add(builders.add(weights[0], weights[1]), builders.add(weights[2], weights[3]))
    body = const_node_of(data, DeclBuffer(weights, store(out, (0,), total)))
    return prim_func([out], body)


def test_allocate_const_with_data():
    data = np.array([1, 2, 3, 40], np.int32)
    func = _sum_of_constant(
        lambda var, body: AllocateConst(var, DataType.of("int32"), (const(4),), data, None, body)
    )
    out = np.zeros(1, np.int32)
    run(func, out)
    assert out[0] == 46


def test_allocate_const_by_storage_index_reads_the_module_constants():
    func = _sum_of_constant(
        lambda var, body: AllocateConst(var, DataType.of("int32"), (const(4),), None, 1, body)
    )
    constants = (np.zeros(2, np.int32), np.array([5, 6, 7, 8], np.int32))
    mod = IRModule.from_func(func).with_attr("constants", constants)
    out = np.zeros(1, np.int32)
    run(mod, out)
    assert out[0] == 26
    with pytest.raises(InterpreterError, match="no constants were given"):
        run(func, out)


def test_store_into_a_constant_raises():
    data = _data_var("weights", "int32")
    weights = decl_buffer((2,), "int32", "weights", data=data)
    values = np.array([1, 2], np.int32)
    overwrite = DeclBuffer(weights, store(weights, (0,), 5))
    body = AllocateConst(data, DataType.of("int32"), (const(2),), values, None, overwrite)
    with pytest.raises(InterpreterError, match="cannot store into `weights`"):
        run(prim_func([], body))
    assert values[0] == 1


def test_handle_parameter_without_buffer_is_the_memory_of_a_decl_buffer():
    data = _data_var("a")
    view = decl_buffer((2, 3), "float32", "A", data=data)
    body = DeclBuffer(view, grid((2, 3), lambda i, j: store(view, (i, j), view[i, j] + const(1.0))))
    a_np = np.arange(6, dtype=np.float32)
    run(prim_func([data], body), a_np)
    np.testing.assert_array_equal(a_np, np.arange(6) + 1)
    with pytest.raises(InterpreterError, match="argument `a`: a handle parameter takes"):
        run(prim_func([data], body), a_np[::2])
