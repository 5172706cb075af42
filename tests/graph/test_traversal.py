"""The graph IR's one traversal core (tessel.graph.traversal): each variant of `children` gives
a known post-order on one graph with every kind of node, and every walk is iterative."""

import sys

import numpy as np
import pytest

from tessel.graph import Call, Constant, Function, Let, Op, TensorType, Tuple, TupleGetItem, Var
from tessel.graph.passes.parallel_branches import dataflow_nodes
from tessel.graph.traversal import (
    children,
    dataflow_children,
    expr_children,
    fusion_children,
    operands,
    post_order_exprs,
    read_children,
)

T = TensorType((2,), "float32")


def _call(name, *args):
    return Call(Op(name), args)


@pytest.fixture
def before():
    """root = (let %v = %f(%t.0) in %g(%v), %a), where %a = add(%x, %w) is read twice by the
    tuple %t, %f is a Primitive function and %g a closure. Returns root and a label per node."""
    x, w = Var("x", T), Constant(np.ones(2, "float32"), name_hint="w")
    p, q, v = Var("p", T), Var("q", T), Var("v", T)
    relu_p, neg_q = _call("nn.relu", p), _call("negative", q)
    f = Function((p,), relu_p, attrs={"Primitive": 1})
    g = Function((q,), neg_q)
    a = _call("add", x, w)
    t = Tuple((a, a))
    i = TupleGetItem(t, 0)
    c = Call(f, (i,))
    call_g = Call(g, (v,))
    let = Let(v, c, call_g)
    root = Tuple((let, a))
    labels = {"x": x, "w": w, "p": p, "q": q, "v": v, "relu_p": relu_p, "neg_q": neg_q,
              "f": f, "g": g, "a": a, "t": t, "i": i, "c": c, "call_g": call_g, "let": let,
              "root": root}  # fmt: skip
    return root, {id(node): label for label, node in labels.items()}


def _order(root, labels, walk):
    return [labels[id(node)] for node in post_order_exprs(root, walk)]


def test_the_default_walk_enters_everything_binders_first(before):
    root, labels = before
    assert _order(root, labels, expr_children) == [
        "v",
        "p",
        "relu_p",
        "f",
        "x",
        "w",
        "a",
        "t",
        "i",
        "c",
        "q",
        "neg_q",
        "g",
        "call_g",
        "let",
        "root",
    ]
    assert _order(root, labels, expr_children) == _order(root, labels, children)
    assert list(post_order_exprs(root)) == list(post_order_exprs(root, expr_children))


def test_read_children_leave_out_parameters_and_let_variables(before):
    root, labels = before
    assert _order(root, labels, read_children) == [
        "p",
        "relu_p",
        "f",
        "x",
        "w",
        "a",
        "t",
        "i",
        "c",
        "q",
        "neg_q",
        "g",
        "v",
        "call_g",
        "let",
        "root",
    ]


def test_fusion_children_keep_a_primitive_function_whole(before):
    root, labels = before
    assert _order(root, labels, fusion_children) == [
        "v",
        "f",
        "x",
        "w",
        "a",
        "t",
        "i",
        "c",
        "q",
        "neg_q",
        "g",
        "call_g",
        "let",
        "root",
    ]


def test_dataflow_children_enter_no_function_nor_callee(before):
    root, labels = before
    assert _order(root, labels, dataflow_children) == [
        "x",
        "w",
        "a",
        "t",
        "i",
        "c",
        "v",
        "call_g",
        "let",
        "root",
    ]


def test_operands_are_what_calls_tuples_and_projections_read(before):
    root, labels = before
    by_label = {labels[id(node)]: node for node in post_order_exprs(root)}
    assert operands(by_label["c"]) == (by_label["f"], by_label["i"])
    assert operands(by_label["t"]) == (by_label["a"], by_label["a"])
    assert operands(by_label["let"]) == operands(by_label["f"]) == operands(by_label["x"]) == ()


def test_a_shared_node_is_visited_once_after_all_it_reads(before):
    root, _ = before
    order = list(post_order_exprs(root))
    assert len(order) == len({id(n) for n in order})
    position = {id(n): k for k, n in enumerate(order)}
    for node in order:
        assert all(position[id(c)] < position[id(node)] for c in expr_children(node))


def test_dataflow_nodes_refuse_a_let_and_order_a_let_free_body(before):
    root, labels = before
    x = Var("x", T)
    assert dataflow_nodes(Function((x,), root)) is None
    a = _call("add", x, x)
    body = _call("multiply", a, _call("negative", a))
    order = dataflow_nodes(Function((x,), body))
    assert order == [x, a, body.args[1], body]


@pytest.mark.parametrize("walk", [expr_children, read_children, fusion_children, dataflow_children])
def test_a_chain_of_20000_calls_walks_without_recursion(walk):
    assert sys.getrecursionlimit() == 1000
    x = Var("x", T)
    node = x
    for k in range(20000):
        node = _call("negative" if k % 2 else "nn.relu", node)
    order = list(post_order_exprs(node, walk))
    assert len(order) == 20001 and order[0] is x and order[-1] is node
