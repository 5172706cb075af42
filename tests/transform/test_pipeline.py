"""The lowering pipeline: pass order, instruments, verification, and the small cleanup passes."""

from __future__ import annotations

import numpy as np
import pytest

from tessel.codegen import generate
from tessel.driver import build
from tessel.ir import builders as B
from tessel.ir.expr import Cast
from tessel.ir.functor import post_order
from tessel.ir.module import IRModule
from tessel.ir.structural import assert_structural_equal
from tessel.ir.target import Target
from tessel.ir.transform import PassTimingInstrument
from tessel.script import tir as T
from tessel.support.dtype import float32, int64
from tessel.support.errors import InternalError, UserError
from tessel.testing import check_same_results
from tessel.testing.ir_programs import TRUE, loops, matmul, prim_func, seq, store
from tessel.tir import builtin, interpreter
from tessel.tir.block import Block
from tessel.tir.buffer import BufferLoad, decl_buffer
from tessel.tir.stmt import Allocate, BufferStore, DeclBuffer, Evaluate
from tessel.transform import LoweringError, RemoveAssume, RemoveUndefStores, lower
from tessel.transform.pipeline import default_passes, per_function_prefix
from tessel.transform.postconditions import check_postcondition
from tessel.transform.unroll_loop import UnrollLoop


def test_lower_runs_the_passes_in_order_and_reports_each_to_instruments():
    timing = PassTimingInstrument()
    lowered = lower(matmul(8), instruments=[timing], verify=True)
    assert [name for name, _ in timing.timings] == [
        "over_compute_padding",
        "lower_init_block",
        "plan_buffer_allocation",
        "convert_blocks_to_opaque",
        "compact_buffer_allocation",
        "lower_match_buffer",
        "lower_opaque_block",
        "unswitch_guards",
        "simplify",
        "remove_assume",
        "remove_undef_stores",
        "flatten_buffer",
        "storage_rewrite",
        "unroll_loop",
        "vectorize_loop",
        "peel_vector_tails",
        "lower_division",
        "hoist_divisions",
        "lower_memory_scopes",
        "clamp_vector_exp",
        "deinterleave_loads",
        "auto_unroll_loop",
        "extract_constants",
    ]
    func = lowered["matmul"]
    nodes = list(post_order(func.body))
    assert not any(isinstance(n, Block) for n in nodes)
    assert all(len(n.indices) == 1 for n in nodes if isinstance(n, BufferLoad))


def test_lower_accepts_a_module_and_keeps_its_function_names():
    mod = IRModule.from_dict({"first": matmul(4, name="first"), "second": matmul(4, name="second")})
    assert lower(mod).names() == ["first", "second"]


def test_only_the_last_pass_looks_at_the_whole_module():
    passes = default_passes(Target.of("c"))
    assert per_function_prefix(passes) == passes[:-1]  # what worker processes may run


@T.prim_func
def _scale(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
    W = T.allocate_const([0.5, -1.0, 2.0, 3.0], "float32", [4])
    for i in range(4):
        B[i] = A[i] * W[i]


@T.prim_func
def _shift(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
    W = T.allocate_const([0.5, -1.0, 2.0, 3.0], "float32", [4])
    for i in range(4):
        B[i] = A[i] + W[i]


def test_lowering_in_worker_processes_gives_the_serial_module_and_reports_each_function():
    funcs = {f"k{n}": matmul(n, name=f"k{n}") for n in (4, 8, 12)}
    # One constant array in two functions: ExtractConstants, run here after the workers'
    # passes, keeps one copy for the module.
    mod = IRModule.from_dict({**funcs, "scale": _scale, "shift": _shift})
    done = []
    parallel = lower(mod, jobs=2, on_function_done=lambda: done.append(1))
    serial = lower(mod)
    assert len(done) == len(mod.names())
    assert parallel.names() == serial.names()
    assert_structural_equal(parallel, serial)
    assert len(parallel.attrs["constants"]) == 1
    assert generate(parallel).source == generate(serial).source
    check_same_results(_scale, parallel, name="scale")


def test_lowering_that_fails_in_a_worker_raises_its_own_error_here(monkeypatch):
    original = UnrollLoop.transform

    def broken(self, func, ctx):
        if func.attrs["global_symbol"] == "bad":
            raise LoweringError("broken on purpose", rule="test.broken")
        return original(self, func, ctx)

    monkeypatch.setattr(UnrollLoop, "transform", broken)  # the forked workers inherit it
    mod = IRModule.from_dict({"good": matmul(4, name="good"), "bad": matmul(4, name="bad")})
    with pytest.raises(LoweringError, match="broken on purpose") as raised:
        lower(mod, jobs=2)
    assert raised.value.rule == "test.broken"
    assert any(entry.name == "broken" for entry in raised.traceback)  # raised in this process


def test_assumptions_and_undef_stores_are_removed_without_changing_results():
    a_buf, out = decl_buffer((8,), "int32", "A"), decl_buffer((8,), "int32", "out")
    pad = decl_buffer((8,), "int32", "pad")
    body = Allocate(
        pad.data,
        pad.dtype,
        pad.shape,
        TRUE,
        DeclBuffer(
            pad,
            loops(
                (8,),
                lambda i: seq(
                    Evaluate(builtin.assume(B.ge(a_buf[i], 0))),
                    store(pad, (i,), builtin.undef("int32")),
                    store(out, (i,), a_buf[i] + 1),
                ),
            ),
        ),
    )
    func = prim_func("clean", (a_buf, out), body)
    mod = RemoveUndefStores()(RemoveAssume()(IRModule.from_func(func)))
    calls = [n for n in post_order(mod["clean"].body) if isinstance(n, Evaluate | BufferLoad)]
    assert all(not isinstance(n, Evaluate) for n in calls)
    assert RemoveAssume()(mod) is mod  # nothing left to remove: the same module comes back
    a = np.arange(8, dtype="int32")
    for run in (lambda *args: interpreter.run(func, *args), lambda *args: build(func)(*args)):
        result = np.zeros(8, "int32")
        run(a, result)
        np.testing.assert_array_equal(result, a + 1)


def test_stores_of_a_cast_undef_are_removed_too():
    # The parser writes `T.Cast("float32", T.undef())` where an untyped undef meets a float.
    a_buf = decl_buffer((4,), "float32", "A")
    undef = Cast(float32, Cast(int64, builtin.undef("int32")))
    func = prim_func("pad", (a_buf,), loops((4,), lambda i: store(a_buf, (i,), undef)))
    after = RemoveUndefStores()(IRModule.from_func(func))["pad"]
    assert not [n for n in post_order(after.body) if isinstance(n, BufferStore)]
    for run in (lambda *args: interpreter.run(func, *args), lambda *args: build(func)(*args)):
        a = np.ones(4, "float32")
        run(a)
        np.testing.assert_array_equal(a, 1)  # a store of undef is a no-op


def test_lower_opaque_block_postcondition_names_a_block_that_remains():
    with pytest.raises(InternalError, match="lower_opaque_block.*block `C` remains"):
        check_postcondition(IRModule.from_func(matmul(4)), "lower_opaque_block")


def test_undef_used_as_an_index_or_in_arithmetic_is_a_lowering_error():
    @T.prim_func
    def bad_index(A: T.Buffer((4,), "int32")):
        for i in range(4):
            A[T.undef()] = i

    @T.prim_func
    def bad_value(A: T.Buffer((4,), "float32")):
        for i in range(4):
            A[i] = T.Cast("float32", T.undef()) + T.float32(1)

    for func in (bad_index, bad_value):
        with pytest.raises(LoweringError) as info:
            lower(func)
        assert info.value.rule == "remove_undef_stores.undef-use"


def test_the_targets_vector_width_sets_the_vector_chunks():
    @T.prim_func
    def double(A: T.Buffer((100,), "float32"), B: T.Buffer((100,), "float32")):
        for i in T.vectorized(100):  # not a power of two: cut into chunks of the target's width
            B[i] = A[i] * T.float32(2)

    def lanes(target):
        func = lower(double, target)["double"]
        return {n.value.dtype.lanes for n in post_order(func.body) if isinstance(n, BufferStore)}

    assert lanes(Target()) == {8}  # 32 bytes of float32
    assert lanes(Target(vector_bytes=64)) == {16}
    with pytest.raises(UserError, match="vector_bytes"):
        Target(vector_bytes=1)
