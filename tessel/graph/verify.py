"""Checks of graph IR: well-formedness (variables bound once and before use, tuple indices in
range) and well-typedness (the checked types are the ones InferType computes). Used after each
pass with `PassContext(verify=True, verifier=verify_module)`."""

from __future__ import annotations

from tessel.graph.expr import Expr, Function, Let, Tuple, TupleGetItem, Var
from tessel.graph.passes.infer_type import infer_module_types
from tessel.graph.traversal import expr_children, post_order_exprs
from tessel.graph.ty import TupleType
from tessel.graph.type_util import is_complete, type_equal, type_str
from tessel.ir.module import IRModule
from tessel.support.errors import UserError


class GraphVerifyError(UserError):
    """Graph IR that breaks an invariant of the IR (not of a particular pass)."""


def _bind(var: Var, bound: set[Var]) -> None:
    if var in bound:
        raise GraphVerifyError(
            f"variable `%{var.name_hint}` is bound twice",
            span=var.span,
            rule="graph.var-rebound",
            hint="every let and parameter needs its own Var object",
        )
    bound.add(var)


def well_formed(root: Expr) -> None:
    """Every Var bound (by a parameter or a let) before it is used and bound only once; every
    tuple index of a tuple literal in range. Raises GraphVerifyError."""
    bound: set[Var] = set()
    in_scope: set[Var] = set()
    visited: set[int] = set()
    stack: list[tuple[str, object]] = [("visit", root)]
    while stack:
        action, item = stack.pop()
        if action == "bind":
            _bind(item, bound)  # type: ignore[arg-type]  # "bind" entries hold Vars
            in_scope.add(item)  # type: ignore[arg-type]  # "bind" entries hold Vars
        elif action == "unbind":
            in_scope.discard(item)
        else:
            # "visit" entries hold Exprs
            _visit(item, stack, in_scope, visited)  # type: ignore[arg-type]


def _visit(expr: Expr, stack: list, in_scope: set[Var], visited: set[int]) -> None:
    if isinstance(expr, Var):
        if expr not in in_scope:
            raise GraphVerifyError(
                f"variable `%{expr.name_hint}` is used outside the scope that binds it",
                span=expr.span,
                rule="graph.var-unbound",
            )
        return
    if id(expr) in visited:  # a shared sub-expression is checked once
        return
    visited.add(id(expr))
    if isinstance(expr, Function):
        stack.extend(("unbind", p) for p in expr.params)
        stack.append(("visit", expr.body))
        stack.extend(("bind", p) for p in reversed(expr.params))
    elif isinstance(expr, Let):
        recursive = isinstance(expr.value, Function)  # a let-bound function may call itself
        steps = (
            [("bind", expr.var), ("visit", expr.value)]
            if recursive
            else [("visit", expr.value), ("bind", expr.var)]
        )
        stack.extend([("unbind", expr.var), ("visit", expr.body), *reversed(steps)])
    else:
        if isinstance(expr, TupleGetItem) and isinstance(expr.tuple_value, Tuple):
            _check_index(expr, len(expr.tuple_value.fields))
        stack.extend(("visit", c) for c in reversed(expr_children(expr)))


def _check_index(item: TupleGetItem, size: int) -> None:
    if not 0 <= item.index < size:
        raise GraphVerifyError(
            f"tuple index .{item.index} is out of range for a tuple of {size} field(s)",
            span=item.span,
            rule="graph.getitem-range",
        )


def well_typed(mod: IRModule) -> None:
    """Every expression of every graph function carries the complete type InferType gives it."""
    types = infer_module_types(mod).types
    for _, func in mod.items():
        if not isinstance(func, Function):
            continue
        for expr in post_order_exprs(func):
            ty = expr.checked_type
            if isinstance(expr, TupleGetItem) and isinstance(
                expr.tuple_value.checked_type, TupleType
            ):
                _check_index(expr, len(expr.tuple_value.checked_type.fields))
            if ty is None or not is_complete(ty):
                raise GraphVerifyError(
                    f"a {type(expr).__name__} has no checked type",
                    span=expr.span,
                    rule="graph.untyped",
                    hint="run InferType",
                )
            if not type_equal(ty, types[id(expr)]):
                raise GraphVerifyError(
                    f"a {type(expr).__name__} is typed {type_str(ty)} but its type is "
                    f"{type_str(types[id(expr)])}",
                    span=expr.span,
                    rule="graph.stale-type",
                    hint="run InferType after changing the program",
                )


def verify_module(mod: IRModule, pass_name: str = "") -> None:
    """Well-formedness of every graph function, and well-typedness where types are present."""
    after = f" after pass `{pass_name}`" if pass_name else ""
    try:
        functions = [f for _, f in mod.items() if isinstance(f, Function)]
        for func in functions:
            well_formed(func)
        if any(f.checked_type is not None for f in functions):
            well_typed(mod)
    except UserError as err:
        raise GraphVerifyError(
            f"graph IR became invalid{after}: {err.message}",
            span=err.span,
            rule=err.rule,
            hint=err.hint,
        ) from err


__all__ = ["GraphVerifyError", "verify_module", "well_formed", "well_typed"]
