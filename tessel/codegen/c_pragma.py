"""What a `pragma_*` AttrStmt means in C (LowerOpaqueBlock makes them from `pragma_*` annotations).

- `pragma_auto_unroll_max_step` = N (TVM's auto-unroll budget): below it, every serial loop of
  constant extent whose whole nest runs at most N statements, and holds only such loops,
  is unrolled; in C that is the `#pragma GCC unroll` an unrolled loop gets. TVM's UnrollLoop
  applies the same rule in the IR; here the C compiler does the copying.
- `pragma_software_prefetch` = N on a loop: each iteration first asks for the memory N bytes
  past each contiguous vector load of a non-local buffer that advances with the loop
  (`__builtin_prefetch`), so a stream of weights arrives before its loads (GEMV at batch 1).
- Every other pragma has no C counterpart (`pragma_unroll_explicit` only chooses between IR and
  backend unrolling, which is the same thing for C): the C code names it in a comment, so a
  reader of the generated file sees it was there. A pragma never fails code generation.
"""

from __future__ import annotations

from tessel.ir.expr import IntImm, PrimExpr, StringImm
from tessel.ir.functor import Mutator
from tessel.ir.node import Node, child_items, with_changes
from tessel.support.names import c_comment
from tessel.tir import stmt as S

PRAGMA_PREFIX = "pragma_"
AUTO_UNROLL_MAX_STEP = "pragma_auto_unroll_max_step"
SOFTWARE_PREFETCH = "pragma_software_prefetch"


def is_pragma(node: S.AttrStmt) -> bool:
    """True for the AttrStmts that carry a `pragma_*` annotation."""
    return node.attr_key.startswith(PRAGMA_PREFIX)


def pragma_comment(node: S.AttrStmt) -> str:
    """A one-line C comment naming the pragma, its value and what it does in C."""
    budget = auto_unroll_budget(node)
    effect = "no C equivalent"
    if budget is not None:
        effect = f"loop nests of at most {budget} steps unrolled"
    if prefetch_distance(node) is not None:
        effect = "the loads' streams prefetched ahead"
    text = " ".join(f"{node.attr_key} = {_value_text(node.value)}".split())  # one line
    return f"// {c_comment(text)} ({effect})"


def loop_pragmas(loop: S.For) -> tuple[list[S.AttrStmt], S.Stmt]:
    """The pragma AttrStmts about `loop` (its variable is their node) that wrap its body, as
    LowerOpaqueBlock leaves them, and the body inside them."""
    pragmas, body = [], loop.body
    while isinstance(body, S.AttrStmt) and is_pragma(body) and body.node is loop.loop_var:
        pragmas.append(body)
        body = body.body
    return pragmas, body


def auto_unroll_budget(node: S.AttrStmt) -> int | None:
    """The step budget of a `pragma_auto_unroll_max_step` with a usable value, else None."""
    value = node.value
    if node.attr_key != AUTO_UNROLL_MAX_STEP or not isinstance(value, IntImm):
        return None
    return value.value if value.value > 0 else None


def prefetch_distance(node: S.AttrStmt) -> int | None:
    """The byte distance of a `pragma_software_prefetch` with a usable value, else None."""
    value = node.value
    if node.attr_key != SOFTWARE_PREFETCH or not isinstance(value, IntImm):
        return None
    return value.value if value.value > 0 else None


def auto_unrolled(body: S.Stmt, max_step: int) -> S.Stmt:
    """`body` with the loops TVM's auto-unroll rule picks for `max_step` marked UNROLLED."""
    result = _AutoUnroller(max_step).visit(body)
    assert isinstance(result, S.Stmt)
    return result


class _AutoUnroller(Mutator):
    def __init__(self, max_step: int) -> None:
        super().__init__()
        self.max_step = max_step

    def visit_For(self, loop: S.For) -> Node:
        visited = self.generic_visit(loop)  # inner loops first: they decide the outer ones
        assert isinstance(visited, S.For)
        if visited.kind is not S.ForKind.SERIAL:
            return visited
        steps = _steps(visited)
        if steps is None or steps > self.max_step:
            return visited
        return with_changes(visited, kind=S.ForKind.UNROLLED)


def _steps(stmt: S.Stmt) -> int | None:
    """How many statements `stmt` runs with every loop in it unrolled; None if a loop in it
    stays a loop (not serial or unrolled, or of non-constant extent)."""
    if isinstance(stmt, S.While):
        return None
    if isinstance(stmt, S.For):
        unrollable = stmt.kind in (S.ForKind.SERIAL, S.ForKind.UNROLLED)
        inner = _steps(stmt.body)
        if not unrollable or not isinstance(stmt.extent, IntImm) or inner is None:
            return None
        return stmt.extent.value * inner
    total = 0
    for _, child in child_items(stmt):
        children = child if isinstance(child, tuple) else (child,)
        for item in children:
            if not isinstance(item, S.Stmt):
                continue
            steps = _steps(item)
            if steps is None:
                return None
            total += steps
    return max(total, 1)


def _value_text(value: object) -> str:
    if isinstance(value, StringImm):
        return repr(value.value)
    if isinstance(value, PrimExpr):
        return str(value)
    return repr(value)
