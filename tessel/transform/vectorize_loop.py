"""VectorizeLoop: turn a vectorized loop of constant extent into one vector statement (TVM's
VectorizeLoop).

The loop variable becomes `Ramp(min, 1, N)`, loop-invariant operands are broadcast, and each
access whose index depends on the loop variable becomes a vector access. A body guarded by one
`if` (what a non-divisible split leaves after lowering: `if i_0 * 8 + i_1 < 127: B[...] = ...`)
becomes predicated stores and loads whose predicate is the vectorized condition: no scalar tail.

Anything this pass cannot vectorize safely (inner loops, symbolic or non-power-of-two extents,
calls without a vector version, stores that could carry a dependence from one iteration to the
next, bool buffers) stays a scalar loop, of kind SERIAL (its annotations kept); it never fails.
"""

from __future__ import annotations

from collections.abc import Callable

from dataclasses import dataclass
from typing import ClassVar

from tessel.ir import expr as E
from tessel.ir.expr import PrimExpr
from tessel.ir.functor import Mutator, post_order
from tessel.ir.node import Node, with_changes
from tessel.ir.structural import structural_equal
from tessel.ir.transform import PassContext
from tessel.tir import builtin
from tessel.tir import stmt as S
from tessel.tir.buffer import BufferLoad
from tessel.tir.function import PrimFunc
from tessel.transform.prim_func_pass import PrimFuncPass

_MAX_LANES = 64  # GCC vector types need a power-of-two size; wider gains nothing on CPUs
_PURE_CALLS = {op.name for op in (*builtin.MATH_UNARY.values(), *builtin.MATH_BINARY.values())}
_SAFE_DIVISIONS = (E.Div, E.Mod, E.FloorDiv, E.FloorMod)


@dataclass(frozen=True)
class VectorizeLoop(PrimFuncPass):
    """Replace each vectorizable `T.vectorized` loop by vector (possibly predicated) accesses."""

    name: ClassVar[str] = "vectorize_loop"

    def transform(self, func: PrimFunc, ctx: PassContext) -> PrimFunc:
        return with_changes(func, body=_LoopVectorizer().visit(func.body))


class _Unsupported(Exception):  # noqa: N818  (control flow, never escapes the pass)
    """The loop cannot be vectorized; it stays a scalar loop."""


class _LoopVectorizer(Mutator):
    def visit_For(self, loop: S.For) -> Node:
        visited = self.generic_visit(loop)
        assert isinstance(visited, S.For)
        if visited.kind is not S.ForKind.VECTORIZED:
            return visited
        try:
            return _vectorize(visited)
        except _Unsupported:
            return with_changes(visited, kind=S.ForKind.SERIAL)


def _vectorize(loop: S.For) -> S.Stmt:
    if not isinstance(loop.extent, E.IntImm):
        raise _Unsupported
    lanes = loop.extent.value
    if lanes < 2 or lanes > _MAX_LANES or lanes & (lanes - 1):
        raise _Unsupported
    body, guard = loop.body, None
    if isinstance(body, S.IfThenElse) and body.else_case is None:
        guard, body = body.condition, body.then_case
    stores = _stores_of(body, loop.loop_var)
    _check_independent(stores, guard, loop.loop_var)
    vec = _ExprVectorizer(loop.loop_var, E.Ramp(loop.min, _one(loop.min), lanes), lanes)
    predicate = None
    if guard is not None:
        vec_guard = vec.visit(guard)
        if vec_guard.dtype.is_vector:
            predicate, vec.predicate = vec_guard, vec_guard

    def vector_store(store: S.BufferStore) -> S.Stmt:
        index = vec.visit(store.indices[0])
        if not index.dtype.is_vector:
            raise _Unsupported  # every lane would write one element: a reduction, not a map
        value = vec.broadcast(vec.visit(store.value))
        return S.BufferStore(store.buffer, value, (index,), predicate, span=store.span)

    result = _rebuilt(body, vector_store)
    if guard is not None and predicate is None:  # a loop-invariant guard stays an `if`
        result = S.IfThenElse(guard, result)
    return result


def _one(like: PrimExpr) -> PrimExpr:
    return E.IntImm(like.dtype, 1)


def _rebuilt(body: S.Stmt, vector_store: Callable[[S.BufferStore], S.Stmt]) -> S.Stmt:
    """`body` with each store vectorized, keeping the loop-invariant `if`s around them."""
    items = body.seq if isinstance(body, S.SeqStmt) else (body,)
    rebuilt = []
    for item in items:
        if isinstance(item, S.IfThenElse):
            rebuilt.append(S.IfThenElse(item.condition, _rebuilt(item.then_case, vector_store)))
        else:
            assert isinstance(item, S.BufferStore)
            rebuilt.append(vector_store(item))
    return S.SeqStmt.flatten(rebuilt)


def _stores_of(body: S.Stmt, var: E.Var) -> list[S.BufferStore]:
    """The stores of a body made of stores and `if`s that do not depend on `var` (a reduction's
    init under `k == 0`, say); anything else stays scalar."""
    items = body.seq if isinstance(body, S.SeqStmt) else (body,)
    stores = []
    for item in items:
        if isinstance(item, S.IfThenElse) and item.else_case is None:
            if any(node is var for node in post_order(item.condition)):
                raise _Unsupported
            stores.extend(_stores_of(item.then_case, var))
            continue
        if not isinstance(item, S.BufferStore) or item.predicate is not None:
            raise _Unsupported
        if len(item.indices) != 1 or item.buffer.dtype.is_vector or item.buffer.dtype.is_bool:
            raise _Unsupported
        stores.append(item)
    return stores


def _check_independent(stores: list[S.BufferStore], guard: PrimExpr | None, var: E.Var) -> None:
    """Vector execution runs each statement for all lanes before the next: safe when every
    access to a stored buffer uses that store's index (no lane reads another lane's element)."""
    written: dict[E.Var, PrimExpr] = {}
    for store in stores:
        previous = written.setdefault(store.buffer.data, store.indices[0])
        if not structural_equal(previous, store.indices[0]):
            raise _Unsupported
        if not any(node is var for node in post_order(store.indices[0])):
            raise _Unsupported
    roots: list[Node] = [s.value for s in stores] + [s.indices[0] for s in stores]
    if guard is not None:
        roots.append(guard)
    for root in roots:
        for node in post_order(root):
            if isinstance(node, BufferLoad) and node.buffer.data in written:
                index = written[node.buffer.data]
                if len(node.indices) != 1 or not structural_equal(node.indices[0], index):
                    raise _Unsupported


class _ExprVectorizer:
    """Vector versions of expressions: results are scalar when they do not depend on the loop
    variable, else of `lanes` lanes."""

    def __init__(self, var: E.Var, ramp: E.Ramp, lanes: int) -> None:
        self.var, self.ramp, self.lanes = var, ramp, lanes
        self.predicate: PrimExpr | None = None  # masks the vector loads (under a guard)

    def broadcast(self, value: PrimExpr) -> PrimExpr:
        return value if value.dtype.is_vector else E.Broadcast(value, self.lanes)

    def visit(self, node: PrimExpr) -> PrimExpr:
        if node is self.var:
            return self.ramp
        if isinstance(node, E.Var | E.IntImm | E.FloatImm | E.StringImm):
            return node
        if node.dtype.is_vector:
            raise _Unsupported
        if isinstance(node, E.BinaryOp):
            return self._binary(node)
        if isinstance(node, E.CmpOp | E.And | E.Or):
            a, b = self.visit(node.a), self.visit(node.b)
            if not (a.dtype.is_vector or b.dtype.is_vector):
                return with_changes(node, a=a, b=b)
            return type(node)(self.broadcast(a), self.broadcast(b))
        if isinstance(node, E.Not):
            return E.Not(self.visit(node.a))
        if isinstance(node, E.Select):
            parts = [self.visit(p) for p in (node.condition, node.true_value, node.false_value)]
            if not any(p.dtype.is_vector for p in parts):
                return E.Select(*parts)
            return E.Select(*(self.broadcast(p) for p in parts))
        if isinstance(node, E.Cast):
            value = self.visit(node.value)
            return E.Cast(node.dtype.with_lanes(value.dtype.lanes), value)
        if isinstance(node, BufferLoad):
            return self._load(node)
        if isinstance(node, E.Call) and isinstance(node.op, E.Op) and node.op.name in _PURE_CALLS:
            args = [self.visit(a) for a in node.args]
            if not any(a.dtype.is_vector for a in args):
                return with_changes(node, args=tuple(args))
            vector_args = tuple(self.broadcast(a) for a in args)
            return E.Call(node.dtype.with_lanes(self.lanes), node.op, vector_args)
        raise _Unsupported

    def _binary(self, node: E.BinaryOp) -> PrimExpr:
        a, b = self.visit(node.a), self.visit(node.b)
        if not (a.dtype.is_vector or b.dtype.is_vector):
            return with_changes(node, a=a, b=b)
        # Affine index arithmetic keeps the Ramp form, so accesses stay contiguous.
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
        if isinstance(node, _SAFE_DIVISIONS) and node.dtype.is_integer:
            # A divisor that may be 0 (or -1) needs the checked scalar helpers (c_prelude.py).
            if not isinstance(node.b, E.IntImm) or node.b.value in (0, -1):
                raise _Unsupported
        return type(node)(self.broadcast(a), self.broadcast(b))

    def _load(self, node: BufferLoad) -> PrimExpr:
        if node.predicate is not None or len(node.indices) != 1:
            raise _Unsupported
        if node.buffer.dtype.is_vector or node.buffer.dtype.is_bool:
            raise _Unsupported
        index = self.visit(node.indices[0])
        if not index.dtype.is_vector:
            return with_changes(node, indices=(index,))
        return BufferLoad(node.buffer, (index,), self.predicate, span=node.span)
