"""reindex_cache_read and reindex_cache_write: a cache stage whose buffer is indexed by the
block's iterators mapped through a user index map (TVM's ReindexCacheRead/Write).

The block must access the buffer at one point per iteration (TVM's single-point rule), and the
iterators the old indices use must be exactly those the mapped ones use (TVM's not-match rule).
The copy runs the block's own iteration space: its iterators are the block's covered ones (same
domains, same bindings), under copies of the loops below the insertion point that those
bindings use; it goes where cache_read/cache_write would put it. Only the given block is
redirected (TVM: the one consumer). Tessel also refuses what TVM would get wrong: a map sending
two iterations to one cache element with different old elements (not injective), and a block
predicate over loops the copy does not repeat. The copy keeps the block's predicate, and skips
points outside the buffer and padding the writer leaves unwritten, as reindex does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tessel.arith import Analyzer, detect_iter_map, presburger
from tessel.ir import builders
from tessel.ir.expr import PrimExpr, Range, Var
from tessel.ir.functor import post_order
from tessel.ir.node import with_changes
from tessel.ir.substitute import substitute
from tessel.schedule.errors import ScheduleError
from tessel.schedule.handles import BlockRV
from tessel.schedule.primitives import cache_stage as S
from tessel.schedule.primitives.cache import check_reads_old_value, consumers_after, only_writer
from tessel.schedule.primitives.reindex import Reindexer
from tessel.schedule.state import replace_in, replace_stmt
from tessel.support.errors import UserError
from tessel.tir.analysis.interval import expr_equal
from tessel.tir.block import Block, BlockRealize, IterVar, IterVarType
from tessel.tir.buffer import Buffer, BufferLoad
from tessel.tir.function import PrimFunc
from tessel.tir.index_map import IndexMap
from tessel.tir.stmt import BufferStore, For, ForKind, Stmt

if TYPE_CHECKING:
    from tessel.schedule.schedule import Schedule


def reindex_cache_read(
    sch: Schedule, rv: BlockRV, index: int, scope: str, index_map: IndexMap
) -> tuple[PrimFunc, str]:
    """The function with `rv` reading its `index`-th read buffer from a `scope` cache indexed by
    `index_map` of its iterators, filled right before it; and the copy block's name."""
    primitive = "reindex_cache_read"
    realize, scope_block = S.block_and_scope(sch, primitive, rv)
    buffer = S.nth_buffer(sch, primitive, realize.block, "read", index)
    S.check_scope_name(sch, primitive, scope, realize.block)
    if any(r.buffer is buffer for r in realize.block.writes):
        raise ScheduleError(
            primitive,
            "reads-own-output",
            f"block `{rv.name}` writes `{buffer.name}` as well as reading it; "
            "a read cache would hide its own updates",
            func=sch.func,
            culprits=(realize.block,),
            hint="use reindex_cache_write",
        )
    kids = S.children(scope_block)
    writer = only_writer(sch, primitive, kids, buffer)
    consumer = S.child_named(kids, realize)
    if writer is None:
        where = S.Insertion(scope_block, scope_block.body)
    elif kids.index(writer) > kids.index(consumer):
        raise ScheduleError(
            primitive,
            "read-before-write",
            f"block `{rv.name}` reads `{buffer.name}` before its writer "
            f"`{writer.realize.block.name_hint}` runs",
            func=sch.func,
            culprits=(realize.block,),
        )
    else:
        where = S.between(writer, consumer)
    plan = _Plan(sch, primitive, realize, buffer, "read", index_map)
    skip = S.unwritten(writer.realize, buffer) if writer is not None else None
    name = S.fresh_block_name(sch.func, S.scoped_name(buffer, scope))
    cache = plan.cache_buffer(S.fresh_buffer_name(sch.func, S.scoped_name(buffer, scope)), scope)
    stage = plan.copy_nest(name, consumer, where, cache, skip)
    new_scope = S.insert(scope_block, where, stage)
    new_scope = replace_in(new_scope, realize, Reindexer(buffer, cache, plan.new).visit(realize))
    return replace_stmt(sch.func, scope_block, S.add_alloc(new_scope, cache)), name


def reindex_cache_write(
    sch: Schedule, rv: BlockRV, index: int, scope: str, index_map: IndexMap
) -> tuple[PrimFunc, str]:
    """The function with `rv` writing its `index`-th write buffer into a `scope` cache indexed by
    `index_map` of its iterators, copied back after it; and the copy block's name."""
    primitive = "reindex_cache_write"
    realize, scope_block = S.block_and_scope(sch, primitive, rv)
    buffer = S.nth_buffer(sch, primitive, realize.block, "write", index)
    S.check_scope_name(sch, primitive, scope, realize.block)
    kids = S.children(scope_block)
    writer = only_writer(sch, primitive, kids, buffer)
    assert writer is not None  # the block writes the buffer
    assert writer.realize is realize
    check_reads_old_value(sch, primitive, realize, buffer)
    consumers = consumers_after(kids, writer, buffer)
    if consumers:
        where = S.between(writer, consumers[0])
    else:
        where = S.Insertion(scope_block, scope_block.body, after=True)
    plan = _Plan(sch, primitive, realize, buffer, "write", index_map)
    name = S.fresh_block_name(sch.func, S.scoped_name(buffer, scope))
    cache = plan.cache_buffer(S.fresh_buffer_name(sch.func, S.scoped_name(buffer, scope)), scope)
    stage = plan.copy_nest(name, writer, where, cache, None)
    new_scope = S.insert(scope_block, where, stage)
    new_scope = replace_in(new_scope, realize, Reindexer(buffer, cache, plan.new).visit(realize))
    return replace_stmt(sch.func, scope_block, S.add_alloc(new_scope, cache)), name


class _Plan:
    """The checked access: the block's old indices of the buffer, the mapped new ones, the
    block iterators both use, and the cache's shape."""

    def __init__(
        self,
        sch: Schedule,
        primitive: str,
        realize: BlockRealize,
        buffer: Buffer,
        kind: str,
        index_map: IndexMap,
    ) -> None:
        self.sch, self.primitive, self.realize, self.buffer, self.kind = (
            sch, primitive, realize, buffer, kind)  # fmt: skip
        block = realize.block
        if len(index_map.initial_indices) != len(block.iter_vars):
            self._refuse(
                "index-map-arity",
                f"the index map takes {len(index_map.initial_indices)} indices but block "
                f"`{block.name_hint}` has {len(block.iter_vars)} iterators",
            )
        self.old = self._single_point()
        self.new = index_map.map_indices([iv.var for iv in block.iter_vars], Analyzer())
        self.covered = self._covered()
        self.domain = {iv.var: iv.dom for iv in self.covered}
        self.shape = self._shape()
        self._check_injective()

    def _refuse(self, rule: str, message: str, hint: str | None = None) -> None:
        raise ScheduleError(
            self.primitive,
            rule,
            message,
            func=self.sch.func,
            culprits=(self.realize.block,),
            hint=hint,
        )

    def _single_point(self) -> tuple[PrimExpr, ...]:
        """The block's one index tuple of the buffer: its region is a point, every access at it."""
        block = self.realize.block
        regions = block.reads if self.kind == "read" else block.writes
        region = next(r for r in regions if r.buffer is self.buffer)
        if not all(builders.is_const_int(r.extent, 1) for r in region.region):
            self._refuse(
                "single-point",
                f"block `{block.name_hint}` accesses a region of "
                f"`{self.buffer.name}` that is not a single point; the cache is "
                "indexed per iteration",
            )
        old = tuple(r.min for r in region.region)
        roots = [block.body] if block.init is None else [block.init, block.body]
        nodes = [n for root in roots for n in post_order(root)]
        accesses = [
            n.indices
            for n in nodes
            if isinstance(n, BufferLoad | BufferStore) and n.buffer is self.buffer
        ]
        if any(not expr_equal(a, old) for a in accesses):
            self._refuse(
                "single-point",
                f"block `{block.name_hint}` accesses `{self.buffer.name}` at indices "
                f"other than its declared point {list(old)}",
            )
        return old

    def _covered(self) -> list[IterVar]:
        """The iterators the old and the new indices use, which must be the same ones."""
        covered = []
        for iv in self.realize.block.iter_vars:
            in_old = any(_uses(i, iv.var) for i in self.old)
            in_new = any(_uses(i, iv.var) for i in self.new)
            if in_old != in_new:
                where, other = ("old", "new") if in_old else ("new", "old")
                self._refuse(
                    "not-match",
                    f"iterator `{iv.var.name}` appears in the {where} indices "
                    f"{list(self.old if in_old else self.new)} of `{self.buffer.name}` "
                    f"but not in the {other} ones "
                    f"{list(self.new if in_old else self.old)}",
                )
            if in_old:
                covered.append(iv)
        return covered

    def _shape(self) -> tuple[PrimExpr, ...]:
        """One past each new index's largest value over the covered iterators (TVM's MapShape;
        iterators from 0 go through IndexMap's, which knows fused symbolic strides)."""
        if all(builders.is_const_int(iv.dom.min, 0) for iv in self.covered):
            imap = IndexMap(tuple(iv.var for iv in self.covered), self.new)
            try:
                return imap.map_shape([iv.dom.extent for iv in self.covered])
            except UserError as err:
                self._refuse(
                    "index-map",
                    f"the new indices {list(self.new)} of "
                    f"`{self.buffer.name}` have no shape: {err.message}",
                )
        analyzer = Analyzer()
        shape = []
        for index in self.new:
            bounds = analyzer.int_set(index, self.domain)
            low, high = bounds.min_value, bounds.max_value
            if low is None or high is None or not analyzer.can_prove(low >= 0):
                self._refuse(
                    "index-map",
                    f"the new index `{index}` of `{self.buffer.name}` has no bound at or "
                    "above 0 over the block's iterators",
                )
            shape.append(analyzer.simplify(builders.add(high, 1)))
        return tuple(shape)

    def _check_injective(self) -> None:
        """Two iterations at one cache element must be at one old element: the cache holds one
        value per element (TVM does not check; a collision would give wrong results)."""
        try:
            if presburger.is_injective(self.new, self.domain):
                return
        except presburger.NotPresburger:
            # A symbolic stride (`i * n + j`): a bijective iterator map is injective.
            if detect_iter_map(self.new, self.domain, check_level="bijective"):
                return
        self._refuse(
            "not-injective",
            f"the new indices {list(self.new)} may send two iterations of block "
            f"`{self.realize.block.name_hint}` to one element of the cache",
            hint="use a map that is a split, fuse or reordering of the iterators",
        )

    def cache_buffer(self, name: str, scope: str) -> Buffer:
        """The cache: the buffer's dtype, the mapped shape, in `scope`."""
        fresh = S.cache_buffer(self.buffer, name, scope)
        return with_changes(fresh, shape=self.shape, axis_separators=())

    def copy_nest(
        self,
        name: str,
        child: S.Child,
        where: S.Insertion,
        cache: Buffer,
        skip: tuple[tuple[Var, ...], PrimExpr] | None,
    ) -> Stmt:
        """The loops below `where` that the covered bindings use, around a block over the covered
        iterators copying between the buffer and the cache at the block's own points."""
        values = dict(zip(self.realize.block.iter_vars, self.realize.iter_values, strict=True))
        used = {n for iv in self.covered for n in post_order(values[iv]) if isinstance(n, Var)}
        below, _ = S.split_loops(child, where)
        loops = [loop for loop in below if loop.loop_var in used]
        skipped = {loop.loop_var for loop in below} - {loop.loop_var for loop in loops}
        rename: dict[Var, PrimExpr] = {}
        for loop in loops:
            if any(_uses(e, v) for e in (loop.min, loop.extent) for v in skipped):
                self._refuse(
                    "loop-domain",
                    f"the range of loop `{loop.loop_var.name}` depends on a loop the "
                    "copy does not repeat",
                )
            rename[loop.loop_var] = Var(loop.loop_var.name, loop.loop_var.dtype)
        predicate = self.realize.predicate
        if any(_uses(predicate, v) for v in skipped):
            self._refuse(
                "predicate",
                f"the predicate `{predicate}` of block `{self.realize.block.name_hint}` "
                "uses a loop the copy does not repeat",
            )
        fresh = [
            IterVar(iv.dom, Var(iv.var.name, iv.var.dtype), IterVarType.DATA_PAR)
            for iv in self.covered
        ]
        at = {iv.var: f.var for iv, f in zip(self.covered, fresh, strict=True)}
        old_at = tuple(substitute(i, at) for i in self.old)
        new_at = tuple(substitute(i, at) for i in self.new)
        src, dst = (self.buffer, old_at), (cache, new_at)
        if self.kind == "write":
            src, dst = dst, src
        body = BufferStore(dst[0], BufferLoad(*src), dst[1])
        block = Block(tuple(fresh), (S.point_region(*src),), (S.point_region(*dst),), name, body)
        guard = S.in_bounds(self.buffer, old_at, {f.var: f.dom for f in fresh})
        if skip is not None:
            names, unwritten = skip
            at_old = dict(zip(names, old_at, strict=True))
            written = builders.logical_not(substitute(unwritten, at_old))
            guard = builders.conjunction([guard, written])
        bindings = tuple(substitute(values[iv], rename) for iv in self.covered)
        guard = substitute(guard, dict(zip(at.values(), bindings, strict=True)))
        condition = builders.conjunction([substitute(predicate, rename), guard])
        analyzer = Analyzer()
        for loop in loops:
            analyzer.bind(rename[loop.loop_var], Range(loop.min, loop.extent))
        stmt: Stmt = BlockRealize(bindings, analyzer.simplify(condition), block)
        for loop in reversed(loops):
            stmt = For(rename[loop.loop_var], loop.min, loop.extent, ForKind.SERIAL, stmt)
        return stmt


def _uses(expr: PrimExpr, var: Var) -> bool:
    return any(n is var for n in post_order(expr))
