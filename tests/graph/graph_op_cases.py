"""One case per graph operator: argument types and attributes for two shapes, a bad call (with
the argument or attribute its error must name), and inputs for differential runs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tessel.graph import TensorType, TupleType, Type


def T(*shape: int, dtype: str = "float32") -> TensorType:
    return TensorType(shape, dtype)


def I(*shape: int) -> TensorType:  # noqa: E743
    return TensorType(shape, "int32")


def B(*shape: int) -> TensorType:
    return TensorType(shape, "bool")


@dataclass
class Case:
    op: str
    args: tuple[Type, ...]
    attrs: dict[str, Any]
    expected: Type | None  # the result type of `args` (None: checked only against TOPI)
    alt: tuple[tuple[Type, ...], dict[str, Any]]  # a second shape
    bad: tuple[tuple[Type, ...], dict[str, Any], str]  # arguments, attrs, name in the error
    values: Callable[[np.random.Generator, tuple[Type, ...]], list[Any]] | None = None
    tolerance: float = 1e-5
    id: str = field(default="")
    lowers: bool = True  # False: an annotation (on_device) that refuses to lower to TOPI


def random_value(ty: Type, rng: np.random.Generator, positive: bool = False) -> Any:
    if isinstance(ty, TupleType):
        return tuple(random_value(f, rng, positive) for f in ty.fields)
    if ty.dtype == "bool":
        return rng.random(ty.shape) < 0.5
    if ty.dtype.startswith("int"):
        return rng.integers(-5, 6, ty.shape).astype(ty.dtype)
    value = rng.uniform(-1, 1, ty.shape)
    return (np.abs(value) + 0.5 if positive else value).astype(ty.dtype)


def _positive(rng, types):
    return [random_value(t, rng, positive=True) for t in types]


def _indices(extent: int) -> Callable:
    """Data random, the second argument indices in [-extent, extent)."""

    def values(rng, types):
        return [
            random_value(types[0], rng),
            rng.integers(-extent, extent, types[1].shape).astype(types[1].dtype),
        ]

    return values


def _one_hot_values(rng, types):
    return [rng.integers(-1, 5, types[0].shape).astype("int32"), np.float32(2.5), np.float32(-1.0)]


def _divide_values(rng, types):
    lhs, rhs = (random_value(t, rng) for t in types)
    if types[0].dtype.startswith("int"):
        rhs = np.where(rhs == 0, 3, rhs).astype(rhs.dtype)
    return [lhs, rhs]


def _scatter_values(extent: int) -> Callable:
    """Data and updates random, the indices (second argument) in [-extent, extent)."""

    def values(rng, types):
        data, _, updates = (random_value(t, rng) for t in types)
        indices = rng.integers(-extent, extent, types[1].shape).astype(types[1].dtype)
        return [data, indices, updates]

    return values


def _variance_values(rng, types):
    data = random_value(types[0], rng)
    return [data, data.mean(axis=1, keepdims=True).astype(data.dtype)]


def _batch_norm_values(rng, types):
    values = [random_value(t, rng) for t in types]
    values[4] = np.abs(values[4]) + 0.5
    return values


def _quantize_values(rng, types):
    """Data spread over several quantisation steps (ties included), positive scales, zero points
    anywhere in the output dtype."""
    data, scale, zero = types
    if data.dtype == "int32":
        values = rng.integers(-2000, 2000, data.shape).astype("int32")
    else:
        values = (np.round(rng.uniform(-300, 300, data.shape) * 2) / 2).astype(data.dtype)
    info = np.iinfo(zero.dtype)
    return [
        values,
        rng.uniform(0.05, 2.0, scale.shape).astype(scale.dtype),
        rng.integers(info.min, info.max + 1, zero.shape).astype(zero.dtype),
    ]


def _special_values(rng, types):
    """Floats with NaN and both infinities among them."""
    value = random_value(types[0], rng).reshape(-1)
    value[::3], value[1::4] = np.nan, np.inf
    value[-1] = -np.inf
    return [value.reshape(types[0].shape)]


_UNARY_FLOAT = [
    "sigmoid",
    "tanh",
    "exp",
    "erf",
    "negative",
    "abs",
    "floor",
    "ceil",
    "nn.relu",
    "zeros_like",
    "ones_like",
]
_UNARY_POSITIVE = ["log", "sqrt", "rsqrt"]
_ARITH = ["add", "subtract", "multiply", "maximum", "minimum", "floor_divide", "floor_mod", "mod"]
_COMPARE = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]
_LOGIC = ["logical_and", "logical_or", "logical_xor"]


def _unary_cases() -> list[Case]:
    cases = []
    for op in _UNARY_FLOAT + _UNARY_POSITIVE:
        bad = (B(2),) if op in ("negative", "abs", "floor", "ceil", "nn.relu") else (I(2),)
        if op in ("zeros_like", "ones_like"):
            bad = (TupleType((T(2),)),)
        cases.append(
            Case(
                op,
                (T(2, 3),),
                {},
                T(2, 3),
                ((T(4, 1, 5, dtype="float64"),), {}),
                (bad, {}, "data"),
                _positive if op in _UNARY_POSITIVE else None,
            )
        )
    return cases


def _binary_cases() -> list[Case]:
    cases = []
    for op in _ARITH + ["divide", "power"]:
        dtype = (
            "float32"
            if op in ("power",)
            else "int32"
            if op in ("floor_divide", "floor_mod", "mod")
            else "float32"
        )
        values = (
            _divide_values
            if op in ("divide", "floor_divide", "floor_mod", "mod")
            else _positive
            if op == "power"
            else None
        )
        cases.append(
            Case(
                op,
                (T(2, 1, 3, dtype=dtype), T(4, 1, dtype=dtype)),
                {},
                T(2, 4, 3, dtype=dtype),
                ((T(5, dtype=dtype), T(dtype=dtype)), {}),
                ((T(2, 3), T(4, 3)), {}, "rhs"),
                values,
            )
        )
    cases.append(
        Case(
            "divide",
            (I(3, 4), I(4)),
            {},
            I(3, 4),
            ((I(2), I(2)), {}),
            ((I(3), T(3)), {}, "rhs"),
            _divide_values,
            id="divide-int",
        )
    )
    for op in _COMPARE:
        cases.append(
            Case(op, (T(3, 1), T(1, 4)), {}, B(3, 4), ((I(2), I(2)), {}), ((T(2), I(2)), {}, "rhs"))
        )
    for op in _LOGIC:
        cases.append(
            Case(op, (B(3, 1), B(4)), {}, B(3, 4), ((B(2), B()), {}), ((I(2), I(2)), {}, "lhs"))
        )
    return cases


def _cases() -> list[Case]:
    c = _unary_cases() + _binary_cases()
    c += [
        Case("logical_not", (B(2, 3),), {}, B(2, 3), ((B(),), {}), ((T(2),), {}, "data")),
        Case(
            "where",
            (B(3, 1), T(1, 4), T(4)),
            {},
            T(3, 4),
            ((I(2), I(2), I(1)), {}),
            ((B(2), T(2), I(2)), {}, "y"),
        ),
        Case(
            "nn.leaky_relu",
            (T(2, 3),),
            {"alpha": 0.2},
            T(2, 3),
            ((T(5),), {}),
            ((I(2),), {}, "data"),
        ),
        Case(
            "nn.prelu",
            (T(2, 3, 4), T(3)),
            {},
            T(2, 3, 4),
            ((T(2, 5), T(5)), {"axis": -1}),
            ((T(2, 3), T(4)), {}, "alpha"),
        ),
        Case(
            "clip",
            (T(2, 3),),
            {"a_min": -0.5, "a_max": 0.25},
            T(2, 3),
            ((T(4, dtype="float64"),), {"a_min": 0, "a_max": 1}),
            ((T(2),), {"a_min": 1.0, "a_max": 0.0}, "a_min"),
        ),
        Case(
            "cast",
            (T(2, 3),),
            {"dtype": "int32"},
            I(2, 3),
            ((I(4),), {"dtype": "float32"}),
            ((T(2),), {}, "dtype"),
        ),
        # nn
        Case(
            "nn.conv2d",
            (T(1, 4, 7, 7), T(6, 4, 3, 3)),
            {"strides": (2, 2), "padding": (1, 1)},
            T(1, 6, 4, 4),
            (
                (T(2, 5, 6, 4), T(3, 3, 4, 8)),
                {"data_layout": "NHWC", "kernel_layout": "HWIO", "dilation": 2},
            ),
            ((T(1, 4, 7, 7), T(6, 3, 3, 3)), {}, "weight"),
        ),
        Case(
            "nn.conv2d",
            (T(1, 4, 6, 6), T(8, 1, 3, 3)),
            {"groups": 4, "padding": (1, 0, 0, 1)},
            T(1, 8, 5, 5),
            (
                (T(1, 6, 6, 4), T(1, 1, 2, 6)),
                {"groups": 2, "data_layout": "NHWC", "kernel_layout": "HWIO"},
            ),
            ((T(1, 4, 6, 6), T(8, 1, 3, 3)), {"groups": 3}, "groups"),
            id="nn.conv2d-groups",
        ),
        Case(
            "layout_transform",
            (T(1, 8, 3, 5),),
            {"src_layout": "NCHW", "dst_layout": "NCHW4c"},
            T(1, 2, 3, 5, 4),
            ((T(2, 3, 2, 4, 4),), {"src_layout": "NCHW4c", "dst_layout": "NCHW2c"}),
            ((T(1, 6, 3, 5),), {"src_layout": "NCHW", "dst_layout": "NCHW4c"}, "dst_layout"),
        ),
        Case(
            "nn.max_pool2d",
            (T(1, 2, 7, 7, 4),),
            {"pool_size": (3, 3), "strides": (2, 2), "padding": (1, 1), "layout": "NCHW4c"},
            T(1, 2, 4, 4, 4),
            ((T(2, 1, 6, 5, 8),), {"pool_size": (2, 2), "layout": "NCHW8c", "ceil_mode": True}),
            ((T(1, 2, 7, 7, 4),), {"layout": "NCHW8c"}, "data"),
            id="nn.max_pool2d-blocked",
        ),
        Case(
            "nn.global_avg_pool2d",
            (T(1, 3, 5, 6, 4),),
            {"layout": "NCHW4c"},
            T(1, 3, 1, 1, 4),
            ((T(2, 1, 3, 3, 16),), {"layout": "NCHW16c"}),
            ((T(1, 3, 5, 6, 4),), {"layout": "NCHWc"}, "layout"),
            id="nn.global_avg_pool2d-blocked",
        ),
        Case(
            "nn.contrib_conv2d_NCHWc",
            (T(1, 2, 7, 7, 4), T(3, 2, 3, 3, 4, 2)),
            {
                "strides": (2, 2),
                "padding": (1, 1),
                "data_layout": "NCHW4c",
                "kernel_layout": "OIHW4i2o",
                "out_layout": "NCHW2c",
            },
            T(1, 3, 4, 4, 2),
            (
                (T(2, 3, 6, 5, 1), T(1, 3, 1, 2, 1, 4)),
                {
                    "data_layout": "NCHW1c",
                    "kernel_layout": "OIHW1i4o",
                    "out_layout": "NCHW4c",
                    "dilation": 2,
                },
            ),
            (
                (T(1, 2, 7, 7, 4), T(3, 1, 3, 3, 4, 2)),
                {"data_layout": "NCHW4c", "kernel_layout": "OIHW4i2o", "out_layout": "NCHW2c"},
                "weight",
            ),
        ),
        Case(
            "nn.contrib_conv2d_NCHWc",
            # 16 channels in 4 groups of 4, two groups a block of 8
            (T(1, 2, 6, 6, 8), T(4, 1, 3, 3, 4, 4)),
            {
                "groups": 4,
                "padding": (1, 1),
                "data_layout": "NCHW8c",
                "kernel_layout": "OIHW4i4o",
                "out_layout": "NCHW4c",
            },
            T(1, 4, 6, 6, 4),
            (
                # 16 channels in 2 groups of 8, two blocks of 4 a group
                (T(1, 4, 5, 5, 4), T(2, 2, 3, 3, 4, 8)),
                {
                    "groups": 2,
                    "strides": 2,
                    "data_layout": "NCHW4c",
                    "kernel_layout": "OIHW4i8o",
                    "out_layout": "NCHW8c",
                },
            ),
            (
                (T(1, 2, 6, 6, 8), T(4, 1, 3, 3, 4, 4)),
                {
                    "groups": 3,
                    "data_layout": "NCHW8c",
                    "kernel_layout": "OIHW4i4o",
                    "out_layout": "NCHW4c",
                },
                "weight",
            ),
            id="nn.contrib_conv2d_NCHWc-grouped",
        ),
        Case(
            "nn.contrib_depthwise_conv2d_NCHWc",
            (T(1, 2, 6, 6, 4), T(2, 1, 3, 3, 1, 4)),
            {
                "groups": 8,
                "padding": (1, 0, 0, 1),
                "data_layout": "NCHW4c",
                "kernel_layout": "OIHW1i4o",
                "out_layout": "NCHW4c",
            },
            T(1, 2, 5, 5, 4),
            (
                (T(1, 3, 7, 7, 2), T(3, 1, 3, 3, 1, 4)),
                {
                    "groups": 6,
                    "strides": 2,
                    "data_layout": "NCHW2c",
                    "kernel_layout": "OIHW1i4o",
                    "out_layout": "NCHW4c",
                },
            ),
            (
                (T(1, 2, 6, 6, 4), T(2, 1, 3, 3, 1, 4)),
                {
                    "groups": 4,
                    "data_layout": "NCHW4c",
                    "kernel_layout": "OIHW1i4o",
                    "out_layout": "NCHW4c",
                },
                "weight",
            ),
        ),
        Case(
            "nn.dense",
            (T(3, 4), T(5, 4)),
            {},
            T(3, 5),
            ((T(2, 3, 4), T(6, 4)), {"units": 6}),
            ((T(3, 4), T(5, 3)), {}, "weight"),
        ),
        Case(
            "nn.matmul",
            (T(3, 4), T(4, 5)),
            {},
            T(3, 5),
            ((T(4, 3), T(5, 4)), {"transpose_a": True, "transpose_b": True}),
            ((T(3, 4), T(5, 4)), {}, "tensor_b"),
        ),
        Case(
            "nn.batch_matmul",
            (T(2, 3, 4), T(2, 5, 4)),
            {},
            T(2, 3, 5),
            ((T(1, 4, 3), T(3, 4, 5)), {"transpose_a": True, "transpose_b": False}),
            ((T(2, 3, 4), T(3, 5, 4)), {}, "tensor_b"),
        ),
        Case(
            "nn.bias_add",
            (T(2, 3, 4), T(3)),
            {},
            T(2, 3, 4),
            ((T(2, 5), T(5)), {"axis": -1}),
            ((T(2, 3), T(2)), {}, "bias"),
        ),
        Case(
            "nn.batch_flatten",
            (T(2, 3, 4),),
            {},
            T(2, 12),
            ((T(5, 1, 2, 2),), {}),
            ((TupleType(()),), {}, "data"),
        ),
        # pooling
        Case(
            "nn.max_pool2d",
            (T(1, 2, 7, 7),),
            {"pool_size": (3, 3), "strides": (2, 2), "padding": (1, 1)},
            T(1, 2, 4, 4),
            ((T(1, 6, 5, 3),), {"pool_size": (2, 2), "ceil_mode": True, "layout": "NHWC"}),
            ((T(1, 2, 2, 2),), {"pool_size": (3, 3)}, "pool_size"),
        ),
        Case(
            "nn.avg_pool2d",
            (T(1, 2, 7, 7),),
            {"pool_size": (3, 3), "strides": (2, 2), "padding": (1, 1)},
            T(1, 2, 4, 4),
            (
                (T(1, 2, 6, 6),),
                {
                    "pool_size": (3, 3),
                    "strides": (2, 2),
                    "ceil_mode": True,
                    "count_include_pad": True,
                    "padding": (1, 1),
                },
            ),
            ((T(1, 2, 7),), {}, "data"),
        ),
        Case(
            "nn.global_avg_pool2d",
            (T(1, 3, 4, 5),),
            {},
            T(1, 3, 1, 1),
            ((T(2, 4, 5, 3),), {"layout": "NHWC"}),
            ((T(1, 3, 4),), {}, "data"),
        ),
        Case(
            "nn.global_max_pool2d",
            (T(1, 3, 4, 5),),
            {},
            T(1, 3, 1, 1),
            ((T(2, 4, 5, 3),), {"layout": "NHWC"}),
            ((T(1, 3, 4, 5),), {"layout": "NCWX"}, "layout"),
        ),
        Case(
            "nn.adaptive_avg_pool2d",
            (T(1, 3, 7, 5),),
            {"output_size": (3, 2)},
            T(1, 3, 3, 2),
            ((T(1, 6, 6, 2),), {"output_size": 1, "layout": "NHWC"}),
            ((T(1, 3, 4, 4),), {"output_size": (0, 2)}, "output_size"),
        ),
        Case(
            "nn.adaptive_max_pool2d",
            (T(1, 3, 7, 5),),
            {"output_size": (3, 2)},
            T(1, 3, 3, 2),
            ((T(1, 2, 6, 6),), {}),
            ((T(3, 4),), {}, "data"),
        ),
        # normalisation
        Case(
            "nn.batch_norm",
            (T(2, 3, 4), T(3), T(3), T(3), T(3)),
            {},
            TupleType((T(2, 3, 4), T(3), T(3))),
            ((T(2, 5), T(5), T(5), T(5), T(5)), {"axis": -1, "scale": False}),
            ((T(2, 3), T(3), T(3), T(2), T(3)), {}, "moving_mean"),
            _batch_norm_values,
        ),
        Case(
            "nn.layer_norm",
            (T(2, 3, 8), T(8), T(8)),
            {},
            T(2, 3, 8),
            ((T(4, 6), T(4), T(4)), {"axis": 0, "center": False}),
            ((T(2, 8), T(8), T(7)), {}, "beta"),
        ),
        Case(
            "nn.softmax",
            (T(2, 5),),
            {},
            T(2, 5),
            ((T(3, 4, 2),), {"axis": 1}),
            ((T(2, 5),), {"axis": 2}, "axis"),
        ),
        Case(
            "nn.log_softmax",
            (T(2, 5),),
            {},
            T(2, 5),
            ((T(3, 4, 2),), {"axis": 0}),
            ((I(2),), {}, "data"),
        ),
        Case(
            "nn.l2_normalize",
            (T(2, 5),),
            {"eps": 1e-6, "axis": (1,)},
            T(2, 5),
            ((T(3, 4),), {"eps": 0.1}),
            ((T(2, 5),), {"eps": 1e-6, "axis": (3,)}, "axis"),
        ),
        # reductions
        Case(
            "sum",
            (T(2, 3, 4),),
            {"axis": (1,)},
            T(2, 4),
            ((T(3, 4),), {"keepdims": True}),
            ((T(2, 3),), {"axis": (2,)}, "axis"),
        ),
        Case(
            "mean",
            (T(2, 3, 4),),
            {"axis": (0, 2), "keepdims": True},
            T(1, 3, 1),
            ((T(3, 4),), {"axis": (1,), "exclude": True}),
            ((I(2, 3),), {}, "data"),
        ),
        Case(
            "max",
            (T(2, 3, 4),),
            {"axis": (-1,)},
            T(2, 3),
            ((T(5),), {}),
            ((T(2),), {"axis": (1,)}, "axis"),
        ),
        Case(
            "min",
            (T(2, 3, 4),),
            {"axis": (0,)},
            T(3, 4),
            ((I(3, 4),), {"keepdims": True}),
            ((T(2),), {"axis": (0, 0)}, "axis"),
        ),
        Case(
            "prod",
            (T(2, 3),),
            {"axis": (1,)},
            T(2),
            ((T(3, 2),), {}),
            ((T(2),), {"axis": (-2,)}, "axis"),
        ),
        Case(
            "argmax",
            (T(2, 3, 4),),
            {"axis": (1,)},
            I(2, 4),
            ((T(3, 4),), {"keepdims": True, "select_last_index": True}),
            ((T(2),), {"axis": (1,)}, "axis"),
        ),
        Case(
            "argmin",
            (T(2, 3, 4),),
            {"axis": (2,), "keepdims": True},
            I(2, 3, 1),
            ((T(3, 4),), {}),
            ((T(2),), {"axis": (4,)}, "axis"),
        ),
        Case(
            "variance",
            (T(2, 3, 4), T(2, 1, 4)),
            {"axis": (1,)},
            T(2, 4),
            ((T(3, 5), T(3, 1)), {"axis": (1,), "keepdims": True, "unbiased": True}),
            ((T(2, 3), T(2, 3)), {"axis": (1,)}, "mean"),
            _variance_values,
        ),
        # transforms
        Case(
            "reshape",
            (T(2, 3, 4),),
            {"newshape": (0, -1)},
            T(2, 12),
            ((T(2, 3, 4),), {"newshape": (-3, -2)}),
            ((T(2, 3),), {"newshape": (4, 2)}, "newshape"),
        ),
        Case(
            "reshape",
            (T(2, 3, 4),),
            {"newshape": (-4, 1, 2, -2)},
            T(1, 2, 3, 4),
            ((T(6, 4),), {"newshape": (-4, -1, 3, 4)}),
            ((T(2, 3),), {"newshape": (-1, -1)}, "newshape"),
            id="reshape-codes",
        ),
        Case(
            "shape_to_tensor",
            (),
            {"sizes": (3, 4), "shape": (2,), "dtype": "int64"},
            T(2, dtype="int64"),
            ((), {"sizes": (5,), "shape": (), "dtype": "float32"}),
            ((), {"sizes": (1, 2, 3), "shape": (2,)}, "sizes"),
        ),
        Case(
            "transpose",
            (T(2, 3, 4),),
            {"axes": (1, 2, 0)},
            T(3, 4, 2),
            ((T(2, 5),), {}),
            ((T(2, 3),), {"axes": (0, 0)}, "axes"),
        ),
        Case(
            "squeeze",
            (T(2, 1, 3, 1),),
            {"axis": (1,)},
            T(2, 3, 1),
            ((T(1, 4, 1),), {}),
            ((T(2, 3),), {"axis": (1,)}, "axis"),
        ),
        Case(
            "expand_dims",
            (T(2, 3),),
            {"axis": 1, "num_newaxis": 2},
            T(2, 1, 1, 3),
            ((T(4),), {"axis": -1}),
            ((T(2, 3),), {"axis": 4}, "axis"),
        ),
        Case(
            "broadcast_to",
            (T(3, 1),),
            {"shape": (2, 3, 4)},
            T(2, 3, 4),
            ((T(4),), {"shape": (3, 4)}),
            ((T(3, 2),), {"shape": (3, 4)}, "shape"),
        ),
        Case(
            "concatenate",
            (TupleType((T(2, 3), T(2, 5))),),
            {"axis": 1},
            T(2, 8),
            ((TupleType((T(1, 4), T(3, 4), T(2, 4))),), {}),
            ((TupleType((T(2, 3), T(3, 4))),), {"axis": 1}, "data"),
        ),
        Case(
            "split",
            (T(6, 4),),
            {"indices_or_sections": 3},
            TupleType((T(2, 4),) * 3),
            ((T(3, 7),), {"indices_or_sections": (2, -2), "axis": 1}),
            ((T(6, 4),), {"indices_or_sections": 4}, "indices_or_sections"),
        ),
        Case(
            "strided_slice",
            (T(5, 6),),
            {"begin": (1, -1), "end": (4, 0), "strides": (2, -2)},
            T(2, 3),
            ((T(4, 6),), {"begin": (1,), "end": (-1,), "axes": (1,), "slice_mode": "size"}),
            ((T(5, 6),), {"begin": (0,), "end": (2,), "strides": (0,)}, "strides"),
        ),
        Case(
            "nn.pad",
            (T(2, 3), T()),
            {"pad_width": ((1, 0), (2, 1))},
            T(3, 6),
            ((T(3, 4), T()), {"pad_width": ((1, 1), (2, 2)), "pad_mode": "reflect"}),
            ((T(2, 3), T()), {"pad_width": ((1, 0),)}, "pad_width"),
        ),
        # indexing
        Case(
            "take",
            (T(4, 5), I(2, 3)),
            {"axis": 1},
            T(
                4,
                2,
                3,
            ),
            ((T(3, 4), I(3, 2)), {"axis": 1, "batch_dims": 1, "mode": "wrap"}),
            ((T(4, 5), T(2)), {"axis": 1}, "indices"),
            _indices(5),
        ),
        Case(
            "take",
            (T(4, 5), I(3)),
            {},
            T(3),
            ((T(3, 4), I(2, 2)), {"axis": 0, "mode": "fast"}),
            ((T(4, 5), I(2)), {"axis": 2}, "axis"),
            _indices(3),
            id="take-flat",
        ),
        Case(
            "gather",
            (T(4, 5), I(4, 3)),
            {"axis": 1},
            T(4, 3),
            ((T(3, 4), I(2, 4)), {"axis": 0}),
            ((T(4, 5), I(4, 3, 1)), {"axis": 1}, "indices"),
            _indices(3),
        ),
        Case(
            "one_hot",
            (I(2, 3), T(), T()),
            {"depth": 4},
            T(2, 3, 4),
            ((I(3), T(), T()), {"depth": 5, "axis": 0, "dtype": "int32"}),
            ((T(2), T(), T()), {"depth": 3}, "indices"),
            _one_hot_values,
        ),
        Case(
            "gather_nd",
            (T(4, 5, 2), I(2, 3)),
            {},
            T(3, 2),
            ((T(2, 4, 5), I(1, 2, 3)), {"batch_dims": 1}),
            ((T(4, 5), I(3, 3)), {}, "batch_dims"),
            _indices(4),
        ),
        Case(
            "scatter_elements",
            (T(4, 5), I(3, 4), T(3, 4)),
            {"axis": 1},
            T(4, 5),
            ((T(3, 4), I(2, 4), T(2, 4)), {"axis": 0, "reduction": "add"}),
            ((T(4, 5), I(3, 4), T(3, 3)), {}, "updates"),
            _scatter_values(3),
        ),
        Case(
            "scatter_nd",
            (T(5, 3), I(1, 4), T(4, 3)),
            {},
            T(5, 3),
            ((T(4, 5), I(2, 3), T(3)), {"mode": "max"}),
            ((T(5, 3), I(1, 4), T(4, 2)), {}, "updates"),
            _scatter_values(4),
        ),
        Case(
            "cumsum",
            (T(3, 4),),
            {"axis": 1},
            T(3, 4),
            ((I(5, 2),), {"axis": 0, "exclusive": True, "dtype": "int64"}),
            ((T(3, 4),), {"axis": 2}, "axis"),
        ),
        # convolutions of other ranks, transposed convolutions, grid sampling
        Case(
            "nn.conv3d",
            (T(1, 4, 4, 5, 3), T(2, 2, 2, 3, 2)),
            {
                "strides": (1, 2, 1),
                "padding": (1, 0, 1, 0, 1, 0),
                "dilation": (1, 1, 2),
                "groups": 2,
            },
            T(1, 2, 4, 2, 2),
            ((T(2, 2, 3, 3, 3), T(3, 2, 1, 2, 2)), {}),
            ((T(1, 4, 4, 5, 3), T(2, 2, 2, 3, 2)), {"groups": 3}, "groups"),
            tolerance=1e-4,
        ),
        Case(
            "nn.conv1d_transpose",
            (T(2, 3, 5), T(3, 2, 3)),
            {"strides": (2,), "padding": (1, 0), "output_padding": (1,), "dilation": (2,)},
            T(2, 2, 13),
            ((T(1, 4, 3), T(4, 1, 2)), {"groups": 2}),
            ((T(2, 3, 5), T(2, 2, 3)), {}, "weight"),
            tolerance=1e-4,
        ),
        Case(
            "nn.conv2d_transpose",
            (T(1, 4, 3, 3), T(4, 1, 2, 3)),
            {
                "strides": (3, 2),
                "padding": (0, 1, 1, 0),
                "dilation": (1, 2),
                "groups": 2,
                "output_padding": (0, 1),
            },
            T(1, 2, 7, 9),
            ((T(2, 2, 4, 3), T(2, 3, 3, 3)), {"strides": (2, 2)}),
            ((T(1, 4, 3, 3), T(4, 1, 2, 3)), {"padding": (5, 5, 5, 5)}, "padding"),
            tolerance=1e-4,
        ),
        Case(
            "nn.conv3d_transpose",
            (T(1, 2, 2, 3, 2), T(2, 2, 2, 2, 2)),
            {"strides": (2, 1, 2), "padding": (0, 1, 0, 0, 0, 1), "output_padding": (1, 0, 0)},
            T(1, 2, 5, 3, 3),
            ((T(1, 1, 2, 2, 2), T(1, 3, 1, 2, 1)), {}),
            ((T(1, 2, 2, 3, 2), T(2, 2, 2, 2)), {}, "weight"),
            tolerance=1e-4,
        ),
        Case(
            "image.grid_sample",
            (T(1, 2, 3, 4), T(1, 2, 3, 2)),
            {"mode": "linear", "padding_mode": "reflection"},
            T(1, 2, 2, 3),
            (
                (T(2, 1, 4, 3), T(2, 3, 2, 2)),
                {"mode": "cubic", "padding_mode": "border", "align_corners": True},
            ),
            ((T(1, 2, 3, 4), T(1, 2, 3, 3)), {}, "grid"),
            tolerance=1e-4,
        ),
        Case(
            "cumprod",
            (T(3, 4),),
            {"axis": 1},
            T(3, 4),
            ((I(5, 2),), {"axis": 0, "exclusive": True}),
            ((T(3, 4),), {"axis": 2}, "axis"),
        ),
        Case(
            "trilu",
            (T(3, 4), TensorType((), "int64")),
            {},
            T(3, 4),
            ((T(2, 3, 3), TensorType((), "int64")), {"upper": False}),
            ((T(3), TensorType((), "int64")), {}, "data"),
        ),
        *(
            Case(
                op,
                (T(2, 3),),
                {},
                B(2, 3),
                ((T(4, dtype="float64"),), {}),
                ((TupleType((T(2),)),), {}, "data"),
                _special_values,
            )
            for op in ("isnan", "isinf", "isfinite")
        ),
        # quantisation
        Case(
            "qnn.quantize",
            (T(2, 3), T(), TensorType((), "int8")),
            {"out_dtype": "int8"},
            TensorType((2, 3), "int8"),
            ((T(2, 3, 4), T(3, 1), TensorType((3, 1), "uint16")), {"out_dtype": "uint16"}),
            ((T(2, 3), T(), TensorType((), "uint8")), {"out_dtype": "int8"}, "zero_point"),
            _quantize_values,
        ),
        Case(
            "qnn.requantize",
            (I(2, 3), T(3), TensorType((), "uint8")),
            {"out_dtype": "uint8"},
            TensorType((2, 3), "uint8"),
            ((I(1, 4, 2), T(4, 1), TensorType((), "int16")), {"out_dtype": "int16"}),
            ((T(2, 3), T(), TensorType((), "int8")), {"out_dtype": "int8"}, "data"),
            _quantize_values,
        ),
        # image
        Case(
            "image.resize2d",
            (T(1, 2, 4, 5),),
            {"size": (6, 3)},
            T(1, 2, 6, 3),
            (
                (T(1, 5, 4, 2),),
                {
                    "size": (3, 8),
                    "layout": "NHWC",
                    "method": "nearest_neighbor",
                    "coordinate_transformation_mode": "asymmetric",
                },
            ),
            ((T(1, 2, 4, 5),), {"size": (6,)}, "size"),
        ),
        Case(
            "image.resize2d",
            (T(1, 2, 4, 5),),
            {
                "size": (7, 3),
                "method": "cubic",
                "cubic_exclude": 1,
                "coordinate_transformation_mode": "align_corners",
            },
            T(1, 2, 7, 3),
            (
                (T(1, 2, 4, 4),),
                {
                    "size": (2, 6),
                    "method": "nearest_neighbor",
                    "coordinate_transformation_mode": "half_pixel",
                    "rounding_method": "round_prefer_ceil",
                },
            ),
            ((T(1, 2, 4, 5),), {"size": (6, 3), "method": "bilinear"}, "method"),
            id="image.resize2d-cubic",
        ),
    ]
    for case in c:
        case.id = case.id or case.op
    return c


def _family_cases() -> list[Case]:
    """Cases kept in files of their own (they import Case from here, so they load last)."""
    from graph_op_cases_device import device_cases
    from graph_op_cases_einsum import einsum_cases
    from graph_op_cases_math import math_cases
    from graph_op_cases_random import random_cases
    from graph_op_cases_replicate import replicate_cases
    from graph_op_cases_roi_align import roi_align_cases
    from graph_op_cases_strings import string_cases
    from graph_op_cases_topk import topk_cases

    cases = (
        math_cases()
        + topk_cases()
        + replicate_cases()
        + roi_align_cases()
        + device_cases()
        + einsum_cases()
        + string_cases()
        + random_cases()
    )
    for case in cases:
        case.id = case.id or case.op
    return cases


CASES = _cases() + _family_cases()
