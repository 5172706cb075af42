"""Where, and over which index ranges, a block-level body touches the buffers it allocates.

Shared by PlanBufferAllocation (where to allocate) and CompactBufferAllocation (how much).
Each access is recorded with the For / BlockRealize nodes around it and its index bounds with
block iterators replaced by their bindings, so a caller can relax it over the loops below any
scope on its path (TVM's BufferAccessRegionCollector, in a simpler form).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tessel.arith.analyzer import Analyzer
from tessel.arith.int_set import IntSet
from tessel.ir import builders
from tessel.ir.expr import Let, PrimExpr, Range, Var
from tessel.ir.functor import Visitor, post_order
from tessel.ir.structural import same_expr
from tessel.ir.substitute import substitute
from tessel.tir.block import Block, BlockRealize
from tessel.tir.buffer import Buffer, BufferLoad, BufferRegion
from tessel.tir.stmt import BufferStore, For, LetStmt, Stmt

# Per dimension, the inclusive (min, max) of the indices, still over the loops of the path.
Bounds = tuple[tuple[PrimExpr, PrimExpr], ...]
Region = tuple[tuple[PrimExpr, PrimExpr], ...]


@dataclass(frozen=True)
class Access:
    """One access (or declared region) of a buffer and the scopes (For, BlockRealize) around
    it, outermost first."""

    bounds: Bounds
    path: tuple[Stmt, ...]


@dataclass
class BufferUses:
    """The accesses of the tracked buffers; `opaque` buffers are used in ways that cannot be
    rewritten (through a match_buffer, or their data pointer directly)."""

    accesses: dict[Buffer, list[Access]] = field(default_factory=dict)
    opaque: set[Buffer] = field(default_factory=set)
    let_vars: set[Var] = field(default_factory=set)  # bounds do not see through their values


def collect_uses(
    body: Stmt, buffers: tuple[Buffer, ...], path: tuple[Stmt, ...] = ()
) -> BufferUses:
    """The uses of `buffers` in `body`; `path` is the scope list `body` sits in."""
    collector = _UseCollector(buffers, path)
    collector.visit(body)
    return collector.uses


class _UseCollector(Visitor):
    def __init__(self, buffers: tuple[Buffer, ...], path: tuple[Stmt, ...]) -> None:
        self.uses = BufferUses({b: [] for b in buffers})
        self.by_data = {b.data: b for b in buffers}
        self.path = list(path)
        self.bindings: dict[Var, PrimExpr] = {}

    def _record(self, buffer: Buffer, bounds: Bounds, path: list[Stmt]) -> None:
        if buffer in self.uses.accesses:
            bound = tuple(self._bound(lo, hi) for lo, hi in bounds)
            self.uses.accesses[buffer].append(Access(bound, tuple(path)))

    def _bound(self, lo: PrimExpr, hi: PrimExpr) -> tuple[PrimExpr, PrimExpr]:
        """The bounds over the loops; a load's or store's one index stays one object, so that
        relaxed_region analyses it once."""
        low = substitute(lo, self.bindings)
        return low, low if hi is lo else substitute(hi, self.bindings)

    def visit_Var(self, var: Var) -> None:
        buffer = self.by_data.get(var)
        if buffer is not None:
            self.uses.opaque.add(buffer)

    def visit_Buffer(self, buffer: Buffer) -> None:
        """A buffer node is a reference, not a use of its data pointer."""

    def visit_BufferLoad(self, node: BufferLoad) -> None:
        self.generic_visit(node)
        self._record(node.buffer, tuple((i, i) for i in node.indices), self.path)

    def visit_BufferStore(self, node: BufferStore) -> None:
        self.generic_visit(node)
        self._record(node.buffer, tuple((i, i) for i in node.indices), self.path)

    def visit_For(self, node: For) -> None:
        self.visit(node.min)
        self.visit(node.extent)
        self.path.append(node)
        self.visit(node.body)
        self.path.pop()

    def visit_BlockRealize(self, node: BlockRealize) -> None:
        for value in (*node.iter_values, node.predicate):
            self.visit(value)
        block = node.block
        for iv, value in zip(block.iter_vars, node.iter_values, strict=True):
            self.bindings[iv.var] = substitute(value, self.bindings)
        for match in block.match_buffers:
            if match.source.buffer in self.uses.accesses:
                self.uses.opaque.add(match.source.buffer)
            self.visit(match.source)
        self.path.append(node)
        # Declared regions lie in the block's scope (where its own alloc_buffers are visible).
        for region in (*block.reads, *block.writes):
            self._record(region.buffer, _region_bounds(region), self.path)
        if block.init is not None:
            self.visit(block.init)
        self.visit(block.body)
        self.path.pop()

    def visit_Block(self, node: Block) -> None:
        """A bare block (the root): only its body holds uses."""
        if node.init is not None:
            self.visit(node.init)
        self.visit(node.body)

    def visit_LetStmt(self, node: LetStmt) -> None:
        self.uses.let_vars.add(node.var)
        self.generic_visit(node)

    def visit_Let(self, node: Let) -> None:
        self.uses.let_vars.add(node.var)
        self.generic_visit(node)

    def visit_BufferRegion(self, node: BufferRegion) -> None:
        for rng in node.region:
            self.visit(rng)


def _region_bounds(region: BufferRegion) -> Bounds:
    return tuple((r.min, r.min + r.extent - 1) for r in region.region)


def relaxed_region(
    uses: BufferUses, buffer: Buffer, scope: Stmt | None, analyzer: Analyzer
) -> Region | None:
    """The union of `accesses`, each relaxed over the loops on its path below `scope` (all of
    its loops when `scope` is None), as inclusive bounds free of any variable defined below
    `scope`; None when no such bounds exist."""
    union: list[tuple[PrimExpr, PrimExpr]] | None = None
    loop_sets: dict[int, IntSet] = {}  # each loop's range, made a set once for every access
    # The set of a bound under a nest of loops, by identity of both: a load and a store of one
    # element share their index expressions, and most accesses of a tile repeat another's.
    bound_sets: dict[tuple[int, tuple[int, ...]], tuple[PrimExpr, IntSet]] = {}
    for access in uses.accesses[buffer]:
        inner = access.path if scope is None else access.path[_index(access.path, scope) + 1 :]
        loops = [s for s in inner if isinstance(s, For)]
        dom = {loop.loop_var: _loop_set(loop, loop_sets, analyzer) for loop in loops}
        nest = tuple(id(loop) for loop in loops)
        bounds = []
        for lo, hi in access.bounds:
            lo_set = _bound_set(lo, nest, dom, bound_sets, analyzer)
            hi_set = lo_set if hi is lo else _bound_set(hi, nest, dom, bound_sets, analyzer)
            if lo_set.min_value is None or hi_set.max_value is None:
                return None
            bounds.append((lo_set.min_value, hi_set.max_value))
        if any(_uses_inner_vars(e, inner, uses.let_vars) for pair in bounds for e in pair):
            return None
        if union is None:
            union = bounds
        else:
            union = [_hull(a, b, analyzer) for a, b in zip(union, bounds, strict=True)]
    return None if union is None else tuple(union)


def _bound_set(
    expr: PrimExpr,
    nest: tuple[int, ...],
    dom: dict[Var, IntSet],
    sets: dict[tuple[int, tuple[int, ...]], tuple[PrimExpr, IntSet]],
    analyzer: Analyzer,
) -> IntSet:
    """The set of `expr` over `dom` (the loops `nest`), analysed once per expression and nest."""
    found = sets.get((id(expr), nest))
    if found is None or found[0] is not expr:  # holding `expr` keeps its id from being reused
        found = sets[(id(expr), nest)] = (expr, analyzer.int_set(expr, dom))
    return found[1]


def _loop_set(loop: For, sets: dict[int, IntSet], analyzer: Analyzer) -> IntSet:
    found = sets.get(id(loop))
    if found is None:
        found = sets[id(loop)] = IntSet.from_range(Range(loop.min, loop.extent), analyzer.simplify)
    return found


def _index(path: tuple[Stmt, ...], scope: Stmt) -> int:
    for position, node in enumerate(path):
        if node is scope:
            return position
    raise ValueError("scope is not on the access's path")


def _hull(
    a: tuple[PrimExpr, PrimExpr], b: tuple[PrimExpr, PrimExpr], analyzer: Analyzer
) -> tuple[PrimExpr, PrimExpr]:
    # Most accesses of a buffer repeat one another's bounds (a load and a store of one element).
    low = a[0] if same_expr(a[0], b[0]) else analyzer.simplify(builders.min_value(a[0], b[0]))
    high = a[1] if same_expr(a[1], b[1]) else analyzer.simplify(builders.max_value(a[1], b[1]))
    return low, high


def _uses_inner_vars(expr: PrimExpr, inner: tuple[Stmt, ...], let_vars: set[Var]) -> bool:
    """True if `expr` mentions a variable bound below the scope (a loop variable) or a let
    variable (whose value is not tracked), so the bound is not valid at the scope."""
    defined = {s.loop_var for s in inner if isinstance(s, For)} | let_vars
    return any(isinstance(n, Var) and n in defined or isinstance(n, Let) for n in post_order(expr))
