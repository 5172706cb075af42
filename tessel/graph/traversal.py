"""The one walk over graph expressions: `children` says which sub-expressions a pass enters
(binders or not, the callee or not, function bodies or not), and `post_order_exprs` visits them
iteratively, so deep dataflow graphs (thousands of nested calls) never hit Python's recursion
limit, and a shared sub-expression is visited once. The named variants below are the walks the
passes need; a pass picks one rather than spelling out the node kinds again."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial

from tessel.graph.expr import Call, Constant, Expr, Function, If, Let, Tuple, TupleGetItem, Var

Children = Callable[[Expr], tuple[Expr, ...]]


def children(
    expr: Expr,
    *,
    binders: bool = True,
    callee: bool = True,
    enter_functions: bool = True,
    enter_primitives: bool = True,
) -> tuple[Expr, ...]:
    """The sub-expressions of `expr` in evaluation order (binders before their scopes).

    `binders`: a function's parameters and a let's variable are children (False: only what is
    read). `callee`: a call of a function value has that value as its first child.
    `enter_functions`: a function's body (and parameters) are children (False: a function value
    is a leaf); `enter_primitives` likewise for fused kernels (`Primitive=1`) alone."""
    if isinstance(expr, Var | Constant):
        return ()
    if isinstance(expr, Call):
        args = tuple(a for a in expr.args if isinstance(a, Expr))
        return (expr.op, *args) if callee and isinstance(expr.op, Expr) else args
    if isinstance(expr, Tuple):
        return expr.fields
    if isinstance(expr, TupleGetItem):
        return (expr.tuple_value,)
    if isinstance(expr, Let):
        return (expr.var, expr.value, expr.body) if binders else (expr.value, expr.body)
    if isinstance(expr, If):
        return (expr.cond, expr.true_branch, expr.false_branch)
    if isinstance(expr, Function):
        if not enter_functions or (not enter_primitives and expr.attrs.get("Primitive", 0)):
            return ()
        return (*expr.params, expr.body) if binders else (expr.body,)
    return ()


# Everything below an expression: what structural walks (typing, verification) visit.
expr_children: Children = children

# What an expression reads: its children without the variables it binds (uses of variables,
# the text format's edges).
read_children: Children = partial(children, binders=False)

# The nodes of a fusion graph: a fused kernel (Primitive function) is a leaf.
fusion_children: Children = partial(children, enter_primitives=False)

# The values main computes, every function value a leaf, and the callee of a call not among
# them (LowerTE lowers a call of a fused kernel as a whole).
dataflow_children: Children = partial(children, binders=False, callee=False, enter_functions=False)


def operands(expr: Expr) -> tuple[Expr, ...]:
    """The values a call (its callee first), tuple or projection reads directly; none for
    scopes (let, if, function), which an evaluator enters one at a time."""
    if isinstance(expr, Call | Tuple | TupleGetItem):
        return children(expr)
    return ()


def post_order_exprs(root: Expr, children: Children = expr_children) -> Iterator[Expr]:
    """Every expression under `root` that `children` reaches, once each (by identity),
    children before parents and siblings left to right, as a recursive walk would."""
    seen: set[int] = set()
    stack: list[tuple[Expr, bool]] = [(root, False)]
    while stack:
        expr, expanded = stack.pop()
        if expanded:
            yield expr
            continue
        if id(expr) in seen:
            continue
        seen.add(id(expr))
        stack.append((expr, True))
        stack.extend((child, False) for child in reversed(children(expr)) if id(child) not in seen)


__all__ = [
    "Children",
    "children",
    "dataflow_children",
    "expr_children",
    "fusion_children",
    "operands",
    "post_order_exprs",
    "read_children",
]
