"""DeinterleaveLoads: a vector load of every second element (8 or 16 lanes of 4 bytes) becomes
`tessel.deinterleaved_load(load)` with its index written Ramp(base, 2, lanes); the values are
the load's, in the interpreter and in C (two masked loads and a shuffle), with or without a
predicate, at odd and symbolic offsets. Other strides and widths are left alone."""

from __future__ import annotations

import numpy as np
import pytest

from tessel.codegen import generate
from tessel.ir import expr as E
from tessel.ir.functor import post_order
from tessel.ir.module import IRModule
from tessel.ir.node import with_changes
from tessel.ir.structural import assert_structural_equal
from tessel.ir.transform import PrintAfterAll
from tessel.runtime.compiler import compile_source
from tessel.runtime.module import Module
from tessel.script import tir as T
from tessel.tir import builtin, interpreter
from tessel.tir.buffer import BufferLoad
from tessel.transform import DeinterleaveLoads, lower


def _deinterleave(func):
    return DeinterleaveLoads()(IRModule.from_func(func))[func.name]


def _compiled_as_is(func) -> Module:
    """The C backend's code for `func` as written (lowering would run the pass itself)."""
    source = generate(IRModule.from_func(func))
    return Module(compile_source(source.source), list(source.entries), source.source)


def _calls(func):
    return [n for n in post_order(func.body) if isinstance(n, E.Call)]


def _check_same_everywhere(before, after, shapes, dtype="float32", scalars=(), enabled=None):
    """Before and after the pass, in the interpreter and in C: bit-identical outputs (the first
    `enabled` lanes only where a predicate disables the others: their value is unspecified)."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal(shapes[0]).astype(dtype) * 100
    results = []
    for func in (before, after):
        for run in (interpreter.run, lambda f, *args: _compiled_as_is(f)(*args)):
            b = np.full(shapes[1], -7, dtype)
            run(func, a.copy(), b, *scalars)
            results.append(b[:enabled])
    for other in results[1:]:
        np.testing.assert_array_equal(other, results[0])


@T.prim_func
def strided(A: T.Buffer((40,), "float32"), B: T.Buffer((16,), "float32")):
    B[T.Ramp(0, 1, 16)] = A[T.Ramp(1, 2, 16)]


def test_a_stride_two_load_is_wrapped_in_deinterleaved_load():
    store = strided.body
    expected = with_changes(
        strided,
        body=with_changes(
            store, value=E.Call(store.value.dtype, builtin.deinterleaved_load_op, (store.value,))
        ),
    )
    after = _deinterleave(strided)
    assert_structural_equal(after, expected)
    _check_same_everywhere(strided, after, ((40,), (16,)))
    source = generate(IRModule.from_func(after)).source
    assert "__builtin_shufflevector(tessel_a, tessel_b" in source
    assert "tessel_a" not in generate(IRModule.from_func(strided)).source  # as written: a gather


def test_an_affine_index_is_written_as_a_ramp_of_stride_two():
    @T.prim_func
    def affine(A: T.Buffer((64,), "float32"), B: T.Buffer((24,), "float32"), n: T.int32):
        for i in range(3):
            B[T.Ramp(i * 8, 1, 8)] = A[T.Broadcast(i * 16 + n, 8) + T.Ramp(0, 1, 8) * 2]

    after = _deinterleave(affine)
    (call,) = _calls(after)
    load = call.args[0]
    assert call.op is builtin.deinterleaved_load_op and isinstance(load, BufferLoad)
    assert isinstance(load.indices[0], E.Ramp) and load.indices[0].stride.value == 2
    for n in (0, 1, 17):  # even, odd and other offsets
        _check_same_everywhere(affine, after, ((64,), (24,)), scalars=(n,))


@pytest.mark.parametrize("dtype", ["float32", "int32"])
@pytest.mark.parametrize("lanes", [8, 16])
def test_a_predicated_stride_two_load_reads_only_its_enabled_lanes(dtype, lanes):
    enabled = T.Ramp(0, 1, lanes) < T.Broadcast(lanes - 3, lanes)

    @T.prim_func
    def predicated(A: T.Buffer((2 * lanes + 1,), dtype), B: T.Buffer((lanes,), dtype)):
        B[T.Ramp(0, 1, lanes)] = A.vload([T.Ramp(1, 2, lanes)], predicate=enabled)

    after = _deinterleave(predicated)
    (call,) = _calls(after)
    assert call.args[0].predicate is not None
    shapes = ((2 * lanes + 1,), (lanes,))
    _check_same_everywhere(predicated, after, shapes, dtype, enabled=lanes - 3)


def test_other_strides_widths_and_lane_counts_are_left_alone():
    @T.prim_func
    def others(
        A: T.Buffer((64,), "float32"),
        D: T.Buffer((64,), "float64"),
        H: T.Buffer((64,), "int16"),
        B: T.Buffer((16,), "float32"),
        C: T.Buffer((16,), "float64"),
        E: T.Buffer((16,), "int16"),
    ):
        B[T.Ramp(0, 1, 16)] = A[T.Ramp(0, 3, 16)]
        B[T.Ramp(0, 1, 4)] = A[T.Ramp(0, 2, 4)]
        C[T.Ramp(0, 1, 16)] = D[T.Ramp(0, 2, 16)]
        E[T.Ramp(0, 1, 16)] = H[T.Ramp(0, 2, 16)]
        B[0] = A[2]

    mod = IRModule.from_func(others)
    assert DeinterleaveLoads()(mod) is mod


def test_running_the_pass_twice_changes_nothing_more():
    once = IRModule.from_func(_deinterleave(strided))
    assert DeinterleaveLoads()(once) is once


def test_lowering_a_strided_slice_shows_the_pass_by_name():
    @T.prim_func
    def slice_(A: T.Buffer((33,), "float32"), B: T.Buffer((16,), "float32")):
        for i in T.vectorized(16):
            with T.block("B"):
                vi = T.axis.spatial(16, i)
                B[vi] = A[vi * 2 + 1]

    printed = []
    lowered = lower(slice_, instruments=[PrintAfterAll(write=printed.append)])
    text = next(p for p in printed if p.startswith("# after deinterleave_loads"))
    assert '"tessel.deinterleaved_load", A[T.Ramp(1, 2, 16)]' in text
    assert [c.op for c in _calls(lowered["slice_"])] == [builtin.deinterleaved_load_op]
