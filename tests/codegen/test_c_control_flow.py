"""Compiled C for control flow, symbolic shapes, constants, views and predicates vs NumPy."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tessel.driver import build
from tessel.ir import builders as B
from tessel.ir.expr import Let, StringImm, Var
from tessel.ir.module import IRModule
from tessel.ir.type import PointerType
from tessel.runtime import RuntimeCallError
from tessel.testing.ir_programs import TRUE, block, loops, prim_func, root, seq, store
from tessel.tir import builtin, interpreter
from tessel.tir.block import MatchBufferRegion
from tessel.tir.buffer import BufferRegion, decl_buffer
from tessel.tir.stmt import (
    Allocate,
    AllocateConst,
    AssertStmt,
    DeclBuffer,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    While,
)

RNG = np.random.default_rng(1)


def _halvings_program():
    """out[i] = how often A[i] halves before dropping below n; odd[i] from if/let; asserts n > 0."""
    n = Var("n")
    a_buf, out, odd = (decl_buffer((16,), "int32", name) for name in ("A", "out", "odd"))
    state = decl_buffer((1,), "int32", "state")
    x, y = Var("x"), Var("y")

    def body(i):
        halve = While(
            state[0] >= n,
            seq(store(state, (0,), B.floordiv(state[0], 2)), store(out, (i,), out[i] + 1)),
        )
        parity = IfThenElse(
            B.eq(B.floormod(a_buf[i], 2), 0),
            LetStmt(x, a_buf[i] * 3, store(odd, (i,), x + x)),
            store(odd, (i,), Let(y, a_buf[i] + 1, y * y)),
        )
        return seq(store(state, (0,), a_buf[i]), store(out, (i,), 0), halve, parity)

    alloc = Allocate(
        state.data, state.dtype, state.shape, TRUE, DeclBuffer(state, loops((16,), body))
    )
    checked = AssertStmt(B.gt(n, 0), StringImm("n must be positive"), alloc)
    return prim_func("halvings", (n, a_buf, out, odd), checked)


def test_while_if_let_compute_like_python():
    a = RNG.integers(0, 1000, 16).astype("int32")
    out, odd = np.zeros(16, "int32"), np.zeros(16, "int32")
    build(_halvings_program())(7, a, out, odd)
    expected = []
    for value in a:
        count = 0
        while value >= 7:
            value, count = value // 2, count + 1
        expected.append(count)
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(odd, np.where(a % 2 == 0, 6 * a, (a + 1) ** 2))


def test_failed_assert_raises_runtime_call_error_with_its_message():
    module = build(_halvings_program())
    a, out, odd = np.ones(16, "int32"), np.zeros(16, "int32"), np.zeros(16, "int32")
    with pytest.raises(RuntimeCallError, match="n must be positive") as err:
        module(0, a, out, odd)
    assert err.value.function == "halvings" and err.value.c_message == "n must be positive"


def test_symbolic_size_is_bound_from_the_argument_shapes():
    n = Var("n")
    a_buf, b_buf = decl_buffer((n,), "float32", "A"), decl_buffer((n,), "float32", "B")
    module = build(
        prim_func(
            "scale", (a_buf, b_buf), loops((n,), lambda i: store(b_buf, (i,), a_buf[i] * 2.0 + 1.0))
        )
    )
    for size in (10, 3):
        a, b = RNG.standard_normal(size).astype("float32"), np.zeros(size, "float32")
        module(a, b)
        np.testing.assert_array_equal(b, a * 2 + 1)
    with pytest.raises(
        ValueError, match=r"argument `B`: expected shape \(10,\), got \(9,\).*n = 10"
    ):
        module(np.zeros(10, "float32"), np.zeros(9, "float32"))


def test_scalar_parameter_used_as_a_size_is_checked_against_shapes():
    m = Var("m")
    a_buf = decl_buffer((m,), "int32", "A")
    module = build(prim_func("fill", (m, a_buf), loops((m,), lambda i: store(a_buf, (i,), i * 2))))
    a = np.zeros(5, "int32")
    module(5, a)
    np.testing.assert_array_equal(a, np.arange(5) * 2)
    with pytest.raises(ValueError, match=r"argument `A`: expected shape \(6,\), got \(5,\)"):
        module(6, a)


def test_allocate_const_tables_from_data_and_from_module_constants():
    a_buf, out = decl_buffer((8,), "int32", "A"), decl_buffer((8,), "float32", "out")
    table = decl_buffer((2, 2), "int32", "table")
    weights = decl_buffer((4,), "float32", "weights")
    table_data = np.array([[1, -2], [3, 2**31 - 1]], "int32")
    weight_data = np.array([0.1, -1.5, np.inf, 1e-3], "float32")
    compute = loops(
        (8,),
        lambda i: store(
            out,
            (i,),
            B.cast(a_buf[i] * table[B.floormod(i // 2, 2), i % 2], "float32") * weights[i % 4],
        ),
    )
    body = AllocateConst(
        table.data,
        table.dtype,
        table.shape,
        table_data,
        None,
        DeclBuffer(
            table,
            AllocateConst(
                weights.data, weights.dtype, weights.shape, None, 0, DeclBuffer(weights, compute)
            ),
        ),
    )
    func = prim_func("lookup", (a_buf, out), body)
    mod = IRModule.from_dict({"lookup": func}, attrs={"constants": (weight_data,)})
    a, result = RNG.integers(1, 3, 8).astype("int32"), np.zeros(8, "float32")
    build(mod)(a, result)
    index = np.arange(8)
    expected = (a * table_data[(index // 2) % 2, index % 2]).astype("float32") * weight_data[
        index % 4
    ]
    np.testing.assert_array_equal(result, expected)


def test_float_constants_are_exact_including_inf_nan_and_denormals():
    values32 = [0.1, 1 / 3, np.inf, -np.inf, np.nan, 1e-45, 3.4028234663852886e38, -0.0]
    values64 = [0.1, 1 / 3, 5e-324, -np.inf, 1.7976931348623157e308]
    out32, out64 = (
        decl_buffer((len(values32),), "float32", "f"),
        decl_buffer((len(values64),), "float64", "d"),
    )
    stores = [store(out32, (k,), B.const(v, "float32")) for k, v in enumerate(values32)]
    stores += [store(out64, (k,), B.const(v, "float64")) for k, v in enumerate(values64)]
    got32, got64 = np.zeros(len(values32), "float32"), np.zeros(len(values64), "float64")
    build(prim_func("constants", (out32, out64), seq(*stores)))(got32, got64)
    np.testing.assert_array_equal(
        got32.view("uint32"), np.array(values32, "float32").view("uint32")
    )
    np.testing.assert_array_equal(
        got64.view("uint64"), np.array(values64, "float64").view("uint64")
    )


def test_select_if_then_else_min_max_and_bitwise_ops_match_numpy():
    a_buf = decl_buffer((16,), "int32", "A")
    outs = [decl_buffer((16,), "int32", f"out{k}") for k in range(5)]
    body = loops(
        (16,),
        lambda i: seq(
            store(outs[0], (i,), B.select(B.gt(a_buf[i], 0), a_buf[i], -a_buf[i])),
            store(outs[1], (i,), builtin.if_then_else(B.lt(i, 8), a_buf[i], B.const(0))),
            store(outs[2], (i,), B.min_value(a_buf[i], 3)),
            store(outs[3], (i,), B.max_value(a_buf[i], -3)),
            store(outs[4], (i,), builtin.bitwise("bitwise_xor", a_buf[i], B.const(5))),
        ),
    )
    a = RNG.integers(-10, 10, 16).astype("int32")
    results = [np.zeros(16, "int32") for _ in outs]
    build(prim_func("selects", (a_buf, *outs), body))(a, *results)
    expected = [
        np.abs(a),
        np.where(np.arange(16) < 8, a, 0),
        np.minimum(a, 3),
        np.maximum(a, -3),
        a ^ 5,
    ]
    for got, want in zip(results, expected, strict=True):
        np.testing.assert_array_equal(got, want)


def test_match_buffer_view_of_a_row_with_symbolic_offset_and_stride():
    a_buf, sums = decl_buffer((4, 16), "float32", "A"), decl_buffer((4,), "float32", "sums")
    row = decl_buffer(
        (16,), "float32", "row", strides=(Var("row_stride"),), elem_offset=Var("row_offset")
    )

    def row_sum(vi):
        accumulate = loops((16,), lambda j: store(sums, (vi,), sums[vi] + row[j]), names="j")
        return seq(store(sums, (vi,), 0), accumulate)

    body = loops(
        (4,),
        lambda i: block(
            "row_sum",
            "S",
            (i,),
            (4,),
            row_sum,
            match_buffers=lambda vi: [
                MatchBufferRegion(row, BufferRegion.from_indices(a_buf, (vi, slice(0, 16))))
            ],
        ),
    )
    a, result = RNG.standard_normal((4, 16)).astype("float32"), np.zeros(4, "float32")
    build(prim_func("row_sums", (a_buf, sums), root(body)))(a, result)
    np.testing.assert_allclose(result, a.sum(axis=1), rtol=1e-5)


def test_block_predicate_guards_the_tail_of_a_split_loop():
    a_buf, b_buf = decl_buffer((127,), "float32", "A"), decl_buffer((127,), "float32", "B")
    body = loops(
        (4, 32),
        lambda i, j: block(
            "scale",
            "S",
            (i * 32 + j,),
            (127,),
            lambda v: store(b_buf, (v,), a_buf[v] * 2.0),
            predicate=B.lt(i * 32 + j, 127),
        ),
    )
    a, b = RNG.standard_normal(127).astype("float32"), np.zeros(127, "float32")
    build(prim_func("split", (a_buf, b_buf), root(body)))(a, b)
    np.testing.assert_array_equal(b, a * 2)


def test_module_with_two_functions_calls_each_by_name():
    a_buf, b_buf = decl_buffer((8,), "int32", "A"), decl_buffer((8,), "int32", "B")
    double = prim_func(
        "double", (a_buf, b_buf), loops((8,), lambda i: store(b_buf, (i,), a_buf[i] * 2))
    )
    c_buf, d_buf = decl_buffer((8,), "int32", "A"), decl_buffer((8,), "int32", "B")
    negate = prim_func(
        "negate", (c_buf, d_buf), loops((8,), lambda i: store(d_buf, (i,), -c_buf[i]))
    )
    module = build(IRModule.from_dict({"double": double, "negate": negate}))
    a, out = np.arange(8, dtype="int32"), np.zeros(8, "int32")
    module["double"](a, out)
    np.testing.assert_array_equal(out, a * 2)
    module["negate"](a, out)
    np.testing.assert_array_equal(out, -a)
    with pytest.raises(TypeError, match="call one by name"):
        module(a, out)


def test_pointer_typed_allocation_of_bool_buffer_works():
    mask = decl_buffer((8,), "bool", "mask")
    a_buf, out = decl_buffer((8,), "int32", "A"), decl_buffer((8,), "int32", "out")
    body = Allocate(
        mask.data,
        mask.dtype,
        mask.shape,
        TRUE,
        DeclBuffer(
            mask,
            seq(
                loops((8,), lambda i: store(mask, (i,), B.gt(a_buf[i], 0))),
                loops((8,), lambda i: store(out, (i,), B.select(mask[i], a_buf[i], B.const(0)))),
            ),
        ),
    )
    assert isinstance(mask.data.type_annotation, PointerType)
    a, result = RNG.integers(-5, 5, 8).astype("int32"), np.zeros(8, "int32")
    build(prim_func("relu_mask", (a_buf, out), body))(a, result)
    np.testing.assert_array_equal(result, np.maximum(a, 0))


def test_loop_bound_is_read_once_even_if_the_body_changes_it():
    count, out = decl_buffer((1,), "int32", "count"), decl_buffer((8,), "int32", "out")
    i = Var("i")
    body = seq(store(out, (i,), i), store(count, (0,), count[0] - 1))
    func = prim_func("countdown", (count, out), For(i, B.const(0), count[0], ForKind.SERIAL, body))
    for run in (lambda *args: interpreter.run(func, *args), lambda *args: build(func)(*args)):
        count_arg, out_arg = np.array([8], "int32"), np.full(8, -1, "int32")
        run(count_arg, out_arg)
        np.testing.assert_array_equal(out_arg, np.arange(8))
        assert count_arg[0] == 0


def test_loop_with_a_symbolic_start_runs_from_start_to_start_plus_extent():
    start, out = Var("start"), decl_buffer((8,), "int32", "out")
    i = Var("i")
    func = prim_func(
        "tail", (start, out), For(i, start, 8 - start, ForKind.SERIAL, store(out, (i,), i * 10))
    )
    for run in (lambda *args: interpreter.run(func, *args), lambda *args: build(func)(*args)):
        result = np.zeros(8, "int32")
        run(3, result)
        np.testing.assert_array_equal(result, [0, 0, 0, 30, 40, 50, 60, 70])


def test_float_scalar_parameter_is_no_size_symbol_and_takes_nan_and_inf():
    x, a_buf = Var("x", "float32"), decl_buffer((4,), "float32", "A")
    module = build(prim_func("fill", (x, a_buf), loops((4,), lambda i: store(a_buf, (i,), x))))
    assert [p.symbol for p in module["fill"].signature.params] == [None, None]
    for value in (1.5, math.nan, math.inf, -math.inf):
        a = np.zeros(4, "float32")
        module(value, a)
        np.testing.assert_array_equal(a, np.float32(value))


def test_integer_scalar_parameter_is_a_size_symbol_only_if_a_shape_uses_it():
    n, k = Var("n"), Var("k")
    a_buf = decl_buffer((n,), "int32", "A")
    module = build(
        prim_func("shift", (n, k, a_buf), loops((n,), lambda i: store(a_buf, (i,), i + k)))
    )
    assert [p.symbol for p in module["shift"].signature.params] == ["n", None, None]
    a = np.zeros(3, "int32")
    module(3, 100, a)  # k = 100 is no size: the shape (3,) is only checked against n
    np.testing.assert_array_equal(a, [100, 101, 102])
