"""Graph-level layout steps: how a parameter's layout change looks to the caller (TY-NNP thread).

Each buffer primitive on a parameter is exactly one `reshape`, `pad` or `transpose` of the
argument, and each has a reverse (`reshape`, `strided_slice`, `transpose`), so the graph level can
pre-transform arguments and fold constant weights offline (docs/architecture.md §8,
LayoutRewrite). A general index map is decomposed into such steps when it is one; otherwise it
becomes one `gather` step, tabulated by evaluating the map.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, NoReturn

import numpy as np

from tessel.arith.analyzer import Analyzer
from tessel.arith.iter_map import IterMark, IterSplitExpr, IterSumExpr, detect_iter_map
from tessel.ir import builders
from tessel.ir import expr as ir_expr
from tessel.ir.expr import BinaryOp, FloorDiv, FloorMod, IntImm, PrimExpr, Range, Var
from tessel.ir.functor import post_order
from tessel.ir.node import Node
from tessel.tir.index_map import IndexMap
from tessel.tir.layout import row_major_strides

Shape = tuple[int, ...]


def _ints(values: Sequence[Any]) -> tuple[int, ...]:
    """Python ints from ints or constant `IntImm`s (a buffer's shape)."""
    return tuple(int(v) for v in values)


def _check_rank(step: object, shape: Shape, rank: int) -> None:
    if len(shape) != rank:
        raise ValueError(f"`{step}` applies to {rank}-d arrays, not to shape {list(shape)}")


@dataclass(frozen=True)
class Reshape:
    """`numpy.reshape` (row-major) to `new_shape`."""

    new_shape: Shape

    def apply(self, array: np.ndarray) -> np.ndarray:
        """The reshaped array."""
        return array.reshape(self.new_shape)

    def output_shape(self, shape: Shape) -> Shape:
        """`new_shape`, when it holds as many elements as `shape`."""
        if math.prod(shape) != math.prod(self.new_shape):
            raise ValueError(f"`{self}` cannot reshape {list(shape)}: the sizes differ")
        return self.new_shape

    def reverse(self, input_shape: Shape) -> Reshape:
        """The reshape back to `input_shape`."""
        return Reshape(input_shape)

    def __str__(self) -> str:
        return f"reshape(x, {list(self.new_shape)})"


@dataclass(frozen=True)
class Pad:
    """`numpy.pad` in constant mode: (before, after) elements of `value` per axis."""

    pad_width: tuple[tuple[int, int], ...]
    value: float | int

    def apply(self, array: np.ndarray) -> np.ndarray:
        """The padded array."""
        return np.pad(array, self.pad_width, constant_values=self.value)

    def output_shape(self, shape: Shape) -> Shape:
        """`shape` grown by the padding."""
        _check_rank(self, shape, len(self.pad_width))
        return tuple(n + a + b for n, (a, b) in zip(shape, self.pad_width, strict=True))

    def reverse(self, input_shape: Shape) -> Slice:
        """The slice that cuts the padding off again."""
        begin = tuple(a for a, _ in self.pad_width)
        return Slice(begin, tuple(a + n for a, n in zip(begin, input_shape, strict=True)))

    def __str__(self) -> str:
        return f"pad(x, {[list(p) for p in self.pad_width]}, value={self.value})"


@dataclass(frozen=True)
class Slice:
    """`strided_slice` with stride 1 from `begin` to `end` (the reverse of `Pad`)."""

    begin: Shape
    end: Shape

    def apply(self, array: np.ndarray) -> np.ndarray:
        """The sliced array."""
        return array[tuple(slice(b, e) for b, e in zip(self.begin, self.end, strict=True))]

    def output_shape(self, shape: Shape) -> Shape:
        """The extent of the slice on each axis."""
        _check_rank(self, shape, len(self.begin))
        return tuple(e - b for b, e in zip(self.begin, self.end, strict=True))

    def reverse(self, input_shape: Shape) -> NoReturn:
        """Refused: a slice drops elements (slices appear only in reverse chains)."""
        raise ValueError(f"`{self}` drops elements, so it has no reverse step")

    def __str__(self) -> str:
        return f"strided_slice(x, begin={list(self.begin)}, end={list(self.end)})"


@dataclass(frozen=True)
class Transpose:
    """`numpy.transpose`: new axis k is old axis `axes[k]`."""

    axes: Shape

    def __post_init__(self) -> None:
        object.__setattr__(self, "axes", _ints(self.axes))
        if sorted(self.axes) != list(range(len(self.axes))):
            raise ValueError(f"transpose axes {list(self.axes)} are not a permutation")

    def apply(self, array: np.ndarray) -> np.ndarray:
        """The transposed array."""
        return np.transpose(array, self.axes)

    def output_shape(self, shape: Shape) -> Shape:
        """`shape` permuted."""
        _check_rank(self, shape, len(self.axes))
        return tuple(shape[k] for k in self.axes)

    def reverse(self, input_shape: Shape) -> Transpose:
        """The inverse permutation."""
        return Transpose(tuple(int(k) for k in np.argsort(self.axes)))

    def __str__(self) -> str:
        return f"transpose(x, {list(self.axes)})"


@dataclass(frozen=True, eq=False)  # identity equality: `sources` is an array
class Gather:
    """`out[p] = in.flat[sources[p]]`, or `value` where `sources[p]` is -1 (a general map)."""

    sources: np.ndarray
    value: float | int

    def apply(self, array: np.ndarray) -> np.ndarray:
        """The gathered array."""
        out = np.full(self.sources.shape, self.value, dtype=array.dtype)
        taken = self.sources >= 0
        out[taken] = array.reshape(-1)[self.sources[taken]]
        return out

    def output_shape(self, shape: Shape) -> Shape:
        """The shape of the table."""
        return _ints(self.sources.shape)

    def reverse(self, input_shape: Shape) -> Gather:
        """The gather that takes every element back to its old place."""
        taken = self.sources >= 0
        back = np.full(math.prod(input_shape), -1, dtype=np.int64)
        back[self.sources[taken]] = np.flatnonzero(taken)
        return Gather(back.reshape(input_shape), self.value)

    def __str__(self) -> str:
        return f"gather(x, table of shape {list(self.sources.shape)}, value={self.value})"


Step = Reshape | Pad | Slice | Transpose | Gather


@dataclass(frozen=True)
class LayoutRecord:
    """How a parameter's layout changed: the steps from the original layout and back."""

    param: str
    original_shape: Shape
    steps: tuple[Step, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "original_shape", _ints(self.original_shape))
        object.__setattr__(self, "steps", tuple(self.steps))
        self.shapes()  # every step must fit the shape before it

    def shapes(self) -> list[Shape]:
        """The shape before each step, then the final one."""
        shapes = [self.original_shape]
        for step in self.steps:
            shapes.append(step.output_shape(shapes[-1]))
        return shapes

    @property
    def new_shape(self) -> Shape:
        """The parameter's shape after every step."""
        return self.shapes()[-1]

    def reverse_steps(self) -> tuple[Step, ...]:
        """The steps from the new layout back to the original one."""
        pairs = zip(self.steps, self.shapes()[:-1], strict=True)
        return tuple(step.reverse(shape) for step, shape in reversed(list(pairs)))

    def forward(self, array: np.ndarray) -> np.ndarray:
        """`array` (original layout) in the new layout."""
        return self._run(self.steps, array, self.original_shape)

    def reverse(self, array: np.ndarray) -> np.ndarray:
        """`array` (new layout) back in the original layout."""
        return self._run(self.reverse_steps(), array, self.new_shape)

    def then(self, steps: Sequence[Step]) -> LayoutRecord:
        """This record with `steps` appended (each schedule primitive adds its own)."""
        return replace(self, steps=(*self.steps, *steps))

    def _run(self, steps: Sequence[Step], array: np.ndarray, shape: Shape) -> np.ndarray:
        if array.shape != shape:
            raise ValueError(f"`{self.param}` has shape {list(shape)}, got {list(array.shape)}")
        for step in steps:
            array = step.apply(array)
        return np.ascontiguousarray(array)

    def __str__(self) -> str:
        head = f"{self.param}: {list(self.original_shape)} -> {list(self.new_shape)}"
        forward = [f"    {step}" for step in self.steps]
        reverse = [f"    {step}" for step in self.reverse_steps()]
        return "\n".join([head, "  forward:", *forward, "  reverse:", *reverse])


# ---- the steps of each buffer primitive ----------------------------------------------------


def split_steps(
    shape: Sequence[int], axis: int, factors: Sequence[int | None], pad_value: float | int
) -> tuple[Step, ...]:
    """buffer_split of `axis` into `factors` (one may be None: inferred): pad, then reshape."""
    shape = _ints(shape)
    extent = shape[axis]
    known = math.prod(f for f in factors if f is not None)
    if sum(f is None for f in factors) > 1 or any(f is not None and f < 1 for f in factors):
        raise ValueError(f"split factors {list(factors)} must be positive, with at most one None")
    resolved = tuple(-(-extent // known) if f is None else f for f in factors)
    total = math.prod(resolved)
    if total < extent:
        raise ValueError(f"split factors {list(resolved)} do not cover extent {extent}")
    reshape = Reshape((*shape[:axis], *resolved, *shape[axis + 1 :]))
    if total == extent:
        return (reshape,)
    widths = tuple((0, total - n if k == axis else 0) for k, n in enumerate(shape))
    return (Pad(widths, pad_value), reshape)  # TY-NNP thread: `relay.nn.pad`, then the reshape


def fuse_steps(shape: Sequence[int], axes: Sequence[int]) -> tuple[Step, ...]:
    """buffer_fuse of consecutive `axes`: one reshape."""
    shape, axes = _ints(shape), _ints(axes)
    if not axes or axes != tuple(range(axes[0], axes[0] + len(axes))) or axes[-1] >= len(shape):
        raise ValueError(f"fuse takes consecutive axes of shape {list(shape)}, got {list(axes)}")
    fused = math.prod(shape[a] for a in axes)
    return (Reshape((*shape[: axes[0]], fused, *shape[axes[-1] + 1 :])),)


def reorder_steps(shape: Sequence[int], order: Sequence[int]) -> tuple[Step, ...]:
    """buffer_reorder: one transpose (new axis k is old axis `order[k]`)."""
    transpose = Transpose(_ints(order))
    transpose.output_shape(_ints(shape))
    return (transpose,)


# ---- general index maps ----------------------------------------------------------------------


def steps_for_index_map(
    initial_vars: Sequence[Var],
    final_exprs: Sequence[PrimExpr],
    shape: Sequence[int],
    pad_value: float | int,
    new_shape: Sequence[int] | None = None,
) -> tuple[Step, ...]:
    """The steps of a general map into `new_shape` (the new buffer's; `IndexMap.map_shape` by
    default): pad / reshape / transpose when it is a composition of those, else one gather."""
    shape = _ints(shape)
    index_map = IndexMap(tuple(initial_vars), tuple(final_exprs))
    target = _ints(index_map.map_shape(shape) if new_shape is None else new_shape)
    analyzer = Analyzer()
    for var, dom in _box(index_map.initial_indices, shape).items():
        analyzer.bind(var, dom)
    # The steps need to agree with the map on the old box only: `(i // 32) * 32 + i % 32` is `i`.
    exprs = tuple(analyzer.simplify(e) for e in index_map.final_indices)
    try:
        return _decompose(index_map.initial_indices, exprs, shape, target, pad_value)
    except _NotStepsError:
        return (_gather(index_map, shape, target, pad_value),)


class _NotStepsError(Exception):
    """The map is no sequence of pad, reshape and transpose steps."""


# A digit of the map: (its place in the old flat index, its extent, its place in the new index).
_Term = tuple[int, int, int]


def _padded_extents(variables: Sequence[Var], exprs: Sequence[PrimExpr], shape: Shape) -> Shape:
    """`shape` padded to a multiple of each old index's divisors (`i // 4` on 14 pads to 16)."""
    multiple = dict.fromkeys(variables, 1)
    for node in (node for expr in exprs for node in post_order(expr)):
        for var, divisor in _division_of_one_index(node, multiple):
            multiple[var] = math.lcm(multiple[var], divisor)
    return tuple(-(-n // m) * m for n, m in zip(shape, multiple.values(), strict=True))


def _division_of_one_index(node: Node, variables: dict[Var, int]) -> list[tuple[Var, int]]:
    """[(index, c)] when `node` is `e // c` or `e % c` with c > 0 and `e` of one old index."""
    if not isinstance(node, FloorDiv | FloorMod) or not isinstance(node.b, IntImm):
        return []
    used = {n for n in post_order(node.a) if isinstance(n, Var) and n in variables}
    return [(used.pop(), node.b.value)] if len(used) == 1 and node.b.value > 0 else []


def _decompose(
    variables: Sequence[Var],
    exprs: Sequence[PrimExpr],
    shape: Shape,
    new_shape: Shape,
    pad_value: float | int,
) -> tuple[Step, ...]:
    """Pad the old box for the divisors, split it into digits, transpose them, fuse them into the
    new indices, then pad those out to `new_shape` (offsets and bounds past the digits)."""
    extents = _padded_extents(variables, exprs, shape)
    result = detect_iter_map(exprs, _box(variables, extents), check_level="surjective")
    if not result:
        raise _NotStepsError
    places = dict(zip(variables, row_major_strides(extents, 1), strict=True))
    per_index = [[t for arg in i.args for t in _split_terms(arg, places)] for i in result.indices]
    boxes = tuple(_tiled([(q, e) for _, e, q in terms]) for terms in per_index)
    scales = row_major_strides(boxes, 1)  # each index's digits tile it, so theirs tile the box
    terms = [(p, e, q * s) for ts, s in zip(per_index, scales, strict=True) for p, e, q in ts]
    if _tiled([(p, e) for p, e, _ in terms]) != math.prod(extents):
        raise _NotStepsError  # some old element is dropped or two share a place
    bases = [_const(index.base) for index in result.indices]
    in_pad = tuple((0, m - n) for n, m in zip(shape, extents, strict=True))
    out_pad = tuple((b, n - b - m) for b, m, n in zip(bases, boxes, new_shape, strict=True))
    steps = [Pad(in_pad, pad_value), *_permutation_steps(terms, boxes), Pad(out_pad, pad_value)]
    return _without_no_ops(steps, shape)


def _box(variables: Sequence[Var], extents: Shape) -> dict[Var, Range]:
    """Each old index over [0, extent)."""
    return {
        v: Range(builders.const(0, v.dtype), builders.const(n, v.dtype))
        for v, n in zip(variables, extents, strict=True)
    }


def _permutation_steps(terms: list[_Term], boxes: Shape) -> list[Step]:
    """Split into digits (most significant first), transpose to the new order, fuse to `boxes`."""
    by_place = sorted(terms, key=lambda t: -t[0])
    axes = tuple(sorted(range(len(by_place)), key=lambda k: -by_place[k][2]))
    if axes == tuple(range(len(axes))):  # the digits stay in order: one reshape does it
        return [Reshape(boxes)]
    return [Reshape(tuple(e for _, e, _ in by_place)), Transpose(axes), Reshape(boxes)]


def _without_no_ops(steps: list[Step], shape: Shape) -> tuple[Step, ...]:
    """`steps` less reshapes to the same shape and empty padding; negative padding fails."""
    kept: list[Step] = []
    for step in steps:
        if isinstance(step, Pad) and any(min(p) < 0 for p in step.pad_width):
            raise _NotStepsError
        new = step.output_shape(shape)
        if new != shape or isinstance(step, Transpose):
            kept.append(step)
        shape = new
    return tuple(kept)


def _split_terms(split: IterSplitExpr, places: dict[Var, int]) -> list[_Term]:
    """The digits of `(mark // lower_factor) % extent * scale`."""
    scale = _const(split.scale)
    if scale <= 0:  # a reversed axis is no transpose
        raise _NotStepsError
    lower, extent = _const(split.lower_factor), _const(split.extent)
    return [(p, e, q * scale) for p, e, q in _cut(_mark_terms(split.source, places), lower, extent)]


def _mark_terms(mark: IterMark, places: dict[Var, int]) -> list[_Term]:
    """The digits of an old index, or of a fused sum of splits (which must tile its extent)."""
    source = mark.source
    if isinstance(source, Var) and source in places:
        return [(places[source], _const(mark.extent), 1)]
    if not isinstance(source, IterSumExpr) or _const(source.base) != 0:
        raise _NotStepsError
    terms = _merged([t for arg in source.args for t in _split_terms(arg, places)])
    if _tiled([(q, e) for _, e, q in terms]) != _const(mark.extent):
        raise _NotStepsError
    return terms


def _cut(terms: list[_Term], lower: int, extent: int) -> list[_Term]:
    """The digits of `(value // lower) % extent` for a value made of `terms`: those at new places
    [lower, lower * extent), cut where a boundary falls inside a digit."""
    kept = []
    for p, e, q in terms:
        low, high = max(q, lower), min(q * e, lower * extent)
        if low >= high:
            continue
        if low % q or low % lower or high % low or (q * e) % high:
            raise _NotStepsError
        kept.append((p * (low // q), high // low, low // lower))
    return kept


def _merged(terms: list[_Term]) -> list[_Term]:
    """`terms` without unit digits, neighbours in both places joined into one digit."""
    merged: list[_Term] = []
    for p, e, q in sorted(t for t in terms if t[1] > 1):
        if merged and p == merged[-1][0] * merged[-1][1] and q == merged[-1][2] * merged[-1][1]:
            p0, e0, q0 = merged.pop()
            p, e, q = p0, e0 * e, q0
        merged.append((p, e, q))
    return merged


def _tiled(digits: list[tuple[int, int]]) -> int:
    """The extent that (place, extent) digits cover as a mixed-radix number, with no gap."""
    total = 1
    for place, extent in sorted(digits):
        if place != total:
            raise _NotStepsError
        total *= extent
    return total


def _const(expr: PrimExpr) -> int:
    if not isinstance(expr, IntImm):
        raise _NotStepsError
    return expr.value


# ---- the fallback: a gather tabulated from the map ------------------------------------------


def _gather(index_map: IndexMap, shape: Shape, new_shape: Shape, pad_value: float | int) -> Gather:
    """The gather that puts each old element where the map sends it."""
    points = np.indices(shape, dtype=np.int64)
    env = dict(zip(index_map.initial_indices, points, strict=True))
    targets = [np.broadcast_to(evaluate_index(e, env), shape) for e in index_map.final_indices]
    flat = np.ravel_multi_index(targets, new_shape).reshape(-1)
    if np.unique(flat).size != flat.size:
        raise ValueError(f"{index_map!r} sends two elements of shape {list(shape)} to one place")
    sources = np.full(math.prod(new_shape), -1, dtype=np.int64)
    sources[flat] = np.arange(flat.size)
    return Gather(sources.reshape(new_shape), pad_value)


_ARRAY_OPS: dict[type, Callable[..., np.ndarray]] = {
    ir_expr.Add: np.add, ir_expr.Sub: np.subtract, ir_expr.Mul: np.multiply,
    FloorDiv: np.floor_divide, FloorMod: np.mod, ir_expr.Min: np.minimum, ir_expr.Max: np.maximum,
}  # fmt: skip


def evaluate_index(expr: PrimExpr, env: dict[Var, np.ndarray]) -> np.ndarray:
    """An integer index expression, elementwise over NumPy index arrays."""
    if isinstance(expr, Var) and expr in env:
        return env[expr]
    if isinstance(expr, IntImm):
        return np.asarray(expr.value, dtype=np.int64)
    op = _ARRAY_OPS.get(type(expr))
    if op is None or not isinstance(expr, BinaryOp):
        raise ValueError(f"cannot tabulate the index `{expr}`: only + - * // % min max of indices")
    return op(evaluate_index(expr.a, env), evaluate_index(expr.b, env))
