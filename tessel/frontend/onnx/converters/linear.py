"""Matrix products: Gemm and MatMul, as nn.dense (2-D) or nn.batch_matmul (batched).

Relay's dense multiplies by a transposed weight (`x @ w.T`, w of shape [units, k]); a constant
right operand is transposed at import so the graph holds the weight in that layout.
"""

from __future__ import annotations

import math

import numpy as np

from tessel.frontend.onnx.node import OnnxNode
from tessel.frontend.onnx.relay import call, const, folded
from tessel.frontend.onnx.values import Value
from tessel.graph.expr import Call, Expr
from tessel.graph.ty import TensorType

Result = Expr | np.ndarray


def _transposed(value: Value) -> Expr:
    """The 2-D `value` transposed: folded when constant."""
    if value.is_constant:
        return folded(value.expr, value.data.T)
    return call("transpose", value.expr, axes=(1, 0))


def _dense(data: Expr, weight_kn: Value) -> Expr:
    """data @ weight for a [k, n] weight, as nn.dense with the weight in [n, k]."""
    return call("nn.dense", data, _transposed(weight_kn), units=weight_kn.type.shape[1])


def convert_gemm(node: OnnxNode) -> Result:
    """Gemm: alpha * A' @ B' + beta * C, A' and B' optionally transposed."""
    alpha, beta = float(node.attr("alpha", 1.0)), float(node.attr("beta", 1.0))
    a, b = node.input(0), node.input(1)
    if node.all_constant():
        arrays = node.arrays()
        lhs = arrays[0].T if node.attr("transA", 0) else arrays[0]
        rhs = arrays[1].T if node.attr("transB", 0) else arrays[1]
        result = alpha * (lhs @ rhs)
        if arrays[2] is not None:
            result = result + beta * arrays[2]
        return result.astype(node.out_type().dtype)
    lhs = _transposed(a) if node.attr("transA", 0) else a.expr
    # nn.dense wants the weight as [n, k]: that is B itself when transB is set.
    weight = b.expr if node.attr("transB", 0) else _transposed(b)
    out = call("nn.dense", lhs, weight, units=node.out_type().shape[1])
    dtype = node.out_type().dtype
    if alpha != 1.0:
        out = call("multiply", out, const(alpha, dtype))
    if node.has_input(2) and beta != 0.0:
        out = call("add", out, _scaled(node.input(2), beta, dtype))
    return out


def _scaled(value: Value, factor: float, dtype: str) -> Expr:
    if factor == 1.0:
        return value.expr
    if value.is_constant:
        return folded(value.expr, value.data * factor, dtype)
    return call("multiply", value.expr, const(factor, dtype))


def convert_matmul(node: OnnxNode) -> Result:
    """MatMul with NumPy's rules: 2-D as dense, N-D by 2-D as reshape + dense + reshape, batched
    operands broadcast over their batch dimensions and multiplied by nn.batch_matmul."""
    a, b = node.input(0), node.input(1)
    if node.all_constant():
        return np.matmul(a.data, b.data)
    out_shape = node.out_type().shape
    # A 1-D operand is a matrix with one row (left) or one column (right), dropped at the end.
    if a.type.ndim == 1:
        a = _reshaped(a, (1, *a.type.shape))
    if b.type.ndim == 1:
        b = _reshaped(b, (*b.type.shape, 1))
    result = _matmul_by_matrix(a, b) if b.type.ndim == 2 else _batch_matmul(a, b)
    if _product_shape(a, b) != out_shape:
        result = _reshape(result, out_shape)
    return result


def _reshape(expr: Expr, shape: tuple[int, ...]) -> Expr:
    """`expr` reshaped to `shape`; a reshape of a reshape becomes one reshape."""
    if isinstance(expr, Call) and expr.op.name == "reshape":
        expr = expr.args[0]
    return call("reshape", expr, newshape=shape)


def _reshaped(value: Value, shape: tuple[int, ...]) -> Value:
    ty = TensorType(shape, value.type.dtype)
    if value.is_constant:
        return Value(folded(value.expr, value.data.reshape(shape)), ty)
    return Value(call("reshape", value.expr, newshape=shape), ty)


def _product_shape(a: Value, b: Value) -> tuple[int, ...]:
    """The shape `_matmul_by_matrix` / `_batch_matmul` produced: batch dims, m, n."""
    batch = np.broadcast_shapes(a.type.shape[:-2], b.type.shape[:-2])
    return (*batch, a.type.shape[-2], b.type.shape[-1])


def _matmul_by_matrix(a: Value, b: Value) -> Expr:
    """[..., m, k] @ [k, n]: fold the leading dimensions into the rows of one dense."""
    if a.type.ndim == 2:
        return _dense(a.expr, b)
    rows = math.prod(a.type.shape[:-1])
    flat = call("reshape", a.expr, newshape=(rows, a.type.shape[-1]))
    out = _dense(flat, b)
    return call("reshape", out, newshape=(*a.type.shape[:-1], b.type.shape[-1]))


def _batch_matmul(a: Value, b: Value) -> Expr:
    """[..., m, k] @ [..., k, n] with broadcast batch dimensions, as one nn.batch_matmul on
    operands reshaped to [batch, m, k] and [batch, k, n]."""
    batch = tuple(np.broadcast_shapes(a.type.shape[:-2], b.type.shape[:-2]))
    size = math.prod(batch)
    lhs = _to_batch3(a, batch, size)
    rhs = _to_batch3(b, batch, size)
    out = call("nn.batch_matmul", lhs, rhs, transpose_a=False, transpose_b=False)
    if len(batch) == 1:
        return out
    return call("reshape", out, newshape=(*batch, a.type.shape[-2], b.type.shape[-1]))


def _to_batch3(value: Value, batch: tuple[int, ...], size: int) -> Expr:
    """`value` broadcast to `batch` leading dimensions and reshaped to [size, rows, cols]."""
    matrix = value.type.shape[-2:]
    full = (*batch, *matrix)
    if value.is_constant:
        return folded(value.expr, np.broadcast_to(value.data, full).reshape(size, *matrix))
    expr = value.expr
    if value.type.shape != full:
        expr = call("broadcast_to", expr, shape=full)
    if len(full) != 3:
        expr = call("reshape", expr, newshape=(size, *matrix))
    return expr
