"""Building graph IR with Relay's operator names: the only way converters make calls."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tessel.graph.expr import Call, Constant, Expr, Tuple, TupleGetItem, derived_name
from tessel.graph.op import get_op, list_ops
from tessel.ir.expr import Op
from tessel.support.errors import InternalError

_OPS: dict[str, Op] = {}  # one Op object per operator name, so a graph shares them
_REGISTERED = frozenset(list_ops())


def op(name: str) -> Op:
    """The operator called `name` (Relay's name: `nn.conv2d`, `add`, ...), which must be
    registered: a converter that emits an operator compile does not know is Tessel's bug, found
    here, at import, instead of as "unknown operator" at compile."""
    if name not in _OPS:
        if name not in _REGISTERED:
            raise InternalError(
                f"an ONNX converter emits graph operator `{name}`, which is not "
                "registered (tessel.graph.op)"
            )
        _OPS[name] = Op(name)
    return _OPS[name]


def call(name: str, *args: Expr, **attrs: Any) -> Call:
    """`name(args..., attrs...)`; attribute values that are sequences become tuples."""
    return Call(op(name), args, attrs)


def const(value: Any, dtype: str | None = None) -> Constant:
    """A Constant holding exactly `value` (of `dtype` when given; NumPy's dtype otherwise)."""
    array = np.asarray(value)
    return Constant(array.astype(dtype) if dtype is not None else array)


def folded(source: Expr, value: Any, dtype: str | None = None) -> Constant:
    """`const(value)` for a value computed at import from the constant `source` alone (a weight
    transposed, reshaped, scaled): named `<name>_folded` after a named `source` (an initializer),
    as FoldConstant's results are, so an exported model keeps its weights' names."""
    constant = const(value, dtype)
    return Constant(constant.data, name_hint=derived_name((source,), "_folded"))


def tuple_of(fields: Sequence[Expr]) -> Tuple:
    """A tuple value."""
    return Tuple(tuple(fields))


def item(value: Expr, index: int) -> TupleGetItem:
    """Field `index` of a tuple value."""
    return TupleGetItem(value, index)


def fold(name: str, *arrays: np.ndarray, **attrs: Any) -> np.ndarray:
    """`name(arrays..., attrs...)` computed at import by the operator's NumPy reference, so a
    converter folds known inputs with exactly the semantics of the call it would build."""
    return np.asarray(get_op(name).evaluate(arrays, attrs))
