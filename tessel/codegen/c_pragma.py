"""What a `pragma_*` AttrStmt means in C (LowerOpaqueBlock makes them from `pragma_*` annotations).

- `pragma_auto_unroll_max_step` = N (TVM's auto-unroll budget): the pass AutoUnrollLoop
  (tessel/transform/auto_unroll_loop.py) has marked UNROLLED the loops it covers, which C
  prints as `#pragma GCC unroll`; here it is only the comment saying so.
- `pragma_software_prefetch` = N on a loop: each iteration first asks for the memory N bytes
  past each contiguous vector load of a non-local buffer that advances with the loop
  (`__builtin_prefetch`), so a stream of weights arrives before its loads (GEMV at batch 1).
- Every other pragma has no C counterpart (`pragma_unroll_explicit` only chooses between IR and
  backend unrolling, which is the same thing for C): the C code names it in a comment, so a
  reader of the generated file sees it was there. A pragma never fails code generation.
"""

from __future__ import annotations

from tessel.arith import Analyzer
from tessel.ir.expr import IntImm, PrimExpr, StringImm, Var
from tessel.ir.functor import mentions, post_order
from tessel.ir.node import with_changes
from tessel.ir.substitute import substitute
from tessel.support.names import c_comment
from tessel.tir import stmt as S
from tessel.tir.buffer import BufferLoad

PRAGMA_PREFIX = "pragma_"
AUTO_UNROLL_MAX_STEP = "pragma_auto_unroll_max_step"
SOFTWARE_PREFETCH = "pragma_software_prefetch"
# The iterations of inner loops prefetch_loads looks at, at most (an unrolled loop's each count).
_MAX_PREFETCH_POINTS = 64


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


def prefetch_loads(loop: S.For) -> list[BufferLoad]:
    """Each contiguous vector load of a non-local buffer in `loop`'s body whose address moves
    with the loop, its indices at the start of the iteration: inner loops at their first
    iteration, an unrolled one at each of its iterations (the C compiler's copies are loads of
    their own)."""
    nodes = list(post_order(loop.body))
    points: list[dict[Var, PrimExpr]] = [{}]
    for inner in (n for n in nodes if isinstance(n, S.For)):
        values = [inner.min]
        if inner.kind is S.ForKind.UNROLLED and isinstance(inner.extent, IntImm):
            values = [inner.min + k for k in range(inner.extent.value)]
        if len(points) * len(values) > _MAX_PREFETCH_POINTS:
            values = values[:1]
        points = [{**point, inner.loop_var: value} for point in points for value in values]
    moving = [
        n
        for n in nodes
        if isinstance(n, BufferLoad)
        and n.dtype.is_vector
        and n.buffer.scope not in ("local", "shared")
        and any(mentions(index, loop.loop_var) for index in n.indices)
    ]
    analyzer = Analyzer()
    return [
        with_changes(
            load, indices=tuple(analyzer.simplify(substitute(i, point)) for i in load.indices)
        )
        for point in points
        for load in moving
    ]


def _value_text(value: object) -> str:
    if isinstance(value, StringImm):
        return repr(value.value)
    if isinstance(value, PrimExpr):
        return str(value)
    return repr(value)
