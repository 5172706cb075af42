"""Gradients through reductions: sum, prod, and max/min by the subgradient of the selected element
(the first one reaching the result, the init before any iteration), with `where=` and `init=`."""

from __future__ import annotations

from dataclasses import dataclass

from tessel.ir import builders
from tessel.ir import expr as E
from tessel.ir.substitute import substitute
from tessel.support.dtype import DataType
from tessel.te.autodiff.derivative import NotDifferentiableError
from tessel.te.operation import compute, reduce_axis
from tessel.te.reduction import min as te_min
from tessel.te.reduction import prod as te_prod
from tessel.te.tensor import ComputeOp, Tensor
from tessel.tir import builtin
from tessel.tir.reduce_expr import CommReducer, Reduce

_KINDS = {E.Add: "sum", E.Mul: "prod", E.Max: "max", E.Min: "min"}


def reducer_kind(reduce: Reduce) -> str:
    """ "sum", "prod", "max" or "min", read from the combiner's expression (not its name)."""
    combiner: CommReducer = reduce.combiner
    if len(combiner.lhs) == 1:
        result, x, y = combiner.result[0], combiner.lhs[0], combiner.rhs[0]
        kind = _KINDS.get(type(result))
        # _KINDS holds binary op types only
        if kind and {id(result.a), id(result.b)} == {id(x), id(y)}:  # type: ignore[attr-defined]
            return kind
    raise NotDifferentiableError(
        f"the reduction `{combiner.name}` is not differentiable (only sum, "
        "prod, max and min reductions are; tuple reductions such as argmax have no gradient)",
        rule="te.gradient.reducer",
    )


@dataclass
class ReductionFactors:
    """What multiplies dY * d(source)/dX at each iteration, and d(init)/dX, for one reduction,
    as conditions (selection masks) and factors."""

    source_conditions: list[E.PrimExpr]
    source_factor: E.PrimExpr | None
    init_conditions: list[E.PrimExpr]
    init_factor: E.PrimExpr | None


def reduction_factors(op: ComputeOp, index: int, kind: str) -> ReductionFactors:
    """The per-iteration factors of reduction `index` of `op` (in op's own axis variables)."""
    reduce: Reduce = op.body[index]  # type: ignore[assignment]  # checked by the caller
    condition = reduce.condition
    if kind == "sum":
        return ReductionFactors([condition], None, [], None)
    if kind in ("max", "min"):
        selected = _selection(op, index)[tuple(iv.var for iv in op.axis)]
        return ReductionFactors(
            [condition, builders.eq(_linear_position(reduce), selected)],
            None,
            [builders.eq(selected, -1)],
            None,
        )
    others = _product_of_others(op, index)[(*(iv.var for iv in op.axis), *_positions(reduce))]
    init = reduce.init[0] if reduce.init else None
    whole = (
        _product_without_init(op, index)[tuple(iv.var for iv in op.axis)]
        if init is not None
        else None
    )
    return ReductionFactors([condition], others if init is None else others * init, [], whole)


def _positions(reduce: Reduce) -> list[E.PrimExpr]:
    return [iv.var - iv.dom.min for iv in reduce.axis]


def _linear_position(reduce: Reduce) -> E.PrimExpr:
    """The iteration's position in the reduction, row-major over the reduction axes."""
    position: E.PrimExpr = builders.const(0, "int32")
    for iv, offset in zip(reduce.axis, _positions(reduce), strict=True):
        position = position * builders.cast(iv.dom.extent, "int32") + builders.cast(offset, "int32")
    return position


def _fresh_axes(reduce: Reduce) -> tuple[list, dict[E.Var, E.PrimExpr]]:
    axes = [
        reduce_axis((iv.dom.min, iv.dom.min + iv.dom.extent), name=iv.var.name)
        for iv in reduce.axis
    ]
    return axes, {iv.var: ax.var for iv, ax in zip(reduce.axis, axes, strict=True)}


def _in_axes(op: ComputeOp, new_axes: tuple[E.Var, ...]) -> dict[E.Var, E.PrimExpr]:
    return {iv.var: v for iv, v in zip(op.axis, new_axes, strict=True)}


def _selection(op: ComputeOp, index: int) -> Tensor:
    """For each output element, the position of the first iteration whose value is the result
    (-1 when the init is, one past the end when none is)."""
    reduce: Reduce = op.body[index]  # type: ignore[assignment]  # checked by the caller
    result = op.output(index)
    big = builders.const(DataType.of("int32").max_value(), "int32")

    def select(*i: E.Var) -> E.PrimExpr:
        axes, fresh = _fresh_axes(reduce)
        mapping = _in_axes(op, i) | fresh
        reached = builders.eq(substitute(reduce.source[0], mapping), result[i])
        where = builders.logical_and(reached, substitute(reduce.condition, mapping))
        init = None
        if reduce.init:
            init_reached = builders.eq(substitute(reduce.init[0], _in_axes(op, i)), result[i])
            init = builtin.if_then_else(init_reached, builders.const(-1, "int32"), big)
        return te_min(
            substitute(_linear_position(reduce), fresh), axis=axes, where=where, init=init
        )

    return compute(
        result.shape, select, name=f"{result.name}_selected", varargs_names=_names(result)
    )


def _product_of_others(op: ComputeOp, index: int) -> Tensor:
    """prod over the reduction of every value but the one at each position (no division, so
    zeros are handled exactly)."""
    reduce: Reduce = op.body[index]  # type: ignore[assignment]  # checked by the caller
    result = op.output(index)
    extents = [iv.dom.extent for iv in reduce.axis]
    names = _names(result) + [f"r{d}" for d in range(len(extents))]

    def others(*indices: E.Var) -> E.PrimExpr:
        spatial, excluded = indices[: len(op.axis)], indices[len(op.axis) :]
        axes, fresh = _fresh_axes(reduce)
        mapping = _in_axes(op, spatial) | fresh
        same = builders.conjunction(
            [
                builders.eq(fresh[iv.var] - iv.dom.min, e)
                for iv, e in zip(reduce.axis, excluded, strict=True)
            ]
        )
        value = builtin.if_then_else(
            same, builders.const(1, result.dtype), substitute(reduce.source[0], mapping)
        )
        return te_prod(value, axis=axes, where=substitute(reduce.condition, mapping))

    return compute(
        (*result.shape, *extents), others, name=f"{result.name}_others", varargs_names=names
    )


def _product_without_init(op: ComputeOp, index: int) -> Tensor:
    reduce: Reduce = op.body[index]  # type: ignore[assignment]  # checked by the caller
    result = op.output(index)

    def whole(*i: E.Var) -> E.PrimExpr:
        axes, fresh = _fresh_axes(reduce)
        mapping = _in_axes(op, i) | fresh
        return te_prod(
            substitute(reduce.source[0], mapping),
            axis=axes,
            where=substitute(reduce.condition, mapping),
        )

    return compute(result.shape, whole, name=f"{result.name}_product", varargs_names=_names(result))


def _names(tensor: Tensor) -> list[str]:
    return [f"ax{d}" for d in range(tensor.ndim)]
