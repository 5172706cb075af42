"""Exact scalar and vector semantics of the interpreter: wrap-around, division, casts, math,
vectors with predicates, undef, if_then_else and the init rule of reduction blocks."""

from __future__ import annotations

import math
import zlib

import numpy as np
import pytest
from test_interpreter_programs import (
    REDUCE,
    SPATIAL,
    block,
    buffer,
    const,
    grid,
    loop,
    prim_func,
    root,
    seq,
    store,
)

from tessel.ir import builders
from tessel.ir.expr import (
    Add,
    Broadcast,
    Call,
    Cast,
    Div,
    FloorDiv,
    FloorMod,
    IntImm,
    Let,
    Mod,
    Mul,
    Ramp,
    Select,
    Var,
)
from tessel.ir.type import PointerType
from tessel.support.dtype import DataType, handle
from tessel.tir import builtin
from tessel.tir.buffer import BufferLoad, decl_buffer
from tessel.tir.interpreter import InterpreterError, run
from tessel.tir.stmt import Allocate, BufferStore, DeclBuffer, Evaluate

RNG = np.random.default_rng(7)


def _binary_kernel(node_cls, dtype, n):
    """C[i] = node_cls(A[i], B[i]) over n elements."""
    a, b, c = (buffer(x, (n,), dtype) for x in "ABC")
    return prim_func([a, b, c], grid((n,), lambda i: store(c, (i,), node_cls(a[i], b[i]))))


def _run_binary(node_cls, a, b):
    c = np.zeros_like(a)
    run(_binary_kernel(node_cls, str(a.dtype), a.size), a, b, c)
    return c


def test_int8_addition_wraps_around():
    a = np.array([127, -128, 100, -100, 5], np.int8)
    b = np.array([1, -1, 100, -100, 3], np.int8)
    np.testing.assert_array_equal(_run_binary(Add, a, b), a + b)


def test_int32_multiplication_wraps_around():
    a = RNG.integers(-(2**31), 2**31, 50, dtype=np.int32)
    b = RNG.integers(-(2**31), 2**31, 50, dtype=np.int32)
    np.testing.assert_array_equal(_run_binary(Mul, a, b), a * b)


def test_uint8_addition_wraps_modulo_256():
    a = np.array([250, 255, 0], np.uint8)
    b = np.array([10, 1, 0], np.uint8)
    np.testing.assert_array_equal(_run_binary(Add, a, b), np.array([4, 0, 0], np.uint8))


_NUMERATORS = np.array([7, -7, 7, -7, 6, -6, 0, -(2**31)], np.int32)
_DENOMINATORS = np.array([2, 2, -2, -2, 3, -3, 5, -1], np.int32)


def test_floordiv_and_floormod_round_toward_negative_infinity():
    a, b = _NUMERATORS[:-1], _DENOMINATORS[:-1]
    np.testing.assert_array_equal(_run_binary(FloorDiv, a, b), a // b)
    np.testing.assert_array_equal(_run_binary(FloorMod, a, b), a % b)


def test_div_and_mod_on_integers_truncate_like_c():
    a, b = _NUMERATORS[:-1], _DENOMINATORS[:-1]
    expected = np.array([int(x / y) for x, y in zip(a.tolist(), b.tolist(), strict=True)], np.int32)
    np.testing.assert_array_equal(_run_binary(Div, a, b), expected)
    np.testing.assert_array_equal(_run_binary(Mod, a, b), np.fmod(a, b))


@pytest.mark.parametrize("node_cls", [Div, Mod, FloorDiv, FloorMod])
@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64"])
def test_int_min_divided_by_minus_one_is_refused_like_division_by_zero(node_cls, dtype):
    # C leaves the overflow undefined and x86 traps on it; the C backend refuses it too.
    low = np.iinfo(dtype).min
    a, b = np.array([7, low], dtype), np.array([-1, -1], dtype)
    with pytest.raises(InterpreterError, match=f"overflow: {low} divided by -1") as err:
        _run_binary(node_cls, a, b)
    assert err.value.rule == "interpreter.division-overflow"


def _python_results(node_cls, xs, ys):
    """Exact integer results of Div/Mod (truncating) and FloorDiv/FloorMod, computed in Python."""
    ops = {Div: lambda x, y: int(x / y), Mod: lambda x, y: int(math.fmod(x, y)),
           FloorDiv: lambda x, y: x // y, FloorMod: lambda x, y: x % y}  # fmt: skip
    return [ops[node_cls](x, y) for x, y in zip(xs, ys, strict=True)]


@pytest.mark.parametrize("node_cls", [Div, Mod, FloorDiv, FloorMod])
def test_other_divisions_by_minus_one_and_of_int_min_are_exact(node_cls):
    a = np.array([7, -7, -(2**31) + 1, -(2**31)], np.int32)
    b = np.array([-1, -1, -1, 2], np.int32)
    expected = _python_results(node_cls, a.tolist(), b.tolist())
    np.testing.assert_array_equal(_run_binary(node_cls, a, b), expected)


@pytest.mark.parametrize("node_cls", [Div, Mod, FloorDiv, FloorMod])
def test_vector_int_min_divided_by_minus_one_is_refused(node_cls):
    a, b, c = (buffer(x, (4,), "int32") for x in "ABC")
    lanes = Ramp(const(0), const(1), 4)
    func = prim_func([a, b, c], store(c, (lanes,), node_cls(a[lanes], b[lanes])))
    numerators = np.array([1, 2, -(2**31), 4], np.int32)
    with pytest.raises(InterpreterError, match="overflow") as err:
        run(func, numerators, np.array([1, 1, -1, 1], np.int32), np.zeros(4, np.int32))
    assert err.value.rule == "interpreter.division-overflow"
    out = np.zeros(4, np.int32)
    run(func, numerators, np.array([1, 1, 1, -1], np.int32), out)
    np.testing.assert_array_equal(out[[0, 1, 3]], _python_results(node_cls, [1, 2, 4], [1, 1, -1]))


@pytest.mark.parametrize("node_cls", [Div, Mod, FloorDiv, FloorMod])
def test_integer_division_by_zero_raises(node_cls):
    a, b = np.array([1, 2], np.int32), np.array([1, 0], np.int32)
    with pytest.raises(InterpreterError, match="division by zero") as err:
        _run_binary(node_cls, a, b)
    assert err.value.rule == "interpreter.division-by-zero"


def test_float_division_by_zero_gives_ieee_results():
    a, b = np.array([1, -1, 0], np.float32), np.zeros(3, np.float32)
    with np.errstate(all="ignore"):
        expected = a / b
    np.testing.assert_array_equal(_run_binary(Div, a, b), expected)


def _cast_kernel(src, dst, n):
    a, b = buffer("A", (n,), src), buffer("B", (n,), dst)
    return prim_func([a, b], grid((n,), lambda i: store(b, (i,), Cast(DataType.of(dst), a[i]))))


def _run_cast(values, dst):
    out = np.zeros(values.shape, dst)
    run(_cast_kernel(str(values.dtype), dst, values.size), values, out)
    return out


def test_float_to_int_cast_truncates_toward_zero():
    values = np.array([2.7, -2.7, 0.5, -0.5, 1e9], np.float32)
    np.testing.assert_array_equal(_run_cast(values, "int32"), np.trunc(values).astype(np.int32))


def test_int_to_narrower_int_cast_wraps():
    values = np.array([300, -129, 255, 2**31 - 1], np.int32)
    np.testing.assert_array_equal(_run_cast(values, "int8"), values.astype(np.int8))


def test_int64_to_float32_cast_rounds_once():
    values = np.array([2**53 + 1, 2**62 + 2**38 + 1, -(2**40) - 3], np.int64)
    np.testing.assert_array_equal(_run_cast(values, "float32"), values.astype(np.float32))


def test_float32_to_float16_and_bool_casts_follow_numpy():
    values = np.array([1e-8, 65519.0, 70000.0, -0.0, 3.14159], np.float32)
    with np.errstate(over="ignore"):
        expected_half = values.astype(np.float16)
    np.testing.assert_array_equal(_run_cast(values, "float16"), expected_half)
    np.testing.assert_array_equal(_run_cast(values, "bool"), values.astype(bool))


@pytest.mark.parametrize("value", [np.nan, np.inf, 3e9])
def test_undefined_float_to_int_cast_raises(value):
    with pytest.raises(InterpreterError, match="undefined") as err:
        _run_cast(np.array([value], np.float32), "int32")
    assert err.value.rule == "interpreter.cast-range"


def _unary_math(name, values):
    x, y = (buffer(n, values.shape, str(values.dtype)) for n in "xy")
    body = grid(values.shape, lambda i: store(y, (i,), builtin.math_unary(name, x[i])))
    func = prim_func([x, y], body)
    out = np.zeros_like(values)
    run(func, values, out)
    return out


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_round_goes_half_to_even_like_numpy_and_c_nearbyint(dtype):
    values = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49999997, -3.7], dtype)
    expected = np.array([-2, -2, -0.0, 0, 2, 2, 0, -4], dtype)
    result = _unary_math("round", values)
    np.testing.assert_array_equal(result, expected)
    np.testing.assert_array_equal(result, np.round(values))
    np.testing.assert_array_equal(np.signbit(result), np.signbit(expected))


@pytest.mark.parametrize("node_cls", [builders.min_value, builders.max_value])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_float_min_max_follow_numpy_for_signed_zeros_and_nan(node_cls, dtype):
    a = np.array([-0.0, 0.0, np.nan, 1.0, np.nan, -np.inf], dtype)
    b = np.array([0.0, -0.0, 1.0, np.nan, np.nan, 2.0], dtype)
    expected = (np.minimum if node_cls is builders.min_value else np.maximum)(a, b)
    result = _run_binary(node_cls, a, b)
    np.testing.assert_array_equal(result, expected)  # NaN positions equal too
    np.testing.assert_array_equal(np.signbit(result), np.signbit(expected))


def test_nearbyint_rounds_half_to_even():
    values = np.array([-2.5, -1.5, 0.5, 1.5, 2.5], np.float32)
    np.testing.assert_array_equal(_unary_math("nearbyint", values), np.rint(values))


def test_erf_sigmoid_and_rsqrt_match_references():
    values = np.linspace(0.1, 3, 13).astype(np.float32)
    np.testing.assert_allclose(
        _unary_math("erf", values), [math.erf(v) for v in values.tolist()], rtol=1e-6
    )
    np.testing.assert_allclose(_unary_math("sigmoid", values), 1 / (1 + np.exp(-values)), rtol=1e-6)
    np.testing.assert_allclose(_unary_math("rsqrt", values), 1 / np.sqrt(values), rtol=1e-6)


def test_bitwise_operations_and_shifts_on_signed_ints():
    a = np.array([-8, 5, 12, -1], np.int32)
    b = np.array([3, 1, 2, 31], np.int32)
    results = {}
    for name in ("bitwise_and", "bitwise_or", "bitwise_xor", "shift_left", "shift_right"):
        results[name] = _run_binary(lambda x, y, name=name: builtin.bitwise(name, x, y), a, b)
    np.testing.assert_array_equal(results["bitwise_and"], a & b)
    np.testing.assert_array_equal(results["bitwise_or"], a | b)
    np.testing.assert_array_equal(results["bitwise_xor"], a ^ b)
    np.testing.assert_array_equal(results["shift_left"], np.left_shift(a, b))
    np.testing.assert_array_equal(results["shift_right"], np.right_shift(a, b))


def test_shift_by_the_bit_width_raises():
    a, b = np.array([1], np.int32), np.array([32], np.int32)
    with pytest.raises(InterpreterError, match="shift") as err:
        _run_binary(lambda x, y: builtin.bitwise("shift_left", x, y), a, b)
    assert err.value.rule == "interpreter.shift-range"


def _vector_copy_with_tail(n, lanes):
    """B[4k:4k+4] = A[4k:4k+4] * 2 for each chunk, masked to the first n lanes."""
    a, b = buffer("A", (n,)), buffer("B", (n + lanes,))
    chunks = (n + lanes - 1) // lanes

    def chunk(k):
        index = Ramp(k * lanes, const(1), lanes)
        in_range = index < Broadcast(const(n), lanes)
        doubled = BufferLoad(a, (index,), in_range) * Broadcast(const(2.0), lanes)
        return BufferStore(b, doubled, (index,), in_range)

    return prim_func([a, b], grid((chunks,), chunk))


def test_vector_ramp_access_with_predicate_skips_disabled_lanes():
    a = RNG.standard_normal(10).astype(np.float32)
    b = np.full(14, -1.0, np.float32)
    run(_vector_copy_with_tail(10, 4), a, b)
    np.testing.assert_array_equal(b[:10], a * 2)
    np.testing.assert_array_equal(b[10:], -1.0)  # lanes 10, 11 were disabled


def test_vector_arithmetic_wraps_per_lane():
    a, b = buffer("A", (8,), "int8"), buffer("B", (8,), "int8")
    index = Ramp(const(0), const(1), 8)
    three = Broadcast(IntImm(DataType.of("int8"), 3), 8)
    body = BufferStore(b, BufferLoad(a, (index,)) * three, (index,))
    a_np = np.arange(60, 68, dtype=np.int8)
    b_np = np.zeros(8, np.int8)
    run(prim_func([a, b], body), a_np, b_np)
    np.testing.assert_array_equal(b_np, a_np * np.int8(3))


def test_storing_undef_leaves_memory_unchanged():
    a = buffer("A", (4,))

    def five_or_undef(i):
        return builtin.if_then_else(i < 2, const(5.0), builtin.undef("float32"))

    body = grid((4,), lambda i: store(a, (i,), five_or_undef(i)))
    a_np = np.arange(4, dtype=np.float32)
    run(prim_func([a], body), a_np)
    np.testing.assert_array_equal(a_np, [5, 5, 2, 3])


def test_undef_used_as_an_index_raises():
    a = buffer("A", (4,))
    func = prim_func([a], store(a, (builtin.undef("int32"),), 1.0))
    with pytest.raises(InterpreterError, match=r"T\.undef\(\)") as err:
        run(func, np.zeros(4, np.float32))
    assert err.value.rule == "interpreter.undef"


def test_undef_used_in_arithmetic_raises():
    a = buffer("A", (4,))
    func = prim_func([a], store(a, (0,), builtin.undef("float32") + const(1.0)))
    with pytest.raises(InterpreterError, match=r"T\.undef\(\)"):
        run(func, np.zeros(4, np.float32))


def test_if_then_else_evaluates_only_the_chosen_side():
    a, b = buffer("A", (4,)), buffer("B", (4,))
    far = lambda i: a[i + 100]  # noqa: E731  (out of bounds if ever evaluated)
    body = grid((4,), lambda i: store(b, (i,), builtin.if_then_else(i < 4, a[i], far(i))))
    a_np, b_np = np.arange(4, dtype=np.float32), np.zeros(4, np.float32)
    run(prim_func([a, b], body), a_np, b_np)
    np.testing.assert_array_equal(b_np, a_np)


def test_select_evaluates_both_sides():
    a, b = buffer("A", (4,)), buffer("B", (4,))
    body = grid((4,), lambda i: store(b, (i,), Select(i < 4, a[i], a[i + 100])))
    with pytest.raises(InterpreterError, match="outside its shape"):
        run(prim_func([a, b], body), np.zeros(4, np.float32), np.zeros(4, np.float32))


def test_init_runs_when_reduction_iterators_are_at_their_domain_minimum():
    """The reduction domain starts at 2: init must run at vk == 2, not at vk == 0."""
    a, c = buffer("A", (3, 6)), buffer("C", (3,))
    body = grid(
        (3, 4),
        lambda i, k: block(
            "sum",
            [(SPATIAL, 3, i), (REDUCE, (2, 4), k + 2)],
            lambda vi, vk: store(c, (vi,), c[vi] + a[vi, vk]),
            lambda vi, vk: store(c, (vi,), 0),
        ),
    )
    a_np = RNG.standard_normal((3, 6)).astype(np.float32)
    c_np = np.full(3, 100.0, np.float32)
    run(prim_func([a, c], root(body)), a_np, c_np)
    np.testing.assert_allclose(c_np, a_np[:, 2:].sum(axis=1), rtol=1e-6)


def test_block_predicate_false_skips_the_block():
    a = buffer("A", (10,))
    body = grid(
        (3, 4),
        lambda o, i: block(
            "fill",
            [(SPATIAL, 10, o * 4 + i)],
            lambda v: store(a, (v,), Cast(DataType.of("float32"), v)),
            predicate=o * 4 + i < 10,
        ),
    )
    a_np = np.zeros(10, np.float32)
    run(prim_func([a], root(body)), a_np)
    np.testing.assert_array_equal(a_np, np.arange(10))


def test_block_binding_outside_its_domain_raises():
    a = buffer("A", (12,))
    body = grid((12,), lambda i: block("fill", [(SPATIAL, 10, i)], lambda v: store(a, (v,), 1.0)))
    with pytest.raises(InterpreterError, match="outside its domain") as err:
        run(prim_func([a], root(body)), np.zeros(12, np.float32))
    assert err.value.rule == "interpreter.block-domain"


def test_let_and_ret_return_a_value():
    x = Var("x", "int32")
    body = Evaluate(Call(DataType.of("int32"), builtin.ret_op, (Let(x, const(20), x * x + 1),)))
    assert run(prim_func([], body)) == 401


def test_loop_with_nonzero_start_and_scalar_parameter():
    n, a = Var("n", "int32"), buffer("A", (8,), "int32")
    i = Var("i")
    body = loop(i, n, store(a, (i,), i * 10), start=2)
    a_np = np.zeros(8, np.int32)
    run(prim_func([a, n], body), a_np, 3)
    np.testing.assert_array_equal(a_np, [0, 0, 20, 30, 40, 0, 0, 0])


def test_uninitialised_allocation_read_is_refused():
    # C leaves the element undefined: the oracle refuses rather than answering NaN (issue 12).
    out = buffer("out", (2,))
    data = Var("tmp", handle, PointerType(DataType.of("float32")))
    tmp = decl_buffer((2,), "float32", "tmp", data=data)
    body = Allocate(
        data,
        DataType.of("float32"),
        (const(2),),
        const(True),
        DeclBuffer(
            tmp,
            seq(
                store(tmp, (0,), 1.0),
                store(out, (0,), tmp[0]),
                store(out, (1,), tmp[1]),
            ),
        ),
    )
    out_np = np.zeros(2, np.float32)
    with pytest.raises(InterpreterError, match=r"`tmp` at index \[1\] reads memory that nothing"):
        run(prim_func([out], body), out_np)
    assert out_np[0] == 1.0


def test_and_short_circuits_like_c():
    a, b = buffer("A", (4,)), buffer("B", (6,))
    guard = lambda i: builders.logical_and(i < 4, a[i] > const(0.0))  # noqa: E731  (A[4] is OOB)
    body = grid((6,), lambda i: store(b, (i,), Select(guard(i), const(1.0), const(0.0))))
    a_np, b_np = np.array([1, -1, 2, -2], np.float32), np.full(6, 9.0, np.float32)
    run(prim_func([a, b], body), a_np, b_np)
    np.testing.assert_array_equal(b_np, [1, 0, 1, 0, 0, 0])


def _numpy_reference(node_cls, a, b):
    """NumPy's array semantics, which wrap like C; truncating division built from floor."""
    floor_q = np.floor_divide(a, b)
    trunc_q = floor_q + (((a - floor_q * b) != 0) & ((a < 0) != (b < 0))).astype(a.dtype)
    return {
        Add: a + b,
        Mul: a * b,
        FloorDiv: floor_q,
        FloorMod: np.mod(a, b),
        Div: trunc_q,
        Mod: a - trunc_q * b,
    }[node_cls]


@pytest.mark.parametrize("dtype", ["int8", "int16", "uint16", "int32", "uint32", "int64"])
@pytest.mark.parametrize("node_cls", [Add, Mul, FloorDiv, FloorMod, Div, Mod])
def test_integer_arithmetic_matches_numpy_on_random_operands(dtype, node_cls):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(zlib.crc32(f"{dtype}-{node_cls.__name__}".encode()))
    a = rng.integers(info.min, info.max, 64, dtype=dtype, endpoint=True)
    b = rng.integers(info.min, info.max, 64, dtype=dtype, endpoint=True)
    b[b == 0] = 1
    b[:4] = np.array([1, 2, 3, 7], dtype)  # small divisors, where rounding direction shows
    with np.errstate(all="ignore"):
        expected = _numpy_reference(node_cls, a, b)
    np.testing.assert_array_equal(_run_binary(node_cls, a, b), expected)
