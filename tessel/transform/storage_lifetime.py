"""Lifetimes of a function's local allocations, the analysis behind StorageRewrite.

The function body is numbered in execution order: every statement gets the next position, and
a loop gets one more after its body (its end). An allocation is live from the position of its
first access to the position of its last (closed interval). As in TVM's StorageRewrite, an
access inside a loop that the allocation encloses keeps it live for that whole loop, from the
loop's start to its end: a value written in one iteration may be read in the next. A loop
around the allocation itself does not count, since each of its iterations has a fresh buffer.

Allocations belong to an *attach scope*: the body of the nearest enclosing parallel, vectorized
or thread-bound loop (each iteration, or lane, needs its own copy), or the function body. Only
allocations of one attach scope may share memory, and their shared allocation goes at the start
of that scope.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from tessel.ir.expr import IntImm, PrimExpr, Var
from tessel.ir.functor import Visitor
from tessel.ir.node import Node
from tessel.support.dtype import DataType
from tessel.tir.buffer import Buffer, BufferLoad, BufferRegion
from tessel.tir.stmt import Allocate, AllocateConst, BufferStore, For, ForKind, SeqStmt, Stmt, While

# Loops whose iterations may run at the same time (or as lanes of one vector): an allocation
# inside one is per iteration and must stay inside it.
ATTACH_KINDS = frozenset({ForKind.PARALLEL, ForKind.VECTORIZED, ForKind.THREAD_BINDING})


@dataclass(eq=False)
class Allocation:
    """One `Allocate` of the function and what the lifetime analysis found about it."""

    node: Allocate
    attach: For | None  # the loop whose body is its attach scope; None: the function body
    order: int  # the allocation's rank in program order (ties are broken by it)
    loop_depth: int  # how many loops enclose the Allocate
    path: tuple[tuple[Stmt, int], ...]  # the statements from the body down to the Allocate,
    # each with the index of the child taken when it is a SeqStmt
    first: int | None = None  # first and last position of an access; None: never accessed
    last: int | None = None
    escaped: bool = False  # its address is used other than through a buffer

    @property
    def var(self) -> Var:
        """The allocated data variable."""
        return self.node.buffer_var

    @property
    def dtype(self) -> DataType:
        """The element type of the allocation."""
        return self.node.dtype

    @property
    def scope(self) -> str:
        """The memory scope, from the data variable's pointer type."""
        annotation = self.var.type_annotation
        return "global" if annotation is None else annotation.storage_scope

    @property
    def size(self) -> int | None:
        """The number of elements when every extent is a constant, else None."""
        count = 1
        for extent in self.node.extents:
            if not isinstance(extent, IntImm):
                return None
            count *= int(extent.value)
        return count

    def touch(self, first: int, last: int) -> None:
        """Extend the live interval to cover [first, last]."""
        self.first = first if self.first is None else min(self.first, first)
        self.last = last if self.last is None else max(self.last, last)


def allocation_lifetimes(body: Stmt) -> list[Allocation]:
    """Every `Allocate` in `body`, in program order, with its live interval and attach scope."""
    finder = _LifetimeFinder()
    finder.visit(body)
    return finder.allocations


class _LifetimeFinder(Visitor):
    visit_wraps = Stmt  # `visit` counts statements; expressions go straight to their methods

    def __init__(self) -> None:
        self.position = 0
        self.by_var: dict[Var, Allocation] = {}
        self.allocations: list[Allocation] = []
        self.loop_starts: list[int] = []  # the start position of every open loop, outermost first
        self.in_loop: list[set[Var]] = []  # per open loop: allocations accessed inside it
        self.attach: list[For] = []
        self.path: list[tuple[Stmt, int]] = []

    def visit(self, node: Node) -> None:
        if not isinstance(node, Stmt):
            super().visit(node)
            return
        self.position += 1
        self.path.append((node, 0))
        try:
            super().visit(node)
        finally:
            self.path.pop()

    def visit_SeqStmt(self, node: SeqStmt) -> None:
        for index, stmt in enumerate(node.seq):
            self.path[-1] = (node, index)
            self.visit(stmt)

    # -- accesses ---------------------------------------------------------------------------

    def _touch(self, var: Var) -> None:
        allocation = self.by_var.get(var)
        if allocation is None:  # a parameter or a constant
            return
        if len(self.loop_starts) > allocation.loop_depth:
            # Inside a loop the allocation encloses: live for the outermost such loop, whose
            # end is known when it closes.
            self.in_loop[allocation.loop_depth].add(var)
        else:
            allocation.touch(self.position, self.position)

    def visit_BufferLoad(self, node: BufferLoad) -> None:
        self._touch(node.buffer.data)
        self.generic_visit(node)

    def visit_BufferStore(self, node: BufferStore) -> None:
        self._touch(node.buffer.data)
        self.generic_visit(node)

    def visit_BufferRegion(self, node: BufferRegion) -> None:
        self._touch(node.buffer.data)  # a region handed to an opaque call is an access too
        self.generic_visit(node)

    def visit_Buffer(self, node: Buffer) -> None:
        # A buffer's data is where it points, not a use of the address; its layout may read vars.
        for expr in (*node.shape, *node.strides, node.elem_offset):
            self.visit(expr)

    def visit_Var(self, node: Var) -> None:
        # The data variable of an allocation used as a value (passed to a call, bound by a let,
        # stored in an attribute): the address escapes, so its memory must stay its own.
        allocation = self.by_var.get(node)
        if allocation is not None:
            allocation.escaped = True

    # -- scopes -----------------------------------------------------------------------------

    @contextmanager
    def _loop(self) -> Iterator[None]:
        """Positions inside the `with` body belong to one loop; at its end, every allocation
        accessed inside it (and allocated outside it) is live for all of it."""
        start = self.position
        self.loop_starts.append(start)
        self.in_loop.append(set())
        try:
            yield
        finally:
            self.position += 1
            self.loop_starts.pop()
            for var in self.in_loop.pop():
                self.by_var[var].touch(start, self.position)

    def visit_For(self, node: For) -> None:
        self.visit(node.min)  # evaluated once, before the loop
        self.visit(node.extent)
        attach = node.kind in ATTACH_KINDS
        if attach:
            self.attach.append(node)
        try:
            with self._loop():
                self.visit(node.body)
        finally:
            if attach:
                self.attach.pop()

    def visit_While(self, node: While) -> None:
        with self._loop():  # the condition is evaluated on every iteration
            self.visit(node.condition)
            self.visit(node.body)

    def visit_Allocate(self, node: Allocate) -> None:
        self._visit_exprs(node.extents)
        self.visit(node.condition)
        allocation = Allocation(
            node,
            self.attach[-1] if self.attach else None,
            len(self.allocations),
            len(self.loop_starts),
            tuple(self.path),
        )
        self.allocations.append(allocation)
        earlier = self.by_var.get(node.buffer_var)
        if earlier is not None:
            # One variable allocated twice (IR that is not SSA): rewriting one allocation's
            # variable would rewrite the other's too, so neither shares memory.
            earlier.escaped = allocation.escaped = True
        self.by_var[node.buffer_var] = allocation
        self.visit(node.body)

    def visit_AllocateConst(self, node: AllocateConst) -> None:
        self._visit_exprs(node.extents)
        self.visit(node.body)

    def _visit_exprs(self, exprs: tuple[PrimExpr, ...]) -> None:
        for expr in exprs:
            self.visit(expr)
