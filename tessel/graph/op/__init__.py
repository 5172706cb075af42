"""Operators of the graph IR (docs/architecture.md §8): one definition per operator, holding its
attribute schema, type relation, lowering to TOPI, fusion pattern and NumPy reference."""

from tessel.graph.op.op_def import Args, Attr, Attrs, OpDef, OpPattern, OpTypeError
from tessel.graph.op.registry import UnknownOperatorError, get_op, list_ops

__all__ = [
    "Args",
    "Attr",
    "Attrs",
    "OpDef",
    "OpPattern",
    "OpTypeError",
    "UnknownOperatorError",
    "get_op",
    "list_ops",
]
