"""Det: the determinant of small matrices, as the cofactor formula in graph ops (a general LU
factorization has no graph op yet; 4x4 and larger are refused)."""

from __future__ import annotations

import numpy as np

from tessel.frontend.onnx.node import OnnxNode
from tessel.frontend.onnx.opsets import Entry, every_opset
from tessel.frontend.onnx.relay import call, const
from tessel.graph.expr import Expr

# The terms of the Leibniz formula for n <= 3: (sign, ((row, column) per factor)).
_TERMS = {
    1: ((1, ((0, 0),)),),
    2: ((1, ((0, 0), (1, 1))), (-1, ((0, 1), (1, 0)))),
    3: (
        (1, ((0, 0), (1, 1), (2, 2))),
        (1, ((0, 1), (1, 2), (2, 0))),
        (1, ((0, 2), (1, 0), (2, 1))),
        (-1, ((0, 2), (1, 1), (2, 0))),
        (-1, ((0, 0), (1, 2), (2, 1))),
        (-1, ((0, 1), (1, 0), (2, 2))),
    ),
}


def _element(matrices: Expr, row: int, column: int, ndim: int) -> Expr:
    """matrices[..., row, column]."""
    rows = call("take", matrices, const(np.int64(row)), axis=ndim - 2, mode="fast")
    return call("take", rows, const(np.int64(column)), axis=ndim - 2, mode="fast")


def convert_det(node: OnnxNode) -> Expr | np.ndarray:
    """Det: the determinant of each matrix in the last two axes."""
    shape = node.shape(0)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise node.error(f"the input of shape {list(shape)} does not hold square matrices")
    n = shape[-1]
    if node.input(0).is_constant:
        return np.linalg.det(node.input(0).data).astype(node.input(0).type.dtype)
    if n not in _TERMS:
        raise node.error(f"the determinant of {n}x{n} matrices is not supported (only up to 3x3)")
    terms = []
    for sign, factors in _TERMS[n]:
        term = _element(node.expr(0), *factors[0], len(shape))
        for row, column in factors[1:]:
            term = call("multiply", term, _element(node.expr(0), row, column, len(shape)))
        terms.append((sign, term))
    total = terms[0][1]  # every formula starts with a positive term
    for sign, term in terms[1:]:
        total = call("add" if sign > 0 else "subtract", total, term)
    return total


TABLE: dict[str, tuple[Entry, ...]] = {
    "Det": every_opset(convert_det),
}
