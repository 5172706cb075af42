"""Regressions of VectorizeLoop (issue 12): a load every lane shares is masked by the guard
(or, through the whole pipeline, is under the guard UnswitchGuards hoists)."""

from __future__ import annotations

import numpy as np

from tessel.driver import build
from tessel.ir.expr import Broadcast
from tessel.ir.functor import post_order
from tessel.ir.module import IRModule
from tessel.ir.target import Target
from tessel.ir.transform import PassContext
from tessel.schedule import Schedule
from tessel.script import tir as T
from tessel.testing import check_same_results
from tessel.tir import interpreter
from tessel.tir.buffer import BufferLoad
from tessel.transform import lower
from tessel.transform.pipeline import default_passes
from tessel.transform.postconditions import check_postcondition
from tessel.transform.unswitch_guards import UnswitchGuards


@T.prim_func
def _add_row_bias(
    A: T.Buffer((8, 1), "float32"), b: T.Buffer((8,), "float32"), C: T.Buffer((8, 1), "float32")
):
    for i, j in T.grid(8, 1):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = A[vi, vj] + b[vi]


def _scheduled():
    """`b[vi]` does not depend on the vectorized loop `j`; the split's guard `i < 8` does not
    either, and fails for the ninth row, where `b[8]` lies past the end of `b`."""
    sch = Schedule(_add_row_bias)
    i, j = sch.get_loops(sch.get_block("C"))
    sch.split(i, [None, 3, 3])
    sch.vectorize(j, vector_length=3)
    return sch.mod


def _lower_keeping_guards(mod: IRModule) -> IRModule:
    """`lower` without UnswitchGuards, which would hoist the guard out of the vector loop."""
    ctx = PassContext(verify=True, verifier=check_postcondition)
    for pass_ in default_passes(Target.of("c")):
        if not isinstance(pass_, UnswitchGuards):
            mod = pass_(mod, ctx)
    return mod


def test_lane_invariant_load_under_a_guard_is_masked():
    lowered = _lower_keeping_guards(_scheduled())
    (load,) = [
        n
        for n in post_order(lowered["main"].body)
        if isinstance(n, BufferLoad) and n.buffer.name == "b"
    ]
    assert load.predicate is not None
    assert isinstance(load.indices[0], Broadcast)
    a, b = np.ones((8, 1), "float32"), np.arange(8, dtype="float32")
    c = np.zeros((8, 1), "float32")
    interpreter.run(lowered["main"], a, b, c)
    np.testing.assert_array_equal(c[:, 0], 1 + b)


def test_lane_invariant_guard_is_hoisted_out_of_the_vector_loop():
    """With UnswitchGuards, the guard is a scalar test per row and the load needs no mask."""
    lowered = lower(_scheduled(), verify=True)
    loads = [
        n
        for n in post_order(lowered["main"].body)
        if isinstance(n, BufferLoad) and n.buffer.name == "b"
    ]
    assert loads and all(load.predicate is None for load in loads)


def test_lane_invariant_load_under_a_guard_never_reads_past_the_buffer():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((8, 1)).astype("float32")
    b = rng.standard_normal(8).astype("float32")
    c = np.zeros((8, 1), "float32")
    # The interpreter refuses an out-of-bounds read, masked lanes excepted.
    interpreter.run(lower(_scheduled())["main"], a, b, c)
    np.testing.assert_array_equal(c[:, 0], a[:, 0] + b)
    c_compiled = np.zeros((8, 1), "float32")
    build(_scheduled())(a, b, c_compiled)
    np.testing.assert_array_equal(c_compiled, c)
    check_same_results(_add_row_bias, _scheduled())


def test_lane_invariant_load_without_a_guard_stays_scalar():
    """Padding lanes never disable the first lane, so a shared load needs no mask there."""
    sch = Schedule(_add_row_bias)
    i, j = sch.get_loops(sch.get_block("C"))
    sch.vectorize(j, vector_length=3)
    lowered = lower(sch.mod, verify=True)
    (load,) = [
        n
        for n in post_order(lowered["main"].body)
        if isinstance(n, BufferLoad) and n.buffer.name == "b"
    ]
    assert load.predicate is None
    assert not load.dtype.is_vector
    check_same_results(_add_row_bias, sch.mod)
