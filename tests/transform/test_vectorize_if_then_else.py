"""VectorizeLoop of `T.if_then_else`: a vector reads only the taken branch's memory, as the
scalar loop does (padding copies vectorize without reading outside their input)."""

from __future__ import annotations

import numpy as np

from tessel.driver import build
from tessel.ir import expr as E
from tessel.ir.functor import post_order
from tessel.script import tir as T
from tessel.testing import check_same_results
from tessel.tir import builtin
from tessel.tir.buffer import BufferLoad
from tessel.tir.stmt import BufferStore
from tessel.transform import lower


def _vector_stores(mod) -> list[BufferStore]:
    (func,) = mod.functions.values()
    body = func.body
    return [n for n in post_order(body) if isinstance(n, BufferStore) and n.value.dtype.is_vector]


def test_a_condition_shared_by_the_lanes_becomes_a_conditional_of_vectors():
    @T.prim_func
    def pad_rows(A: T.Buffer((16, 6), "float32"), B: T.Buffer((8, 16), "float32")):
        for h in range(8):
            for c in T.vectorized(16):
                with T.block("B"):
                    vh, vc = T.axis.remap("SS", [h, c])
                    B[vh, vc] = T.if_then_else(1 <= vh and vh < 7, A[vc, vh - 1], T.float32(0))

    lowered = lower(pad_rows, verify=True)
    (store,) = _vector_stores(lowered)
    assert isinstance(store.value, E.Call) and store.value.op is builtin.if_then_else_op
    assert not store.value.args[0].dtype.is_vector  # one test for all 16 lanes
    check_same_results(pad_rows, lowered)


def test_a_condition_varying_by_lane_masks_the_loads_of_each_branch():
    @T.prim_func
    def pad_columns(A: T.Buffer((6,), "float32"), B: T.Buffer((10,), "float32")):
        for i in T.vectorized(10):
            with T.block("B"):
                vi = T.axis.remap("S", [i])
                B[vi] = T.if_then_else(2 <= vi and vi < 8, A[vi - 2], T.float32(-1))

    lowered = lower(pad_columns, verify=True)
    # two vectors: the whole first one, the masked second (PeelVectorTails); both select
    stores = _vector_stores(lowered)
    assert len(stores) == 2
    for store in stores:
        assert isinstance(store.value, E.Select)
        loads = [n for n in post_order(store.value) if isinstance(n, BufferLoad)]
        assert loads and all(load.predicate is not None for load in loads)  # `2 <= i` at least
    check_same_results(pad_columns, lowered)
    a = np.arange(1, 7, dtype="float32")
    b = np.zeros(10, "float32")
    build(pad_columns)(a, b)
    np.testing.assert_array_equal(b, [-1, -1, 1, 2, 3, 4, 5, 6, -1, -1])


def test_a_load_every_lane_shares_is_masked_by_a_condition_no_lane_takes():
    @T.prim_func
    def never(
        A: T.Buffer((8,), "float32"), s: T.Buffer((4,), "float32"), B: T.Buffer((8,), "float32")
    ):
        for i in T.vectorized(8):
            with T.block("B"):
                vi = T.axis.remap("S", [i])
                # Inputs are drawn from [-1, 1): s[7], past the end of s, is never read.
                B[vi] = T.if_then_else(A[vi] > T.float32(100), s[7], T.float32(2))

    lowered = lower(never, verify=True)
    (store,) = _vector_stores(lowered)
    (shared,) = [
        n for n in post_order(store.value) if isinstance(n, BufferLoad) and n.buffer.name == "s"
    ]
    assert shared.predicate is not None
    check_same_results(never, lowered)
