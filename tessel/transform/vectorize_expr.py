"""Vector versions of the expressions of a loop body, for VectorizeLoop (vectorize_loop.py).

The loop variable becomes a Ramp; operands that do not depend on it stay scalar and are
broadcast where they meet a vector; affine index arithmetic keeps the Ramp form so accesses
stay contiguous. Anything without a safe vector form raises `Unsupported`, and the loop stays
scalar.
"""

from __future__ import annotations

import math

from tessel.arith.modular_set import modular_set
from tessel.ir import builders
from tessel.ir import expr as E
from tessel.ir.expr import PrimExpr
from tessel.ir.functor import pending_post_order
from tessel.ir.node import with_changes
from tessel.support.dtype import DataType
from tessel.tir import builtin
from tessel.tir.buffer import BufferLoad

_PURE_CALLS = {op.name for op in (*builtin.MATH_UNARY.values(), *builtin.MATH_BINARY.values())}


def _lanewise_call(node: E.Call) -> bool:
    """A call computed lane by lane: a pure math function, or a reinterpret between elements of
    one width (a vector of them reinterprets as a whole, bits staying in their lanes)."""
    if not isinstance(node.op, E.Op):
        return False
    if node.op.name in _PURE_CALLS:
        return True
    if node.op is not builtin.reinterpret_op or len(node.args) != 1:
        return False
    src, dst = node.args[0].dtype, node.dtype
    plain = not (src.is_handle or dst.is_handle or src.is_bool or dst.is_bool)
    return plain and src.bits == dst.bits and not src.is_vector and not dst.is_vector


_SAFE_DIVISIONS = (E.Div, E.Mod, E.FloorDiv, E.FloorMod)


class Unsupported(Exception):  # noqa: N818  (control flow, never escapes VectorizeLoop)
    """The loop cannot be vectorized; it stays a scalar loop."""


_LEAVES = (E.Var, E.IntImm, E.FloatImm, E.StringImm)
_LANEWISE_FIELDS: dict[type, tuple[str, ...]] = {
    E.CmpOp: ("a", "b"), E.And: ("a", "b"), E.Or: ("a", "b"), E.Not: ("a",),
    E.Select: ("condition", "true_value", "false_value"),
}  # fmt: skip


class ExprVectorizer:
    """Vector versions of expressions: results are scalar when they do not depend on the loop
    variable, else of `lanes` lanes."""

    def __init__(self, var: E.Var, ramp: E.Ramp, lanes: int) -> None:
        self.var, self.ramp, self.lanes = var, ramp, lanes
        # Masks the vector loads: lanes it disables must not touch memory (padding lanes of a
        # chunk lie past the loop's end, maybe past the buffer's).
        self.predicate: PrimExpr | None = None
        # Masks the lane-invariant loads (one element for every lane): the part of `predicate`
        # that may disable every lane (a guard), under which the scalar loop never reads it.
        self.invariant_predicate: PrimExpr | None = None
        # The vector versions made in the outermost `visit` call in progress (its operands
        # first, with an explicit stack: a fused chain is thousands of levels deep); emptied
        # when that call returns, since VectorizeLoop changes the masks between calls.
        self._done: dict[PrimExpr, PrimExpr] = {}
        self._open = 0  # `visit` calls in progress

    def broadcast(self, value: PrimExpr) -> PrimExpr:
        """`value` as a vector of `lanes` lanes (a scalar is broadcast)."""
        return value if value.dtype.is_vector else E.Broadcast(value, self.lanes)

    def visit(self, node: PrimExpr) -> PrimExpr:
        """The vector (or, when independent of the loop variable, scalar) version of `node`."""
        done = self._done.get(node)
        if done is not None:
            return done
        self._open += 1
        try:
            for sub in pending_post_order(node, _lanewise_operands, self._done.__contains__):
                self._done[sub] = self._visit_node(sub)
            return self._done[node]
        finally:
            self._open -= 1
            if self._open == 0:
                self._done.clear()

    def _visit_node(self, node: PrimExpr) -> PrimExpr:  # noqa: C901 - one dispatch over the expression kinds
        """The version of `node` alone: its lane-wise operands have theirs already."""
        if node is self.var:
            return self.ramp
        if isinstance(node, _LEAVES):
            return node
        if node.dtype.is_vector:
            raise Unsupported
        if isinstance(node, E.BinaryOp):
            return self._binary(node)
        if isinstance(node, BufferLoad):
            return self._load(node)
        if isinstance(node, E.Cast):
            value = self.visit(node.value)
            if isinstance(value, E.Ramp) and _widens_integer(value.dtype, node.dtype):
                # An int32 loop variable in an int64 index (a symbolic extent's): the ramp of
                # the widened base, so the access stays a contiguous one.
                scalar = node.dtype.with_lanes(1)
                base = builders.cast(value.base, scalar)
                return E.Ramp(base, builders.cast(value.stride, scalar), value.lanes)
            return E.Cast(node.dtype.with_lanes(value.dtype.lanes), value)
        if isinstance(node, E.Call) and node.op is builtin.if_then_else_op:
            return self._if_then_else(node)
        if isinstance(node, E.Call):
            return self._call(node)
        for kind, fields in _LANEWISE_FIELDS.items():
            if isinstance(node, kind):
                return self._lanewise(node, fields)
        raise Unsupported

    def _lanewise(self, node: PrimExpr, fields: tuple[str, ...]) -> PrimExpr:
        parts = {name: self.visit(getattr(node, name)) for name in fields}
        if not any(p.dtype.is_vector for p in parts.values()):
            return with_changes(node, **parts)
        return type(node)(**{name: self.broadcast(p) for name, p in parts.items()})

    def _call(self, node: E.Call) -> PrimExpr:
        if not _lanewise_call(node):
            raise Unsupported
        args = [self.visit(a) for a in node.args]
        if not any(a.dtype.is_vector for a in args):
            return with_changes(node, args=tuple(args))
        vector_args = tuple(self.broadcast(a) for a in args)
        return E.Call(node.dtype.with_lanes(self.lanes), node.op, vector_args)

    def _if_then_else(self, node: E.Call) -> PrimExpr:
        """`if_then_else(c, a, b)` reads only the taken branch's memory (a padding copy reads
        its input only inside the bounds). Under a condition every lane shares: the same call
        on vector branches, a C conditional, as lazy as the scalar one. Under one that varies
        by lane: a Select of the branches, each one's loads masked by the lanes that take it."""
        condition = self.visit(node.args[0])
        if not condition.dtype.is_vector:
            taken, other = self.visit(node.args[1]), self.visit(node.args[2])
            if not (taken.dtype.is_vector or other.dtype.is_vector):
                return with_changes(node, args=(condition, taken, other))
            branches = (self.broadcast(taken), self.broadcast(other))
            return E.Call(node.dtype.with_lanes(self.lanes), node.op, (condition, *branches))
        taken = self._masked(condition, node.args[1])
        other = self._masked(E.Not(condition), node.args[2])
        return E.Select(condition, self.broadcast(taken), self.broadcast(other))

    def _masked(self, mask: PrimExpr, node: PrimExpr) -> PrimExpr:
        """The vector version of `node` with every load it makes also masked by `mask` (a
        load every lane shares included: `mask` may disable all of them)."""
        saved = self.predicate, self.invariant_predicate, self._done
        self.predicate = mask if self.predicate is None else E.And(self.predicate, mask)
        self.invariant_predicate = self.predicate
        self._done = {}  # versions under this mask are not those outside it
        try:
            return self.visit(node)
        finally:
            self.predicate, self.invariant_predicate, self._done = saved

    def _binary(self, node: E.BinaryOp) -> PrimExpr:
        a, b = self.visit(node.a), self.visit(node.b)
        if not (a.dtype.is_vector or b.dtype.is_vector):
            return with_changes(node, a=a, b=b)
        ramp = _affine_ramp(node, a, b)
        if ramp is not None:
            return ramp
        within = _division_within_block(node, a, b)
        if within is not None:
            return within
        if isinstance(node, _SAFE_DIVISIONS) and node.dtype.is_integer and _may_trap(node.b):
            raise Unsupported  # a divisor that may be 0 or -1 needs the checked scalar helpers
        return type(node)(self.broadcast(a), self.broadcast(b))

    def _load(self, node: BufferLoad) -> PrimExpr:
        if node.predicate is not None or len(node.indices) != 1:
            raise Unsupported
        if node.buffer.dtype.is_vector or node.buffer.dtype.is_bool:
            raise Unsupported
        index = self.visit(node.indices[0])
        if index.dtype.is_vector:
            return BufferLoad(node.buffer, (index,), self.predicate, span=node.span)
        if self.invariant_predicate is None:
            return with_changes(node, indices=(index,))
        # Read by every enabled lane: when the guard disables them all (`b[i]` past the end
        # of `b` under `if i < 8`), nothing may read it.
        lanes = E.Broadcast(index, self.lanes)
        return BufferLoad(node.buffer, (lanes,), self.invariant_predicate, span=node.span)


def _widens_integer(source: DataType, target: DataType) -> bool:
    """A cast from a signed integer type to a wider signed one (values unchanged)."""
    return source.is_int and target.is_int and target.bits > source.bits


def _lanewise_operands(node: PrimExpr) -> tuple[PrimExpr, ...]:
    """The operands `visit` vectorizes under the same masks before `node` (not an
    if_then_else's branches, which have masks of their own, nor a load's index)."""
    if isinstance(node, E.BinaryOp):
        return (node.a, node.b)
    if isinstance(node, E.Cast):
        return (node.value,)
    if isinstance(node, E.Call):
        return node.args if _lanewise_call(node) else ()
    for kind, fields in _LANEWISE_FIELDS.items():
        if isinstance(node, kind):
            return tuple(getattr(node, name) for name in fields)
    return ()


def _affine_ramp(node: E.BinaryOp, a: PrimExpr, b: PrimExpr) -> E.Ramp | None:
    """`a op b` as a Ramp when it is affine in the lanes, so accesses stay contiguous."""
    if isinstance(node, E.Add | E.Sub):
        if isinstance(a, E.Ramp) and not b.dtype.is_vector:
            base = a.base + b if isinstance(node, E.Add) else a.base - b
            return E.Ramp(base, a.stride, a.lanes)
        if isinstance(node, E.Add) and isinstance(b, E.Ramp) and not a.dtype.is_vector:
            return E.Ramp(a + b.base, b.stride, b.lanes)
        if isinstance(a, E.Ramp) and isinstance(b, E.Ramp):
            return E.Ramp(type(node)(a.base, b.base), type(node)(a.stride, b.stride), a.lanes)
    if isinstance(node, E.Mul):
        if isinstance(a, E.Ramp) and not b.dtype.is_vector:
            return E.Ramp(a.base * b, a.stride * b, a.lanes)
        if isinstance(b, E.Ramp) and not a.dtype.is_vector:
            return E.Ramp(a * b.base, a * b.stride, b.lanes)
    return None


def _division_within_block(node: E.BinaryOp, a: PrimExpr, b: PrimExpr) -> PrimExpr | None:
    """`Ramp(x, s, n) // c` and `% c` when the lanes never cross a multiple of c (x's residues
    mod c, from its modular set, leave room for (n - 1) * s more): `x // c` in every lane and
    `Ramp(x % c, s, n)`, so a reshape's index stays one contiguous vector instead of a division
    per lane (MiniLM's head transposes took 80 us for 49152 elements)."""
    if not isinstance(node, E.FloorDiv | E.FloorMod) or not isinstance(a, E.Ramp):
        return None
    if not isinstance(b, E.IntImm) or b.value <= 0:
        return None
    if not isinstance(a.stride, E.IntImm) or a.stride.value < 0:
        return None
    residues = modular_set(a.base)
    step = math.gcd(residues.coeff, b.value)  # coeff 0 (a constant): step = c, one residue
    largest = residues.base % b.value if step == b.value else b.value - step + residues.base % step
    if largest + (a.lanes - 1) * a.stride.value >= b.value:
        return None
    if isinstance(node, E.FloorDiv):
        return E.FloorDiv(a.base, b)  # the same in every lane: scalar, broadcast where needed
    return E.Ramp(E.FloorMod(a.base, b), a.stride, a.lanes)


def _may_trap(divisor: PrimExpr) -> bool:
    """C traps on integer division by 0, and by -1 of the type's minimum (c_prelude.py)."""
    return not isinstance(divisor, E.IntImm) or divisor.value in (0, -1)
