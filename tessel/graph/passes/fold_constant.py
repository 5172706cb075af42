"""FoldConstant: evaluate, ahead of time, every part of a graph whose inputs are all constants."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from tessel.arith.dims import mentions_symbols
from tessel.graph.expr import (
    Call,
    Constant,
    Expr,
    Function,
    If,
    Let,
    Tuple,
    TupleGetItem,
    derived_name,
)
from tessel.graph.op import get_op
from tessel.graph.passes.rewriter import ExprRewriter, is_primitive, rewrite_functions
from tessel.graph.ty import TensorType, TupleType, Type
from tessel.ir.expr import Op
from tessel.ir.module import IRModule
from tessel.ir.transform import Pass, PassContext
from tessel.support.dtype import DataType


def is_constant(expr: Expr) -> bool:
    """A Constant, or a tuple (nested) of Constants."""
    if isinstance(expr, Tuple):
        return all(is_constant(f) for f in expr.fields)
    return isinstance(expr, Constant)


def _value(expr: Expr) -> Any:
    """The value of a constant expression, as the NumPy references take it."""
    if isinstance(expr, Tuple):
        return tuple(_value(f) for f in expr.fields)
    assert isinstance(expr, Constant)
    return expr.data


def _as_expr(value: Any, ty: Type | None, name: str) -> Expr:
    """A computed value as a constant expression of type `ty` (the dtype the type relation
    promises, whatever dtype NumPy chose), each of its Constants named `name`."""
    if isinstance(value, tuple | list):
        field_types = ty.fields if isinstance(ty, TupleType) else (None,) * len(value)
        fields = zip(value, field_types, strict=True)
        return Tuple(tuple(_as_expr(v, t, name) for v, t in fields))
    array = np.asarray(value)
    if isinstance(ty, TensorType):
        array = array.astype(DataType.of(ty.dtype).value_numpy, copy=False).reshape(ty.shape)
    return Constant(array, name_hint=name)


def _constants_in(expr: Expr) -> list[Constant]:
    """The Constants of a constant expression (a tuple's fields, nested)."""
    if isinstance(expr, Tuple):
        return [c for f in expr.fields for c in _constants_in(f)]
    return [expr] if isinstance(expr, Constant) else []


_PLAIN = (int, float, str, bool, type(None))


def _has_symbolic_size(call: Call) -> bool:
    """True for a call whose value depends on shape symbols (a slice of a constant table to
    `seq` rows): its attributes or its type hold one, so it is known only when the graph runs."""
    ty = call.checked_type
    if isinstance(ty, TensorType) and not ty.is_static:
        return True
    return any(mentions_symbols(v) for v in call.attrs.values())


def _fold_key(call: Call) -> tuple[Any, ...] | None:
    """What a constant call's value depends on: the operator, its Constant arguments (by
    identity) and its attributes (with their types); None if an attribute is no plain value."""
    if not all(isinstance(a, Constant) for a in call.args):
        return None
    attrs = []
    for name, value in call.attrs.items():
        items = value if isinstance(value, tuple) else (value,)
        if not all(isinstance(v, _PLAIN) for v in items):
            return None
        attrs.append((name, tuple(type(v) for v in items), value))
    return (call.op.name, call.args, tuple(attrs))  # type: ignore[union-attr]  # an Op


class _ConstantFolder(ExprRewriter):
    """Folds bottom-up, so a chain of constant operators folds into one Constant, named after
    the one named weight it was computed from (`derived_name`: `<weight>_folded`)."""

    def __init__(self) -> None:
        super().__init__()
        # The same operator on the same Constants folds once: a weight that many calls use
        # (`transpose(W)` before each of a thousand dense layers) stays one weight.
        self.folded: dict[tuple[Any, ...], Expr] = {}

    def enters(self, func: Function) -> bool:
        return not is_primitive(func)

    def bind_let(self, let: Let, value: Expr) -> None:
        if is_constant(value):  # `let %c = <constant>; body`: %c is the constant in the body
            self.subst[let.var] = value

    def rewrite_node(self, old: Expr, new: Expr) -> Expr:
        if isinstance(new, Let) and new.var in self.subst:
            return new.body
        if (
            isinstance(new, Call)
            and isinstance(new.op, Op)
            and all(map(is_constant, new.args))
            and not _has_symbolic_size(new)
        ):
            key = _fold_key(new)
            if key is not None and key in self.folded:
                return self.folded[key]
            result = get_op(new.op.name).evaluate([_value(a) for a in new.args], new.attrs)
            name = derived_name((c for a in new.args for c in _constants_in(a)), "_folded")
            folded = _as_expr(result, old.checked_type, name)
            if key is not None:
                self.folded[key] = folded
            return folded
        if (
            isinstance(new, TupleGetItem)
            and isinstance(new.tuple_value, Tuple)
            and is_constant(new.tuple_value)
        ):
            return new.tuple_value.fields[new.index]
        if isinstance(new, If) and isinstance(new.cond, Constant):
            return new.true_branch if bool(new.cond.data) else new.false_branch
        return new


@dataclass(frozen=True)
class FoldConstant(Pass):
    """Replace every operator call whose arguments are constants (after folding its operands)
    by its value, computed with the operator's NumPy reference; also projections of constant
    tuples, let-bound constants and `if` on a constant condition. Expressions with free
    variables, calls of functions and the bodies of Primitive functions are left alone. A
    value computed from one named weight is named after it (`<weight>_folded`, its name in a
    compiled model); one combining several weights, or none, is unnamed."""

    name: ClassVar[str] = "fold_constant"

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return rewrite_functions(mod, lambda _, func: _ConstantFolder().rewrite(func))


__all__ = ["FoldConstant", "is_constant"]
