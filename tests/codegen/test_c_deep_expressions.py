"""Deep expressions lower and print as C at Python's default recursion limit: the C printer walks
an expression's operands with an explicit stack (tessel.codegen.c_operands), so a fused chain of
thousands of elementwise ops is no deeper in Python than one op."""

from __future__ import annotations

import sys
from dataclasses import replace

import numpy as np
import pytest

import tessel.graph as graph
from tessel.codegen.c_types import float_literal
from tessel.driver import build, generate_c_source
from tessel.graph import Call, Function, Op, TensorType, Var
from tessel.graph.passes.fuse_ops import FuseOps
from tessel.graph.passes.pipeline import default_pipeline
from tessel.ir import builders as B
from tessel.ir import expr as E
from tessel.ir.expr import PrimExpr
from tessel.ir.module import IRModule
from tessel.ir.target import Target
from tessel.support.dtype import float32
from tessel.testing.ir_programs import loops, prim_func, store
from tessel.tir import builtin
from tessel.tir.buffer import decl_buffer
from tessel.tir.stmt import ForKind

RNG = np.random.default_rng(0)


def _chain(x: PrimExpr, depth: int) -> PrimExpr:
    """`depth` steps over `x`, cycling `+ 1`, `* 0.5`, exp or max with -1, `- 1`."""
    for k in range(depth):
        step = k % 4
        if step == 0:
            x = x + 1.0
        elif step == 1:
            x = x * 0.5
        elif step == 2 and k % 8 == 2:
            x = builtin.math_unary("exp", x)
        elif step == 2:
            x = B.max_value(x, B.const(-1.0, "float32"))
        else:
            x = x - 1.0
    return x


def _chain_numpy(x: np.ndarray, depth: int) -> np.ndarray:
    """`_chain` in NumPy, in float32 as the C computes it."""
    for k in range(depth):
        step = k % 4
        if step == 0:
            x = x + np.float32(1.0)
        elif step == 1:
            x = x * np.float32(0.5)
        elif step == 2 and k % 8 == 2:
            x = np.exp(x)
        elif step == 2:
            x = np.maximum(x, np.float32(-1.0))
        else:
            x = x - np.float32(1.0)
    return x


def _deep_store(depth: int, n: int, kind: ForKind = ForKind.SERIAL):
    """`B[i] = chain(A[i])`: one store of a `depth`-deep expression, in a loop of `kind`."""
    a, b = decl_buffer((n,), "float32", "A"), decl_buffer((n,), "float32", "B")
    body = loops((n,), lambda i: store(b, (i,), _chain(a[i], depth)), kind=kind)
    return prim_func("deep", (a, b), body)


def test_the_recursion_limit_is_pythons_default():
    assert sys.getrecursionlimit() == 1000  # what every test here runs under


def test_a_3000_deep_store_lowers_builds_and_matches_numpy():
    # The reference interpreter runs nested closures, one Python call a level, so NumPy is
    # the oracle at this depth (the shallow test below checks the interpreter agrees).
    x = RNG.uniform(-2, 2, 37).astype("float32")
    y = np.full(37, np.nan, "float32")
    build(_deep_store(3000, 37))(x, y)
    np.testing.assert_allclose(y, _chain_numpy(x, 3000), rtol=1e-5, atol=1e-6)


def test_a_1500_deep_store_in_a_vectorized_loop_matches_numpy():
    x = RNG.uniform(-2, 2, 32).astype("float32")
    y = np.full(32, np.nan, "float32")
    module = build(_deep_store(1500, 32, ForKind.VECTORIZED))
    assert "tessel_r[tessel_l]" in module.source  # the exp lanes: a per-lane loop
    module(x, y)
    np.testing.assert_allclose(y, _chain_numpy(x, 1500), rtol=1e-5, atol=1e-6)


def test_a_shallow_chain_agrees_with_the_interpreter():
    from tessel.tir.interpreter import run

    func = _deep_store(40, 9)
    x = RNG.uniform(-2, 2, 9).astype("float32")
    expected, y = np.zeros(9, "float32"), np.zeros(9, "float32")
    run(func, x, expected)
    build(func)(x, y)
    np.testing.assert_allclose(y, expected, rtol=1e-6)
    np.testing.assert_allclose(y, _chain_numpy(x, 40), rtol=1e-5)


def test_a_shared_subexpression_under_two_lets_names_each_binding():
    # The same node `v + 1` under two lets of one variable: each body prints its own binding.
    a, b = decl_buffer((4,), "float32", "A"), decl_buffer((4,), "float32", "B")
    v = E.Var("v", a.dtype)

    def value(i: PrimExpr) -> PrimExpr:
        body = v + 1.0
        return E.Let(v, a[i], body) * E.Let(v, a[i] * 2.0, body)

    func = prim_func("f", (a, b), loops((4,), lambda i: store(b, (i,), value(i))))
    x, y = RNG.uniform(-1, 1, 4).astype("float32"), np.zeros(4, "float32")
    build(func)(x, y)
    np.testing.assert_allclose(y, (x + 1) * (2 * x + 1), rtol=1e-6)


def test_a_300_op_elementwise_chain_fused_into_one_kernel_matches_numpy():
    # Past FuseOps' default max_depth (256), which the recursive printer failed at. 1000 ops
    # (max_depth=1000) pass as well, but take ~8 minutes: the default schedule inlines the
    # chain's blocks one at a time, each inline rebuilding and verifying the whole function.
    length = 300
    ops = {"negative": np.negative, "sigmoid": lambda v: 1 / (1 + np.exp(-v)),
           "tanh": np.tanh, "nn.relu": lambda v: np.maximum(v, 0)}  # fmt: skip
    names = list(ops)
    x = Var("x", TensorType((3, 20), "float32"))
    body = x
    for k in range(length):
        body = Call(Op(names[k % 4]), (body,))
    mod = IRModule.from_dict({"main": Function((x,), body)})
    passes = [
        replace(p, max_depth=length) if isinstance(p, FuseOps) else p
        for p in default_pipeline(Target.detect())
    ]
    model = graph.compile(mod, passes=passes)
    assert len(model.plan.calls) == 1  # one kernel: one expression as deep as the chain
    data = RNG.uniform(-3, 3, (3, 20)).astype("float32")
    expected = data.astype("float64")
    for k in range(length):
        expected = ops[names[k % 4]](expected)
    assert np.all(expected > 0.1)  # the chain does not collapse to a constant
    np.testing.assert_allclose(model(data), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("depth", [1, 2, 7])
def test_chains_of_any_depth_print_the_same_c_as_one_recursive_walk(depth: int):
    # A hand-written recursive printer of the same forms: the walk changes no text.
    a, b = decl_buffer((4,), "float32", "A"), decl_buffer((4,), "float32", "B")
    value = a[0]
    for _ in range(depth):
        value = (value + 1.0) * 0.5
    func = prim_func("f", (a, b), loops((4,), lambda i: store(b, (i,), value)))
    one, half = float_literal(1.0, float32), float_literal(0.5, float32)
    text = "A[0]"
    for _ in range(depth):
        text = f"(({text} + {one}) * {half})"
    assert f"B[i] = {text};" in generate_c_source(func)
