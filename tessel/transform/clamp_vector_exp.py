"""ClampVectorExp: each vector exp of float32 or float64 becomes `tessel.exp_flush_below(x,
floor)`, exp with every result for an argument at or below `floor` made 0.

Why: glibc's vector exp (libmvec, which the C backend's simd lane loops call) takes a slow
scalar path for every lane whose result is subnormal or zero, and softmax over masked scores
(-1e4) hits it on nearly every lane (9x slower). The C backend clamps the argument to the floor
(just above the log of the smallest normal number, `builtin.EXP_FLOORS`) and then zeroes the
clamped lanes: left at e**-87 they became subnormal once softmax divided them by its sum, and a
matmul reading subnormal probabilities (attention over padded tokens) ran 90x slower.

This changes numerics, so it is a pass, visible in the IR (and after `PrintAfterAll`): results
that would be subnormal or below e**floor are 0, NaN stays NaN, +-inf behave as exp. Scalar exp
is left alone (the scalar libm exp has no slow path worth a compare).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel.ir import expr as E
from tessel.ir.node import with_changes
from tessel.ir.transform import PassContext
from tessel.tir import builtin
from tessel.tir.function import PrimFunc
from tessel.transform.expr_rewrite import ExprRewriter
from tessel.transform.prim_func_pass import PrimFuncPass


@dataclass(frozen=True)
class ClampVectorExp(PrimFuncPass):
    """Rewrite every vector float32/float64 exp into `tessel.exp_flush_below` at its floor."""

    name: ClassVar[str] = "clamp_vector_exp"

    def transform(self, func: PrimFunc, ctx: PassContext) -> PrimFunc:
        return with_changes(func, body=_ExpClamper().visit(func.body))


class _ExpClamper(ExprRewriter):
    def rewrite(self, node: E.PrimExpr) -> E.PrimExpr:
        if not is_clampable_exp(node):
            return node
        (x,) = node.args  # type: ignore[attr-defined]  # a Call of exp
        return builtin.exp_flush_below(x, builtin.EXP_FLOORS[x.dtype.bits])


def is_clampable_exp(node: E.PrimExpr) -> bool:
    """True for a vector exp whose element type has a floor (float32, float64)."""
    return (
        isinstance(node, E.Call)
        and node.op is builtin.MATH_UNARY["exp"]
        and node.dtype.is_vector
        and node.dtype.is_float
        and node.dtype.bits in builtin.EXP_FLOORS
    )
