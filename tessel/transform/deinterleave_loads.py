"""DeinterleaveLoads: a vector load of every second element (8 or 16 lanes of 4 bytes: a
stride-2 pooling window, a strided slice) becomes `tessel.deinterleaved_load(load)`, the load
with its index written `Ramp(base, 2, lanes)`.

The C backend prints that form as two masked contiguous loads of the span of the even elements
(each enabling only its even lanes, and no lane whose result lane is disabled) and one shuffle
keeping the even lanes (vpermt2ps on AVX-512), instead of a gather of one element per lane. The
value is the load's: only how C reads it changes, and no element outside the ones the load
reads is touched. Other loads are left alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel.ir import builders
from tessel.ir import expr as E
from tessel.ir.node import with_changes
from tessel.ir.transform import PassContext
from tessel.tir import builtin
from tessel.tir.analysis.vector_index import affine_lanes
from tessel.tir.buffer import BufferLoad
from tessel.tir.function import PrimFunc
from tessel.transform.expr_rewrite import ExprRewriter
from tessel.transform.prim_func_pass import PrimFuncPass

# (lanes, bytes per element) the C prelude has masked loads for (tessel_masked_load4xN).
DEINTERLEAVED_SHAPES = frozenset({(8, 4), (16, 4)})


@dataclass(frozen=True)
class DeinterleaveLoads(PrimFuncPass):
    """Mark each stride-2 vector load of 8 or 16 four-byte lanes as a deinterleaved load."""

    name: ClassVar[str] = "deinterleave_loads"

    def transform(self, func: PrimFunc, ctx: PassContext) -> PrimFunc:
        return with_changes(func, body=_Deinterleaver().visit(func.body))


class _Deinterleaver(ExprRewriter):
    def operands(self, node: E.PrimExpr) -> tuple[E.PrimExpr, ...]:
        if isinstance(node, E.Call) and node.op is builtin.deinterleaved_load_op:
            return ()  # marked already (the pass ran before)
        return super().operands(node)

    def rewrite(self, node: E.PrimExpr) -> E.PrimExpr:
        if not isinstance(node, BufferLoad):
            return node
        ramp = stride_two_index(node)
        if ramp is None:
            return node
        load = with_changes(node, indices=(*node.indices[:-1], ramp))
        return builtin.deinterleaved_load(load)


def stride_two_index(load: BufferLoad) -> E.Ramp | None:
    """The last index of `load` as `Ramp(base, 2, lanes)` when the load reads every second
    element in a shape the C prelude has masked loads for; else None."""
    if (load.dtype.lanes, load.dtype.element.itemsize) not in DEINTERLEAVED_SHAPES:
        return None
    if not load.indices or not load.indices[-1].dtype.is_vector:
        return None
    affine = affine_lanes(load.indices[-1])
    if affine is None or not builders.is_const_int(affine[1], 2):
        return None
    if isinstance(load.indices[-1], E.Ramp):
        return load.indices[-1]
    return E.Ramp(affine[0], affine[1], load.dtype.lanes)
