"""The graph level (docs/architecture.md §8): a functional IR of operator calls, functions, let, if
and tuples, in one IRModule with the PrimFuncs it calls."""

from tessel.graph.evaluate import evaluate
from tessel.graph.executor import CompiledModel, ModelInputError, compile
from tessel.graph.expr import (
    Call,
    Constant,
    Expr,
    Function,
    If,
    Let,
    Tuple,
    TupleGetItem,
    Var,
    const,
    with_type,
)
from tessel.graph.op.registry import get_op, list_ops
from tessel.graph.passes.infer_type import InferType
from tessel.graph.text import astext, parse, parse_expr
from tessel.graph.ty import FuncType, IncompleteType, TensorType, TupleType, Type
from tessel.ir.expr import GlobalVar, Op

__all__ = [
    "Call", "CompiledModel", "Constant", "Expr", "FuncType", "Function", "GlobalVar", "If",
    "IncompleteType", "InferType", "Let", "Op", "TensorType", "Tuple", "TupleGetItem", "TupleType",
    "Type", "Var", "ModelInputError", "astext", "compile", "const", "evaluate", "get_op",
    "list_ops", "parse", "parse_expr", "with_type",
]  # fmt: skip
