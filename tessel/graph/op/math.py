"""Elementwise math beyond elemwise.py: trigonometric and hyperbolic functions, rounding, sign,
softplus, the bitwise operators and shifts, and reinterpret (BitCast)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tessel.graph.op.common import (
    broadcast_shapes,
    float_unary_rel,
    np_dtype,
    numeric_unary_rel,
    same_as,
    unary_op,
)
from tessel.graph.op.op_def import Args, Attr, Attrs, OpDef, OpPattern
from tessel.graph.ty import TensorType, Type
from tessel.support.dtype import DataType
from tessel.topi import bitwise as topi_bitwise
from tessel.topi import math as topi_math


def _softplus_ref(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


_FLOAT_UNARY = [
    ("sin", topi_math.sin, np.sin, "The sine (radians)."),
    ("cos", topi_math.cos, np.cos, "The cosine (radians)."),
    ("tan", topi_math.tan, np.tan, "The tangent (radians)."),
    ("asin", topi_math.asin, np.arcsin, "The arcsine (NaN outside [-1, 1])."),
    ("acos", topi_math.acos, np.arccos, "The arccosine (NaN outside [-1, 1])."),
    ("atan", topi_math.atan, np.arctan, "The arctangent."),
    ("sinh", topi_math.sinh, np.sinh, "The hyperbolic sine."),
    ("cosh", topi_math.cosh, np.cosh, "The hyperbolic cosine."),
    ("asinh", topi_math.asinh, np.arcsinh, "The inverse hyperbolic sine."),
    ("acosh", topi_math.acosh, np.arccosh, "The inverse hyperbolic cosine (NaN below 1)."),
    ("atanh", topi_math.atanh, np.arctanh, "The inverse hyperbolic tangent (NaN outside [-1, 1])."),
    ("nn.softplus", topi_math.softplus, _softplus_ref, "log(1 + exp(x)), without overflow."),
]
_NUMERIC_UNARY = [
    (
        "round",
        topi_math.round_half_to_even,
        np.round,
        "Round to the nearest integer, halfway cases to even (NumPy's and ONNX's; integers "
        "unchanged).",
    ),
    ("sign", topi_math.sign, np.sign, "-1, 0 or 1 by the sign (NaN stays NaN)."),
]


def _expect_integer(args: Args, name: str) -> TensorType:
    ty = args.tensor(name)
    if not DataType.of(ty.dtype).is_integer:
        raise args.error(
            name,
            f"must be an integer tensor, got dtype {ty.dtype}",
            hint="bools have the logical operators; cast floats to an integer dtype first",
        )
    return ty


def _bitwise_rel(args: Args, attrs: Attrs) -> Type:
    lhs = _expect_integer(args, "lhs")
    args.tensor("rhs")
    args.same_dtype("rhs", "lhs")
    return same_as(lhs, broadcast_shapes(args, ("lhs", "rhs")))


def _bitwise_not_rel(args: Args, attrs: Attrs) -> Type:
    return _expect_integer(args, "data")


def _shift_ref(left: bool) -> Callable[..., np.ndarray]:
    """The shift with ONNX BitShift's rule for amounts outside [0, width)."""

    def reference(a: np.ndarray, b: np.ndarray, *, attrs: Attrs) -> np.ndarray:
        bits = a.dtype.itemsize * 8
        inside = (b >= 0) & (b < bits)
        amount = np.where(inside, b, 0 if left else bits - 1).astype(a.dtype)
        if left:
            unsigned = np.dtype(f"uint{bits}")
            # As the unsigned twin: bits shifted past the top (the sign bit) are discarded.
            shifted = np.left_shift(a.astype(unsigned), amount.astype(unsigned)).astype(unsigned)
            result = np.where(inside, shifted.astype(a.dtype), 0)
        else:
            result = np.right_shift(a, amount)
        return np.asarray(result).astype(a.dtype)

    return reference


def _binary_ref(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable[..., np.ndarray]:
    def reference(a: np.ndarray, b: np.ndarray, *, attrs: Attrs) -> np.ndarray:
        return np.asarray(fn(a, b)).astype(a.dtype)

    return reference


_BITWISE = [
    ("bitwise_and", topi_bitwise.bitwise_and, _binary_ref(np.bitwise_and), "lhs & rhs."),
    ("bitwise_or", topi_bitwise.bitwise_or, _binary_ref(np.bitwise_or), "lhs | rhs."),
    ("bitwise_xor", topi_bitwise.bitwise_xor, _binary_ref(np.bitwise_xor), "lhs ^ rhs."),
    (
        "left_shift",
        topi_bitwise.left_shift,
        _shift_ref(left=True),
        "lhs << rhs; 0 where rhs is negative or at least the width.",
    ),
    (
        "right_shift",
        topi_bitwise.right_shift,
        _shift_ref(left=False),
        "lhs >> rhs (arithmetic when signed); the sign fill alone where rhs is negative or at "
        "least the width.",
    ),
]


def _bitwise(name: str, topi_fn, reference, doc: str) -> OpDef:
    return OpDef(
        name=name,
        arguments=("lhs", "rhs"),
        attrs=(),
        relation=_bitwise_rel,
        lower=lambda a, b, *, attrs: topi_fn(a, b),
        reference=reference,
        pattern=OpPattern.BROADCAST,
        doc=f"{doc} On integers, with broadcasting.",
    )


def _reinterpret_rel(args: Args, attrs: Attrs) -> Type:
    data = args.tensor("data")
    if attrs.dtype == "":
        raise args.error("dtype", "is required")
    source, target = DataType.of(data.dtype), DataType.of(attrs.dtype)
    if source.bits != target.bits or source.is_bool or target.is_bool:
        raise args.error("dtype", f"{attrs.dtype} differs in width from {data.dtype} of `data`")
    return same_as(data, dtype=attrs.dtype)


OPERATORS = (
    *(unary_op(n, float_unary_rel, f, r, d) for n, f, r, d in _FLOAT_UNARY),
    *(unary_op(n, numeric_unary_rel, f, r, d) for n, f, r, d in _NUMERIC_UNARY),
    *(_bitwise(n, f, r, d) for n, f, r, d in _BITWISE),
    OpDef(
        "bitwise_not",
        ("data",),
        (),
        _bitwise_not_rel,
        lambda x, *, attrs: topi_bitwise.bitwise_not(x),
        lambda x, *, attrs: np.invert(x),
        OpPattern.ELEMWISE,
        "~x on integers.",
    ),
    OpDef(
        "reinterpret",
        ("data",),
        (Attr("dtype", "dtype", ""),),
        _reinterpret_rel,
        lambda x, *, attrs: topi_bitwise.reinterpret(x, attrs.dtype),
        lambda x, *, attrs: np.array(x, order="C").view(np_dtype(attrs.dtype)),
        OpPattern.ELEMWISE,
        "The bits of `data` read as `dtype`, of the same width (ONNX's BitCast).",
    ),
)

__all__ = ["OPERATORS"]
