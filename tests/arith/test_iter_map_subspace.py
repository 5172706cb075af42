"""subspace_divide (blockize's question): each binding as outer * inner_extent + inner.

Checked by enumeration: on every domain point the binding equals the recombined parts, the outer
part uses only outer loops and the inner part only `sub_iters`.
"""

import itertools

from tessel.arith.iter_map import IterMark, normalize_iter_map_to_expr, subspace_divide
from tessel.ir import builders
from tessel.ir.expr import PrimExpr, Range, Var
from tessel.ir.functor import post_order
from tessel.testing.arith_strategies import evaluate


def _loops(**extents: int) -> tuple[list[Var], dict[Var, Range]]:
    variables = [Var(name) for name in extents]
    ranges = {
        v: Range.from_min_extent(0, e) for v, e in zip(variables, extents.values(), strict=True)
    }
    return variables, ranges


def _free_vars(expr: PrimExpr) -> set[Var]:
    return {node for node in post_order(expr) if isinstance(node, Var)}


def _check_division(bindings, iters, sub_iters, division, predicate=True):
    """The parts recombine to the bindings everywhere and each uses only its own loops."""
    assert len(division) == len(bindings) + 1
    outer_loops = set(iters) - set(sub_iters)
    parts = []
    for outer, inner in division[:-1]:
        outer_expr = normalize_iter_map_to_expr(outer.source)
        inner_expr = normalize_iter_map_to_expr(inner.source)
        assert _free_vars(outer_expr) <= outer_loops
        assert _free_vars(inner_expr) <= set(sub_iters)
        parts.append((outer_expr, outer.extent.value, inner_expr, inner.extent.value))
    predicate = builders.convert(predicate)
    axes = [range(r.extent.value) for r in iters.values()]
    for values in itertools.product(*axes):
        point = dict(zip(iters, values, strict=True))
        if not evaluate(predicate, point):
            continue
        for binding, (outer, outer_extent, inner, inner_extent) in zip(
            bindings, parts, strict=True
        ):
            outer_value, inner_value = evaluate(outer, point), evaluate(inner, point)
            assert 0 <= outer_value < outer_extent
            assert 0 <= inner_value < inner_extent
            assert evaluate(binding, point) == outer_value * inner_extent + inner_value


def _extents(division: list[tuple[IterMark, IterMark]]) -> list[tuple[int, int]]:
    return [(outer.extent.value, inner.extent.value) for outer, inner in division[:-1]]


def test_split_loops_divide_into_outer_and_inner_loops():
    (i0, i1, j0, j1), iters = _loops(i0=4, i1=4, j0=2, j1=8)
    bindings = [i0 * 4 + i1, j0 * 8 + j1]
    division = subspace_divide(bindings, iters, [i1, j1])
    assert _extents(division) == [(4, 4), (2, 8)]
    _check_division(bindings, iters, [i1, j1], division)


def test_split_of_fused_loops_divides_on_a_digit_boundary():
    # for f in fuse(i in 4, j in 8), split by 8: f = fo * 8 + fi; vi = f // 8, vj = f % 8
    (fo, fi), iters = _loops(fo=4, fi=8)
    fused = fo * 8 + fi
    bindings = [fused // 8, fused % 8]
    division = subspace_divide(bindings, iters, [fi])
    assert _extents(division) == [(4, 1), (1, 8)]
    _check_division(bindings, iters, [fi], division)


def test_split_of_fused_loops_across_a_digit_boundary_gives_both_parts():
    # split by 4 instead: vj = (fo * 4 + fi) % 8 = (fo % 2) * 4 + fi mixes both subspaces
    (fo, fi), iters = _loops(fo=8, fi=4)
    fused = fo * 4 + fi
    bindings = [fused // 8, fused % 8]
    division = subspace_divide(bindings, iters, [fi])
    assert _extents(division) == [(4, 1), (2, 4)]
    _check_division(bindings, iters, [fi], division)


def test_everything_inner_leaves_unit_outer_parts():
    (i, j), iters = _loops(i=4, j=8)
    bindings = [(i * 8 + j) // 4, (i * 8 + j) % 4]
    division = subspace_divide(bindings, iters, [i, j])
    assert _extents(division) == [(1, 8), (1, 4)]
    _check_division(bindings, iters, [i, j], division)


def test_inner_loop_outside_the_outer_loop_cannot_be_divided():
    (fo, fi), iters = _loops(fo=4, fi=8)
    assert subspace_divide([fo * 8 + fi], iters, [fo]) == []


def test_binding_that_is_not_an_iterator_map_cannot_be_divided():
    (i, j), iters = _loops(i=4, j=4)
    assert subspace_divide([i * j], iters, [j]) == []


def test_predicate_on_the_inner_loops_becomes_the_inner_predicate():
    (o, i1, i2), iters = _loops(o=3, i1=4, i2=4)
    predicate = i1 * 4 + i2 < 14
    bindings = [o, i1 * 4 + i2]
    division = subspace_divide(bindings, iters, [i1, i2], predicate)
    assert _extents(division) == [(3, 1), (1, 14)]
    outer_predicate, inner_predicate = (mark.extent for mark in division[-1])
    assert builders.is_const_int(outer_predicate, 1)
    assert _free_vars(inner_predicate) == {i1, i2}
    _check_division(bindings, iters, [i1, i2], division, predicate)


def test_predicate_spanning_both_subspaces_cannot_be_divided():
    (io, ii), iters = _loops(io=8, ii=4)
    assert subspace_divide([io * 4 + ii], iters, [ii], io * 4 + ii < 30) == []


def test_no_predicate_gives_true_predicates():
    (i0, i1), iters = _loops(i0=4, i1=4)
    division = subspace_divide([i0 * 4 + i1], iters, [i1])
    assert all(builders.is_const_int(mark.extent, 1) for mark in division[-1])
