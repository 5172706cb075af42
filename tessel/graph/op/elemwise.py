"""Elementwise operators of one tensor: math functions, activations, clip, cast, *_like,
and the float tests (isnan, isinf, isfinite)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tessel import te, topi
from tessel.graph.op.common import (
    as_dtype,
    expect_float,
    expect_not_bool,
    float_unary_rel,
    numeric_unary_rel,
    same_as,
)
from tessel.graph.op.elementwise_semantics import ELEMENTWISE, FLOAT
from tessel.graph.op.op_def import Args, Attr, Attrs, OpDef, OpPattern
from tessel.graph.ty import Type
from tessel.ir import builders

# The TOPI lowering of each unary operator of the semantics table (elementwise_semantics).
_TOPI = {
    "sigmoid": topi.sigmoid, "tanh": topi.tanh, "exp": topi.exp, "log": topi.log,
    "sqrt": topi.sqrt, "rsqrt": topi.rsqrt, "erf": topi.erf, "negative": topi.negative,
    "abs": topi.abs, "floor": topi.floor, "ceil": topi.ceil, "nn.relu": topi.nn.relu,
    "isnan": topi.isnan, "isinf": topi.isinf, "isfinite": topi.isfinite,
}  # fmt: skip


def _unary(name: str) -> OpDef:
    """The operator `name`: the table's semantics, TOPI's lowering; the float tests (a bool
    result) take any dtype, the others the table's operand rule."""
    semantics, topi_fn = ELEMENTWISE[name], _TOPI[name]
    if semantics.result_dtype == "bool":
        relation = _float_test_rel
    else:
        relation = float_unary_rel if semantics.rule is FLOAT else numeric_unary_rel
    return OpDef(
        name=name,
        arguments=("data",),
        attrs=(),
        relation=relation,
        lower=lambda x, *, attrs: topi_fn(x),
        reference=lambda x, *, attrs: semantics.evaluate(x),
        pattern=OpPattern.ELEMWISE,
        doc=semantics.doc,
    )


def _leaky_relu_rel(args: Args, attrs: Attrs) -> Type:
    return expect_float(args, "data")


def _leaky_relu_ref(x: np.ndarray, *, attrs: Attrs) -> np.ndarray:
    return np.where(x > 0, x, x * x.dtype.type(attrs.alpha)).astype(x.dtype)


def _prelu_rel(args: Args, attrs: Attrs) -> Type:
    data = expect_float(args, "data")
    alpha = args.tensor("alpha", ndim=1)
    args.same_dtype("alpha", "data")
    axis = args.axis("axis", attrs.axis, data.ndim)
    if alpha.shape[0] != data.shape[axis]:
        raise args.error(
            "alpha",
            f"has {alpha.shape[0]} values but axis {axis} of `data` has extent {data.shape[axis]}",
        )
    return data


def _prelu_ref(x: np.ndarray, alpha: np.ndarray, *, attrs: Attrs) -> np.ndarray:
    axis = attrs.axis % x.ndim
    slope = alpha.reshape([-1 if d == axis else 1 for d in range(x.ndim)])
    return np.where(x > 0, x, x * slope).astype(x.dtype)


def _clip_rel(args: Args, attrs: Attrs) -> Type:
    data = expect_not_bool(args, "data")
    if attrs.a_min > attrs.a_max:
        raise args.error("a_min", f"{attrs.a_min} is larger than a_max ({attrs.a_max})")
    return data


def _clip_ref(x: np.ndarray, *, attrs: Attrs) -> np.ndarray:
    low, high = x.dtype.type(attrs.a_min), x.dtype.type(attrs.a_max)
    return np.maximum(np.minimum(x, high), low)


def _cast_rel(args: Args, attrs: Attrs) -> Type:
    if attrs.dtype == "":
        raise args.error("dtype", "is required")
    return same_as(args.tensor("data"), dtype=attrs.dtype)


def _like_rel(args: Args, attrs: Attrs) -> Type:
    return args.tensor("data")


def _full_like(value: int) -> Callable[..., te.Tensor]:
    def lower(x: te.Tensor, *, attrs: Attrs) -> te.Tensor:
        fill = builders.const(value, x.dtype)
        return te.compute(x.shape, lambda *i: fill, name="T_full_like", tag="elemwise")

    return lower


def _float_test_rel(args: Args, attrs: Attrs) -> Type:
    return same_as(args.tensor("data"), dtype="bool")


OPERATORS = (
    *(_unary(name) for name in _TOPI),
    OpDef(
        "nn.leaky_relu",
        ("data",),
        (Attr("alpha", "float", 0.01),),
        _leaky_relu_rel,
        lambda x, *, attrs: topi.nn.leaky_relu(x, attrs.alpha),
        _leaky_relu_ref,
        OpPattern.ELEMWISE,
        "x where x > 0, else alpha * x.",
    ),
    OpDef(
        "nn.prelu",
        ("data", "alpha"),
        (Attr("axis", "int", 1),),
        _prelu_rel,
        lambda x, a, *, attrs: topi.nn.prelu(x, a, attrs.axis),
        _prelu_ref,
        OpPattern.BROADCAST,
        "x where x > 0, else alpha[c] * x along the channel `axis`.",
    ),
    OpDef(
        "clip",
        ("data",),
        (Attr("a_min", "float"), Attr("a_max", "float")),
        _clip_rel,
        lambda x, *, attrs: topi.clip(x, attrs.a_min, attrs.a_max),
        _clip_ref,
        OpPattern.ELEMWISE,
        "Each element limited to [a_min, a_max].",
    ),
    OpDef(
        "cast",
        ("data",),
        (Attr("dtype", "dtype", ""),),
        _cast_rel,
        lambda x, *, attrs: topi.cast(x, attrs.dtype),
        lambda x, *, attrs: as_dtype(x, attrs.dtype),
        OpPattern.ELEMWISE,
        "`data` converted to `dtype` (floats truncate toward zero).",
    ),
    OpDef(
        "zeros_like",
        ("data",),
        (),
        _like_rel,
        _full_like(0),
        lambda x, *, attrs: np.zeros_like(x),
        OpPattern.ELEMWISE,
        "Zeros of data's type.",
    ),
    OpDef(
        "ones_like",
        ("data",),
        (),
        _like_rel,
        _full_like(1),
        lambda x, *, attrs: np.ones_like(x),
        OpPattern.ELEMWISE,
        "Ones of data's type.",
    ),
)

__all__ = ["OPERATORS"]
