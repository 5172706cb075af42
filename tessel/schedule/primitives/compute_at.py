"""compute_at and reverse_compute_at: move a block under a loop of the blocks it feeds (or is fed
by), with new loops that cover exactly the region one iteration of that loop needs.

As in TVM: the region the dependent blocks under the loop need (consumers' reads for compute_at,
producers' writes for reverse_compute_at) is relaxed over the loops inside the loop, with the
loop and its ancestors kept symbolic; each block iterator whose store (or load) index is
`iterator + offset` gets that region as its domain; the other iterators keep their full domain.
New loops `ax0, ax1, ...` run over those domains, and a predicate guards what the analyzer cannot
prove stays within the iterators' original domains. The block's own `T.where` goes with it,
rewritten over its iterators; one that cannot be (it names loops the bindings do not, and says
more than the domains) is refused (`predicate`), as is a move under a parallel loop whose
iterations would all write the same elements (`parallel-race`).

reverse_compute_at also refuses what it cannot show to be safe (issue 12): a consumer that would
read elements its producers have not written in that iteration (`reads-unwritten`: beyond
their writes, or in holes of them, region_hulls.py) or have only partly reduced
(`partial-reduction`), per-iteration domains that leave iterations out or, for a
reduction split across iterations, run some twice (`uncovered-iterations`, `repeated-reduction`).
Skewed domains (TVM cannot solve them either) are not computed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tessel.arith import Analyzer, IntSet
from tessel.arith.product_atoms import can_prove_with_product_atoms
from tessel.ir import builders
from tessel.ir.expr import IntImm, PrimExpr, Range, Var
from tessel.ir.functor import post_order
from tessel.ir.node import Node, with_changes
from tessel.ir.substitute import substitute
from tessel.schedule.errors import ScheduleError
from tessel.schedule.handles import BlockRV, LoopRV
from tessel.schedule.primitives.block_binding import in_domains, loop_binding
from tessel.schedule.primitives.block_queries import child_block_realizes
from tessel.schedule.primitives.block_scope import (
    Scope,
    body_items,
    is_complete,
    is_output_buffer,
    is_reduction,
    removable_subtree,
    remove_stmt,
    scope_of,
)
from tessel.schedule.primitives.region_hulls import (
    affine_steps,
    fills_hull,
    relax_dimension,
    solve_iterator,
    union_is_box,
    within,
)
from tessel.schedule.state import (
    Located,
    find_block_realize,
    find_loop,
    replace_stmt,
    walk_with_ancestors,
)
from tessel.tir.block import Block, BlockRealize, IterVar, IterVarType
from tessel.tir.buffer import Buffer
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import For, ForKind, SeqStmt, Stmt

if TYPE_CHECKING:
    from tessel.schedule.schedule import Schedule


def compute_at(
    sch: Schedule, block: BlockRV, loop: LoopRV, preserve_unit_loops: bool, index: int
) -> PrimFunc:
    """The function with producer `block` moved under `loop`, before its first consumer there."""
    return _Move(sch, "compute_at", block, loop).apply(preserve_unit_loops, index)


def reverse_compute_at(
    sch: Schedule, block: BlockRV, loop: LoopRV, preserve_unit_loops: bool, index: int
) -> PrimFunc:
    """The function with consumer `block` moved under `loop`, after its last producer there."""
    return _Move(sch, "reverse_compute_at", block, loop).apply(preserve_unit_loops, index)


@dataclass
class _Domain:
    """A block iterator's new domain [lo, hi], and the original one if it must be checked."""

    lo: PrimExpr
    hi: PrimExpr
    bound: tuple[PrimExpr, PrimExpr] | None = None


class _Move:
    """One compute_at / reverse_compute_at: the checks, then the rebuilt function."""

    def __init__(self, sch: Schedule, primitive: str, block_rv: BlockRV, loop_rv: LoopRV) -> None:
        self.sch, self.primitive = sch, primitive
        self.forward = primitive == "compute_at"
        sch.block(block_rv, primitive)  # stale handles raise here
        self.loop = sch.loop(loop_rv, primitive)
        self.located: Located = find_block_realize(sch.func, block_rv.name)  # type: ignore[assignment]  # exists
        self.realize: BlockRealize = self.located.node  # type: ignore[assignment]  # a realize
        self.block = self.realize.block
        self.loop_located: Located = find_loop(sch.func, self.loop.loop_var)  # type: ignore[assignment]  # exists
        self.scope: Scope = scope_of(sch.func, self.located)
        self.gaps: list[ScheduleError] = []  # reverse: producers' writes with holes (_find_gaps)

    def fail(self, rule: str, message: str, *culprits: Node) -> ScheduleError:
        return ScheduleError(
            self.primitive,
            rule,
            message,
            func=self.sch.func,
            culprits=culprits or (self.block, self.loop),
        )

    # -------------------------------------------------------------------- checks
    def _check(self) -> list[BlockRealize]:
        """Every precondition; returns the dependent blocks (consumers or producers)."""
        name, loop_name = self.block.name_hint, self.loop.loop_var.name
        if any(a is self.loop for a in self.located.ancestors):
            raise self.fail(
                "loop-is-ancestor", f"loop `{loop_name}` already encloses block `{name}`"
            )
        if self.loop_located.parent_block() is not self.located.parent_block():
            raise self.fail(
                "different-scope", f"loop `{loop_name}` and block `{name}` are in different blocks"
            )
        if not (is_complete(self.realize, self.scope) or is_reduction(self.realize, self.scope)):
            raise self.fail(
                "not-complete-or-reduction",
                f"block `{name}` must be the only writer of its outputs and either "
                "data-parallel without reading them, or a reduction with an init",
            )
        outputs = [
            w.buffer.name for w in self.block.writes if is_output_buffer(self.sch.func, w.buffer)
        ]
        if self.forward and outputs:
            raise self.fail(
                "output-block",
                f"block `{name}` writes the function's output {outputs}; "
                "moving it under a consumer's loop would leave parts of it unwritten",
            )
        deps = (
            self.scope.consumers(self.realize)
            if self.forward
            else self.scope.producers(self.realize)
        )
        if not deps:
            kind = (
                ("not-a-producer", "no block reads")
                if self.forward
                else ("not-a-consumer", "no block writes")
            )
            raise self.fail(
                kind[0], f"{kind[1]} what block `{name}` {'writes' if self.forward else 'reads'}"
            )
        return deps

    def _insertion_point(self, deps: list[BlockRealize], index: int) -> int:
        """Where in the loop's body the block goes: after every producer of it, before every
        consumer of it; all dependent blocks must be under the loop."""
        items = body_items(self.loop.body)
        held = [
            {id(n) for n, _ in walk_with_ancestors(item) if isinstance(n, BlockRealize)}
            for item in items
        ]
        under = set().union(*held)
        missing = [d.block.name_hint for d in deps if id(d) not in under]
        if missing:
            rule = "consumers-outside-loop" if self.forward else "producers-outside-loop"
            raise self.fail(
                rule,
                f"blocks {missing} {'read' if self.forward else 'write'} what block "
                f"`{self.block.name_hint}` needs, but are not under loop "
                f"`{self.loop.loop_var.name}`",
            )
        producers = {id(b) for b in self.scope.producers(self.realize)}
        consumers = {id(b) for b in self.scope.consumers(self.realize)}
        last_producer = max((k for k, ids in enumerate(held) if ids & producers), default=-1)
        first_consumer = min(
            (k for k, ids in enumerate(held) if ids & consumers), default=len(items)
        )
        if last_producer >= first_consumer:
            raise self.fail(
                "insertion-point",
                f"under loop `{self.loop.loop_var.name}`, a consumer of "
                f"block `{self.block.name_hint}` runs before one of its producers",
            )
        if index == -1:
            return first_consumer
        if index == -2:
            return last_producer + 1
        if not last_producer < index <= first_consumer:
            raise self.fail(
                "index",
                f"index {index} is outside the valid positions "
                f"{last_producer + 1}..{first_consumer}",
            )
        return index

    # -------------------------------------------------------------------- regions
    def _analyzer(self) -> Analyzer:
        analyzer = Analyzer()
        for node in (*self.loop_located.ancestors, self.loop):
            if isinstance(node, For):
                analyzer.bind(node.loop_var, Range(node.min, node.extent))
        return analyzer

    def _required(self, analyzer: Analyzer) -> dict[Buffer, list[IntSet]]:
        """Per buffer, the hull of what the dependent blocks under the loop need per iteration."""
        mine = self.block.writes if self.forward else self.block.reads
        buffers = {id(r.buffer) for r in mine}
        required: dict[Buffer, list[IntSet]] = {}
        for node, ancestors in walk_with_ancestors(self.loop.body):
            if not isinstance(node, BlockRealize) or any(isinstance(a, Block) for a in ancestors):
                continue
            inner = {a.loop_var: Range(a.min, a.extent) for a in ancestors if isinstance(a, For)}
            if not self.forward:  # what a producer writes: only where its predicate holds
                inner = self._narrowed(inner, node.predicate)
            binding = dict(
                zip((iv.var for iv in node.block.iter_vars), node.iter_values, strict=True)
            )
            theirs = node.block.reads if self.forward else node.block.writes
            for region in theirs:
                if id(region.buffer) not in buffers:
                    continue
                ranges = [substitute(r, binding) for r in region.region]
                if not self.forward:
                    self._find_gaps(analyzer, node.block, region.buffer, ranges, inner)
                hull = [relax_dimension(analyzer, r, inner) for r in ranges]
                old = required.get(region.buffer)
                if old is not None and not self.forward and not union_is_box(analyzer, old, hull):
                    self.gaps.append(self._gaps(node.block, region.buffer, "beside another's"))
                required[region.buffer] = (
                    hull
                    if old is None
                    else [a.union(b, analyzer.simplify) for a, b in zip(old, hull, strict=True)]
                )
        return required

    def _find_gaps(
        self,
        analyzer: Analyzer,
        producer: Block,
        buffer: Buffer,
        ranges: list[Range],
        inner: dict[Var, Range],
    ) -> None:
        """reverse_compute_at: the producer's region must fill its hull (region_hulls.py);
        a move is refused for holes after the checks that say more precisely why."""
        for dim, rng in enumerate(ranges):
            if not fills_hull(analyzer, rng, inner):
                self.gaps.append(self._gaps(producer, buffer, f"in dimension {dim}"))

    def _gaps(self, producer: Block, buffer: Buffer, where: str) -> ScheduleError:
        return self.fail(
            "reads-unwritten",
            f"under loop `{self.loop.loop_var.name}`, block `{producer.name_hint}` writes "
            f"`{buffer.name}` with gaps {where} in one iteration, which block "
            f"`{self.block.name_hint}` would read before they are written; move it under an "
            "outer loop",
        )

    def _narrowed(self, inner: dict[Var, Range], predicate: PrimExpr) -> dict[Var, Range]:
        """The inner loops' ranges cut to the bounds a block's predicate sets on each: a tail's
        guard (`i_1 < 3` under a loop of 4) writes fewer points than the loops run, and a
        consumer moved under the loop must not read the rest (fuzz campaign 10, case 4714)."""
        if builders.is_const_int(predicate, 1):
            return inner
        analyzer = self._analyzer()
        for var, rng in inner.items():
            analyzer.bind(var, rng)
        # Loops of one iteration are their start: `i_1_0 * 4 + i_1_1 < 3` bounds i_1_1 then.
        single = {v: r.min for v, r in inner.items() if builders.is_const_int(r.extent, 1)}
        narrowed = dict(inner)
        with analyzer.constraint_scope(analyzer.simplify(substitute(predicate, single))):
            for var, rng in inner.items():
                if not isinstance(rng.min, IntImm) or not isinstance(rng.extent, IntImm):
                    continue
                bound = analyzer.const_int_bound(var)
                low = max(rng.min.value, bound.min_value)
                high = min(rng.min.value + rng.extent.value - 1, bound.max_value)
                if high >= low:
                    count = builders.const(int(high - low + 1), var.dtype)
                    narrowed[var] = Range(builders.const(int(low), var.dtype), count)
        return narrowed

    def _domains(self, analyzer: Analyzer, required: dict[Buffer, list[IntSet]]) -> list[_Domain]:
        """Each block iterator's new domain (TVM's CalculateBlockVarDomain, dimension-wise)."""
        iter_vars = {iv.var: iv for iv in self.block.iter_vars}
        demanded: dict[Var, IntSet] = {}
        provided = self.block.writes if self.forward else self.block.reads
        for region in provided:
            for rng, need in zip(region.region, required.get(region.buffer, ()), strict=False):
                found = solve_iterator(analyzer, rng, need, iter_vars, self.forward)
                if found is not None:
                    var, dom = found
                    old = demanded.get(var)
                    demanded[var] = dom if old is None else old.union(dom, analyzer.simplify)
        return [_domain_of(analyzer, iv, demanded.get(iv.var)) for iv in self.block.iter_vars]

    # -------------------------------------------------------------------- reverse checks
    def _check_ready(
        self, analyzer: Analyzer, required: dict[Buffer, list[IntSet]], domains: list[_Domain]
    ) -> None:
        """reverse_compute_at: each iteration of the loop may read only what the producers under
        it wrote in that iteration. An iterator the solver could not narrow (say `yy + ry` of a
        convolution) keeps its whole domain and would read elements not written yet (issue 12)."""
        ranges = {
            iv.var: Range(d.lo, analyzer.simplify(builders.sub(builders.add(d.hi, 1), d.lo)))
            for iv, d in zip(self.block.iter_vars, domains, strict=True)
        }
        for region in self.block.reads:
            written = required.get(region.buffer)
            if written is None:
                continue
            for dim, (rng, have) in enumerate(zip(region.region, written, strict=True)):
                if within(analyzer, relax_dimension(analyzer, rng, ranges), have):
                    continue
                raise self.fail(
                    "reads-unwritten",
                    f"under loop `{self.loop.loop_var.name}`, "
                    f"block `{self.block.name_hint}` would read dimension {dim} of "
                    f"`{region.buffer.name}` beyond what the producers wrote in the "
                    "same iteration, before the rest is written; move it under an "
                    "outer loop",
                )

    def _check_final(self, required: dict[Buffer, list[IntSet]]) -> None:
        """reverse_compute_at: a producer that reduces over the loop (or a loop around it) has
        only partial sums at the end of one iteration; the consumer must not read them (fuzz
        campaign 21, case 2569: the reduction loop reordered outside the target loop)."""
        around = (*self.loop_located.ancestors, self.loop)
        chain = {n.loop_var for n in around if isinstance(n, For)}
        needed = {id(b) for b in required}
        for node in child_block_realizes(self.loop.body):
            if not any(id(w.buffer) in needed for w in node.block.writes):
                continue
            for iv, value in zip(node.block.iter_vars, node.iter_values, strict=True):
                if iv.iter_type is IterVarType.DATA_PAR:
                    continue
                outer = sorted(
                    n.name for n in post_order(value) if isinstance(n, Var) and n in chain
                )
                if outer:
                    raise self.fail(
                        "partial-reduction",
                        f"block `{node.block.name_hint}` reduces "
                        f"over {outer}, which enclose loop `{self.loop.loop_var.name}`"
                        f"; under it block `{self.block.name_hint}` would read partial "
                        "results",
                        node.block,
                        self.loop,
                    )

    def _check_coverage(self, analyzer: Analyzer, domains: list[_Domain]) -> None:
        """reverse_compute_at: the per-iteration domains must together cover every iterator's
        domain; when they split a reduction, each instance must run exactly once (issue 12)."""
        chain = [n for n in (*self.loop_located.ancestors, self.loop) if isinstance(n, For)]
        narrowed = [
            (iv, d)
            for iv, d in zip(self.block.iter_vars, domains, strict=True)
            if not _is_full(analyzer, iv, d)
        ]
        split = any(iv.iter_type is not IterVarType.DATA_PAR for iv, _ in narrowed)
        owned: set[Var] = set()
        first_split = len(chain)  # the outermost loop that steps through a reduction iterator
        for iv, dom in narrowed:
            loops = [f for f in chain if _mentions_loop(dom, f.loop_var)]
            if owned & {f.loop_var for f in loops} or not _tiles(analyzer, iv, dom, loops, split):
                raise self.fail(
                    "uncovered-iterations",
                    f"under loop `{self.loop.loop_var.name}`, "
                    f"the iterations of block `{self.block.name_hint}` over "
                    f"`{iv.var.name}` cannot be shown to run "
                    f"{'exactly' if split else 'at least'} once each",
                )
            owned |= {f.loop_var for f in loops}
            if iv.iter_type is not IterVarType.DATA_PAR and loops:
                first_split = min(first_split, *(chain.index(f) for f in loops))
        # A loop no iterator depends on repeats the block: harmless around whole reductions (each
        # round starts with the init), but inside a split one it adds a partial sum twice.
        repeating = [
            f.loop_var.name
            for f in chain[first_split:]
            if f.loop_var not in owned and not builders.is_const_int(f.extent, 1)
        ]
        if repeating:
            raise self.fail(
                "repeated-reduction",
                f"block `{self.block.name_hint}` would add "
                f"part of its reduction again on every iteration of {repeating}, "
                "which no iterator of it depends on",
            )

    def _check_parallel_writes(self, domains: list[_Domain]) -> None:
        """Under a parallel loop, each iteration must write its own elements: a block whose
        writes do not depend on that loop would have every thread update the same elements (a
        reduction moved under the parallel loop of its producer, fuzz seed 0, 672, a race)."""
        parallel = [
            a
            for a in (*self.loop_located.ancestors, self.loop)
            if isinstance(a, For)
            and a.kind is ForKind.PARALLEL
            and not builders.is_const_int(a.extent, 1)
        ]
        if not parallel:
            return
        at = {iv.var: dom.lo for iv, dom in zip(self.block.iter_vars, domains, strict=True)}
        mentioned = {
            n
            for region in self.block.writes
            for rng in region.region
            for n in post_order(substitute(rng.min, at))
            if isinstance(n, Var)
        }
        racing = [lp.loop_var.name for lp in parallel if lp.loop_var not in mentioned]
        if racing:
            raise self.fail(
                "parallel-race",
                f"under the parallel loop {racing}, every iteration "
                f"would write the same elements of block `{self.block.name_hint}`'s "
                "output, a race between threads",
            )

    def _own_predicate(self) -> PrimExpr:
        """The block's `T.where` over its iterators, to keep under the new loops: a condition
        beyond its iterators' domains (a reindex copy that skips the points it would read out
        of bounds, fuzz seed 1, 1689) must survive the move. True when there is none, or when it
        only restates the domains (a split's tail guard, which the new loops' bounds redo)."""
        predicate = self.realize.predicate
        if builders.is_const_int(predicate, 1):
            return predicate
        binding = loop_binding(self.realize)
        used = {n for n in post_order(predicate) if isinstance(n, Var)}
        if used <= set(binding):
            return substitute(predicate, binding)
        analyzer = Analyzer()
        for node in self.located.ancestors:
            if isinstance(node, For):
                analyzer.bind(node.loop_var, Range(node.min, node.extent))
        with analyzer.constraint_scope(in_domains(self.realize)):
            if analyzer.can_prove(predicate):
                return builders.const(True)
        raise self.fail(
            "predicate",
            f"block `{self.block.name_hint}` has the predicate "
            f"`{predicate}`, which is not over its iterators alone and says more than "
            "their domains; the new loops could not keep it",
        )

    # -------------------------------------------------------------------- rebuild
    def apply(self, preserve_unit_loops: bool, index: int) -> PrimFunc:
        deps = self._check()
        position = self._insertion_point(deps, index)
        target = removable_subtree(self.primitive, self.sch.func, self.located)
        analyzer = self._analyzer()
        required = self._required(analyzer)
        domains = self._domains(analyzer, required)
        if not self.forward:
            self._check_final(required)
            if self.gaps:
                raise self.gaps[0]
            self._check_ready(analyzer, required, domains)
            self._check_coverage(analyzer, domains)
        self._check_parallel_writes(domains)
        own = self._own_predicate()
        subtree = _make_loops(analyzer, self.realize, domains, preserve_unit_loops, own)
        items: list[Stmt] = body_items(self.loop.body)
        body = SeqStmt.flatten([*items[:position], subtree, *items[position:]])
        func = replace_stmt(self.sch.func, self.loop, with_changes(self.loop, body=body))
        return remove_stmt(func, target)


def _domain_of(analyzer: Analyzer, iv: IterVar, demanded: IntSet | None) -> _Domain:
    """The demanded domain within the iterator's own, or with a bound check where neither
    contains the other (TVM's BlockVarDomainInfo::Simplify)."""
    bl = iv.dom.min
    bh = analyzer.simplify(builders.sub(builders.add(iv.dom.min, iv.dom.extent), 1))
    if demanded is None or demanded.min_value is None or demanded.max_value is None:
        return _Domain(bl, bh)
    dl, dh = demanded.min_value, demanded.max_value
    if analyzer.can_prove(builders.logical_and(builders.ge(dl, bl), builders.le(dh, bh))):
        return _Domain(dl, dh)
    if analyzer.can_prove(builders.logical_and(builders.ge(bl, dl), builders.le(bh, dh))):
        return _Domain(bl, bh)
    return _Domain(dl, dh, (bl, bh))


def _is_full(analyzer: Analyzer, iv: IterVar, dom: _Domain) -> bool:
    # Products of symbols as atoms: the tiles of batch * seq rows cover them as those of n do.
    last = builders.sub(builders.add(iv.dom.min, iv.dom.extent), 1)
    return can_prove_with_product_atoms(
        analyzer, builders.le(dom.lo, iv.dom.min)
    ) and can_prove_with_product_atoms(analyzer, builders.ge(dom.hi, last))


def _mentions_loop(dom: _Domain, var: Var) -> bool:
    return any(n is var for expr in (dom.lo, dom.hi) for n in post_order(expr))


def _tiles(analyzer: Analyzer, iv: IterVar, dom: _Domain, loops: list[For], exact: bool) -> bool:
    """Whether the windows [lo, hi] that `loops` (outer first) step through, in execution order,
    cover the iterator's domain without a gap (`exact`: also without overlap).

    The window must be `base + sum(a_k * (l_k - min_k))` wide `w` for every iteration. Moving to
    the next iteration of loop k (the inner loops wrapping to their start) shifts it by
    `a_k - sum_{j > k} a_j * (extent_j - 1)`; each such shift must lie in [0, w] (exactly w)."""
    width = analyzer.simplify(builders.sub(builders.add(dom.hi, 1), dom.lo))
    if any(_mentions_loop(_Domain(width, width), f.loop_var) for f in loops):
        return False
    affine = affine_steps(analyzer, dom.lo, {f.loop_var: Range(f.min, f.extent) for f in loops})
    if affine is None:
        return False
    base, slopes = affine
    for k, slope in enumerate(slopes):
        shift: PrimExpr = slope
        for f, inner in zip(loops[k + 1 :], slopes[k + 1 :], strict=True):
            shift = builders.sub(shift, builders.mul(inner, builders.sub(f.extent, 1)))
        ok = (
            analyzer.can_prove_equal(shift, width)
            if exact
            else analyzer.can_prove(
                builders.logical_and(builders.ge(shift, 0), builders.le(shift, width))
            )
        )
        if not ok:
            return False
    last = {f.loop_var: builders.sub(builders.add(f.min, f.extent), 1) for f in loops}
    end = substitute(dom.hi, last)
    return _is_full(analyzer, iv, _Domain(base, analyzer.simplify(end)))


def _make_loops(
    analyzer: Analyzer,
    realize: BlockRealize,
    domains: list[_Domain],
    preserve: bool,
    own: PrimExpr,
) -> Stmt:
    """Loops `ax0, ax1, ...` over the domains of extent other than one, and the block under them,
    guarded by the domains' bounds and the block's `own` predicate (over its iterators)."""
    loops: list[tuple[Var, PrimExpr]] = []
    values: list[PrimExpr] = []
    predicate: PrimExpr = builders.const(True)
    for iv, dom in zip(realize.block.iter_vars, domains, strict=True):
        extent = analyzer.simplify(builders.add(builders.sub(dom.hi, dom.lo), 1))
        value = dom.lo
        if preserve or not builders.is_const_int(extent, 1):
            var = Var(f"ax{len(loops)}", iv.var.dtype)
            analyzer.bind(var, Range(builders.const(0, iv.var.dtype), extent))
            loops.append((var, extent))
            value = builders.add(dom.lo, var)
        values.append(value)
        if dom.bound is not None:
            for condition in (
                builders.ge(value, dom.bound[0]),
                builders.lt(value, builders.add(dom.bound[1], 1)),
            ):
                if not analyzer.can_prove(condition):
                    predicate = builders.logical_and(predicate, condition)
    at = {iv.var: value for iv, value in zip(realize.block.iter_vars, values, strict=True)}
    predicate = builders.logical_and(predicate, substitute(own, at))
    body: Stmt = BlockRealize(tuple(values), analyzer.simplify(predicate), realize.block)
    for var, extent in reversed(loops):
        body = For(var, builders.const(0, var.dtype), extent, ForKind.SERIAL, body)
    return body
