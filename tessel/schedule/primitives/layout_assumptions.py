"""What a function states about its own variables, for index maps over symbolic shapes.

A split by a symbolic divisor (`i // n, i % n`) is a layout only when `n > 0`; TVM assumes it
silently, Tessel asks for it to be provable. The facts are the `T.assume(...)` statements that run
unconditionally (outside any loop, branch, let or block with iterators, so they speak of the
function's parameters and shape variables, whose values never change) and, for each argument
buffer, that its extents are not negative. A shape alone never proves `n > 0`: `16 * n` may be
0, and then `i // n` divides by zero.
"""

from __future__ import annotations

from collections.abc import Iterator

from tessel.ir import builders
from tessel.ir.expr import Call, PrimExpr
from tessel.ir.structural import same_expr
from tessel.tir import builtin
from tessel.tir.block import Block, BlockRealize
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import AttrStmt, DeclBuffer, Evaluate, SeqStmt, Stmt


def function_assumptions(func: PrimFunc) -> tuple[PrimExpr, ...]:
    """The facts `func` guarantees for its whole run: unconditional `T.assume`s and argument
    extents `>= 0`."""
    extents: list[PrimExpr] = []
    for buffer in func.buffer_map.values():
        for extent in buffer.shape:
            if not builders.is_const_int(extent) and not any(same_expr(extent, e) for e in extents):
                extents.append(extent)
    nonnegative = (builders.ge(e, builders.const(0, e.dtype)) for e in extents)
    return (*_unconditional_assumes(func.body), *nonnegative)


def _unconditional_assumes(stmt: Stmt) -> Iterator[PrimExpr]:
    """The conditions of the `T.assume`s that run once whenever `stmt` runs."""
    if isinstance(stmt, Evaluate):
        value = stmt.value
        if isinstance(value, Call) and value.op is builtin.assume_op:
            yield value.args[0]
    elif isinstance(stmt, SeqStmt):
        for item in stmt.seq:
            yield from _unconditional_assumes(item)
    elif isinstance(stmt, BlockRealize):
        if builders.is_const_int(stmt.predicate, 1) and not stmt.block.iter_vars:
            yield from _unconditional_assumes(stmt.block)
    elif isinstance(stmt, Block):
        if not stmt.iter_vars:
            yield from _unconditional_assumes(stmt.body)
    elif isinstance(stmt, AttrStmt | DeclBuffer):
        yield from _unconditional_assumes(stmt.body)
