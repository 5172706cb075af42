"""The lane structure of a vector index: base + lane * stride, as FlattenBuffer and VectorizeLoop
write it (`Broadcast(offset) + Ramp(...) * Broadcast(stride)`); what decides whether a vector
access is contiguous (codegen) or every second element (DeinterleaveLoads)."""

from __future__ import annotations

from tessel.ir import builders
from tessel.ir import expr as E
from tessel.ir.expr import PrimExpr


def affine_lanes(index: PrimExpr) -> tuple[PrimExpr, PrimExpr] | None:
    """(base, stride) when lane k of the vector `index` is base + k * stride; None for other
    forms."""
    if isinstance(index, E.Ramp):
        return index.base, index.stride
    if isinstance(index, E.Broadcast):
        return index.value, builders.const(0, index.value.dtype)
    if isinstance(index, E.Add | E.Mul):
        a, b = affine_lanes(index.a), affine_lanes(index.b)
        if a is None or b is None:
            return None
        if isinstance(index, E.Add):
            return a[0] + b[0], a[1] + b[1]
        if builders.is_const_int(b[1], 0):
            return a[0] * b[0], a[1] * b[0]
        if builders.is_const_int(a[1], 0):
            return a[0] * b[0], a[0] * b[1]
    return None
