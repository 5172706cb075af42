"""Symbolic import: named dimensions kept as shape symbols (tessel/arith/dims.py), integer
tensors known at import in terms of them (the Shape of a (batch, seq) input), and the types of
converted expressions computed by the graph's own relations.

Shape computations fold through symbolic values (Shape -> Gather -> Concat -> Reshape, with
NumPy on object arrays of dimensions); a node that cannot fold them (a dimension cast to float,
a shape added to a tensor) reads them as data instead: a symbolic value's expression computes
it when the graph runs, at that run's sizes (shape_to_tensor).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from tessel.arith.dims import compare_dims, dim_text, normalize_dim, simplify_dim
from tessel.frontend.onnx.errors import OnnxImportError
from tessel.frontend.onnx.node import OnnxNode
from tessel.frontend.onnx.relay import call, const
from tessel.frontend.onnx.values import Value, constant_value
from tessel.graph.expr import Call, Constant, Expr, Tuple, TupleGetItem, Var
from tessel.graph.op import get_op
from tessel.graph.op.elementwise_semantics import evaluate
from tessel.graph.traversal import expr_children, post_order_exprs
from tessel.graph.ty import TensorType, TupleType, Type
from tessel.ir import builders
from tessel.ir.expr import Op, PrimExpr
from tessel.support.errors import InternalError, UserError


def symbolic_value(array: np.ndarray) -> Value:
    """A Value for an integer array known at import: a Constant when every element is an int,
    else a symbolic value (an object array of dimensions) whose expression computes it when
    the graph runs (shape_to_tensor), for the nodes that read it as data."""
    flat = array.reshape(-1)
    if all(not isinstance(v, PrimExpr) for v in flat):
        return constant_value(np.asarray(array.tolist(), dtype=np.int64).reshape(array.shape))
    sizes = tuple(normalize_dim(v.item() if isinstance(v, np.generic) else v) for v in flat)
    expr = call("shape_to_tensor", sizes=sizes, shape=array.shape, dtype="int64")
    return Value(expr, TensorType(array.shape, "int64"), known=array)


def size_value(dim: Any, dtype: str) -> Expr:
    """A size as a scalar of `dtype` the graph computes with: a constant, or shape_to_tensor
    of a symbolic size."""
    if isinstance(dim, int):
        return const(dim, dtype)
    return call("shape_to_tensor", sizes=(dim,), shape=(), dtype=dtype)


def is_symbolic_array(array: np.ndarray) -> bool:
    """True for an object array holding a symbolic dimension."""
    return array.dtype == object and any(isinstance(v, PrimExpr) for v in array.reshape(-1))


def converted_with_fallback(node: OnnxNode, convert: Callable[[OnnxNode], Any]) -> Any:
    """`convert(node)`; where it cannot fold its symbolic inputs (NumPy arithmetic that needs
    numbers, such as a Cast of a dimension to float), the node converted again with those
    inputs as values the graph computes (shape_to_tensor) instead of folding them. An input
    that is not symbolic fails as before."""
    try:
        return convert(node)
    except UserError:
        raise
    except (TypeError, ValueError) as err:
        symbolic = [v for v in node.inputs if isinstance(v, Value) and v.known is not None]
        if not symbolic:
            raise
        computed = tuple(
            Value(v.expr, v.type) if isinstance(v, Value) and v.known is not None else v
            for v in node.inputs
        )
        try:
            return convert(dataclasses.replace(node, inputs=computed))
        except (TypeError, ValueError) as again:
            if isinstance(again, UserError):
                raise
            raise OnnxImportError(
                f"{node.op_type} node `{node.name}` cannot compute on symbolic sizes ({err})",
                rule="onnx.symbolic-data",
                hint="give the named dimensions sizes (dims={'batch': 1, ...})",
            ) from again


def fold_elementwise(name: str, *arrays: np.ndarray) -> np.ndarray:
    """The elementwise operator `name` of the semantics table on arrays known at import; on
    arrays of symbolic dimensions, each element computed symbolically and every comparison
    decided by proof (`seq == 1` is not folded unless the bounds decide it): a TypeError (which
    `refusing_symbolic_folds` names) where a value would depend on the sizes."""
    if not any(np.asarray(a).dtype == object for a in arrays):
        return evaluate(name, *arrays)
    if name not in _SYMBOLIC_FOLDS:
        raise TypeError(f"`{name}` of symbolic dimensions is not folded at import")
    function = np.frompyfunc(_SYMBOLIC_FOLDS[name], len(arrays), 1)
    result = np.asarray(function(*arrays), dtype=object)
    if name in _COMPARISON_NAMES:
        return result.astype(bool)
    return result


def _decided(op: str) -> Callable[[Any, Any], bool]:
    def compare(a: Any, b: Any) -> bool:
        answer = compare_dims(op, _dim(a), _dim(b))
        if answer is None:
            raise TypeError(f"{dim_text(_dim(a))} {op} {dim_text(_dim(b))} depends on the sizes")
        return answer

    return compare


def _dim(value: Any) -> Any:
    return normalize_dim(value.item() if isinstance(value, np.generic) else value)


def _truncating_divide(a: Any, b: Any) -> Any:
    """ONNX's integer Div (truncation) of a size by a positive size: the floor quotient."""
    a, b = _dim(a), _dim(b)
    if compare_dims(">", b, 0) is not True or compare_dims(">=", a, 0) is not True:
        raise TypeError(f"{dim_text(a)} / {dim_text(b)} is not a size divided by a positive size")
    return simplify_dim(a // b) if not isinstance(a, int) or not isinstance(b, int) else a // b


_COMPARISON_NAMES = {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"}
_SYMBOLIC_FOLDS: dict[str, Callable[..., Any]] = {
    "add": lambda a, b: simplify_dim(_dim(a) + _dim(b)),
    "subtract": lambda a, b: simplify_dim(_dim(a) - _dim(b)),
    "multiply": lambda a, b: simplify_dim(_dim(a) * _dim(b)),
    "divide": _truncating_divide,
    "floor_divide": _truncating_divide,
    "maximum": lambda a, b: simplify_dim(builders.max_value(_expr(a), _expr(b))),
    "minimum": lambda a, b: simplify_dim(builders.min_value(_expr(a), _expr(b))),
    "equal": _decided("=="),
    "not_equal": _decided("!="),
    "less": _decided("<"),
    "less_equal": _decided("<="),
    "greater": _decided(">"),
    "greater_equal": _decided(">="),
}


def _expr(value: Any) -> PrimExpr:
    dim = _dim(value)
    return builders.const(dim, "int64") if isinstance(dim, int) else dim


class ExprTyper:
    """Types converter results with the graph's type relations, node by node: the types of
    the values already imported are known, so each call is typed once (an import stays linear,
    where typing each result's whole graph again would be quadratic)."""

    def __init__(self) -> None:
        self._types: dict[int, tuple[Expr, Type]] = {}  # holds the expression: ids stay unique

    def remember(self, value: Value) -> None:
        """The type of an imported value's expression."""
        self._types[id(value.expr)] = (value.expr, value.type)

    def type_of(self, root: Expr) -> Type:
        """The type of `root`, typing the calls it adds over known expressions."""
        known = self._types

        def unknown_children(expr: Expr) -> tuple[Expr, ...]:
            return () if id(expr) in known else tuple(expr_children(expr))

        for node in post_order_exprs(root, unknown_children):
            if id(node) not in self._types:
                self._types[id(node)] = (node, self._type_new(node))
        return self._types[id(root)][1]

    def _known(self, expr: Expr) -> Type:
        return self._types[id(expr)][1]

    def _type_new(self, node: Expr) -> Type:
        if isinstance(node, Constant):
            return node.tensor_type
        if isinstance(node, Var) and node.type_annotation is not None:
            return node.type_annotation
        if isinstance(node, Tuple):
            return TupleType(tuple(self._known(f) for f in node.fields))
        if isinstance(node, TupleGetItem):
            tuple_type = self._known(node.tuple_value)
            assert isinstance(tuple_type, TupleType)
            return tuple_type.fields[node.index]
        if isinstance(node, Call) and isinstance(node.op, Op):
            arg_types = [self._known(a) for a in node.args]
            return get_op(node.op.name).infer_type(arg_types, node.attrs)
        raise InternalError(f"a converter built a {type(node).__name__}, which has no relation")


__all__ = [
    "ExprTyper",
    "converted_with_fallback",
    "fold_elementwise",
    "is_symbolic_array",
    "size_value",
    "symbolic_value",
]
