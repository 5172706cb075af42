"""The NumPy semantics of the elementwise operators, in one table: each operator's function on
arrays, the dtypes its operands may have and the dtype of its result.

The graph's operators (broadcast.py, elemwise.py) take their references and dtype rules from
here, and the ONNX importer folds known inputs with the same entries, so a value folded at
import is the value the graph would compute. Integer division truncates toward zero (C's, and
ONNX's Div); `mod` has the dividend's sign (C's fmod, ONNX's Mod with fmod=1); `floor_divide`
and `floor_mod` round toward minus infinity (Python's, ONNX's Mod with fmod=0).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tessel.support.dtype import DataType


@dataclass(frozen=True, slots=True)
class DtypeRule:
    """Which operand dtypes an operator takes, and how an error names them."""

    accepts: Callable[[DataType], bool]
    description: str


NOT_BOOL = DtypeRule(lambda d: not d.is_bool, "a numeric (not bool) dtype")
FLOAT = DtypeRule(lambda d: d.is_float, "a floating-point dtype")
BOOL = DtypeRule(lambda d: d.is_bool, "dtype bool")


@dataclass(frozen=True, slots=True)
class Elementwise:
    """One operator: `function` on NumPy arrays of the operands' (common) dtype, the operands'
    `rule` (None: any dtype), the result's dtype (None: the operands')."""

    name: str
    arity: int
    function: Callable[..., np.ndarray]
    rule: DtypeRule | None
    result_dtype: str | None
    doc: str

    def evaluate(self, *arrays: np.ndarray) -> np.ndarray:
        """The operator applied to `arrays` (broadcast), in its result dtype; NumPy's warnings
        are off, since NaN and infinities are results here."""
        with np.errstate(all="ignore"):
            result = np.asarray(self.function(*arrays))
        return result.astype(self.result_dtype or arrays[0].dtype, copy=False)


def _truncating_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a / b: true division for floats, division truncated toward zero (C's) for integers."""
    if np.issubdtype(a.dtype, np.floating):
        return np.divide(a, b).astype(a.dtype)
    quotient = np.floor_divide(a, b)
    inexact = (a - quotient * b != 0) & ((a < 0) != (b < 0))
    return (quotient + inexact).astype(a.dtype)


def _truncating_mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The remainder with the sign of a (C's % and fmod)."""
    if np.issubdtype(a.dtype, np.floating):
        return np.fmod(a, b).astype(a.dtype)
    return (a - _truncating_divide(a, b) * b).astype(a.dtype)


_erf = np.vectorize(math.erf, otypes=[np.float64])

_BINARY = [
    ("add", np.add, NOT_BOOL, None, "lhs + rhs."),
    ("subtract", np.subtract, NOT_BOOL, None, "lhs - rhs."),
    ("multiply", np.multiply, NOT_BOOL, None, "lhs * rhs."),
    ("divide", _truncating_divide, NOT_BOOL, None,
     "lhs / rhs: true division of floats, truncating (C) division of integers."),
    ("floor_divide", np.floor_divide, NOT_BOOL, None, "floor(lhs / rhs)."),
    ("mod", _truncating_mod, NOT_BOOL, None, "The remainder with the sign of lhs."),
    ("floor_mod", np.mod, NOT_BOOL, None, "The remainder with the sign of rhs."),
    ("power", np.power, FLOAT, None, "lhs ** rhs."),
    ("maximum", np.maximum, NOT_BOOL, None, "The larger of lhs and rhs."),
    ("minimum", np.minimum, NOT_BOOL, None, "The smaller of lhs and rhs."),
    ("equal", np.equal, None, "bool", "equal (a bool tensor)."),
    ("not_equal", np.not_equal, None, "bool", "not_equal (a bool tensor)."),
    ("less", np.less, None, "bool", "less (a bool tensor)."),
    ("less_equal", np.less_equal, None, "bool", "less_equal (a bool tensor)."),
    ("greater", np.greater, None, "bool", "greater (a bool tensor)."),
    ("greater_equal", np.greater_equal, None, "bool", "greater_equal (a bool tensor)."),
    ("logical_and", np.logical_and, BOOL, "bool", "logical_and (a bool tensor)."),
    ("logical_or", np.logical_or, BOOL, "bool", "logical_or (a bool tensor)."),
    ("logical_xor", np.logical_xor, BOOL, "bool", "logical_xor (a bool tensor)."),
]  # fmt: skip
_UNARY = [
    ("sigmoid", lambda x: 1 / (1 + np.exp(-x)), FLOAT, None, "1 / (1 + exp(-x))."),
    ("tanh", np.tanh, FLOAT, None, "tanh(x)."),
    ("exp", np.exp, FLOAT, None, "e ** x."),
    ("log", np.log, FLOAT, None, "The natural logarithm."),
    ("sqrt", np.sqrt, FLOAT, None, "The square root."),
    ("rsqrt", lambda x: 1 / np.sqrt(x), FLOAT, None, "1 / sqrt(x)."),
    ("erf", _erf, FLOAT, None, "The Gauss error function."),
    ("negative", np.negative, NOT_BOOL, None, "-x."),
    ("abs", np.abs, NOT_BOOL, None, "|x|."),
    ("floor", np.floor, NOT_BOOL, None, "Round down (integers unchanged)."),
    ("ceil", np.ceil, NOT_BOOL, None, "Round up (integers unchanged)."),
    ("nn.relu", lambda x: np.maximum(x, 0), NOT_BOOL, None, "max(x, 0)."),
    ("isnan", np.isnan, None, "bool", "True where x is NaN (never for integers)."),
    ("isinf", np.isinf, None, "bool", "True where x is +inf or -inf (never for integers)."),
    ("isfinite", np.isfinite, None, "bool", "True where x is neither NaN nor infinite."),
    ("logical_not", np.logical_not, BOOL, None, "not x, on bools."),
]  # fmt: skip

ELEMENTWISE: dict[str, Elementwise] = {
    **{name: Elementwise(name, 2, *entry) for name, *entry in _BINARY},
    **{name: Elementwise(name, 1, *entry) for name, *entry in _UNARY},
}
BINARY_NAMES = tuple(name for name, *_ in _BINARY)
UNARY_NAMES = tuple(name for name, *_ in _UNARY)


def evaluate(name: str, *arrays: np.ndarray) -> np.ndarray:
    """Operator `name` of the table applied to `arrays` (see Elementwise.evaluate)."""
    return ELEMENTWISE[name].evaluate(*arrays)


__all__ = ["BOOL", "ELEMENTWISE", "FLOAT", "NOT_BOOL", "DtypeRule", "Elementwise", "evaluate"]
