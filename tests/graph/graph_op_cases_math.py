"""Cases (graph_op_cases.Case) for the operators of tessel/graph/op/math.py: trigonometric and
hyperbolic functions, round, sign, softplus, the bitwise operators and shifts, reinterpret.

`math_cases()` imports graph_op_cases when called, not at import, so that graph_op_cases may
end with `CASES += math_cases()` whichever of the two modules is imported first."""

from __future__ import annotations

import numpy as np

from tessel.graph import TensorType


def _in(low: float, high: float):
    """Floats uniform in [low, high] (the function's domain)."""

    def values(rng, types):
        return [rng.uniform(low, high, t.shape).astype(t.dtype) for t in types]

    return values


def _wide(rng, types):
    """Floats over many magnitudes, halfway cases, signed zeros, NaN and both infinities."""
    (ty,) = types
    if not ty.dtype.startswith("float"):
        return [rng.integers(-5, 6, ty.shape).astype(ty.dtype)]
    pool = [0.5, -0.5, 1.5, -2.5, 0.0, -0.0, 1e-8, -3e-5, 40.0, -90.0, 1e6, 1e30, 2.0]
    pool += [np.nan, np.inf, -np.inf]
    return [rng.choice(pool, ty.shape).astype(ty.dtype)]


def _shift_values(rng, types):
    """Integers and shift amounts from -2 to past the width."""
    data, amount = types
    bits = np.dtype(data.dtype).itemsize * 8
    return [
        rng.integers(-100, 100, data.shape).astype(data.dtype),
        rng.integers(-2, bits + 3, amount.shape).astype(amount.dtype),
    ]


def _ints(rng, types):
    """Integers over the whole range of their dtype."""
    values = []
    for ty in types:
        info = np.iinfo(ty.dtype)
        values.append(rng.integers(info.min, info.max, ty.shape, endpoint=True).astype(ty.dtype))
    return values


_DOMAINS = {
    "sin": (-7, 7), "cos": (-7, 7), "tan": (-1.5, 1.5), "asin": (-1, 1), "acos": (-1, 1),
    "atan": (-20, 20), "sinh": (-5, 5), "cosh": (-5, 5), "asinh": (-1e4, 1e4),
    "acosh": (1, 1e4), "atanh": (-0.999, 0.999), "nn.softplus": (-30, 30),
}  # fmt: skip


def math_cases() -> list:
    """One graph_op_cases.Case per operator of tessel/graph/op/math.py (ids set)."""
    from graph_op_cases import B, Case, I, T

    cases = [
        Case(
            op,
            (T(2, 3),),
            {},
            T(2, 3),
            ((T(4, 1, 5, dtype="float64"),), {}),
            ((I(2),), {}, "data"),
            _in(*domain),
        )
        for op, domain in _DOMAINS.items()
    ]
    cases += [
        Case(op, (T(3, 4),), {}, T(3, 4), ((I(5),), {}), ((B(2),), {}, "data"), _wide)
        for op in ("round", "sign")
    ]
    for op in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        cases.append(
            Case(
                op,
                (I(3, 1), I(4)),
                {},
                I(3, 4),
                ((TensorType((2, 3), "uint8"), TensorType((3,), "uint8")), {}),
                ((T(2), T(2)), {}, "lhs"),
                _ints,
            )
        )
    for op in ("left_shift", "right_shift"):
        cases.append(
            Case(
                op,
                (TensorType((3, 5), "int8"), TensorType((5,), "int8")),
                {},
                TensorType((3, 5), "int8"),
                ((TensorType((6,), "int64"), TensorType((6,), "int64")), {}),
                ((I(2), TensorType((2,), "int64")), {}, "rhs"),
                _shift_values,
            )
        )
    cases.append(
        Case(
            "bitwise_not",
            (TensorType((2, 3), "uint16"),),
            {},
            TensorType((2, 3), "uint16"),
            ((I(4),), {}),
            ((B(2),), {}, "data"),
        )
    )
    # Between integers here: float <-> int reinterpretation is a C helper the interpreter lacks
    # (test_op_lowering_math.py runs it compiled).
    cases.append(
        Case(
            "reinterpret",
            (I(2, 3),),
            {"dtype": "uint32"},
            TensorType((2, 3), "uint32"),
            ((TensorType((4,), "uint8"),), {"dtype": "int8"}),
            ((T(2),), {"dtype": "int64"}, "dtype"),
            _ints,
        )
    )
    for case in cases:
        case.id = case.id or case.op
    return cases
