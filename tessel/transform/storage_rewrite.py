"""StorageRewrite: let function-local allocations whose lifetimes are disjoint share memory.

TVM's StorageRewrite, for the flat loop-level IR that FlattenBuffer leaves (docs/architecture.md
§6). Lifetimes come from `storage_lifetime` (first to last access, an access inside a loop
counting for the whole loop). Allocations then share one allocation when they

- belong to the same attach scope (the function body, or the body of one parallel, vectorized
  or thread-bound loop: what is allocated per iteration stays per iteration),
- have the same memory scope and the same dtype (so C never reads one type's memory through
  another type's pointer, which strict aliasing forbids for a stack array),
- are flat (one extent: several are the physical axes of a buffer with axis separators), of
  constant size, with an always-true condition and no annotations, and
- do not let their address escape (the data variable used other than through a buffer).

Allocations are given memory in the order their lifetimes start; each takes a shared allocation
that is free by then (its last user's lifetime has ended), the smallest that is large enough or
else the largest, which then grows: a greedy interval colouring, so running the pass again finds
nothing more to share. The shared allocation is as large as its largest user and keeps the data
variable of its first user; it goes around the innermost statement (or run of statements) that
encloses all its users' allocations, so it moves out of a loop only when some user is outside
that loop. Every user's `DeclBuffer` stays where it was, as a view of the shared
variable at offset 0, so each keeps the 64-byte alignment every allocation has.

Stack or workspace: the shared allocation is one `Allocate` of the merged size, so code
generation places it by that size (`tir.stack_placement`, the rule the memory report applies
too). Sharing may therefore move the smaller of two `global` buffers from the stack to the
workspace when the larger is over `max_stack_alloca_size`; the shared allocation has the
largest user's size, never the sum.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import ClassVar

from tessel.ir import builders
from tessel.ir.expr import Var
from tessel.ir.functor import Mutator, post_order
from tessel.ir.node import Node, with_changes
from tessel.ir.transform import PassContext
from tessel.support.dtype import DataType, bool_
from tessel.tir.function import PrimFunc
from tessel.tir.stack_placement import allocation_bytes
from tessel.tir.stmt import Allocate, DeclBuffer, SeqStmt, Stmt
from tessel.transform.buffer_layout import flat_extent
from tessel.transform.errors import require_no_blocks
from tessel.transform.prim_func_pass import PrimFuncPass
from tessel.transform.storage_lifetime import Allocation, allocation_lifetimes

_TRUE = builders.const(True, bool_)


@dataclass(frozen=True)
class StorageRewrite(PrimFuncPass):
    """Share one allocation among local buffers whose lifetimes do not overlap."""

    name: ClassVar[str] = "storage_rewrite"

    def transform(self, func: PrimFunc, ctx: PassContext) -> PrimFunc:
        require_no_blocks(
            func,
            "storage_rewrite",
            "storage_rewrite.no-blocks",
            "lower the blocks (and flatten the buffers) first; tessel.transform.lower does",
        )
        shared = [s for s in plan_storage(func.body) if len(s.users) > 1]
        if not shared:
            return func
        return with_changes(func, body=_Rewriter(shared).visit(func.body))


def views_outside_allocations(func: PrimFunc) -> str | None:
    """The postcondition of StorageRewrite: every buffer declared over a flat allocation of
    constant size lies inside it (a shared allocation is as large as its largest user).
    A description of the first view that does not, or None."""
    allocated: dict[Var, int] = {}
    for node in post_order(func.body):
        if isinstance(node, Allocate) and len(node.extents) == 1:
            nbytes = allocation_bytes(node.dtype, node.extents)
            if nbytes is not None:
                allocated[node.buffer_var] = nbytes
    for node in post_order(func.body):
        if not isinstance(node, DeclBuffer) or node.buffer.axis_separators:
            continue
        buffer = node.buffer
        limit = allocated.get(buffer.data)
        reach = allocation_bytes(buffer.dtype, (flat_extent(buffer),))
        if limit is not None and reach is not None and reach > limit:
            return (
                f"buffer `{buffer.name}` reaches {reach} bytes into `{buffer.data.name}`, "
                f"which has {limit}"
            )
    return None


@dataclass(eq=False)
class SharedStorage:
    """One allocation and the buffers' allocations that it replaces, in lifetime order."""

    users: list[Allocation] = field(default_factory=list)

    @property
    def var(self) -> Var:
        """The data variable of the shared allocation: its first user's."""
        return self.users[0].var

    @property
    def largest(self) -> Allocation:
        """The user whose extents the shared allocation takes (the earliest of the largest)."""
        return max(self.users, key=lambda a: (a.size or 0, -a.order))

    @property
    def size(self) -> int:
        """Elements of the shared allocation."""
        return self.largest.size or 0

    @property
    def last(self) -> int:
        """The position where its current last user's lifetime ends."""
        return self.users[-1].last or 0

    def allocate(self, body: Stmt) -> Allocate:
        """The shared allocation around `body`."""
        largest = self.largest.node
        return Allocate(
            self.var, largest.dtype, largest.extents, _TRUE, body, span=self.users[0].node.span
        )


def can_share(allocation: Allocation) -> bool:
    """True if the allocation may share memory with others (see the module docstring)."""
    node = allocation.node
    return (
        allocation.first is not None
        and not allocation.escaped
        and len(node.extents) == 1  # flat memory; axis separators make chunks of their own
        and allocation.size is not None
        and builders.is_const_int(node.condition, 1)
        and not node.annotations
    )


_GroupKey = tuple[int, str, DataType]


def plan_storage(body: Stmt) -> list[SharedStorage]:
    """The shared allocations for the local allocations of `body` that may share memory (one
    user each where nothing could be shared), in program order of their first users."""
    groups: dict[_GroupKey, list[Allocation]] = {}
    for allocation in allocation_lifetimes(body):
        if can_share(allocation):
            key = (id(allocation.attach), allocation.scope, allocation.dtype)
            groups.setdefault(key, []).append(allocation)
    planned = [storage for users in groups.values() for storage in _colour(users)]
    return sorted(planned, key=lambda s: s.users[0].order)


def _colour(allocations: Iterable[Allocation]) -> list[SharedStorage]:
    """Greedy interval colouring: each allocation, by start of lifetime, joins a shared
    allocation whose users are all dead by then, or starts a new one."""
    storages: list[SharedStorage] = []
    for allocation in sorted(allocations, key=lambda a: (a.first, a.order)):
        assert allocation.first is not None  # can_share checked both
        assert allocation.size is not None
        free = [s for s in storages if s.last < allocation.first]
        chosen = _best_fit(free, allocation.size)
        if chosen is None:
            chosen = SharedStorage()
            storages.append(chosen)
        chosen.users.append(allocation)
    return storages


def _best_fit(free: list[SharedStorage], size: int) -> SharedStorage | None:
    """The smallest free allocation holding `size` elements, else the largest one (which grows):
    a large allocation is kept for large buffers, and growing the largest wastes least."""
    large_enough = [s for s in free if s.size >= size]
    if large_enough:
        return min(large_enough, key=lambda s: s.size)
    return max(free, key=lambda s: s.size, default=None)


def placement(storage: SharedStorage) -> tuple[Stmt, tuple[int, int] | None]:
    """Where the shared allocation goes: around the innermost statement enclosing every user's
    allocation, or, when that is a SeqStmt, around the run of its children (first, last) that
    holds them. Never further out, so it stays inside any loop around all of them."""
    paths = [user.path for user in storage.users]
    depth = 0
    while all(len(p) > depth and p[depth][0] is paths[0][depth][0] for p in paths):
        depth += 1
    node = paths[0][depth - 1][0]
    if not isinstance(node, SeqStmt):
        return node, None
    indices = [p[depth - 1][1] for p in paths]
    return node, (min(indices), max(indices))


class _Rewriter(Mutator):
    """Remove the users' allocations, point their buffers at the shared variable, and allocate
    each shared storage where `placement` says."""

    visit_wraps = Stmt  # `visit` wraps statements in the allocations placed around them

    def __init__(self, shared: list[SharedStorage]) -> None:
        super().__init__()
        self.data_of: dict[Var, Var] = {}
        self.around: dict[int, list[SharedStorage]] = {}  # by id of the statement to wrap
        self.in_seq: dict[int, list[tuple[SharedStorage, tuple[int, int]]]] = {}
        for storage in shared:
            for user in storage.users:
                self.data_of[user.var] = storage.var
            node, run = placement(storage)
            if run is None:
                self.around.setdefault(id(node), []).append(storage)
            else:
                self.in_seq.setdefault(id(node), []).append((storage, run))

    def visit(self, node: Node) -> Node:
        new = super().visit(node)
        for storage in reversed(self.around.get(id(node), [])):
            assert isinstance(new, Stmt)
            new = storage.allocate(new)
        return new

    def visit_Var(self, node: Var) -> Node:
        return self.data_of.get(node, node)

    def visit_Allocate(self, node: Allocate) -> Node:
        if node.buffer_var in self.data_of:  # a user: its shared allocation replaces it
            return self.visit(node.body)
        return self.generic_visit(node)

    def visit_SeqStmt(self, node: SeqStmt) -> Node:
        new = self.generic_visit(node)
        runs = self.in_seq.get(id(node))
        if not runs:
            return new
        assert isinstance(new, SeqStmt)
        seq = list(new.seq)
        # Runs that overlap are joined: nested allocations need nested runs.
        for (first, last), storages in reversed(_joined_runs(runs)):
            body = _sequence(seq[first : last + 1])
            for storage in reversed(storages):
                body = storage.allocate(body)
            seq[first : last + 1] = [body]
        return _sequence(seq)


def _sequence(stmts: list[Stmt]) -> Stmt:
    return stmts[0] if len(stmts) == 1 else SeqStmt(tuple(stmts))


def _joined_runs(
    runs: list[tuple[SharedStorage, tuple[int, int]]],
) -> list[tuple[tuple[int, int], list[SharedStorage]]]:
    """Runs of children grouped where they overlap, each group with its storages in program
    order, the groups ordered by position."""
    groups: list[tuple[tuple[int, int], list[SharedStorage]]] = []
    for storage, (first, last) in sorted(runs, key=lambda r: (r[1][0], r[0].users[0].order)):
        if groups and first <= groups[-1][0][1]:
            (group_first, group_last), storages = groups[-1]
            groups[-1] = ((group_first, max(group_last, last)), [*storages, storage])
        else:
            groups.append(((first, last), [storage]))
    for _, storages in groups:
        storages.sort(key=lambda s: s.users[0].order)
    return groups
