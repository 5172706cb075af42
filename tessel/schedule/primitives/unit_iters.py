"""`preserve_unit_iters=False` (TVM's split, fuse and blockize flag): loops of extent 1 leave the
bindings of the blocks under a transformed loop, which then read the loop's one value."""

from __future__ import annotations

from tessel.arith import Analyzer
from tessel.ir import builders
from tessel.ir.expr import Range, Var
from tessel.ir.node import with_changes
from tessel.ir.substitute import substitute
from tessel.schedule.state import find_loop, replace_stmt, walk_with_ancestors
from tessel.tir.block import Block, BlockRealize
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import For


def drop_unit_iters(func: PrimFunc, loop_var: Var) -> PrimFunc:
    """`func` with each unit loop around the blocks directly under the loop of `loop_var`
    replaced by its minimum in their bindings and predicates (simplified over the other loops)."""
    located = find_loop(func, loop_var)
    assert located is not None, "the transformed loop is in the function"
    loop = located.node
    outside = located.enclosing_loops()
    changed = {}
    for node, ancestors in walk_with_ancestors(loop):
        if not isinstance(node, BlockRealize) or any(isinstance(a, Block) for a in ancestors):
            continue
        loops = [*outside, loop, *(a for a in ancestors if isinstance(a, For) and a is not loop)]
        units = {lp.loop_var: lp.min for lp in loops if builders.is_const_int(lp.extent, 1)}
        if not units:
            continue
        analyzer = Analyzer()
        for lp in loops:
            analyzer.bind(lp.loop_var, Range(lp.min, lp.extent), allow_override=True)
        values = tuple(analyzer.simplify(substitute(v, units)) for v in node.iter_values)
        predicate = analyzer.simplify(substitute(node.predicate, units))
        changed[id(node)] = (node, with_changes(node, iter_values=values, predicate=predicate))
    for old, new in changed.values():
        func = replace_stmt(func, old, new)
    return func
