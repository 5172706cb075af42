"""Softmax and log-softmax over one axis (TVM's topi.nn.softmax and log_softmax), numerically
stable: the maximum along the axis is subtracted before exponentiating."""

from __future__ import annotations

from typing import Any

from tessel import te
from tessel.ir.expr import PrimExpr
from tessel.support.dtype import DataType
from tessel.te.tensor import Tensor
from tessel.topi.reduction import max as reduce_max
from tessel.topi.reduction import reduced_index
from tessel.topi.reduction import sum as reduce_sum
from tessel.topi.utils import expect_tensor, normalize_axis, op_error


def _prepare(op: str, x: Any, axis: Any) -> tuple[Tensor, tuple[int]]:
    x = expect_tensor(op, "x", x)
    if not DataType.of(x.dtype).is_float:
        raise op_error(op, "x", f"expected a floating-point tensor, got {x.dtype}")
    return x, (normalize_axis(op, axis, x.ndim),)


def _shifted_exp(op: str, x: Tensor, axes: tuple[int]) -> tuple[Tensor, Tensor]:
    """The maximum along the axis (kept), and exp(x - max)."""
    max_elem = reduce_max(x, axes, keepdims=True)
    exp = te.compute(
        x.shape, lambda *i: te.exp(x[i] - max_elem[reduced_index(i, axes)]), name=f"T_{op}_exp"
    )
    return max_elem, exp


def softmax(x: Tensor, axis: int = -1) -> Tensor:
    """exp(x) / sum(exp(x)) along `axis`, as exp(x) times the sum's reciprocal."""
    x, axes = _prepare("softmax", x, axis)
    _max_elem, exp = _shifted_exp("softmax", x, axes)
    expsum = reduce_sum(exp, axes, keepdims=True)
    one = te.const(1, x.dtype)

    def normalize(*i: Any) -> PrimExpr:
        # One division per row, not per element, as onnxruntime and PyTorch do (within 1.5 ulp
        # of the quotient): a vector division was an eighth of the kernel's time.
        return exp[i] * (one / expsum[reduced_index(i, axes)])

    return te.compute(x.shape, normalize, name="T_softmax_norm", tag="softmax_output")


def log_softmax(x: Tensor, axis: int = -1) -> Tensor:
    """x - log(sum(exp(x))) along `axis`."""
    x, axes = _prepare("log_softmax", x, axis)
    max_elem, exp = _shifted_exp("log_softmax", x, axes)
    expsum = reduce_sum(exp, axes, keepdims=True)

    def subtract(*i: Any) -> PrimExpr:
        j = reduced_index(i, axes)
        return x[i] - max_elem[j] - te.log(expsum[j])

    return te.compute(x.shape, subtract, name="T_log_softmax", tag="log_softmax_output")
