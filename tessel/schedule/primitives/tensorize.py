"""tensorize: replace a block's body by a tensor intrinsic's impl, once it matches the desc.

Matching (TVM's TensorizeComparator): the scheduled block (lhs) and the desc's root block
(rhs) are walked in parallel. Loop and block iterators are definitions: the first meeting maps
the lhs variable to the rhs one. Each desc buffer is mapped to the block's buffer it is first
accessed with (same dtype and scope, one to one); the block's region of that buffer gives a
base, and an access matches when its index minus the base equals the desc's index under the
variable map (proved by the Analyzer). The block's buffers may have more dimensions than the
desc's: the extra leading ones must be single elements of the region. Regions are compared in
any order (TVM compares them in order); loop and block annotations and names are not compared.

Replacement (TVM's approach): the block keeps its iterators and regions; its body becomes a
fresh copy of the impl's root block body, and each impl buffer is bound by a `match_buffer` to
the block's region of the buffer its desc counterpart was matched with.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tessel.arith import Analyzer
from tessel.ir import builders
from tessel.ir.expr import PrimExpr, Range, Var
from tessel.ir.functor import Mutator, post_order
from tessel.ir.node import Node, field_names, with_changes
from tessel.ir.structural import same_expr
from tessel.ir.substitute import substitute
from tessel.schedule.errors import ScheduleError
from tessel.schedule.handles import BlockRV
from tessel.schedule.state import block_names, replace_stmt
from tessel.schedule.tensor_intrin import TensorIntrin
from tessel.support.names import unique_name
from tessel.tir.block import Block, BlockRealize, IterVar, MatchBufferRegion
from tessel.tir.buffer import Buffer, BufferLoad, BufferRegion
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import BufferStore, For, Stmt

if TYPE_CHECKING:
    from tessel.schedule.schedule import Schedule


def tensorize(sch: Schedule, block_rv: BlockRV, intrin: TensorIntrin) -> PrimFunc:
    """The function with `block_rv`'s body replaced by `intrin`'s impl (ScheduleError
    `tensorize.mismatch` if the block does not compute what the desc computes)."""
    block = sch.block(block_rv, "tensorize").block
    desc_root = intrin.root("desc").block
    matcher = Matcher(bases_of(block))
    try:
        matcher.scope(block, desc_root)
        _check_all_bound(matcher, intrin)
    except MismatchError as mismatch:
        culprits = (block,) if mismatch.at in (None, block) else (mismatch.at, block)
        raise ScheduleError(
            "tensorize",
            "mismatch",
            f"block `{block.name_hint}` does not match the desc of tensor intrinsic "
            f"`{intrin.name}`: {mismatch.message}",
            func=sch.func,
            culprits=culprits,
            hint="schedule the block so that its loops and body have the desc's shape "
            "(split, reorder, decompose_reduction), or pick another intrinsic",
        ) from mismatch
    return replace_stmt(sch.func, block, _implemented(sch.func, block, matcher, intrin))


def _check_all_bound(matcher: Matcher, intrin: TensorIntrin) -> None:
    for buffer in intrin.desc.param_buffers():
        if buffer not in matcher.buffer_map:
            raise MismatchError(
                f"the desc's buffer `{buffer.name}` has no counterpart in the block", None
            )


def _implemented(func: PrimFunc, block: Block, matcher: Matcher, intrin: TensorIntrin) -> Block:
    """`block` with a fresh copy of the impl's body, its buffers matched to the block's regions."""
    impl = _renew(intrin.impl)
    impl_root = impl.body.block  # type: ignore[attr-defined]  # a BlockRealize (registration)
    regions = {r.buffer: r for r in (*block.reads, *block.writes)}
    matches = []
    for desc_buffer, impl_buffer in zip(
        intrin.desc.param_buffers(), impl.param_buffers(), strict=True
    ):
        source = regions[matcher.buffer_map[desc_buffer]]
        matches.append(MatchBufferRegion(impl_buffer, source))
    taken = set(block_names(func)) - set(block_names(PrimFunc((), block.body)))
    body = _BlockRenamer(taken).visit(impl_root.body)
    return with_changes(
        block,
        body=body,
        alloc_buffers=(*block.alloc_buffers, *impl_root.alloc_buffers),
        match_buffers=(*block.match_buffers, *matches),
    )


def _renew(func: PrimFunc) -> PrimFunc:
    """A copy of `func` with fresh variables and buffers (an intrinsic may be used many times,
    and identity is meaning in Tessel's IR: TVM's DeepCopy of the impl)."""
    roots: list[Node] = [func, *func.buffer_map.values()]
    found = {id(n): n for root in roots for n in post_order(root) if isinstance(n, Var)}
    return substitute(func, {var: dataclasses.replace(var) for var in found.values()})


class _BlockRenamer(Mutator):
    """Give the impl's blocks names no other block of the function has (names are handles)."""

    def __init__(self, taken: set[str]) -> None:
        super().__init__()
        self.taken = taken

    def visit_Block(self, block: Block) -> Node:
        rebuilt = self.generic_visit(block)
        return with_changes(rebuilt, name_hint=unique_name(block.name_hint, self.taken))


class MismatchError(Exception):
    """What differs between the block and the desc, and the block's statement where it does."""

    def __init__(self, message: str, at: Stmt | None) -> None:
        super().__init__(message)
        self.message, self.at = message, at


@dataclass
class Matcher:
    """The variable and buffer maps built while matching, and the bases of the block's buffers."""

    bases: dict[Buffer, tuple[PrimExpr, ...]]
    var_map: dict[Var, Var] = field(default_factory=dict)
    buffer_map: dict[Buffer, Buffer] = field(default_factory=dict)  # desc buffer -> block buffer
    _taken: dict[Buffer, Buffer] = field(default_factory=dict)  # block buffer -> desc buffer
    _stack: list[Stmt] = field(default_factory=list)
    _analyzer: Analyzer = field(default_factory=Analyzer)

    def fail(self, message: str) -> MismatchError:
        """A MismatchError at the innermost block statement being compared."""
        return MismatchError(message, self._stack[-1] if self._stack else None)

    # ------------------------------------------------------------------ the scope block
    def scope(self, lhs: Block, rhs: Block) -> None:
        """The block to tensorize against the desc's root block (iterators not compared)."""
        if lhs.match_buffers or lhs.alloc_buffers:
            raise self.fail(f"block `{lhs.name_hint}` has match_buffers or alloc_buffers")
        self._stack.append(lhs)
        self.stmt(lhs.body, rhs.body)
        self.optional_stmt(lhs.init, rhs.init, "an init")
        self.regions(lhs.reads, rhs.reads, "reads")
        self.regions(lhs.writes, rhs.writes, "writes")

    # ------------------------------------------------------------------ statements
    def stmt(self, lhs: Stmt, rhs: Stmt) -> None:
        """Compare two statements (the block's and the desc's)."""
        self._stack.append(lhs)
        if type(lhs) is not type(rhs):
            raise self.fail(
                f"the block has a {type(lhs).__name__} where the desc has a {type(rhs).__name__}"
            )
        if isinstance(lhs, For):
            self._for(lhs, rhs)  # type: ignore[arg-type]  # same type, checked above
        elif isinstance(lhs, BlockRealize):
            self._realize(lhs, rhs)  # type: ignore[arg-type]  # same type, checked above
        elif isinstance(lhs, Block):
            self._block(lhs, rhs)  # type: ignore[arg-type]  # same type, checked above
        elif isinstance(lhs, BufferStore):
            # same type, checked above
            self.access(lhs.buffer, lhs.indices, rhs.buffer, rhs.indices)  # type: ignore[attr-defined]
            self.expr(lhs.value, rhs.value)  # type: ignore[attr-defined]  # same type
        else:
            self._fields(lhs, rhs)
        self._stack.pop()

    def optional_stmt(self, lhs: Stmt | None, rhs: Stmt | None, what: str) -> None:
        """Both absent, or both present and matching."""
        if (lhs is None) != (rhs is None):
            has, lacks = ("the block", "the desc") if lhs is not None else ("the desc", "the block")
            raise self.fail(f"{has} has {what} and {lacks} has none")
        if lhs is not None and rhs is not None:
            self.stmt(lhs, rhs)

    def _for(self, lhs: For, rhs: For) -> None:
        self.define(lhs.loop_var, rhs.loop_var)
        self.index(lhs.min, rhs.min, f"start of loop `{lhs.loop_var.name}`")
        self.index(lhs.extent, rhs.extent, f"extent of loop `{lhs.loop_var.name}`")
        if lhs.kind is not rhs.kind or lhs.thread_binding != rhs.thread_binding:
            raise self.fail(
                f"loop `{lhs.loop_var.name}` is {lhs.kind.value} where the desc's loop "
                f"`{rhs.loop_var.name}` is {rhs.kind.value}"
            )
        self.stmt(lhs.body, rhs.body)

    def _realize(self, lhs: BlockRealize, rhs: BlockRealize) -> None:
        if len(lhs.iter_values) != len(rhs.iter_values):
            raise self.fail(
                f"block `{lhs.block.name_hint}` has {len(lhs.iter_values)} iterators, "
                f"the desc's block `{rhs.block.name_hint}` {len(rhs.iter_values)}"
            )
        for lhs_value, rhs_value in zip(lhs.iter_values, rhs.iter_values, strict=True):
            self.index(lhs_value, rhs_value, f"binding of block `{lhs.block.name_hint}`")
        self.predicate(lhs.predicate, rhs.predicate, lhs.block.name_hint)
        self.stmt(lhs.block, rhs.block)

    def _block(self, lhs: Block, rhs: Block) -> None:
        for lhs_iv, rhs_iv in zip(lhs.iter_vars, rhs.iter_vars, strict=True):
            self._iter_var(lhs_iv, rhs_iv)
        if lhs.match_buffers or rhs.match_buffers or lhs.alloc_buffers or rhs.alloc_buffers:
            raise self.fail(
                f"block `{lhs.name_hint}` or the desc's `{rhs.name_hint}` allocates or matches "
                "buffers, which tensorize does not compare"
            )
        self.stmt(lhs.body, rhs.body)
        self.optional_stmt(lhs.init, rhs.init, "an init")
        self.regions(lhs.reads, rhs.reads, "reads")
        self.regions(lhs.writes, rhs.writes, "writes")

    def _iter_var(self, lhs: IterVar, rhs: IterVar) -> None:
        if lhs.iter_type is not rhs.iter_type:
            raise self.fail(
                f"block iterator `{lhs.var.name}` is of kind {lhs.iter_type.value} where the "
                f"desc's `{rhs.var.name}` is of kind {rhs.iter_type.value}"
            )
        self.index(lhs.dom.min, rhs.dom.min, f"domain of `{lhs.var.name}`")
        self.index(lhs.dom.extent, rhs.dom.extent, f"domain of `{lhs.var.name}`")
        self.define(lhs.var, rhs.var)

    # ------------------------------------------------------------------ expressions
    def expr(self, lhs: PrimExpr, rhs: PrimExpr) -> None:
        """Compare two value expressions node by node (loads through the buffer map)."""
        if type(lhs) is not type(rhs) or lhs.dtype != rhs.dtype:
            raise self.fail(
                f"the block computes `{lhs}` ({type(lhs).__name__}, {lhs.dtype}) where the desc "
                f"computes `{rhs}` ({type(rhs).__name__}, {rhs.dtype})"
            )
        if isinstance(lhs, Var):
            if self.var_map.get(lhs) is not rhs:
                raise self.fail(f"the block uses `{lhs.name}` where the desc uses `{rhs}`")
        elif isinstance(lhs, BufferLoad):
            # same type, checked above
            self.access(lhs.buffer, lhs.indices, rhs.buffer, rhs.indices)  # type: ignore[attr-defined]
        else:
            self._fields(lhs, rhs)

    def _fields(self, lhs: Any, rhs: Any) -> None:
        """Every other node: the same fields, compared by kind."""
        for name in field_names(type(lhs)):
            self._value(getattr(lhs, name), getattr(rhs, name), name)

    def _value(self, lhs: Any, rhs: Any, name: str) -> None:
        if isinstance(lhs, Stmt) and isinstance(rhs, Stmt):
            self.stmt(lhs, rhs)
        elif isinstance(lhs, PrimExpr) and isinstance(rhs, PrimExpr):
            self.expr(lhs, rhs)
        elif isinstance(lhs, Range) and isinstance(rhs, Range):
            self.index(lhs.min, rhs.min, name)
            self.index(lhs.extent, rhs.extent, name)
        elif isinstance(lhs, Node) and isinstance(rhs, Node) and type(lhs) is type(rhs):
            self._fields(lhs, rhs)
        elif isinstance(lhs, tuple) and isinstance(rhs, tuple) and len(lhs) == len(rhs):
            for a, b in zip(lhs, rhs, strict=True):
                self._value(a, b, name)
        elif isinstance(lhs, Node | tuple) or lhs != rhs:
            raise self.fail(f"`{name}` differs: {lhs!r} in the block, {rhs!r} in the desc")

    def define(self, lhs: Var, rhs: Var) -> None:
        """Map a variable the block defines to the one the desc defines at the same place."""
        if lhs.dtype != rhs.dtype:
            raise self.fail(
                f"`{lhs.name}` is {lhs.dtype} where the desc's `{rhs.name}` is {rhs.dtype}"
            )
        self.var_map[lhs] = rhs

    def index(self, lhs: PrimExpr, rhs: PrimExpr, what: str) -> None:
        """Integer expressions equal under the variable map (proved, not compared by shape)."""
        mapped = substitute(lhs, self.var_map)
        if not self._analyzer.can_prove_equal(mapped, rhs):
            raise self.fail(f"the {what} is `{lhs}` in the block but `{rhs}` in the desc")

    def predicate(self, lhs: PrimExpr, rhs: PrimExpr, name: str) -> None:
        """Block predicates: the same condition under the variable map."""
        mapped = self._analyzer.simplify(substitute(lhs, self.var_map))
        if not same_expr(mapped, self._analyzer.simplify(rhs)):
            raise self.fail(f"block `{name}` runs where `{lhs}`, the desc's block where `{rhs}`")

    # ------------------------------------------------------------------ buffers
    def bind_buffer(self, lhs: Buffer, rhs: Buffer) -> None:
        """Map desc buffer `rhs` to block buffer `lhs` (one to one, same dtype and scope)."""
        bound = self.buffer_map.get(rhs)
        if bound is lhs:
            return
        if bound is not None or lhs in self._taken:
            other = bound if bound is not None else self._taken[lhs]
            raise self.fail(
                f"the block accesses `{lhs.name}` where the desc accesses `{rhs.name}`, "
                f"but they already correspond to `{other.name}`"
            )
        if lhs.dtype != rhs.dtype or lhs.scope != rhs.scope:
            raise self.fail(
                f"buffer `{lhs.name}` is {lhs.dtype} in scope `{lhs.scope}` where the desc's "
                f"`{rhs.name}` is {rhs.dtype} in scope `{rhs.scope}`"
            )
        if lhs not in self.bases or lhs.ndim < rhs.ndim:
            raise self.fail(
                f"buffer `{lhs.name}` does not match the desc's `{rhs.name}`: the block must "
                f"read or write it, with at least {rhs.ndim} dimensions"
            )
        self.buffer_map[rhs], self._taken[lhs] = lhs, rhs

    def access(
        self,
        lhs_buffer: Buffer,
        lhs_indices: Sequence[PrimExpr],
        rhs_buffer: Buffer,
        rhs_indices: Sequence[PrimExpr],
    ) -> None:
        """A load or store: the same buffer (by the map) at the same place, relative to the base."""
        self.bind_buffer(lhs_buffer, rhs_buffer)
        base, extra = self.bases[lhs_buffer], len(lhs_indices) - len(rhs_indices)
        zero = [builders.const(0, index.dtype) for index in lhs_indices[:extra]]
        for k, index in enumerate(lhs_indices):
            relative = builders.sub(index, base[k])
            self.index(relative, [*zero, *rhs_indices][k], f"index {k} into `{lhs_buffer.name}`")

    def regions(self, lhs: Sequence[BufferRegion], rhs: Sequence[BufferRegion], what: str) -> None:
        """Access regions, in any order: each desc region has its block region, relative to
        the base, with the same extents (extra leading dimensions of extent 1)."""
        by_buffer = {region.buffer: region for region in lhs}
        if len(by_buffer) != len(rhs):
            names = [r.buffer.name for r in lhs], [r.buffer.name for r in rhs]
            raise self.fail(f"the block {what} {names[0]} but the desc {what} {names[1]}")
        for rhs_region in rhs:
            lhs_buffer = self.buffer_map.get(rhs_region.buffer)
            lhs_region = by_buffer.get(lhs_buffer) if lhs_buffer is not None else None
            if lhs_region is None:
                raise self.fail(f"the desc {what} `{rhs_region.buffer.name}`, the block does not")
            self._region(lhs_region, rhs_region)

    def _region(self, lhs: BufferRegion, rhs: BufferRegion) -> None:
        base, extra = self.bases[lhs.buffer], len(lhs.region) - len(rhs.region)
        ones = [Range.from_min_extent(0, 1)] * extra
        for k, (lhs_range, rhs_range) in enumerate(
            zip(lhs.region, [*ones, *rhs.region], strict=True)
        ):
            where = f"region of `{lhs.buffer.name}` in dimension {k}"
            self.index(builders.sub(lhs_range.min, base[k]), rhs_range.min, f"start of the {where}")
            self.index(lhs_range.extent, rhs_range.extent, f"extent of the {where}")


def bases_of(block: Block) -> dict[Buffer, tuple[PrimExpr, ...]]:
    """Where each buffer's region starts in the block to tensorize (writes first, as TVM)."""
    bases: dict[Buffer, tuple[PrimExpr, ...]] = {}
    for region in (*block.writes, *block.reads):
        bases.setdefault(region.buffer, tuple(r.min for r in region.region))
    return bases
