"""Python operators on whole tensors (`A + B`, `A * 2`, `-A`, `A ** 2`): elementwise computes
with NumPy broadcasting, built by topi's broadcast operators as TVM's te.Tensor does.

topi is built on te, so te cannot import it: as in TVM (whose topi overloads te.Tensor's
operators when it is imported), `tessel.topi` registers the operators here when it loads, and
using one before `tessel.topi` is imported is a clear error.

Reading an element (`A[i] + B[i]`) gives PrimExprs, whose operators build expressions; these
operators apply only to the tensors themselves. Comparisons are left out on purpose: tensors are
hashed and compared by identity (they are dictionary keys throughout te).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from tessel.support.errors import UserError

# Operator name (topi's) -> the function that builds its compute; filled by tessel.topi.
_OPERATORS: dict[str, Callable[..., Any]] = {}
OPERATOR_NAMES = (
    "add", "subtract", "multiply", "divide", "floor_divide", "floor_mod", "power", "negative",
    "cast",
)  # fmt: skip


def register_tensor_operators(operators: Mapping[str, Callable[..., Any]]) -> None:
    """Give te.Tensor's Python operators their computes (tessel.topi calls this on import)."""
    unknown = set(operators) - set(OPERATOR_NAMES)
    if unknown:
        raise ValueError(f"not te.Tensor operators: {sorted(unknown)}")
    _OPERATORS.update(operators)


def _apply(name: str, *args: Any) -> Any:
    operator = _OPERATORS.get(name)
    if operator is None:
        raise UserError(
            f"te.Tensor's `{name}` operator is built by tessel.topi, which is not imported",
            rule="te.tensor-operator",
            hint="import tessel.topi first (as in TVM, topi provides tensor arithmetic)",
        )
    return operator(*args)


class TensorOperators:
    """`+ - * / // % **`, unary `-` and `astype` for te.Tensor, each a topi operator."""

    __slots__ = ()
    # An expression on the left (`A[0] + B`) leaves the operator to the tensor (tessel.ir.expr).
    defers_expr_operators = True

    def __add__(self, other: Any) -> Any:
        return _apply("add", self, other)

    def __radd__(self, other: Any) -> Any:
        return _apply("add", other, self)

    def __sub__(self, other: Any) -> Any:
        return _apply("subtract", self, other)

    def __rsub__(self, other: Any) -> Any:
        return _apply("subtract", other, self)

    def __mul__(self, other: Any) -> Any:
        return _apply("multiply", self, other)

    def __rmul__(self, other: Any) -> Any:
        return _apply("multiply", other, self)

    def __truediv__(self, other: Any) -> Any:
        return _apply("divide", self, other)

    def __rtruediv__(self, other: Any) -> Any:
        return _apply("divide", other, self)

    def __floordiv__(self, other: Any) -> Any:
        return _apply("floor_divide", self, other)

    def __rfloordiv__(self, other: Any) -> Any:
        return _apply("floor_divide", other, self)

    def __mod__(self, other: Any) -> Any:
        return _apply("floor_mod", self, other)

    def __rmod__(self, other: Any) -> Any:
        return _apply("floor_mod", other, self)

    def __pow__(self, other: Any) -> Any:
        return _apply("power", self, other)

    def __rpow__(self, other: Any) -> Any:
        return _apply("power", other, self)

    def __neg__(self) -> Any:
        return _apply("negative", self)

    def astype(self, dtype: str) -> Any:
        """The tensor converted elementwise to `dtype` (topi.cast), as TVM's Tensor.astype."""
        return _apply("cast", self, dtype)
