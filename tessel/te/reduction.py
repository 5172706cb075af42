"""Reducers: te.sum, te.max, te.min, te.prod, and user-defined ones through te.comm_reducer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tessel.ir import builders
from tessel.ir.expr import PrimExpr, Var
from tessel.support.dtype import DataType
from tessel.support.errors import UserError
from tessel.te.tensor import as_expr
from tessel.tir.block import IterVar, IterVarType
from tessel.tir.reduce_expr import CommReducer, Reduce, true_condition


def _as_tuple(value: Any) -> tuple[Any, ...]:
    return tuple(value) if isinstance(value, list | tuple) else (value,)


def _axes(axis: Any, name: str) -> tuple[IterVar, ...]:
    axes = _as_tuple(axis)
    for item in axes:
        if not isinstance(item, IterVar) or item.iter_type is not IterVarType.COMM_REDUCE:
            raise UserError(
                f"{name}: axis must be reduction axes made by te.reduce_axis, got {item!r}",
                rule="te.reduce-axis",
            )
    if not axes:
        raise UserError(f"{name}: reduce over at least one axis", rule="te.reduce-axis")
    return axes


class Reducer:
    """A commutative reduction built from `fcombine` and `fidentity` (TVM's comm_reducer).

    Called with reduction axes it builds a `Reduce`; called with plain values (`te.max(a, b)`)
    it combines them directly.
    """

    def __init__(self, fcombine: Callable[..., Any], fidentity: Callable[..., Any], name: str):
        self.fcombine, self.fidentity, self.name = fcombine, fidentity, name
        self._cache: dict[tuple[DataType, ...], CommReducer] = {}

    def combiner(self, dtypes: tuple[DataType, ...]) -> CommReducer:
        """The combiner for values of `dtypes` (one per tuple position)."""
        if dtypes not in self._cache:
            lhs = tuple(Var(f"x{i}" if len(dtypes) > 1 else "x", d) for i, d in enumerate(dtypes))
            rhs = tuple(Var(f"y{i}" if len(dtypes) > 1 else "y", d) for i, d in enumerate(dtypes))
            single = len(dtypes) == 1
            result = self.fcombine(lhs[0], rhs[0]) if single else self.fcombine(lhs, rhs)
            identity = self.fidentity(*(str(d) for d in dtypes))
            result = tuple(
                builders.cast(as_expr(r), d)
                for r, d in zip(_as_tuple(result), dtypes, strict=False)
            )
            identity = tuple(
                builders.cast(as_expr(v), d)
                for v, d in zip(_as_tuple(identity), dtypes, strict=False)
            )
            self._cache[dtypes] = CommReducer(lhs, rhs, result, identity, self.name)
        return self._cache[dtypes]

    def __call__(
        self, expr: Any, axis: Any = None, where: Any = None, init: Any = None, *args: Any
    ) -> Any:
        if axis is None or not isinstance(axis, IterVar | list | tuple):
            return self._combine_directly(expr, axis, *args)
        source = tuple(as_expr(e) for e in _as_tuple(expr))
        combiner = self.combiner(tuple(e.dtype for e in source))
        condition = true_condition() if where is None else as_expr(where)
        if not condition.dtype.is_bool:
            raise UserError(
                f"{self.name}: where= must be a bool condition, got `{condition}` of "
                f"{condition.dtype}",
                rule="te.reduce-where",
            )
        inits = ()
        if init is not None:
            inits = tuple(
                builders.cast(as_expr(v), e.dtype)
                for v, e in zip(_as_tuple(init), source, strict=False)
            )
        axes = _axes(axis, self.name)
        outputs = [Reduce(combiner, source, axes, condition, i, inits) for i in range(len(source))]
        return outputs[0] if len(outputs) == 1 else outputs

    def _combine_directly(self, *values: Any) -> PrimExpr:
        items = [as_expr(v) for v in values if v is not None]
        if len(items) < 2:
            raise UserError(
                f"{self.name}: pass reduction axes (axis=k) to reduce, or two or more values to "
                "combine",
                rule="te.reduce-axis",
            )
        result = items[0]
        for item in items[1:]:
            result = self.fcombine(*builders.match_types(result, item))
        return result


def comm_reducer(
    fcombine: Callable[..., Any], fidentity: Callable[..., Any], name: str = "reduce"
) -> Reducer:
    """A reducer from a combining function and an identity function of the dtype(s)."""
    return Reducer(fcombine, fidentity, name)


def lowest(dtype: str) -> PrimExpr:
    """The identity of max: -inf for floats, the smallest value for integers."""
    data_type = DataType.of(dtype)
    return builders.const(float("-inf") if data_type.is_float else data_type.min_value(), data_type)


def highest(dtype: str) -> PrimExpr:
    """The identity of min: +inf for floats, the largest value for integers."""
    data_type = DataType.of(dtype)
    return builders.const(float("inf") if data_type.is_float else data_type.max_value(), data_type)


sum = comm_reducer(lambda x, y: x + y, lambda t: builders.const(0, t), name="sum")  # noqa: A001
prod = comm_reducer(lambda x, y: x * y, lambda t: builders.const(1, t), name="prod")
max = comm_reducer(builders.max_value, lowest, name="max")  # noqa: A001
min = comm_reducer(builders.min_value, highest, name="min")  # noqa: A001


def min_value(dtype: str) -> PrimExpr:
    """The smallest finite value of `dtype` (TVM's te.min_value)."""
    return builders.const(DataType.of(dtype).min_value(), dtype)


def max_value(dtype: str) -> PrimExpr:
    """The largest finite value of `dtype` (TVM's te.max_value)."""
    return builders.const(DataType.of(dtype).max_value(), dtype)
