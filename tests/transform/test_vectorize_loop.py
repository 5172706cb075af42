"""VectorizeLoop: vectorized loops become vector (predicated) accesses, or stay scalar loops."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tessel.driver import build, generate_c_source
from tessel.ir.expr import Broadcast, Ramp
from tessel.ir.functor import post_order
from tessel.ir.module import IRModule
from tessel.schedule import Schedule
from tessel.script import parse
from tessel.script import tir as T
from tessel.testing import assert_structural_equal, check_same_results
from tessel.testing.schedules import named_like
from tessel.tir import interpreter
from tessel.tir.buffer import BufferLoad
from tessel.tir.interpreter.errors import InterpreterError
from tessel.tir.stmt import BufferStore, For, ForKind
from tessel.transform import lower
from tessel.transform.vectorize_loop import VectorizeLoop


def _scale(n: int, dtype: str):
    @T.prim_func
    def scale(A: T.Buffer((n,), dtype), B: T.Buffer((n,), dtype)):
        for i in range(n):
            with T.block("B"):
                vi = T.axis.remap("S", [i])
                B[vi] = A[vi] * T.Cast(dtype, 3) + T.Cast(dtype, 1)

    return scale


def _split_vectorized(func, factor: int = 8):
    sch = Schedule(func)
    (i,) = sch.get_loops(sch.get_block("B"))
    _, inner = sch.split(i, [None, factor])
    sch.vectorize(inner)
    return sch.mod


def _body(mod):
    (func,) = [mod[name] for name in mod.names()]
    return func.body


def _stores(mod) -> list[BufferStore]:
    return [n for n in post_order(_body(mod)) if isinstance(n, BufferStore)]


def _loops(mod) -> list[For]:
    return [n for n in post_order(_body(mod)) if isinstance(n, For)]


@pytest.mark.parametrize("dtype", ["float32", "int32"])
@pytest.mark.parametrize("n", [127, 128])
def test_split_and_vectorized_loop_becomes_vector_stores_without_a_scalar_tail(n, dtype):
    func = _scale(n, dtype)
    scheduled = _split_vectorized(func)
    lowered = lower(scheduled, verify=True)
    # The vectorized loop is gone and no scalar tail was added: 16 vectors, or 15 whole ones
    # in the loop and the masked 16th after it (PeelVectorTails).
    (outer,) = _loops(lowered)
    assert outer.extent.value == n // 8 and outer.kind is ForKind.SERIAL
    stores = _stores(lowered)
    assert [s.predicate is not None for s in stores] == [False] + [True] * (n % 8 != 0)
    assert all(isinstance(s.indices[0], Ramp) and s.value.dtype.lanes == 8 for s in stores)
    source = generate_c_source(scheduled)
    assert "#pragma omp simd\n" not in source.split("v_main")[0]
    body = source[source.index("TESSEL_EXPORT int32_t") :]
    assert len(re.findall(r"for \(int32_t i", body)) == 1  # only the outer loop
    assert f"tessel_{dtype}x8" in source
    a = (np.arange(n) - 50).astype(dtype)
    b = np.zeros(n, dtype)
    build(scheduled)(a, b)
    np.testing.assert_array_equal(b, a * 3 + 1)
    check_same_results(func, scheduled)


def test_the_interpreter_runs_the_vectorized_ir_with_predicates():
    func = _scale(127, "float32")
    lowered = lower(_split_vectorized(func))
    a = np.linspace(-1, 1, 127, dtype="float32")
    b = np.full(127, np.nan, "float32")
    interpreter.run(lowered["main"], a, b)
    np.testing.assert_allclose(b, a * 3 + 1, rtol=1e-6)


def test_elementwise_chain_with_a_broadcast_scalar_parameter():
    @T.prim_func
    def chain(
        A: T.Buffer((64,), "float32"),
        C: T.Buffer((64,), "float32"),
        B: T.Buffer((64,), "float32"),
        s: T.float32,
    ):
        for i in range(64):
            with T.block("B"):
                vi = T.axis.remap("S", [i])
                B[vi] = T.max((A[vi] - s) * C[vi], T.float32(0)) / (s + T.float32(2))

    sch = Schedule(chain)
    (i,) = sch.get_loops(sch.get_block("B"))
    _, inner = sch.split(i, [None, 16])
    sch.vectorize(inner)
    lowered = lower(sch.mod, verify=True)
    (vstore,) = _stores(lowered)
    assert vstore.value.dtype.lanes == 16 and vstore.predicate is None
    nodes = post_order(vstore.value)
    assert any(isinstance(n, Broadcast) and n.value.dtype.is_float for n in nodes)
    check_same_results(chain, sch.mod, scalars={"s": 0.25})


def test_a_loop_carried_dependence_stays_a_scalar_loop_and_still_runs():
    @T.prim_func
    def prefix(A: T.Buffer((32,), "int32")):
        for i in T.vectorized(31):
            A[i + 1] = A[i + 1] + A[i]

    lowered = lower(prefix, verify=True)
    (loop,) = _loops(lowered)
    assert loop.kind is ForKind.SERIAL
    assert not any(n.dtype.is_vector for n in post_order(loop.body) if isinstance(n, BufferLoad))
    a = np.arange(32, dtype="int32")
    build(prefix)(a)
    np.testing.assert_array_equal(a, np.cumsum(np.arange(32, dtype="int32")))


@pytest.mark.parametrize("extent", [6, 8])
def test_unsupported_bodies_stay_scalar_loops(extent):
    @T.prim_func
    def nested(A: T.Buffer((8, 4), "float32"), B: T.Buffer((8,), "float32")):
        for i in T.vectorized(extent):
            B[i] = T.float32(0)
            for k in range(4):
                B[i] = B[i] + A[i, k]

    lowered = lower(nested, verify=True)
    assert all(loop.kind is ForKind.SERIAL for loop in _loops(lowered))
    a = np.random.default_rng(0).uniform(size=(8, 4)).astype("float32")
    b = np.full(8, 7.0, "float32")
    build(nested)(a, b)
    np.testing.assert_allclose(b[:extent], a[:extent].sum(axis=1), rtol=1e-5)


def test_a_symbolic_extent_runs_whole_vectors_then_a_predicated_last_one():
    @T.prim_func
    def fill(a: T.handle, n: T.int32):
        A = T.match_buffer(a, (n,), "int32")
        for i in T.vectorized(n):
            A[i] = i

    lowered = lower(fill, verify=True)
    stores = _stores(lowered)
    # PeelVectorTails: the whole vectors unpredicated, then the rest under the predicate
    assert len(stores) == 2 and all(isinstance(s.indices[0], Ramp) for s in stores)
    assert [s.predicate is None for s in stores] == [True, False]
    library = build(fill)
    for n in (0, 1, 15, 16, 17, 100):
        out = np.full(n + 16, -1, "int32")
        library(out[:n], n)
        np.testing.assert_array_equal(out[:n], np.arange(n))
        assert (out[n:] == -1).all()  # the predicated lanes past the end write nothing


def test_a_reduction_init_under_a_loop_invariant_if_is_vectorized_inside_the_if():
    @T.prim_func
    def row_sums(A: T.Buffer((8, 16), "float32"), S: T.Buffer((16,), "float32")):
        for k, j in T.grid(8, 16):
            with T.block("S"):
                vj, vk = T.axis.remap("SR", [j, k])
                with T.init():
                    S[vj] = T.float32(0)
                S[vj] = S[vj] + A[vk, vj]

    sch = Schedule(row_sums)
    _, j = sch.get_loops(sch.get_block("S"))
    sch.vectorize(j)
    lowered = lower(sch.func, verify=True)
    stores = _stores(lowered)
    assert len(stores) == 2 and all(isinstance(s.indices[0], Ramp) for s in stores)
    assert all(loop.kind is ForKind.SERIAL and loop.extent.value == 8 for loop in _loops(lowered))
    check_same_results(row_sums, sch.func)


# ---------------------------------------------------------------- any constant extent


def _vectorized_directly(func, vector_length=None):
    sch = Schedule(func)
    (i,) = sch.get_loops(sch.get_block("B"))
    sch.vectorize(i, vector_length=vector_length)
    return sch.mod


def _entry_loops(source: str) -> list[str]:
    """The loop variables of the generated entry function's loops, lane loops left out."""
    body = source[source.index("TESSEL_EXPORT int32_t") :]
    return re.findall(r"for \(int32_t (?!tessel_)(\w+)", body)


# extent -> (lanes, chunk loop extent or None): float32 and int32 chunks are 8 lanes (32 bytes).
_PLANS = {3: (4, None), 6: (8, None), 12: (8, 2), 100: (8, 13), 127: (8, 16)}


@pytest.mark.parametrize("dtype", ["float32", "int32"])
@pytest.mark.parametrize("n", sorted(_PLANS))
def test_any_constant_extent_becomes_predicated_vectors_without_a_scalar_tail(n, dtype):
    func = _scale(n, dtype)
    scheduled = _vectorized_directly(func)
    lowered = lower(scheduled, verify=True)
    lanes, chunks = _PLANS[n]
    loops = _loops(lowered)
    # The whole chunks in a loop without masks (PeelVectorTails), then the masked last one.
    assert [loop.extent.value for loop in loops] == ([] if chunks is None else [chunks - 1])
    *whole, vstore = _stores(lowered)
    assert len(whole) == (chunks is not None)
    for store in [*whole, vstore]:
        assert isinstance(store.indices[0], Ramp)
        assert store.value.dtype.lanes == lanes
        loads = [x for x in post_order(store.value) if isinstance(x, BufferLoad)]
        assert all((x.predicate is not None) == (store is vstore) for x in loads)
    assert vstore.predicate is not None and all(s.predicate is None for s in whole)
    source = generate_c_source(scheduled)
    assert _entry_loops(source) == ([] if chunks is None else ["i_0"])  # no scalar tail loop
    a = (np.arange(n) - 50).astype(dtype)
    b = np.zeros(n, dtype)
    build(scheduled)(a, b)
    np.testing.assert_array_equal(b, a * 3 + 1)
    check_same_results(func, lowered)  # the vector IR in the interpreter, and as C
    check_same_results(func, scheduled)


def test_a_padded_extent_masks_the_lanes_past_its_end():
    @T.prim_func
    def before(A: T.Buffer((6,), "float32"), B: T.Buffer((6,), "float32")):
        for i in T.vectorized(6):
            B[i] = A[i] * T.float32(2)

    @T.prim_func
    def expected(A: T.Buffer((6,), "float32"), B: T.Buffer((6,), "float32")):
        B.vstore(
            [T.Ramp(0, 1, 8)],
            A.vload([T.Ramp(0, 1, 8)], predicate=T.Ramp(0, 1, 8) < T.Broadcast(6, 8))
            * T.Broadcast(T.float32(2), 8),
            predicate=T.Ramp(0, 1, 8) < T.Broadcast(6, 8),
        )

    after = VectorizeLoop()(IRModule.from_func(before))["before"]
    assert_structural_equal(after, named_like(expected, after))
    check_same_results(before, after)


def test_a_loop_starting_past_zero_is_masked_against_its_own_end():
    @T.prim_func
    def before(A: T.Buffer((10,), "int32")):
        for i in T.vectorized(2, 7):
            A[i] = i

    @T.prim_func
    def expected(A: T.Buffer((10,), "int32")):
        A.vstore([T.Ramp(2, 1, 8)], T.Ramp(2, 1, 8), predicate=T.Ramp(2, 1, 8) < T.Broadcast(7, 8))

    after = VectorizeLoop()(IRModule.from_func(before))["before"]
    assert_structural_equal(after, named_like(expected, after))
    check_same_results(before, after)


def test_a_vector_length_annotation_chunks_the_loop_with_a_predicated_last_chunk():
    @T.prim_func
    def before(A: T.Buffer((10,), "float32"), B: T.Buffer((10,), "float32")):
        for i in T.vectorized(10, annotations={"vector_length": 4}):
            B[i] = A[i] + T.float32(1)

    @T.prim_func
    def expected(A: T.Buffer((10,), "float32"), B: T.Buffer((10,), "float32")):
        for i_0 in range(3):
            B.vstore(
                [T.Ramp(i_0 * 4, 1, 4)],
                A.vload(
                    [T.Ramp(i_0 * 4, 1, 4)], predicate=T.Ramp(i_0 * 4, 1, 4) < T.Broadcast(10, 4)
                )
                + T.Broadcast(T.float32(1), 4),
                predicate=T.Ramp(i_0 * 4, 1, 4) < T.Broadcast(10, 4),
            )

    after = VectorizeLoop()(IRModule.from_func(before))["before"]
    assert_structural_equal(after, named_like(expected, after))
    check_same_results(before, after)


def test_the_pass_returns_the_same_function_when_nothing_is_vectorized():
    @T.prim_func
    def serial(A: T.Buffer((6,), "float32")):
        for i in range(6):
            A[i] = T.float32(0)

    mod = IRModule.from_func(serial)
    assert VectorizeLoop()(mod)["serial"] is mod["serial"]


@pytest.mark.parametrize(("n", "vector_length"), [(127, 8), (128, 8), (6, 16), (127, 6), (100, 32)])
def test_vector_length_lowers_exactly_like_split_and_vectorize(n, vector_length):
    func = _scale(n, "float32")
    split = _split_vectorized(func, vector_length)
    direct = _vectorized_directly(func, vector_length)
    assert_structural_equal(lower(direct)["main"], lower(split)["main"])
    assert generate_c_source(direct) == generate_c_source(split)
    # the whole chunks (and a tail of masked ones where the mask is not only the last's)
    assert _entry_loops(generate_c_source(direct))[0] == "i_0"
    assert "i_" not in "".join(_entry_loops(generate_c_source(direct))[1:]).replace("i_0_", "")
    check_same_results(func, direct)


def test_a_loop_invariant_scalar_operand_is_broadcast_into_the_padded_vector():
    @T.prim_func
    def axpb(A: T.Buffer((100,), "float32"), B: T.Buffer((100,), "float32"), s: T.float32):
        for i in range(100):
            with T.block("B"):
                vi = T.axis.remap("S", [i])
                B[vi] = A[vi] * s + T.float32(1)

    scheduled = _vectorized_directly(axpb)
    *_, vstore = _stores(lower(scheduled))  # the last, masked vector
    assert vstore.predicate is not None
    broadcasts = [n for n in post_order(vstore.value) if isinstance(n, Broadcast)]
    assert any(n.value.dtype.is_float for n in broadcasts)
    check_same_results(axpb, scheduled, scalars={"s": -1.5})


def test_a_data_dependent_guard_reads_only_the_enabled_lanes():
    @T.prim_func
    def relu_copy(A: T.Buffer((6,), "float32"), B: T.Buffer((6,), "float32")):
        for i in T.vectorized(6):
            if A[i] > T.float32(0):
                B[i] = A[i]

    lowered = lower(relu_copy, verify=True)
    (vstore,) = _stores(lowered)
    guard_loads = [x for x in post_order(vstore.predicate) if isinstance(x, BufferLoad)]
    assert len(guard_loads) == 1
    assert guard_loads[0].predicate is not None  # masked by `i < 6`
    check_same_results(relu_copy, lowered)


def test_the_interpreter_refuses_an_unmasked_vector_load_past_the_buffer():
    @T.prim_func
    def unmasked(A: T.Buffer((6,), "float32"), B: T.Buffer((6,), "float32")):
        B.vstore(
            [T.Ramp(0, 1, 8)],
            A.vload([T.Ramp(0, 1, 8)]),
            predicate=T.Ramp(0, 1, 8) < T.Broadcast(6, 8),
        )

    with pytest.raises(InterpreterError, match="outside its shape"):
        interpreter.run(unmasked, np.zeros(6, "float32"), np.zeros(6, "float32"))


def test_a_lowered_function_with_predicates_prints_and_parses_back():
    lowered = lower(_vectorized_directly(_scale(127, "int32"), 8))["main"]
    text = str(lowered)
    assert "predicate=T.Ramp(120, 1, 8) < T.Broadcast(127, 8)" in text  # the last vector
    assert_structural_equal(parse(text), lowered)
