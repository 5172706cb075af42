"""Types in graph text: `Tensor[(1, 3), float32]`, a dtype alone for a scalar (`float32`),
tuple types `(T1, T2)` / `(T,)` / `()`, function types `fn (T1) -> T2`, and `_` (unknown)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tessel.arith.dims import Dim, any_dim, dim_expr, normalize_dim, symbol
from tessel.graph.text.cursor import Cursor, describe, joined
from tessel.graph.text.literals import LiteralError, number_attr
from tessel.graph.ty import FuncType, IncompleteType, TensorType, TupleType, Type
from tessel.ir import builders
from tessel.support.dtype import DataType
from tessel.support.errors import UserError

_TYPE_EXAMPLES = (
    "`Tensor[(1, 3), float32]`, a dtype such as `float32`, `(T1, T2)` or `fn (T1) -> T2`"
)


def parse_type(cur: Cursor) -> Type:
    """One type at the cursor."""
    if cur.at_keyword("Tensor"):
        return _tensor_type(cur)
    if cur.at_keyword("fn"):
        return _func_type(cur)
    if cur.at("("):
        return _tuple_type(cur)
    if cur.at("IDENT", "_"):
        return IncompleteType(span=cur.next().span)
    if cur.at("IDENT"):
        token = cur.next()
        return TensorType((), parse_dtype(cur, token), span=token.span)
    raise cur.error(cur.peek(), f"expected a type ({_TYPE_EXAMPLES}), found {describe(cur.peek())}")


def parse_dtype(cur: Cursor, token) -> str:
    """The dtype named by an identifier token."""
    try:
        return str(DataType.of(token.text))
    except UserError as err:
        raise cur.error(
            token,
            f"unknown dtype `{token.text}`",
            hint="use e.g. float32, float16, int64, int32, uint8, bool",
        ) from err


def _tensor_type(cur: Cursor) -> TensorType:
    first = cur.next()
    cur.expect("[", "`[` after `Tensor` (as in `Tensor[(1, 3), float32]`)")
    cur.expect("(", "`(` opening the shape of the tensor type")
    shape = _dims(cur)
    cur.expect(",", "`,` and a dtype after the shape (as in `Tensor[(1, 3), float32]`)")
    dtype = parse_dtype(
        cur, cur.expect("IDENT", "the dtype of the tensor type (such as `float32`)")
    )
    last = cur.expect("]", "`]` closing the tensor type")
    return TensorType(shape, dtype, span=joined(first.span, last.span))


def _dims(cur: Cursor) -> tuple[Dim, ...]:
    dims: list[Dim] = []
    while not cur.accept(")"):
        if dims:
            cur.expect(",", "`,` or `)` in the shape")
            if cur.accept(")"):
                break
        dims.append(_dim(cur))
    return tuple(dims)


# A dimension: a size, a shape symbol, `?` (a size no other dimension shares), or an integer
# expression of them: `+`, `-`, `*`, parentheses and floordiv / floormod / min / max calls.
_DIM_CALLS: dict[str, Callable[[Any, Any], Any]] = {
    "floordiv": builders.floordiv,
    "floormod": builders.floormod,
    "min": builders.min_value,
    "max": builders.max_value,
}
_DIM_EXAMPLES = "a non-negative integer, a name such as `batch`, `?`, or an expression `n * 2`"


def parse_dim(cur: Cursor) -> Dim:
    """One dimension at the cursor (in a shape, or a symbolic size in an attribute list)."""
    return _dim(cur)


def _dim(cur: Cursor) -> Dim:
    start = cur.peek()
    value = _dim_sum(cur)
    if isinstance(value, int) and value < 0:
        raise cur.error(start, f"a dimension is non-negative, not {value}")
    try:
        return normalize_dim(value)
    except TypeError as err:
        raise cur.error(start, str(err)) from None


def _dim_sum(cur: Cursor) -> Any:
    value = _dim_product(cur)
    while True:
        if cur.accept("+"):
            value = value + _dim_product(cur)
        elif cur.accept("-"):
            value = value - _dim_product(cur)
        elif cur.at("NUMBER") and cur.peek().text.startswith("-"):  # `n -1` lexes as n, -1
            value = value + _dim_atom(cur)
        else:
            return value


def _dim_product(cur: Cursor) -> Any:
    value = _dim_atom(cur)
    while cur.accept("*"):
        value = value * _dim_atom(cur)
    return value


def _dim_atom(cur: Cursor) -> Any:
    if cur.accept("?"):
        return any_dim()
    if cur.accept("("):
        value = _dim_sum(cur)
        cur.expect(")", "`)` closing the parenthesised dimension")
        return value
    if cur.at("IDENT") and cur.peek().text in _DIM_CALLS and cur.at("(", ahead=1):
        name = cur.next()
        cur.next()
        first = _dim_sum(cur)
        cur.expect(",", "`,` between the two operands")
        second = _dim_sum(cur)
        cur.expect(")", "`)` closing the call")
        if name.text in ("floordiv", "floormod") and isinstance(second, int) and second <= 0:
            raise cur.error(name, f"{name.text} takes a positive divisor, not {second}")
        return _DIM_CALLS[name.text](dim_expr(first), dim_expr(second))
    if cur.at("IDENT") and "." not in cur.peek().text:
        name = cur.next().text
        if name not in cur.shape_symbols:
            cur.shape_symbols[name] = symbol(name)
        return cur.shape_symbols[name]
    token = cur.expect("NUMBER", f"a dimension ({_DIM_EXAMPLES})")
    try:
        value = number_attr(token.text)
    except LiteralError as err:
        raise cur.error(token, str(err)) from err
    if not isinstance(value, int):
        raise cur.error(token, f"a dimension is an integer, not `{token.text}`")
    return value


def _tuple_type(cur: Cursor) -> Type:
    first = cur.next()
    fields: list[Type] = []
    trailing_comma = False
    while not cur.at(")"):
        fields.append(parse_type(cur))
        trailing_comma = bool(cur.accept(","))
        if not trailing_comma:
            break
    last = cur.expect(")", "`,` or `)` in the tuple type")
    if len(fields) == 1 and not trailing_comma:
        return fields[0]  # `(T)` is T; a one-field tuple type is written `(T,)`
    return TupleType(tuple(fields), span=joined(first.span, last.span))


def _func_type(cur: Cursor) -> FuncType:
    first = cur.next()
    cur.expect("(", "`(` and the argument types of the function type")
    args: list[Type] = []
    while not cur.accept(")"):
        if args:
            cur.expect(",", "`,` or `)` between argument types")
        args.append(parse_type(cur))
    cur.expect("->", "`->` and the result type of the function type")
    ret = parse_type(cur)
    return FuncType(tuple(args), ret, span=joined(first.span, cur.previous().span))
