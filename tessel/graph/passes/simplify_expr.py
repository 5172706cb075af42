"""SimplifyExpr: remove layout and dtype round trips (reshape of reshape, transpose of
transpose, casts and reshapes that change nothing, expand_dims undone by squeeze), and write a
float power of 2 or 3 as multiplications."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from tessel.graph.expr import Call, Constant, Expr, Function, with_type
from tessel.graph.op import get_op
from tessel.graph.op.op_def import Attrs
from tessel.graph.passes.rewriter import ExprRewriter, is_primitive, rewrite_functions
from tessel.graph.ty import TensorType
from tessel.ir.expr import Op
from tessel.ir.module import IRModule
from tessel.ir.transform import Pass, PassContext
from tessel.support.dtype import DataType
from tessel.support.errors import InternalError


@dataclass(frozen=True)
class Rule:
    """A named rewrite `law` (lhs -> rhs, in the text format); `apply` returns the right-hand
    side for a call that matches, else None."""

    name: str
    law: str
    apply: Callable[[Call], Expr | None]


def _match(expr: Expr, op_name: str) -> tuple[Call, Attrs] | None:
    """`expr` and its complete attributes when it is a call of operator `op_name`."""
    if isinstance(expr, Call) and isinstance(expr.op, Op) and expr.op.name == op_name:
        return expr, get_op(op_name).normalize_attrs(expr.attrs)
    return None


def _tensor_type(expr: Expr) -> TensorType:
    ty = expr.checked_type
    assert isinstance(ty, TensorType), "SimplifyExpr runs on typed tensor expressions"
    return ty


def _reshape(data: Expr, shape: tuple[int, ...]) -> Expr:
    return Call(Op("reshape"), (data,), {"newshape": shape})


def _reshape_reshape(call: Call) -> Expr | None:
    outer, inner = _match(call, "reshape"), _match(call.args[0], "reshape")
    if outer is None or inner is None:
        return None
    shape = _tensor_type(call).shape
    if 0 in shape:  # 0 in `newshape` means "keep that dimension", not a zero-size one
        return None
    return _reshape(inner[0].args[0], shape)


def _reshape_same_shape(call: Call) -> Expr | None:
    if _match(call, "reshape") is None:
        return None
    data = call.args[0]
    return data if _tensor_type(data).shape == _tensor_type(call).shape else None


def _permutation(attrs: Attrs, ndim: int) -> tuple[int, ...]:
    if attrs.axes is None:
        return tuple(reversed(range(ndim)))
    return tuple(a + ndim if a < 0 else a for a in attrs.axes)


def _transpose_of(data: Expr, perm: tuple[int, ...]) -> Expr:
    if perm == tuple(range(len(perm))):
        return data
    return Call(Op("transpose"), (data,), {"axes": perm})


def _transpose_transpose(call: Call) -> Expr | None:
    outer, inner = _match(call, "transpose"), _match(call.args[0], "transpose")
    if outer is None or inner is None:
        return None
    ndim = _tensor_type(call).ndim
    first, second = _permutation(inner[1], ndim), _permutation(outer[1], ndim)
    # output dim i is the inner result's dim second[i], which is the input's dim first[second[i]]
    return _transpose_of(inner[0].args[0], tuple(first[i] for i in second))


def _transpose_identity(call: Call) -> Expr | None:
    matched = _match(call, "transpose")
    if matched is None:
        return None
    perm = _permutation(matched[1], _tensor_type(call).ndim)
    return call.args[0] if perm == tuple(range(len(perm))) else None


def _cast_same_dtype(call: Call) -> Expr | None:
    if _match(call, "cast") is None:
        return None
    data = call.args[0]
    return data if _tensor_type(data).dtype == _tensor_type(call).dtype else None


def _expand_squeeze(call: Call) -> Expr | None:
    squeeze, expand = _match(call, "squeeze"), _match(call.args[0], "expand_dims")
    if squeeze is None or expand is None:
        return None
    data = expand[0].args[0]
    ndim = _tensor_type(data).ndim
    first = expand[1].axis + ndim + 1 if expand[1].axis < 0 else expand[1].axis
    added = set(range(first, first + expand[1].num_newaxis))
    if squeeze[1].axis is None:  # squeezes every unit dimension, the data's own ones too
        return data if 1 not in _tensor_type(data).shape else None
    removed = {a + ndim + len(added) if a < 0 else a for a in squeeze[1].axis}
    return data if removed == added else None


def _power_small_integer(call: Call) -> Expr | None:
    """x * x for x ** 2, x * x * x for x ** 3: GELU's tanh approximation cubes its input,
    and powf cost GPT-2 10 ms a call on (256, 3072) (onnxruntime's Pow special-cases these
    too). The exponent a float constant of one element that does not broadcast x."""
    if _match(call, "power") is None:
        return None
    data, exponent = call.args
    if not isinstance(exponent, Constant) or exponent.data.size != 1:
        return None
    result, operand = _tensor_type(call), _tensor_type(data)
    if result.shape != operand.shape or result.dtype != operand.dtype:
        return None
    if not DataType.of(operand.dtype).is_float:
        return None
    power = float(exponent.data.reshape(()))
    if power not in (2.0, 3.0):
        return None
    square = Call(Op("multiply"), (data, data))
    return square if power == 2.0 else Call(Op("multiply"), (square, data))


RULES: tuple[Rule, ...] = (
    Rule("reshape-reshape", "reshape(reshape(%x, s1), s2) -> reshape(%x, <result shape>)",
         _reshape_reshape),
    Rule("reshape-same-shape", "reshape(%x, <shape of %x>) -> %x", _reshape_same_shape),
    Rule("transpose-transpose", "transpose(transpose(%x, a), b) -> transpose(%x, a[b]) or %x",
         _transpose_transpose),
    Rule("transpose-identity", "transpose(%x, [0, 1, ..., n-1]) -> %x", _transpose_identity),
    Rule("cast-same-dtype", "cast(%x, dtype=<dtype of %x>) -> %x", _cast_same_dtype),
    Rule("expand-dims-squeeze", "squeeze(expand_dims(%x, axis=a), axis=[a]) -> %x",
         _expand_squeeze),
    Rule("power-small-integer", "power(%x, 2f) -> %x * %x; power(%x, 3f) -> %x * %x * %x",
         _power_small_integer),
)  # fmt: skip

_STEP_LIMIT = 100


def _first_match(call: Call) -> tuple[str, Expr] | None:
    """The name and right-hand side of the first rule matching `call`."""
    if not call.args:  # every rule rewrites a call of its data (not shape_to_tensor's sizes)
        return None
    for rule in RULES:
        out = rule.apply(call)
        if out is not None:
            return rule.name, out
    return None


class _Simplifier(ExprRewriter):
    """Applies the rules to each call until none fires, bottom-up; `fired` lists the rules in
    the order they fired (the trace)."""

    def __init__(self) -> None:
        super().__init__()
        self.fired: list[str] = []

    def enters(self, func: Function) -> bool:
        return not is_primitive(func)

    def rewrite_node(self, old: Expr, new: Expr) -> Expr:
        recent: list[str] = []
        while isinstance(new, Call) and isinstance(new.op, Op):
            matched = _first_match(new)
            if matched is None:
                break
            name, out = matched
            recent.append(name)
            if len(recent) > _STEP_LIMIT:
                raise InternalError(f"SimplifyExpr did not converge; last rules: {recent[-5:]}")
            # a rule keeps the type: the right-hand side has the left-hand side's
            new = out if out.checked_type is not None else with_type(out, new.checked_type)
        self.fired.extend(recent)
        return new


def simplify(func: Function) -> tuple[Function, list[str]]:
    """`func` simplified, and the names of the rules that fired (in order)."""
    simplifier = _Simplifier()
    result = simplifier.rewrite(func)
    assert isinstance(result, Function)
    return result, simplifier.fired


@dataclass(frozen=True)
class SimplifyExpr(Pass):
    """Apply the `RULES` everywhere outside Primitive functions, until none fires: reshape of
    reshape becomes one reshape, transpose of transpose one transpose (none if the two cancel),
    and reshapes to the same shape, casts to the same dtype and expand_dims undone by squeeze
    go away; a float power of 2 or 3 becomes multiplications."""

    name: ClassVar[str] = "simplify_expr"

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return rewrite_functions(mod, lambda _, func: simplify(func)[0])


__all__ = ["RULES", "Rule", "SimplifyExpr", "simplify"]
