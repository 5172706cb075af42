"""Inverting a bijective iterator map: each input iterator in terms of the outputs.

Values flow backwards from the outputs (TVM's InverseAffineIterMap): an index sum hands
`(output - base) * scale` to its split; a fused sum hands each of its terms its digit of the value
(`value // scale % extent`); a split hands `value * lower_factor` to its mark, where the digits of
one mark add up to the mark's value — for an input mark, the iterator minus its minimum.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tessel.arith.analyzer import Analyzer
from tessel.arith.iter_map.expr import (
    IterMapExpr,
    IterMapResult,
    IterSplitExpr,
    IterSumExpr,
    input_var_of,
    same_value,
)
from tessel.ir import builders
from tessel.ir.expr import IntImm, PrimExpr, Range, Var
from tessel.support.errors import UserError


class IterMapError(UserError):
    """An iterator map cannot be used as asked (for example, inverted when it is not bijective)."""


def inverse_iter_map(
    result: IterMapResult | Sequence[IterSumExpr],
    input_iters: Mapping[Var, Range],
    output_vars: Sequence[PrimExpr],
    analyzer: Analyzer | None = None,
) -> dict[Var, PrimExpr]:
    """Each input iterator as an expression of `output_vars` (one per index of a bijective map).

    With an analyzer, the results are simplified knowing each output's range.
    """
    indices = _indices_of(result)
    if len(indices) != len(output_vars):
        raise IterMapError(
            f"the map has {len(indices)} indices but {len(output_vars)} output variables",
            rule="iter_map.inverse-arity",
        )
    inverter = _Inverter()
    for index, output in zip(indices, output_vars, strict=True):
        inverter.give(index, builders.convert(output))
    inverter.run(indices)
    inverse = {var: _input_value(var, dom, inverter.found) for var, dom in input_iters.items()}
    if analyzer is None:
        return inverse
    return _simplified(inverse, indices, output_vars, analyzer)


def _indices_of(result: IterMapResult | Sequence[IterSumExpr]) -> tuple[IterSumExpr, ...]:
    if not isinstance(result, IterMapResult):
        return tuple(result)
    if result.errors:
        raise IterMapError(
            "cannot invert a map that was not detected: " + "; ".join(result.errors),
            rule="iter_map.not-detected",
        )
    return result.indices


def _input_value(var: Var, dom: Range, found: dict[Var, PrimExpr]) -> PrimExpr:
    if var in found:
        return found[var]
    if builders.is_const_int(dom.extent, 1):
        return builders.cast(dom.min, var.dtype)
    raise IterMapError(
        f"iterator `{var.name}` does not appear in the map, so it cannot be recovered",
        rule="iter_map.not-bijective",
        hint="invert only maps detected with check_level='bijective'",
    )


class _Inverter:
    """Accumulates, per iterator-map node, the value flowing back into it."""

    def __init__(self) -> None:
        self.values: dict[int, PrimExpr] = {}
        self.found: dict[Var, PrimExpr] = {}

    def give(self, node: IterMapExpr, value: PrimExpr) -> None:
        previous = self.values.get(id(node))
        self.values[id(node)] = value if previous is None else builders.add(previous, value)

    def run(self, indices: Sequence[IterSumExpr]) -> None:
        for node in _parents_first(indices):
            value = self.values.get(id(node))
            if value is None:
                continue
            if isinstance(node, IterSumExpr):
                self._sum(node, value)
            else:
                self._split(node, value)

    def _sum(self, total: IterSumExpr, value: PrimExpr) -> None:
        value = builders.sub(value, total.base)
        if not total.args:  # a constant index says nothing about the inputs
            return
        if len(total.args) == 1:
            scale = total.args[0].scale
            if not (isinstance(scale, IntImm) and abs(scale.value) == 1):
                raise IterMapError(
                    f"`{total}` steps by {scale}; only a map onto a dense range can be inverted",
                    rule="iter_map.not-bijective",
                )
            self.give(total.args[0], builders.mul(value, scale))
            return
        _check_fused(total)
        for position, arg in enumerate(total.args):
            digit = builders.floordiv(value, arg.scale)
            if position > 0:  # the outermost term needs no modulo
                digit = builders.floormod(digit, arg.extent)
            self.give(arg, digit)

    def _split(self, split: IterSplitExpr, value: PrimExpr) -> None:
        value = builders.mul(value, split.lower_factor)
        source = split.source.source
        if isinstance(source, IterSumExpr):
            self.give(source, value)
            return
        var_and_min = input_var_of(split.source)
        if var_and_min is None:
            raise IterMapError(f"cannot invert the iterator `{source}`", rule="iter_map.source")
        var, low = var_and_min
        previous = self.found.get(var, low)
        self.found[var] = builders.add(previous, value)


def _check_fused(total: IterSumExpr) -> None:
    """The terms of a sum must nest: each scale is the next inner term's scale times extent."""
    expected = total.args[-1].scale
    for arg in reversed(total.args):
        if not same_value(arg.scale, expected):
            raise IterMapError(f"`{total}` is not a fused iterator", rule="iter_map.not-bijective")
        expected = builders.mul(expected, arg.extent)


def _parents_first(indices: Sequence[IterSumExpr]) -> list[IterMapExpr]:
    """Every node under the indices, each before the nodes it uses."""
    order: list[IterMapExpr] = []
    seen: set[int] = set()
    stack: list[tuple[IterMapExpr, bool]] = [(index, False) for index in reversed(indices)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node))
    order.reverse()
    return order


def _children(node: IterMapExpr) -> tuple[IterMapExpr, ...]:
    if isinstance(node, IterSumExpr):
        return node.args
    source = node.source.source
    return (source,) if isinstance(source, IterSumExpr) else ()


def _simplified(
    inverse: dict[Var, PrimExpr],
    indices: Sequence[IterSumExpr],
    output_vars: Sequence[PrimExpr],
    analyzer: Analyzer,
) -> dict[Var, PrimExpr]:
    facts = [
        _output_range(index, output) for index, output in zip(indices, output_vars, strict=True)
    ]
    condition = builders.const(True)
    for fact in facts:
        condition = builders.logical_and(condition, fact)
    with analyzer.constraint_scope(condition):
        return {var: analyzer.simplify(value) for var, value in inverse.items()}


def _output_range(index: IterSumExpr, output: PrimExpr) -> PrimExpr:
    """What an output of a dense index ranges over: [base, base + extent) (mirrored for -1)."""
    output = builders.convert(output)
    if not index.args:
        return builders.eq(output, index.base)
    split = index.args[0]
    low = index.base
    if isinstance(split.scale, IntImm) and split.scale.value < 0:
        low = builders.sub(builders.add(index.base, 1), split.extent)
    high = builders.add(low, split.extent)
    return builders.logical_and(builders.le(low, output), builders.lt(output, high))
