"""Matrix products: Gemm and MatMul, as nn.dense (2-D) or nn.batch_matmul (batched).

Relay's dense multiplies by a transposed weight (`x @ w.T`, w of shape [units, k]); a constant
right operand is transposed at import so the graph holds the weight in that layout. What is
derived from an operand (transposed, reshaped, broadcast, scaled) is built once per import and
operand (`OnnxNode.derived`): an initializer many MatMuls read stays one weight.
"""

from __future__ import annotations

import numpy as np

from tessel.arith.dims import broadcast_dims, dim_product
from tessel.frontend.onnx.node import OnnxNode
from tessel.frontend.onnx.opsets import Entry, every_opset
from tessel.frontend.onnx.relay import call, const, folded
from tessel.frontend.onnx.values import Value
from tessel.graph.expr import Call, Expr
from tessel.graph.ty import TensorType

Result = Expr | np.ndarray


def _transposed(node: OnnxNode, value: Value) -> Expr:
    """The 2-D `value` transposed: folded when constant; one expression per import."""

    def build() -> Expr:
        if value.is_constant:
            return folded(value.expr, value.data.T)
        return call("transpose", value.expr, axes=(1, 0))

    return node.derived.get(value.expr, "transpose", build)


def _dense(node: OnnxNode, data: Expr, weight_kn: Value) -> Expr:
    """data @ weight for a [k, n] weight, as nn.dense with the weight in [n, k]."""
    return call("nn.dense", data, _transposed(node, weight_kn), units=weight_kn.type.shape[1])


def convert_gemm(node: OnnxNode) -> Result:
    """Gemm: alpha * A' @ B' + beta * C, A' and B' optionally transposed."""
    alpha, beta = float(node.attr("alpha", 1.0)), float(node.attr("beta", 1.0))
    a, b = node.input(0), node.input(1)
    dtype = a.type.dtype
    if np.dtype(dtype).kind in "iu" and not (alpha.is_integer() and beta.is_integer()):
        raise node.error(
            f"alpha={alpha} and beta={beta} must be whole numbers for {dtype} operands"
        )
    if node.all_constant():
        return _folded_gemm(node, alpha, beta)
    reduced = a.type.shape[0] if node.attr("transA", 0) else a.type.shape[1]
    if reduced == 0:  # an empty sum: the product is zero (kernels would read no element)
        out = const(np.zeros(node.out_type().shape, dtype))
    else:
        lhs = _transposed(node, a) if node.attr("transA", 0) else a.expr
        # nn.dense wants the weight as [n, k]: that is B itself when transB is set.
        weight = b.expr if node.attr("transB", 0) else _transposed(node, b)
        units = b.type.shape[0] if node.attr("transB", 0) else b.type.shape[1]
        out = call("nn.dense", lhs, weight, units=units)
        if alpha != 1.0:
            out = call("multiply", out, const(alpha, dtype))
    if node.has_input(2) and beta != 0.0:
        out = call("add", out, _scaled(node, node.input(2), beta, dtype))
    return out


def _folded_gemm(node: OnnxNode, alpha: float, beta: float) -> np.ndarray:
    """Gemm of inputs known at import, C optional."""
    arrays = node.arrays()
    lhs = arrays[0].T if node.attr("transA", 0) else arrays[0]
    rhs = arrays[1].T if node.attr("transB", 0) else arrays[1]
    result = alpha * (lhs @ rhs)
    if node.has_input(2):
        result = result + beta * arrays[2]
    return np.asarray(result).astype(node.out_type().dtype)


def _scaled(node: OnnxNode, value: Value, factor: float, dtype: str) -> Expr:
    if factor == 1.0:
        return value.expr

    def build() -> Expr:
        if value.is_constant:
            return folded(value.expr, value.data * factor, dtype)
        return call("multiply", value.expr, const(factor, dtype))

    return node.derived.get(value.expr, ("scale", factor, dtype), build)


def convert_matmul(node: OnnxNode) -> Result:
    """MatMul with NumPy's rules: 2-D as dense, N-D by 2-D as reshape + dense + reshape, batched
    operands broadcast over their batch dimensions and multiplied by nn.batch_matmul."""
    a, b = node.input(0), node.input(1)
    if node.all_constant():
        return np.matmul(a.data, b.data)
    out_shape = _matmul_out_shape(node, a, b)
    if a.type.shape[-1] == 0:  # an empty sum: the product is zero (kernels would read nothing)
        return np.zeros(out_shape, node.out_type().dtype)
    # A 1-D operand is a matrix with one row (left) or one column (right), dropped at the end.
    if a.type.ndim == 1:
        a = _reshaped(node, a, (1, *a.type.shape))
    if b.type.ndim == 1:
        b = _reshaped(node, b, (*b.type.shape, 1))
    result = _matmul_by_matrix(node, a, b) if b.type.ndim == 2 else _batch_matmul(node, a, b)
    if _product_shape(a, b) != out_shape:
        result = _reshape(result, out_shape)
    return result


def _matmul_out_shape(node: OnnxNode, a: Value, b: Value) -> tuple:
    """MatMul's output shape: ONNX's inference, or (symbolic shapes it cannot name) NumPy's
    rule, the 1-D operands' dimension dropped."""
    if node.output_types[0] is not None:
        return node.output_types[0].shape
    batch = _broadcast(node, a.type.shape[:-2], b.type.shape[:-2])
    rows = a.type.shape[-2:-1] if a.type.ndim >= 2 else ()
    cols = b.type.shape[-1:] if b.type.ndim >= 2 else ()
    return (*batch, *rows, *cols)


def _broadcast(node: OnnxNode, *shapes: tuple) -> tuple:
    try:
        return broadcast_dims(*shapes)
    except ValueError as err:
        raise node.error(f"the batch dimensions {err}") from None


def _reshape(expr: Expr, shape: tuple[int, ...]) -> Expr:
    """`expr` reshaped to `shape`; a reshape of a reshape becomes one reshape."""
    if isinstance(expr, Call) and expr.op.name == "reshape":
        expr = expr.args[0]
    return call("reshape", expr, newshape=shape, allowzero=True)


def _reshaped(node: OnnxNode, value: Value, shape: tuple[int, ...]) -> Value:
    def build() -> Expr:
        if value.is_constant:
            return folded(value.expr, value.data.reshape(shape))
        return call("reshape", value.expr, newshape=shape, allowzero=True)

    expr = node.derived.get(value.expr, ("reshape", shape), build)
    return Value(expr, TensorType(shape, value.type.dtype))


def _product_shape(a: Value, b: Value) -> tuple[int, ...]:
    """The shape `_matmul_by_matrix` / `_batch_matmul` produced: batch dims, m, n."""
    batch = broadcast_dims(a.type.shape[:-2], b.type.shape[:-2])
    return (*batch, a.type.shape[-2], b.type.shape[-1])


def _matmul_by_matrix(node: OnnxNode, a: Value, b: Value) -> Expr:
    """[..., m, k] @ [k, n]: fold the leading dimensions into the rows of one dense."""
    if a.type.ndim == 2:
        return _dense(node, a.expr, b)
    rows = dim_product(a.type.shape[:-1])
    flat = call("reshape", a.expr, newshape=(rows, a.type.shape[-1]), allowzero=True)
    out = _dense(node, flat, b)
    return call("reshape", out, newshape=(*a.type.shape[:-1], b.type.shape[-1]), allowzero=True)


def _batch_matmul(node: OnnxNode, a: Value, b: Value) -> Expr:
    """[..., m, k] @ [..., k, n] with broadcast batch dimensions, as one nn.batch_matmul on
    operands reshaped to [batch, m, k] and [batch, k, n]."""
    batch = _broadcast(node, a.type.shape[:-2], b.type.shape[:-2])
    size = dim_product(batch)
    lhs = _to_batch3(node, a, batch, size)
    rhs = _to_batch3(node, b, batch, size)
    out = call("nn.batch_matmul", lhs, rhs, transpose_a=False, transpose_b=False)
    if len(batch) == 1:
        return out
    return call(
        "reshape", out, newshape=(*batch, a.type.shape[-2], b.type.shape[-1]), allowzero=True
    )


def _to_batch3(node: OnnxNode, value: Value, batch: tuple[int, ...], size: int) -> Expr:
    """`value` broadcast to `batch` leading dimensions and reshaped to [size, rows, cols]."""
    matrix = value.type.shape[-2:]
    full = (*batch, *matrix)
    if not value.is_constant:
        expr = value.expr
        if value.type.shape != full:
            expr = call("broadcast_to", expr, shape=full)
        if len(full) != 3:
            expr = call("reshape", expr, newshape=(size, *matrix), allowzero=True)
        return expr

    def build() -> Expr:
        return folded(value.expr, np.broadcast_to(value.data, full).reshape(size, *matrix))

    return node.derived.get(value.expr, ("batch3", full), build)


TABLE: dict[str, tuple[Entry, ...]] = {
    # matrix products
    "Gemm": every_opset(convert_gemm),
    "MatMul": every_opset(convert_matmul),
}
