"""Binary operators with NumPy broadcasting (arithmetic, comparisons, logic), and `where`."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tessel import topi
from tessel.graph.op.common import broadcast_shapes, same_as
from tessel.graph.op.elementwise_semantics import BINARY_NAMES, ELEMENTWISE, Elementwise
from tessel.graph.op.op_def import Args, Attrs, OpDef, OpPattern
from tessel.graph.ty import Type
from tessel.support.dtype import DataType


def _binary_rel(semantics: Elementwise) -> Callable[..., Type]:
    """The type relation of a binary operator: same operand dtypes, the table's operand rule,
    the broadcast shape in the table's result dtype."""
    rule = semantics.rule

    def relation(args: Args, attrs: Attrs) -> Type:
        lhs = args.tensor("lhs")
        args.tensor("rhs")
        args.same_dtype("rhs", "lhs")
        if rule is not None and not rule.accepts(DataType.of(lhs.dtype)):
            raise args.error(
                "lhs", f"has dtype {lhs.dtype} but {args.op.name} needs {rule.description}"
            )
        return same_as(lhs, broadcast_shapes(args, ("lhs", "rhs")), semantics.result_dtype)

    return relation


# The TOPI lowering of each binary operator of the semantics table (elementwise_semantics).
_TOPI = {
    "add": topi.add, "subtract": topi.subtract, "multiply": topi.multiply,
    "divide": topi.divide, "floor_divide": topi.floor_divide, "mod": topi.mod,
    "floor_mod": topi.floor_mod, "power": topi.power, "maximum": topi.maximum,
    "minimum": topi.minimum, "equal": topi.equal, "not_equal": topi.not_equal,
    "less": topi.less, "less_equal": topi.less_equal, "greater": topi.greater,
    "greater_equal": topi.greater_equal, "logical_and": topi.logical_and,
    "logical_or": topi.logical_or, "logical_xor": topi.logical_xor,
}  # fmt: skip


def _binary(name: str) -> OpDef:
    """The broadcasting operator `name`: the table's semantics, TOPI's lowering."""
    semantics = ELEMENTWISE[name]
    topi_fn = _TOPI[name]
    return OpDef(
        name=name,
        arguments=("lhs", "rhs"),
        attrs=(),
        relation=_binary_rel(semantics),
        lower=lambda a, b, *, attrs: topi_fn(a, b),
        reference=lambda a, b, *, attrs: semantics.evaluate(a, b),
        pattern=OpPattern.BROADCAST,
        doc=semantics.doc,
    )


def _logical_not_rel(args: Args, attrs: Attrs) -> Type:
    data = args.tensor("data")
    if data.dtype != "bool":
        raise args.error("data", f"must be a bool tensor, got dtype {data.dtype}")
    return data


def _where_rel(args: Args, attrs: Attrs) -> Type:
    args.tensor("condition")
    x = args.tensor("x")
    args.tensor("y")
    args.same_dtype("y", "x")
    return same_as(x, broadcast_shapes(args, ("condition", "x", "y")))


def _where_ref(condition: np.ndarray, x: np.ndarray, y: np.ndarray, *, attrs: Attrs) -> np.ndarray:
    return np.where(condition != 0, x, y).astype(x.dtype)


OPERATORS = (
    *(_binary(name) for name in BINARY_NAMES),
    OpDef(
        "logical_not",
        ("data",),
        (),
        _logical_not_rel,
        lambda x, *, attrs: topi.logical_not(x),
        lambda x, *, attrs: ELEMENTWISE["logical_not"].evaluate(x),
        OpPattern.ELEMWISE,
        ELEMENTWISE["logical_not"].doc,
    ),
    OpDef(
        "where",
        ("condition", "x", "y"),
        (),
        _where_rel,
        lambda c, x, y, *, attrs: topi.where(c, x, y),
        _where_ref,
        OpPattern.BROADCAST,
        "x where condition is non-zero, else y, broadcasting all three.",
    ),
)

__all__ = ["OPERATORS"]
