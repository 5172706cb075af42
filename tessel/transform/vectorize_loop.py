"""VectorizeLoop: turn a vectorized loop into vector statements (TVM's
VectorizeLoop), predicated where the extent does not fill the vectors: never a scalar tail.

A loop is cut into chunks of `chunk` iterations, each one vector of `lanes` lanes (the next
power of two, as GCC vector types need), and the loop variable of a chunk becomes
`Ramp(start, 1, lanes)`:

- `vector_length` annotation N (`Schedule.vectorize(loop, vector_length=N)`): chunks of N under
  an outer serial loop, exactly what `split(loop, [None, N])` and vectorizing the inner loop
  give, so both spellings lower to the same code;
- no annotation, a power-of-two extent up to 64: one vector of that many lanes;
- no annotation, any other extent: one vector padded to the next power of two when the extent
  fits the target's vector width (`vector_bytes` of the widest element accessed), else chunks
  of that width under an outer serial loop;
- a run-time extent (a shape symbol's): chunks of the target's width (or N) under an outer
  loop of `(extent + width - 1) // width` chunks, every chunk predicated on the extent
  (PeelVectorTails then runs the whole ones unpredicated).

Lanes past the end (the padding of a chunk, the lanes of the last chunk beyond the extent) are
disabled by a predicate on every load and store, so they never touch memory. A body guarded by
one `if` (what a non-divisible split leaves after lowering: `if i_0 * 8 + i_1 < 127: ...`)
adds its condition to that predicate; a load every lane shares (`b[i]` under `if i < 8`) is
masked by that condition alone, since it may disable every lane. Anything this pass cannot
vectorize safely (inner loops, calls without a vector version, stores that could carry a
dependence from one iteration to the next, bool buffers) stays a scalar loop, of
kind SERIAL (its annotations kept); it never fails.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from tessel.ir import builders
from tessel.ir import expr as E
from tessel.ir.builders import conjuncts, is_const_int
from tessel.ir.expr import PrimExpr
from tessel.ir.functor import Mutator, mentions, post_order
from tessel.ir.node import Node, with_changes
from tessel.ir.structural import structural_equal
from tessel.ir.substitute import substitute
from tessel.ir.transform import PassContext
from tessel.support.errors import UserError
from tessel.support.frozen_map import FrozenMap
from tessel.tir import stmt as S
from tessel.tir.buffer import BufferLoad
from tessel.tir.function import PrimFunc
from tessel.tir.loop_annotations import MAX_VECTOR_LENGTH, VECTOR_LENGTH
from tessel.transform.prim_func_pass import PrimFuncPass
from tessel.transform.vectorize_expr import ExprVectorizer, Unsupported

_MAX_LANES = MAX_VECTOR_LENGTH  # GCC vector types need a power-of-two size; wider gains nothing


@dataclass(frozen=True)
class VectorizeLoop(PrimFuncPass):
    """Replace each vectorizable `T.vectorized` loop by vector (possibly predicated) accesses."""

    name: ClassVar[str] = "vectorize_loop"
    # The chunk width, in bytes of the widest element, of a loop without `vector_length` that
    # one vector cannot cover: 32 (8 float32 lanes) is AVX2's register, the width GCC prefers
    # on x86 even with AVX-512; 64-byte chunks ran slower on rows not 64-byte aligned
    # (benchmarks/vectorize_tail.py).
    vector_bytes: int = 32

    def __post_init__(self) -> None:
        if self.vector_bytes < 2:
            raise UserError("vector_bytes must be at least 2", rule="vectorize_loop.vector-bytes")

    def transform(self, func: PrimFunc, ctx: PassContext) -> PrimFunc:
        return with_changes(func, body=_LoopVectorizer(self.vector_bytes).visit(func.body))


class _LoopVectorizer(Mutator):
    def __init__(self, vector_bytes: int) -> None:
        super().__init__()
        self.vector_bytes = vector_bytes

    def visit_For(self, loop: S.For) -> Node:
        visited = self.generic_visit(loop)
        assert isinstance(visited, S.For)
        if visited.kind is not S.ForKind.VECTORIZED:
            return visited
        try:
            return _vectorize(visited, _plan(visited, self.vector_bytes))
        except Unsupported:
            return with_changes(visited, kind=S.ForKind.SERIAL)


@dataclass(frozen=True)
class _Plan:
    """Chunks of `chunk` iterations, each one vector of `lanes` lanes; `outer` when the chunks
    run under an outer loop (else the loop is one chunk)."""

    chunk: int
    lanes: int
    outer: bool


def _plan(loop: S.For, vector_bytes: int) -> _Plan:
    requested = loop.annotations.get(VECTOR_LENGTH)
    if requested is not None and (
        not isinstance(requested, int) or isinstance(requested, bool) or requested < 2
    ):
        raise Unsupported  # Schedule.vectorize refuses these; a hand-written one stays scalar
    if not isinstance(loop.extent, E.IntImm):
        # A run-time extent: chunks of the target's width, the last one predicated.
        chunk = requested if requested is not None else _target_lanes(loop.body, vector_bytes)
        lanes = _next_power_of_two(chunk)
        if lanes > _MAX_LANES:
            raise Unsupported
        return _Plan(chunk, lanes, outer=True)
    extent = loop.extent.value
    if requested is not None:
        chunk = requested
    elif _is_power_of_two(extent) and extent <= _MAX_LANES:
        chunk = extent
    else:
        chunk = min(extent, _target_lanes(loop.body, vector_bytes))
    lanes = _next_power_of_two(chunk)
    if lanes < 2 or lanes > _MAX_LANES:
        raise Unsupported
    return _Plan(chunk, lanes, outer=requested is not None or chunk < extent)


def _is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _next_power_of_two(n: int) -> int:
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def _target_lanes(body: S.Stmt, vector_bytes: int) -> int:
    """How many elements of the widest type the body accesses fill one target vector."""
    sizes = [
        node.buffer.dtype.itemsize
        for node in post_order(body)
        if isinstance(node, BufferLoad | S.BufferStore)
    ]
    return max(2, min(_MAX_LANES, vector_bytes // max(sizes, default=4)))


def _vectorize(loop: S.For, plan: _Plan) -> S.Stmt:
    if not plan.outer:
        return _vector_statement(loop.loop_var, loop.min, plan, loop.body, [])
    # The same loops as `split(loop, [None, chunk])` and the same guard as the split's
    # `T.where`, so both spellings lower alike.
    var, extent = loop.loop_var, loop.extent
    chunk_var, lane_var = E.Var(f"{var.name}_0", var.dtype), E.Var(f"{var.name}_1", var.dtype)
    offset = chunk_var * plan.chunk + lane_var
    index = offset if is_const_int(loop.min, 0) else loop.min + offset
    constant = isinstance(extent, E.IntImm)
    in_range = [offset < extent] if not constant or extent.value % plan.chunk else []
    body = substitute(loop.body, {var: index})
    zero = E.IntImm(var.dtype, 0)
    inner = _vector_statement(lane_var, zero, plan, body, in_range)
    chunks = (
        E.IntImm(var.dtype, max(0, -(-extent.value // plan.chunk)))
        if constant
        else builders.floordiv(extent + (plan.chunk - 1), plan.chunk)
    )
    kept = FrozenMap({k: v for k, v in loop.annotations.items() if k != VECTOR_LENGTH})
    return S.For(chunk_var, zero, chunks, S.ForKind.SERIAL, inner, annotations=kept, span=loop.span)


def _vector_statement(
    var: E.Var, start: PrimExpr, plan: _Plan, body: S.Stmt, conditions: list[PrimExpr]
) -> S.Stmt:
    """`body` for `var` in `start + [0, lanes)` as vector statements; lanes where a condition
    fails (or past `chunk`) are masked."""
    guard = None
    if isinstance(body, S.IfThenElse) and body.else_case is None:
        guard, body = body.condition, body.then_case
    if plan.lanes > plan.chunk:  # padding lanes
        end = plan.chunk if is_const_int(start, 0) else start + plan.chunk
        conditions = [var < end, *conditions]
    # The padding and range conditions always keep the first lane; the guard may not.
    lane_keeping = len(conditions)
    if guard is not None:
        conditions = [*conditions, *conjuncts(guard)]
    stores = _stores_of(body, var)
    _check_independent(stores, conditions, var)
    vec = ExprVectorizer(var, E.Ramp(start, E.IntImm(start.dtype, 1), plan.lanes), plan.lanes)
    predicate = _predicate(vec, conditions, lane_keeping)
    if predicate is not None and not predicate.dtype.is_vector:
        # Only a loop-invariant guard: it stays an `if` around unmasked vector statements.
        assert guard is not None
        vec.predicate = vec.invariant_predicate = None
        return S.IfThenElse(guard, _rebuilt(body, lambda s: _vector_store(vec, s, None)))
    return _rebuilt(body, lambda store: _vector_store(vec, store, predicate))


def _predicate(
    vec: ExprVectorizer, conditions: list[PrimExpr], lane_keeping: int
) -> PrimExpr | None:
    """The conjunction of `conditions`, vectorized; the loads of each are masked by the ones
    before it (as `and` would skip them), and `vec` masks later loads by the whole. The first
    `lane_keeping` conditions never disable the first lane, so lane-invariant loads are masked
    only by the others."""
    predicate: PrimExpr | None = None
    invariant: PrimExpr | None = None
    for position, condition in enumerate(conditions):
        _set_masks(vec, predicate, invariant)
        part = vec.visit(condition)
        predicate = _conjoin(vec, predicate, part)
        if position >= lane_keeping:
            invariant = _conjoin(vec, invariant, part)
    _set_masks(vec, predicate, invariant)
    return predicate


def _conjoin(vec: ExprVectorizer, left: PrimExpr | None, right: PrimExpr) -> PrimExpr:
    if left is None:
        return right
    if left.dtype.is_vector or right.dtype.is_vector:
        return E.And(vec.broadcast(left), vec.broadcast(right))
    return E.And(left, right)


def _set_masks(vec: ExprVectorizer, predicate: PrimExpr | None, invariant: PrimExpr | None) -> None:
    vec.predicate = None if predicate is None else vec.broadcast(predicate)
    vec.invariant_predicate = None if invariant is None else vec.broadcast(invariant)


def _vector_store(
    vec: ExprVectorizer, store: S.BufferStore, predicate: PrimExpr | None
) -> S.BufferStore:
    index = vec.visit(store.indices[0])
    if not index.dtype.is_vector:
        raise Unsupported  # every lane would write one element: a reduction, not a map
    value = vec.broadcast(vec.visit(store.value))
    return S.BufferStore(store.buffer, value, (index,), predicate, span=store.span)


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
            if mentions(item.condition, var):
                raise Unsupported
            stores.extend(_stores_of(item.then_case, var))
            continue
        if not isinstance(item, S.BufferStore) or item.predicate is not None:
            raise Unsupported
        if len(item.indices) != 1 or item.buffer.dtype.is_vector or item.buffer.dtype.is_bool:
            raise Unsupported
        stores.append(item)
    return stores


def _check_independent(stores: list[S.BufferStore], conditions: list[PrimExpr], var: E.Var) -> None:
    """Vector execution runs each statement for all lanes before the next: safe when every
    access to a stored buffer uses that store's index (no lane reads another lane's element)."""
    written: dict[E.Var, PrimExpr] = {}
    for store in stores:
        previous = written.setdefault(store.buffer.data, store.indices[0])
        if not structural_equal(previous, store.indices[0]):
            raise Unsupported
        if not mentions(store.indices[0], var):
            raise Unsupported
    roots: list[Node] = [s.value for s in stores] + [s.indices[0] for s in stores]
    for root in [*roots, *conditions]:
        for node in post_order(root):
            if isinstance(node, BufferLoad) and node.buffer.data in written:
                index = written[node.buffer.data]
                if len(node.indices) != 1 or not structural_equal(node.indices[0], index):
                    raise Unsupported
