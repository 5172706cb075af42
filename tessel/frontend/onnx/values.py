"""What the importer knows about each ONNX tensor: its graph expression and its static type."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

import numpy as np
import onnx

from tessel.frontend.onnx.errors import OnnxImportError
from tessel.graph.expr import Constant, Expr
from tessel.graph.ty import TensorType
from tessel.ir.expr import Var
from tessel.support.dtype import DataType
from tessel.support.errors import UserError


@dataclass(frozen=True)
class Value:
    """An ONNX tensor as imported: a graph expression with its type; a Constant when known at
    import (initializers, Constant nodes, folded shape computations). `known` is an integer
    tensor known at import in terms of shape symbols (the Shape of a (batch, seq) input: an
    object array [batch, seq]); its `expr` is a placeholder that must not reach the graph
    (symbolic.py)."""

    expr: Expr
    type: TensorType
    known: np.ndarray | None = field(default=None, kw_only=True)

    @property
    def is_constant(self) -> bool:
        return self.known is not None or isinstance(self.expr, Constant)

    @property
    def data(self) -> np.ndarray:
        """The constant's array (an object array for a symbolic one); only for constant values."""
        if self.known is not None:
            return self.known
        assert isinstance(self.expr, Constant), "data of a value not known at import"
        return self.expr.data


class Derived:
    """Expressions an import derives from another (a weight transposed for nn.dense, reshaped,
    broadcast), built once per (source, transform) and shared by every node that asks: an
    initializer many MatMuls read (tied embeddings, GPT-2's lm_head tied to wte) stays one
    weight, not one per use."""

    def __init__(self) -> None:
        self._built: dict[tuple[Expr, Hashable], Expr] = {}  # holds the source: ids stay unique

    def get(self, source: Expr, transform: Hashable, build: Callable[[], Expr]) -> Expr:
        """What `build()` makes of `source` by `transform` (a hashable description of it, such
        as `("reshape", shape)`): built at the first ask, the same expression after."""
        key = (source, transform)
        if key not in self._built:
            self._built[key] = build()
        return self._built[key]


def constant_value(array: np.ndarray) -> Value:
    """A Value for an array known at import."""
    constant = Constant(np.asarray(array))
    return Value(constant, constant.tensor_type)


def dtype_of_elem_type(elem_type: int, what: str) -> str:
    """The graph dtype of an ONNX element type; an error naming `what` for types without one."""
    if elem_type == onnx.TensorProto.STRING:
        return "string"
    try:
        np_dtype = onnx.helper.tensor_dtype_to_np_dtype(elem_type)
    except (KeyError, ValueError) as err:
        raise OnnxImportError(
            f"{what} has ONNX element type {elem_type}, which Tessel cannot hold", rule="onnx.dtype"
        ) from err
    if not _holds(np_dtype):
        name = onnx.TensorProto.DataType.Name(elem_type)
        raise OnnxImportError(
            f"{what} has element type {name}, which Tessel does not support",
            rule="onnx.dtype",
            hint="cast it to float32 or an integer type",
        )
    return str(np_dtype)


def _holds(np_dtype: np.dtype) -> bool:
    """True if Tessel has a dtype for `np_dtype`: NumPy's numbers and ml_dtypes' bfloat16 (its
    other types, float8 and int4, have none)."""
    if np_dtype == DataType.of("bfloat16").numpy:
        return True
    if np_dtype.kind not in "biuf" or np_dtype.itemsize > 8 or np_dtype.names is not None:
        return False
    try:
        DataType.of(str(np_dtype))
    except UserError:
        return False
    return True


def elem_type_of_dtype(dtype: str) -> int:
    """The ONNX element type of a graph dtype."""
    if dtype == "string":
        return onnx.TensorProto.STRING
    return onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def tensor_type_proto(ty: TensorType) -> onnx.TypeProto:
    """The ONNX type of a tensor type: a shape symbol is a `dim_param` of its name, a `?` or
    an expression of symbols an unknown dimension."""
    dims = [
        d if isinstance(d, int) else (d.name if isinstance(d, Var) and d.name != "?" else None)
        for d in ty.shape
    ]
    return onnx.helper.make_tensor_type_proto(elem_type_of_dtype(ty.dtype), dims)
