"""ToGraphNormalForm: a `main` written with lets becomes its dataflow graph, and compiles."""

import numpy as np
import pytest
from graph_pass_checks import check_pass

import tessel.graph as graph
from tessel.graph import Call, Function, Let, Op, TensorType, Var, evaluate, parse
from tessel.graph.memory_plan import plan_memory
from tessel.graph.passes import FuseOps, InferType, LowerTE, ToGraphNormalForm, default_pipeline
from tessel.ir.module import IRModule
from tessel.transform.errors import LoweringError


def test_dataflow_lets_become_one_graph_with_shared_values():
    before = """
    def @main(%x: Tensor[(2), float32]) {
      let %a = add(%x, %x);
      let %b = multiply(%a, %a);
      let %c = (%a, %b);
      let %d = %c.1;
      subtract(%d, %a)
    }"""
    expected = """
    def @main(%x: Tensor[(2), float32]) {
      %0 = add(%x, %x);
      %1 = multiply(%0, %0);
      %2 = (%0, %1);
      subtract(%2.1, %0)
    }"""
    check_pass(ToGraphNormalForm(), before, expected)


def test_a_function_bound_by_let_stays():
    before = """
    def @main(%x: Tensor[(2), float32]) {
      let %f = fn (%y: Tensor[(2), float32]) { negative(%y) };
      let %a = %f(%x);
      add(%a, %a)
    }"""
    expected = """
    def @main(%x: Tensor[(2), float32]) {
      let %f = fn (%y: Tensor[(2), float32]) { negative(%y) };
      %0 = %f(%x);
      add(%0, %0)
    }"""
    check_pass(ToGraphNormalForm(), before, expected)


def test_a_graph_without_lets_is_the_same_module():
    check_pass(ToGraphNormalForm(), "def @main(%x: Tensor[(2), float32]) { exp(%x) }")


def test_a_main_of_five_lets_compiles_and_matches_the_evaluator():
    mod = parse("""
    def @main(%x: Tensor[(3, 4), float32], %y: Tensor[(4), float32]) {
      let %a = add(%x, %y);
      let %b = multiply(%a, %x);
      let %c = nn.relu(%b);
      let %d = subtract(%c, %a);
      let %e = tanh(%d);
      add(%e, %b)
    }""")
    x = np.random.default_rng(0).standard_normal((3, 4)).astype("float32")
    y = np.random.default_rng(1).standard_normal(4).astype("float32")
    np.testing.assert_allclose(graph.compile(mod)(x, y), evaluate(mod, x, y), rtol=1e-5, atol=1e-6)


def _let_chain(length: int) -> IRModule:
    """`main(x)`: `length` lets, each binding an op of the previous variable and `x`."""
    x = Var("x", TensorType((8,), "float32"))
    names = [Var(f"v{k}") for k in range(length)]
    ops = ("add", "multiply", "subtract", "maximum")
    values = [Call(Op(ops[k % 4]), ((names[k - 1] if k else x), x)) for k in range(length)]
    body = Call(Op("tanh"), (names[-1],))
    for var, value in zip(reversed(names), reversed(values), strict=True):
        body = Let(var, value, body)
    return IRModule.from_dict({"main": Function((x,), body)})


def test_a_main_of_1500_lets_compiles_and_matches_the_evaluator():
    mod = _let_chain(1500)  # deeper than the recursion limit
    # One kernel an op (four distinct ones, shared): fused groups of 256 ops take minutes to
    # schedule, and fusion is not what this tests.
    passes = [
        FuseOps(fuse_opt_level=0) if isinstance(p, FuseOps) else p for p in default_pipeline()
    ]
    model = graph.compile(mod, passes=passes)
    assert len(model.plan.calls) == 1501
    x = np.random.default_rng(2).uniform(-1, 1, 8).astype("float32")
    np.testing.assert_allclose(model(x), evaluate(mod, x), rtol=1e-5, atol=1e-6)


def test_the_memory_planner_names_a_let_it_cannot_plan():
    lowered = LowerTE()(InferType()(_let_chain(2)))  # without ToGraphNormalForm
    with pytest.raises(LoweringError, match="`%v0`, which is not a parameter") as err:
        plan_memory(lowered)
    assert err.value.rule == "memory_plan.not-dataflow"
