"""The operator table: every operator of the graph IR by its Relay name (`get_op`)."""

from __future__ import annotations

import difflib

from tessel.graph.op import (
    broadcast,
    device,
    einsum,
    elemwise,
    image,
    indexing,
    math,
    nn,
    nn_nchwc,
    norm,
    pooling,
    quantize,
    random,
    reduce,
    replicate,
    scatter,
    shape_values,
    strings,
    transform,
)
from tessel.graph.op.op_def import OpDef
from tessel.support.errors import UserError

_FAMILIES = (
    elemwise,
    math,
    broadcast,
    nn,
    nn_nchwc,
    pooling,
    norm,
    reduce,
    transform,
    shape_values,
    indexing,
    scatter,
    image,
    quantize,
    replicate,
    einsum,
    strings,
    random,
    device,
)


class UnknownOperatorError(UserError):
    """A call names an operator that is not registered."""


def _table() -> dict[str, OpDef]:
    table: dict[str, OpDef] = {}
    for family in _FAMILIES:
        for op in family.OPERATORS:
            assert op.name not in table, f"operator {op.name} is defined twice"
            table[op.name] = op
    return table


_OPS = _table()


def get_op(name: str) -> OpDef:
    """The definition of operator `name` (Relay's name: "nn.conv2d", "add", ...)."""
    op = _OPS.get(name)
    if op is None:
        close = difflib.get_close_matches(name, list(_OPS), n=3, cutoff=0.6)
        raise UnknownOperatorError(
            f"unknown operator `{name}`",
            rule="graph.unknown-op",
            hint=f"did you mean one of {close}?" if close else "see tessel.graph.op.list_ops()",
        )
    return op


def list_ops() -> list[str]:
    """The names of every registered operator, sorted."""
    return sorted(_OPS)
