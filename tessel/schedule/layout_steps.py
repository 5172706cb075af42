"""Graph-level layout steps: how a parameter's layout change looks to the caller (seed 003, TY-NNP).

Each buffer step of a schedule is exactly one `reshape`, `pad` or `transpose` of the argument
(and back: `reshape`, `slice`, `transpose`), so the graph level can pre-transform arguments and
fold constant weights offline (DESIGN.md §8, LayoutRewrite). A general index map that is no such
sequence becomes one `gather` step, evaluated from the map itself.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tessel.arith import Analyzer
from tessel.ir import expr as E


@dataclass(frozen=True)
class Reshape:
    """`numpy.reshape` (row-major) to `new_shape`."""

    new_shape: tuple[int, ...]

    def apply(self, array: np.ndarray) -> np.ndarray:
        return array.reshape(self.new_shape)

    def output_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return self.new_shape

    def reverse(self, input_shape: tuple[int, ...]) -> Reshape:
        return Reshape(input_shape)

    def __str__(self) -> str:
        return f"reshape(x, {list(self.new_shape)})"


@dataclass(frozen=True)
class Pad:
    """`numpy.pad` in constant mode: `pad_width` is (before, after) per axis."""

    pad_width: tuple[tuple[int, int], ...]
    value: float | int = 0

    def apply(self, array: np.ndarray) -> np.ndarray:
        return np.pad(array, self.pad_width, constant_values=self.value)

    def output_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(n + a + b for n, (a, b) in zip(shape, self.pad_width, strict=True))

    def reverse(self, input_shape: tuple[int, ...]) -> Slice:
        begin = tuple(a for a, _ in self.pad_width)
        return Slice(begin, tuple(b + n for b, n in zip(begin, input_shape, strict=True)))

    def __str__(self) -> str:
        return f"pad(x, {[list(p) for p in self.pad_width]}, value={self.value})"


@dataclass(frozen=True)
class Slice:
    """A stride-1 `strided_slice` from `begin` to `end` (the reverse of `Pad`)."""

    begin: tuple[int, ...]
    end: tuple[int, ...]

    def apply(self, array: np.ndarray) -> np.ndarray:
        return array[tuple(slice(b, e) for b, e in zip(self.begin, self.end, strict=True))]

    def output_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(e - b for b, e in zip(self.begin, self.end, strict=True))

    def reverse(self, input_shape: tuple[int, ...]) -> Pad:
        widths = tuple((b, n - e) for b, e, n in zip(self.begin, self.end, input_shape, strict=True))
        return Pad(widths, 0)

    def __str__(self) -> str:
        return f"strided_slice(x, begin={list(self.begin)}, end={list(self.end)})"


@dataclass(frozen=True)
class Transpose:
    """`numpy.transpose`: new axis k is old axis `axes[k]`."""

    axes: tuple[int, ...]

    def apply(self, array: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(np.transpose(array, self.axes))

    def output_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(shape[k] for k in self.axes)

    def reverse(self, input_shape: tuple[int, ...]) -> Transpose:
        return Transpose(tuple(int(k) for k in np.argsort(self.axes)))

    def __str__(self) -> str:
        return f"transpose(x, {list(self.axes)})"


@dataclass(frozen=True)
class Gather:
    """A general map: `out[targets[p]] = in[p]` for every old point p, `value` elsewhere; the
    reverse (`inverse=True`) gathers the old points back."""

    targets: tuple[np.ndarray, ...]  # one integer array per new axis, shaped like the old box
    new_shape: tuple[int, ...]
    value: float | int = 0
    inverse: bool = False

    def apply(self, array: np.ndarray) -> np.ndarray:
        if self.inverse:
            return np.ascontiguousarray(array[self.targets])
        out = np.full(self.new_shape, self.value, dtype=array.dtype)
        out[self.targets] = array
        return out

    def output_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return self.targets[0].shape if self.inverse else self.new_shape

    def reverse(self, input_shape: tuple[int, ...]) -> Gather:
        return Gather(self.targets, self.new_shape, self.value, not self.inverse)

    def __str__(self) -> str:
        name = "gather_back" if self.inverse else "scatter"
        return f"{name}(x, index_map, shape={list(self.output_shape(()))})"


Step = Reshape | Pad | Transpose | Slice | Gather


@dataclass(frozen=True)
class LayoutRecord:
    """How a parameter's layout changed: the steps from the original layout and back."""

    param: str
    original_shape: tuple[int, ...]
    steps: tuple[Step, ...] = ()

    def shapes(self) -> list[tuple[int, ...]]:
        """The shape before each step, then the final one."""
        shapes = [self.original_shape]
        for step in self.steps:
            shapes.append(step.output_shape(shapes[-1]))
        return shapes

    @property
    def new_shape(self) -> tuple[int, ...]:
        """The parameter's shape after every step."""
        return self.shapes()[-1]

    def reverse_steps(self) -> tuple[Step, ...]:
        """The steps from the new layout back to the original one."""
        shapes = self.shapes()
        return tuple(step.reverse(shapes[k]) for k, step in reversed(list(enumerate(self.steps))))

    def forward(self, array: np.ndarray) -> np.ndarray:
        """`array` (original layout) in the new layout."""
        for step in self.steps:
            array = step.apply(array)
        return np.ascontiguousarray(array)

    def reverse(self, array: np.ndarray) -> np.ndarray:
        """`array` (new layout) back in the original layout."""
        for step in self.reverse_steps():
            array = step.apply(array)
        return np.ascontiguousarray(array)

    def then(self, steps: Sequence[Step]) -> LayoutRecord:
        """This record with more steps after it."""
        return LayoutRecord(self.param, self.original_shape, (*self.steps, *steps))

    def __str__(self) -> str:
        forward = "\n".join(f"  {s}" for s in self.steps)
        reverse = "\n".join(f"  {s}" for s in self.reverse_steps())
        return f"{self.param} {list(self.original_shape)} -> {list(self.new_shape)}\n{forward}\nreverse:\n{reverse}"


def split_steps(shape: Sequence[int], axis: int, factors: Sequence[int], pad_value: Any) -> tuple[Step, ...]:
    """buffer_split of `axis` into `factors`: pad the axis up to their product, then reshape."""
    shape = tuple(shape)
    total = math.prod(factors)
    steps: list[Step] = []
    if total > shape[axis]:
        widths = tuple((0, total - n if k == axis else 0) for k, n in enumerate(shape))
        steps.append(Pad(widths, pad_value))
    steps.append(Reshape((*shape[:axis], *factors, *shape[axis + 1 :])))
    return tuple(steps)


def fuse_steps(shape: Sequence[int], axes: Sequence[int]) -> tuple[Step, ...]:
    """buffer_fuse of consecutive `axes`: one reshape."""
    axes = list(axes)
    if axes != list(range(axes[0], axes[0] + len(axes))):
        raise ValueError(f"fuse takes consecutive axes, got {axes}")
    shape = tuple(shape)
    fused = math.prod(shape[a] for a in axes)
    return (Reshape((*shape[: axes[0]], fused, *shape[axes[-1] + 1 :])),)


def reorder_steps(shape: Sequence[int], order: Sequence[int]) -> tuple[Step, ...]:
    """buffer_reorder: one transpose (new axis k is old axis `order[k]`)."""
    del shape
    return (Transpose(tuple(order)),)


def steps_for_index_map(initial_vars: Sequence[E.Var], final_exprs: Sequence[E.PrimExpr],
                        shape: Sequence[int], pad_value: Any,
                        new_shape: Sequence[int] | None = None) -> tuple[Step, ...]:  # fmt: skip
    """The steps of a general map: pad, reshape and transpose when each new index is a digit of
    one old index (`i`, `i // c`, `i % m`, `i // c % m`), else one gather step (into `new_shape`,
    by default one past each new index's largest value)."""
    digits = _digits(initial_vars, final_exprs, shape)
    if digits is not None and new_shape is not None:
        steps = _digit_steps(initial_vars, digits, tuple(shape), tuple(new_shape), pad_value)
        if steps is not None:
            return steps
    points = np.indices(tuple(shape), dtype=np.int64)
    env = {v: points[k] for k, v in enumerate(initial_vars)}
    targets = tuple(np.broadcast_to(evaluate_on_arrays(e, env), tuple(shape)).copy() for e in final_exprs)
    if new_shape is None:
        new_shape = tuple(int(t.max()) + 1 if t.size else 0 for t in targets)
    return (Gather(targets, tuple(new_shape), pad_value),)


_Digit = tuple[E.Var, int, int | None]  # (old index, divisor, modulus or None for the outermost)


def _digits(initial_vars: Sequence[E.Var], final_exprs: Sequence[E.PrimExpr],
            shape: Sequence[int]) -> list[_Digit] | None:  # fmt: skip
    """Each new index as a digit of one old index, or None."""
    analyzer = Analyzer()
    for var, extent in zip(initial_vars, shape, strict=True):
        analyzer.bind(var, E.Range(E.IntImm(var.dtype, 0), E.IntImm(var.dtype, extent)))
    found = []
    for expr in final_exprs:
        digit = _digit(expr) or _digit(analyzer.simplify(expr))  # `(i // 32) * 32 + i % 32` is `i`
        if digit is None or digit[0] not in initial_vars:
            return None
        found.append(digit)
    return found


def _digit(expr: E.PrimExpr) -> _Digit | None:
    modulus = None
    if isinstance(expr, E.FloorMod) and isinstance(expr.b, E.IntImm):
        expr, modulus = expr.a, expr.b.value
    divisor = 1
    if isinstance(expr, E.FloorDiv) and isinstance(expr.b, E.IntImm):
        expr, divisor = expr.a, expr.b.value
    return (expr, divisor, modulus) if isinstance(expr, E.Var) else None


def _digit_steps(initial_vars: Sequence[E.Var], digits: list[_Digit], shape: tuple[int, ...],
                 new_shape: tuple[int, ...], pad_value: Any) -> tuple[Step, ...] | None:  # fmt: skip
    """Pad each old axis to its digits' capacity, split it into them, then transpose; None when
    the digits of some axis are no mixed-radix number (gaps, overlaps, or unused axes)."""
    order: list[int] = []  # positions in `digits`, in the reshaped layout's order
    split_shape: list[int] = []
    widths = []
    for var, extent in zip(initial_vars, shape, strict=True):
        mine = sorted((k for k, d in enumerate(digits) if d[0] is var), key=lambda k: -digits[k][1])
        sizes = [new_shape[k] if digits[k][2] is None else digits[k][2] for k in mine]
        if not mine:
            return None
        stride = 1
        for k, size in zip(reversed(mine), reversed(sizes), strict=True):
            if digits[k][1] != stride or (digits[k][2] is None and k != mine[0]):
                return None
            stride *= size
        if stride < extent:
            return None
        widths.append((0, stride - extent))
        order.extend(mine)
        split_shape.extend(sizes)
    steps: list[Step] = []
    if any(after for _, after in widths):
        steps.append(Pad(tuple(widths), pad_value))
    if tuple(split_shape) != tuple(n + after for n, (_, after) in zip(shape, widths, strict=True)):
        steps.append(Reshape(tuple(split_shape)))
    axes = tuple(order.index(k) for k in range(len(digits)))
    if axes != tuple(range(len(axes))):
        steps.append(Transpose(axes))
    return tuple(steps)


_ARRAY_OPS = {
    E.Add: np.add, E.Sub: np.subtract, E.Mul: np.multiply, E.FloorDiv: np.floor_divide,
    E.FloorMod: np.mod, E.Min: np.minimum, E.Max: np.maximum,
}  # fmt: skip


def evaluate_on_arrays(expr: E.PrimExpr, env: dict[E.Var, np.ndarray]) -> np.ndarray:
    """An integer index expression evaluated elementwise over NumPy index arrays."""
    if isinstance(expr, E.Var):
        return env[expr]
    if isinstance(expr, E.IntImm):
        return np.int64(expr.value)  # type: ignore[return-value]
    op = _ARRAY_OPS.get(type(expr))
    if op is None:
        raise ValueError(f"cannot evaluate `{expr}` as an index over arrays")
    return op(evaluate_on_arrays(expr.a, env), evaluate_on_arrays(expr.b, env))  # type: ignore[attr-defined]
