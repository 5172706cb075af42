"""Building tensor expressions: placeholder, compute, reduce_axis, var (TVM's te functions)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from tessel.ir import builders
from tessel.ir.expr import IntImm, PrimExpr, Range, SizeVar, Var
from tessel.ir.functor import post_order
from tessel.support.dtype import DataType
from tessel.support.errors import UserError
from tessel.te.tensor import ComputeOp, PlaceholderOp, Tensor, TensorIterVar, as_expr
from tessel.tir.block import IterVarType
from tessel.tir.reduce_expr import Reduce, same_reduction


def var(name: str = "tindex", dtype: str = "int32") -> Var:
    """A symbolic scalar (a shape variable or a scalar parameter)."""
    return Var(name, DataType.of(dtype))


def size_var(name: str = "size", dtype: str = "int32") -> SizeVar:
    """A symbolic size, known to be non-negative."""
    return SizeVar(name, DataType.of(dtype))


def const(value: Any, dtype: str | None = None) -> PrimExpr:
    """A constant (int32, float32 or bool by default, as TVM's te.const)."""
    return builders.const(value, dtype)


def _shape(shape: Any, what: str) -> tuple[PrimExpr, ...]:
    items = shape if isinstance(shape, list | tuple) else (shape,)
    extents = tuple(as_expr(e) for e in items)
    for position, extent in enumerate(extents):
        if not extent.dtype.is_integer or extent.dtype.is_vector:
            raise UserError(
                f"{what}: extent {position} of the shape is `{extent}` of {extent.dtype}; "
                "extents are integers",
                rule="te.shape",
            )
        if isinstance(extent, IntImm) and extent.value < 0:
            raise UserError(
                f"{what}: extent {position} of the shape is negative ({extent.value})",
                rule="te.shape",
            )
    return extents


def placeholder(shape: Any, dtype: str = "float32", name: str = "placeholder") -> Tensor:
    """An input tensor of `shape` and `dtype`."""
    extents = _shape(shape, f"placeholder `{name}`")
    return PlaceholderOp(name, extents, str(DataType.of(dtype))).output(0)


def reduce_axis(
    dom: Any, name: str = "rv", thread_tag: str = "", span: Any = None
) -> TensorIterVar:
    """A reduction axis over `dom`: an extent, `(begin, end)`, or a Range."""
    del thread_tag
    if isinstance(dom, Range):
        begin, extent = dom.min, dom.extent
    elif isinstance(dom, list | tuple):
        if len(dom) != 2:
            raise UserError(
                f"reduce_axis `{name}`: dom is (begin, end), got {dom!r}", rule="te.reduce_axis"
            )
        begin, end = as_expr(dom[0]), as_expr(dom[1])
        begin, end = builders.match_types(begin, end)
        extent = end - begin
    else:
        extent = as_expr(dom)
        begin = builders.const(0, extent.dtype)
    return TensorIterVar(
        Range(begin, extent), Var(name, extent.dtype), IterVarType.COMM_REDUCE, span=span
    )


def _axis_names(fcompute: Callable, ndim: int, name: str) -> list[str]:
    """The names of fcompute's arguments (`i0, i1, ...` for *args), checked against the rank."""
    parameters = list(inspect.signature(fcompute).parameters.values())
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters):
        return [f"i{d}" for d in range(ndim)]
    positional = [p for p in parameters if p.default is inspect.Parameter.empty]
    if len(positional) != ndim:
        raise UserError(
            f"compute `{name}`: fcompute takes {len(positional)} arguments but the shape has "
            f"{ndim} dimensions",
            rule="te.compute-arity",
            hint="fcompute takes one index per output dimension (or *indices)",
        )
    return [p.name for p in positional]


def compute(
    shape: Any,
    fcompute: Callable[..., Any],
    name: str = "compute",
    tag: str = "",
    attrs: dict[str, Any] | None = None,
    varargs_names: Sequence[str] | None = None,
) -> Any:
    """Tensors of `shape` whose element at each index is `fcompute(*index)` (a list of tensors
    when fcompute returns several values)."""
    extents = _shape(shape, f"compute `{name}`")
    names = list(varargs_names) if varargs_names else _axis_names(fcompute, len(extents), name)
    axis = tuple(
        TensorIterVar(Range(builders.const(0, e.dtype), e), Var(n, e.dtype), IterVarType.DATA_PAR)
        for n, e in zip(names, extents, strict=True)
    )
    result = fcompute(*(iv.var for iv in axis))
    multiple = isinstance(result, list | tuple)
    body = tuple(as_expr(e) for e in (result if multiple else (result,)))
    _check_body(name, body)
    op = ComputeOp(name, tag, attrs, axis, body)
    return list(op.outputs) if multiple else op.output(0)


def _check_body(name: str, body: tuple[PrimExpr, ...]) -> None:
    """TVM's rules: reductions only at the top, and all outputs the same reduction."""
    if not body:
        raise UserError(f"compute `{name}`: fcompute returned no values", rule="te.compute-empty")
    reductions = [e for e in body if isinstance(e, Reduce)]
    if reductions and len(reductions) != len(body):
        raise UserError(
            f"compute `{name}`: either every output is a reduction or none is",
            rule="te.reduce-mixed",
        )
    if reductions and not all(same_reduction(reductions[0], r) for r in reductions):
        raise UserError(
            f"compute `{name}`: the outputs of one compute must be the same reduction "
            "(one combiner, source, axis and condition)",
            rule="te.reduce-mixed",
        )
    for expr in body:
        parts = (
            expr.source + expr.initial_values() + (expr.condition,)
            if isinstance(expr, Reduce)
            else (expr,)
        )
        for part in parts:
            if any(isinstance(node, Reduce) for node in post_order(part)):
                raise UserError(
                    f"compute `{name}`: a reduction (te.sum, te.max, ...) must be the whole "
                    "value of the compute, not part of a larger expression",
                    rule="te.reduce-not-top-level",
                    hint="compute the reduction into its own tensor, then use that tensor",
                )
