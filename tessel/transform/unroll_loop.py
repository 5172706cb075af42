"""UnrollLoop: replace a `T.unroll` loop of small constant extent whose body branches by copies
of its body (TVM's UnrollLoop, for explicitly unrolled loops).

Each copy has the loop variable replaced by its value and is simplified; its `if` conditions are
decided knowing the ranges of the loops around it and the conditions of the `if`s it sits in
(buffer-free ones): so the tail tile of a split that does not divide its loop, which UnswitchGuards
put under `not (i_o * 7 + 6 < 13)`, has its guards `i_o * 7 + k < 13` decided copy by copy (`i_o` is
1 there), and the tail becomes straight-line code like the full tiles.

A `T.unroll` loop without an `if` in its body stays a loop, as does one whose extent is not a
constant or is larger than `max_extent`: codegen marks it `#pragma GCC unroll` and the C compiler
makes the copies. Copying a branch-free body here gained little the C compiler does not do
itself (over 13 zoo and benchmark models at one thread, the fastest of interleaved rounds: a
geometric mean of 1.00, from GoogLeNet 5% faster without the copies to ConvNeXt 4% and RegNet
3% slower; outputs bit for bit the same or within 1e-7) and cost most of the lowering: every
copy was rebuilt and simplified by every later pass and printed as C (ResNet-50's lowering 9.9 s
of CPU time, 3.4 s without; its C 2.2x smaller). `explicit_unroll=True` copies every small
`T.unroll` loop, as TVM's `tir.UnrollLoop` does with its option of that name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel.arith import Analyzer
from tessel.ir import builders
from tessel.ir import expr as E
from tessel.ir.functor import Mutator, post_order
from tessel.ir.node import Node, with_changes
from tessel.ir.substitute import substitute
from tessel.ir.transform import PassContext
from tessel.tir import stmt as S
from tessel.tir.buffer import BufferLoad
from tessel.tir.function import PrimFunc
from tessel.transform.no_op import no_op
from tessel.transform.prim_func_pass import PrimFuncPass
from tessel.transform.simplify import StmtSimplifier


@dataclass(frozen=True)
class UnrollLoop(PrimFuncPass):
    """Unroll each `T.unroll` loop with a constant extent of at most `max_extent` iterations
    and an `if` in its body (every one with `explicit_unroll`)."""

    name: ClassVar[str] = "unroll_loop"
    max_extent: int = 64
    explicit_unroll: bool = False

    def transform(self, func: PrimFunc, ctx: PassContext) -> PrimFunc:
        unroller = _Unroller(self.max_extent, self.explicit_unroll)
        return with_changes(func, body=unroller.visit(func.body))


def _reads_a_buffer(condition: E.PrimExpr) -> bool:
    """Whether `condition` loads from a buffer: not a fact, as a branch may write what it reads."""
    return any(isinstance(n, BufferLoad) for n in post_order(condition))


def _branches(body: S.Stmt) -> bool:
    """Whether `body` holds an `if`, whose condition a copy may decide."""
    return any(isinstance(n, S.IfThenElse) for n in post_order(body))


class _Unroller(Mutator):
    def __init__(self, max_extent: int, explicit_unroll: bool) -> None:
        super().__init__()
        self.max_extent, self.explicit_unroll = max_extent, explicit_unroll
        self.analyzer = Analyzer()  # the loops and conditions around the statement visited

    def visit_IfThenElse(self, node: S.IfThenElse) -> Node:
        if _reads_a_buffer(node.condition):
            return self.generic_visit(node)  # a branch may write what the condition reads
        with self.analyzer.constraint_scope(node.condition):
            then_case = self.visit(node.then_case)
        else_case = node.else_case
        if else_case is not None:
            with self.analyzer.constraint_scope(builders.logical_not(node.condition)):
                else_case = self.visit(else_case)
        return with_changes(node, then_case=then_case, else_case=else_case)

    def visit_For(self, loop: S.For) -> Node:
        if loop.kind is not S.ForKind.UNROLLED:
            self.analyzer.bind(loop.loop_var, E.Range(loop.min, loop.extent), allow_override=True)
        visited = self.generic_visit(loop)
        assert isinstance(visited, S.For)
        if visited.kind is not S.ForKind.UNROLLED:
            return visited
        if not isinstance(visited.extent, E.IntImm) or visited.extent.value > self.max_extent:
            return visited
        if visited.extent.value <= 0:
            return no_op()
        if not self.explicit_unroll and not _branches(visited.body):
            return visited  # the C compiler copies it (`#pragma GCC unroll`)
        copies = []
        for k in range(visited.extent.value):
            value = visited.min + E.IntImm(visited.loop_var.dtype, k)
            copy = substitute(visited.body, {visited.loop_var: value})
            copies.append(_CopySimplifier(self.analyzer).visit(copy))
        return S.SeqStmt.flatten(copies)


class _CopySimplifier(StmtSimplifier):
    """Simplifies an unrolled copy on its own (a fresh analyzer: the facts around it slow
    every expression's simplification, SqueezeNet's UnrollLoop took 3.8 s with them, 3.2
    without), except the conditions of its `if`s, which the loops and conditions around the
    copy (`context`) may decide: a tail tile's guards."""

    def __init__(self, context: Analyzer) -> None:
        super().__init__()
        self.context = context

    def visit_IfThenElse(self, node: S.IfThenElse) -> Node:
        condition = self.simplify(node.condition)
        if not _reads_a_buffer(condition) and not isinstance(condition, E.IntImm):
            decided = self.context.simplify(condition)
            if isinstance(decided, E.IntImm):
                condition = decided
        return self._visit_if(node, condition, self._visit_stmt)
