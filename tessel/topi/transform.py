"""Layout transforms (TVM's tvm.topi transform operators): reshape, transpose, squeeze,
expand_dims, broadcast_to, tile, repeat, concatenate, stack, split, strided_slice and trilu, as
te computes.

Every operator takes constant shapes; reshape and strided_slice also take symbolic ones
(tessel.arith.dims). Indices into the inputs are expressions of the output's axes."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from itertools import pairwise
from typing import Any

from tessel.arith.dims import (
    Dim,
    dim_expr,
    dim_product,
    dims_equal,
    inferred_extent,
    is_static,
    monomial_quotient,
    normalize_dim,
    simplify_dim,
    slice_range,
)
from tessel.ir import builders
from tessel.ir.expr import IntImm, PrimExpr
from tessel.te.math import if_then_else
from tessel.te.operation import compute
from tessel.te.tensor import Tensor
from tessel.topi.utils import (
    expect_tensor,
    get_const_tuple,
    normalize_axes,
    normalize_axis,
    op_error,
)

INJECTIVE = "injective"  # TVM's topi tag for operators that map each output to one input element
BROADCAST = "broadcast"


def const_ints(op: str, argument: str, values: Any) -> list[int]:
    """A list of Python ints from ints, NumPy integers or integer constants."""
    items = [values] if isinstance(values, int | IntImm) else list(values)
    result = []
    for value in items:
        try:
            result.append(int(value.value) if isinstance(value, IntImm) else operator.index(value))
        except TypeError as err:
            raise op_error(op, argument, f"expected constant integers, got `{value}`") from err
    return result


def numel(shape: Sequence[int]) -> int:
    """The number of elements of a constant shape."""
    count = 1
    for extent in shape:
        count *= extent
    return count


def ravel(indices: Sequence[PrimExpr], shape: Sequence[int]) -> PrimExpr | int:
    """The row-major linear position of `indices` in `shape`."""
    linear: PrimExpr | int = 0
    for index, extent in zip(indices, shape, strict=True):
        linear = index if isinstance(linear, int) and linear == 0 else linear * extent + index
    return linear


def unravel(linear: PrimExpr | int, shape: Sequence[int]) -> list[PrimExpr | int]:
    """The indices of row-major linear position `linear` in `shape`."""
    indices: list[PrimExpr | int] = []
    for position in range(len(shape) - 1, -1, -1):
        extent = shape[position]
        if extent == 1:
            indices.append(0)
        elif position == 0:
            indices.append(linear)
        else:
            indices.append(linear % extent)
            linear = linear // extent
    return indices[::-1]


def reshape(a: Tensor, newshape: Any) -> Tensor:
    """`a` with the same elements in row-major order and shape `newshape` (one -1 is inferred)."""
    expect_tensor("reshape", "a", a)
    if not (is_static(_dims(a.shape)) and is_static(_dims(newshape))):
        return _symbolic_reshape(a, newshape)
    shape = get_const_tuple(a.shape)
    target = _infer_shape(shape, const_ints("reshape", "newshape", newshape))
    if [e for e in shape if e != 1] == [e for e in target if e != 1]:
        # Only unit axes added or dropped: each input axis is an output axis, no division (the
        # linear form cost 2 ns an element: NCHW to NCHW1c took longer than the conv after it).
        kept = [k for k, e in enumerate(target) if e != 1]
        return compute(
            target,
            lambda *i: a[_unit_reshape_index(i, kept, shape)],
            name="T_reshape",
            tag=INJECTIVE,
        )
    return compute(
        target,
        lambda *i: a[tuple(unravel(ravel(i, target), shape))],
        name="T_reshape",
        tag=INJECTIVE,
    )


def _dims(values: Any) -> list[Dim]:
    items = [values] if isinstance(values, int | PrimExpr) else list(values)
    return [normalize_dim(v) for v in items]


def _symbolic_reshape(a: Tensor, newshape: Any) -> Tensor:
    """reshape over symbolic extents: `newshape` holds extents (ints or expressions) and at most
    one -1; the element counts must be proved equal."""
    shape, target = _dims(a.shape), _dims(newshape)
    if target.count(-1) > 1 or any(isinstance(e, int) and e < -1 for e in target):
        raise op_error("reshape", "newshape", f"{target} may hold extents and at most one -1")
    size = dim_product(shape)
    if any(isinstance(e, int) and e == -1 for e in target):
        given = [e for e in target if not (isinstance(e, int) and e == -1)]
        inferred = inferred_extent(shape, given)
        if inferred is None:
            raise op_error("reshape", "newshape", f"cannot infer the -1 in {target} for {shape}")
        target = [inferred if isinstance(e, int) and e == -1 else e for e in target]
    if not dims_equal(dim_product(target), size):
        raise op_error(
            "reshape", "newshape", f"{target} is not proved to hold the {size} elements of {shape}"
        )
    groups = reshape_groups(shape, target)
    if groups is None:
        return compute(
            target,
            lambda *i: a[tuple(unravel(ravel(i, target), shape))],
            name="T_reshape",
            tag=INJECTIVE,
        )
    return compute(
        target,
        lambda *i: a[_grouped_reshape_index(i, groups, shape, target)],
        name="T_reshape",
        tag=INJECTIVE,
    )


def reshape_groups(shape: Sequence[Dim], target: Sequence[Dim]) -> list[tuple[range, range]] | None:
    """The runs of input and output axes of a reshape that hold the same elements, in order
    ((b, 12, s, s) to (b * 12, s, s): b, 12 with b * 12, then s with s, s with s), so that
    each output index divides only within its run; a symbolic extent's divisions are not
    simplified away, so the linear form is slow. Unit axes left at either end join no run.
    None when the extents do not split into such runs."""
    groups: list[tuple[range, range]] = []
    i = j = 0
    while i < len(shape) and j < len(target):
        first_in, first_out = i, j
        held, made = shape[i], target[j]
        i, j = i + 1, j + 1
        while not dims_equal(held, made):
            grow_input = _divides(held, made)
            if grow_input and i < len(shape):
                held, i = dim_product((held, shape[i])), i + 1
            elif not grow_input and _divides(made, held) and j < len(target):
                made, j = dim_product((made, target[j])), j + 1
            else:
                return None
        groups.append((range(first_in, i), range(first_out, j)))
    if not all(dims_equal(d, 1) for d in (*shape[i:], *target[j:])):
        return None
    return groups


def _divides(smaller: Dim, larger: Dim) -> bool:
    """Whether `larger` is `smaller` times a whole number (of symbols or integers)."""
    if isinstance(smaller, int) and isinstance(larger, int):
        return smaller != 0 and larger % smaller == 0
    return monomial_quotient(larger, smaller) is not None


def _grouped_reshape_index(
    out: Sequence[PrimExpr],
    groups: list[tuple[range, range]],
    shape: Sequence[Dim],
    target: Sequence[Dim],
) -> tuple:
    """The input index of output index `out` over runs of axes (reshape_groups); input unit
    axes outside every run take 0."""
    index: list[PrimExpr | int] = [0] * len(shape)
    for inputs, outputs in groups:
        if len(inputs) == 1 and len(outputs) == 1:
            index[inputs[0]] = out[outputs[0]]
            continue
        linear = ravel([out[k] for k in outputs], [target[k] for k in outputs])
        for k, value in zip(inputs, unravel(linear, [shape[k] for k in inputs]), strict=True):
            index[k] = value
    return tuple(index)


def _unit_reshape_index(out: Sequence[PrimExpr], kept: list[int], shape: tuple[int, ...]) -> tuple:
    """The input index of output index `out` when the reshape only adds or drops unit axes:
    the output's non-unit axes (`kept`) in order, 0 on the input's unit axes."""
    axes = iter(kept)
    return tuple(0 if extent == 1 else out[next(axes)] for extent in shape)


def _infer_shape(shape: tuple[int, ...], newshape: list[int]) -> list[int]:
    size = numel(shape)
    if any(extent < -1 for extent in newshape) or newshape.count(-1) > 1:
        raise op_error(
            "reshape", "newshape", f"{newshape} may hold non-negative extents and at most one -1"
        )
    known = numel([extent for extent in newshape if extent != -1])
    if -1 in newshape:
        if known == 0 or size % known != 0:
            raise op_error(
                "reshape",
                "newshape",
                f"cannot infer the -1 in {newshape} for {size} elements "
                f"(input shape {list(shape)})",
            )
        newshape = [size // known if extent == -1 else extent for extent in newshape]
    if numel(newshape) != size:
        raise op_error(
            "reshape",
            "newshape",
            f"{newshape} holds {numel(newshape)} elements but the input "
            f"has shape {list(shape)} ({size} elements)",
        )
    return newshape


def transpose(a: Tensor, axes: Any = None) -> Tensor:
    """`a` with its axes permuted: output axis k is input axis `axes[k]` (None: reversed)."""
    expect_tensor("transpose", "a", a)
    ndim = a.ndim
    perm = list(range(ndim - 1, -1, -1)) if axes is None else const_ints("transpose", "axes", axes)
    perm = [normalize_axis("transpose", axis, ndim, "axes") for axis in perm]
    if sorted(perm) != list(range(ndim)):
        raise op_error("transpose", "axes", f"{list(axes)} is not a permutation of the {ndim} axes")

    def read(*i: PrimExpr) -> PrimExpr:
        source: list[PrimExpr] = [None] * ndim  # type: ignore[list-item]  # every slot is filled below
        for out_axis, in_axis in enumerate(perm):
            source[in_axis] = i[out_axis]
        return a[tuple(source)]

    return compute([a.shape[p] for p in perm], read, name="T_transpose", tag=INJECTIVE)


def squeeze(a: Tensor, axis: Any = None) -> Tensor:
    """`a` without the axes of extent 1 named by `axis` (None: every axis of extent 1)."""
    expect_tensor("squeeze", "a", a)
    shape = _dims(a.shape)  # a symbolic extent is kept (it is not proved to be 1)
    if axis is None:
        dropped = {d for d, extent in enumerate(shape) if _is_one(extent)}
    else:
        dropped = set(normalize_axes("squeeze", const_ints("squeeze", "axis", axis), a.ndim))
    wide = [d for d in sorted(dropped) if not _is_one(shape[d])]
    if wide:
        raise op_error(
            "squeeze",
            "axis",
            f"axis {wide[0]} has extent {shape[wide[0]]}, not 1 (input shape {list(shape)})",
        )
    kept = [d for d in range(a.ndim) if d not in dropped]

    def read(*i: PrimExpr) -> PrimExpr:
        by_axis = dict(zip(kept, i, strict=True))
        return a[tuple(by_axis.get(d, 0) for d in range(a.ndim))]

    return compute([shape[d] for d in kept], read, name="T_squeeze", tag=INJECTIVE)


def expand_dims(a: Tensor, axis: int, num_newaxis: int = 1) -> Tensor:
    """`a` with `num_newaxis` axes of extent 1 inserted at `axis` (in [-ndim-1, ndim])."""
    expect_tensor("expand_dims", "a", a)
    if not isinstance(num_newaxis, int) or num_newaxis < 0:
        raise op_error(
            "expand_dims", "num_newaxis", f"expected a non-negative int, got {num_newaxis!r}"
        )
    start = normalize_axis("expand_dims", axis, a.ndim + 1)
    shape = [*a.shape[:start], *([1] * num_newaxis), *a.shape[start:]]

    def read(*i: PrimExpr) -> PrimExpr:
        return a[i[:start] + i[start + num_newaxis :]]

    return compute(shape, read, name="T_expand_dims", tag=INJECTIVE)


def broadcast_to(data: Tensor, shape: Any) -> Tensor:
    """`data` broadcast to `shape` by NumPy's rules (trailing axes aligned; extent 1 stretches)."""
    expect_tensor("broadcast_to", "data", data)
    source = _dims(data.shape)
    target = (
        const_ints("broadcast_to", "shape", shape)
        if is_static(source) and is_static(_dims(shape))
        else _dims(shape)  # symbolic: each extent 1 or proved equal to its target
    )
    lead = len(target) - len(source)
    if lead < 0 or any(
        not (_is_one(s) or dims_equal(s, t)) for s, t in zip(source, target[lead:], strict=True)
    ):
        raise op_error(
            "broadcast_to", "shape", f"cannot broadcast shape {list(source)} to {target}"
        )

    def read(*i: PrimExpr) -> PrimExpr:
        return data[
            tuple(0 if _is_one(s) else index for s, index in zip(source, i[lead:], strict=True))
        ]

    return compute(target, read, name="T_broadcast_to", tag=BROADCAST)


def tile(a: Tensor, reps: Any) -> Tensor:
    """`a` repeated `reps[k]` times along each axis, as numpy.tile (shorter side padded with 1s)."""
    expect_tensor("tile", "a", a)
    counts = const_ints("tile", "reps", reps)
    if any(count < 0 for count in counts):
        raise op_error("tile", "reps", f"{counts} must be non-negative")
    shape = list(get_const_tuple(a.shape))
    rank = max(len(shape), len(counts))
    counts = [1] * (rank - len(counts)) + counts
    padded = [1] * (rank - len(shape)) + shape
    lead = rank - len(shape)

    def read(*i: PrimExpr) -> PrimExpr:
        return a[
            tuple(0 if n == 1 else index % n for n, index in zip(shape, i[lead:], strict=True))
        ]

    return compute(
        [n * c for n, c in zip(padded, counts, strict=True)], read, name="T_tile", tag=INJECTIVE
    )


def concatenate(a_tuple: Sequence[Tensor], axis: int = 0) -> Tensor:
    """The tensors of `a_tuple` joined along `axis` (every other extent equal)."""
    tensors = [expect_tensor("concatenate", "a_tuple", t) for t in a_tuple]
    if not tensors:
        raise op_error("concatenate", "a_tuple", "expected at least one tensor")
    first = tensors[0]
    axis = normalize_axis("concatenate", axis, first.ndim)
    shapes = [tuple(_dims(t.shape)) for t in tensors]
    _check_concatenable(tensors, shapes, axis)
    offsets: list[Dim] = [0]
    for shape in shapes:
        offsets.append(_dim_sum(offsets[-1], shape[axis]))
    # A symbolic part may be empty at run time: its range is then empty and never chosen.
    parts = [k for k, shape in enumerate(shapes) if not dims_equal(shape[axis], 0)] or [0]

    def read(*i: PrimExpr) -> PrimExpr:
        def part(k: int) -> PrimExpr:
            return tensors[k][i[:axis] + (i[axis] - offsets[k],) + i[axis + 1 :]]

        value = part(parts[-1])
        for k in reversed(parts[:-1]):  # only the chosen tensor is read
            value = if_then_else(i[axis] < offsets[k + 1], part(k), value)
        return value

    out_shape = [*shapes[0][:axis], offsets[-1], *shapes[0][axis + 1 :]]
    return compute(out_shape, read, name="T_concat", tag=INJECTIVE)


def stack(tensors: Sequence[Tensor], axis: int = 0) -> Tensor:
    """The tensors (all of one shape and dtype) joined along a new axis `axis`, as numpy.stack."""
    tensors = [expect_tensor("stack", "tensors", t) for t in tensors]
    if not tensors:
        raise op_error("stack", "tensors", "expected at least one tensor")
    shapes = [get_const_tuple(t.shape) for t in tensors]
    for k, (tensor, shape) in enumerate(zip(tensors, shapes, strict=True)):
        if shape != shapes[0] or tensor.dtype != tensors[0].dtype:
            raise op_error(
                "stack",
                "tensors",
                f"tensor {k} is {list(shape)} {tensor.dtype} but tensor 0 is "
                f"{list(shapes[0])} {tensors[0].dtype}; stacked tensors must be alike",
            )
    axis = normalize_axis("stack", axis, len(shapes[0]) + 1)

    def read(*i: PrimExpr) -> PrimExpr:
        rest = i[:axis] + i[axis + 1 :]
        value = tensors[-1][rest]
        for k in reversed(range(len(tensors) - 1)):  # only the chosen tensor is read
            value = if_then_else(i[axis] == k, tensors[k][rest], value)
        return value

    out_shape = [*shapes[0][:axis], len(tensors), *shapes[0][axis:]]
    return compute(out_shape, read, name="T_stack", tag=INJECTIVE)


def repeat(a: Tensor, repeats: int, axis: int) -> Tensor:
    """Each element of `a` repeated `repeats` times in a row along `axis`, as numpy.repeat."""
    expect_tensor("repeat", "a", a)
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 0:
        raise op_error("repeat", "repeats", f"{repeats!r} must be a non-negative integer")
    axis = normalize_axis("repeat", axis, a.ndim)
    shape = list(get_const_tuple(a.shape))

    def read(*i: PrimExpr) -> PrimExpr:
        return a[i[:axis] + (i[axis] // repeats,) + i[axis + 1 :]]

    out_shape = [*shape[:axis], shape[axis] * repeats, *shape[axis + 1 :]]
    return compute(out_shape, read, name="T_repeat", tag=BROADCAST)


def _is_one(extent: Dim) -> bool:
    return isinstance(extent, int) and extent == 1


def _dim_sum(a: Dim, b: Dim) -> Dim:
    """`a + b` over ints or symbolic extents, simplified."""
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    return simplify_dim(dim_expr(a) + dim_expr(b))


def _check_concatenable(tensors: list[Tensor], shapes: list[tuple[Dim, ...]], axis: int) -> None:
    first, base = tensors[0], shapes[0]
    for k, (tensor, shape) in enumerate(zip(tensors, shapes, strict=True)):
        if tensor.dtype != first.dtype:
            raise op_error(
                "concatenate",
                "a_tuple",
                f"tensor {k} is {tensor.dtype} but tensor 0 is {first.dtype}",
            )
        others_differ = len(shape) != len(base) or any(
            not dims_equal(x, y)
            for d, (x, y) in enumerate(zip(shape, base, strict=True))
            if d != axis
        )
        if others_differ:
            raise op_error(
                "concatenate",
                "a_tuple",
                f"tensor {k} has shape {list(shape)} but tensor 0 has "
                f"{list(base)}; only axis {axis} may differ",
            )


def split(ary: Tensor, indices_or_sections: Any, axis: int = 0) -> list[Tensor]:
    """`ary` cut along `axis` into equal sections (an int) or at ascending positions (a list)."""
    expect_tensor("split", "ary", ary)
    axis = normalize_axis("split", axis, ary.ndim)
    extent = _dims(ary.shape)[axis]  # the other axes may be symbolic
    if not isinstance(extent, int):
        raise op_error("split", "ary", f"expected a constant extent on axis {axis}, got {extent}")
    bounds = _split_bounds(indices_or_sections, extent)
    return [_section(ary, axis, begin, end) for begin, end in pairwise(bounds)]


def _section(ary: Tensor, axis: int, begin: int, end: int) -> Tensor:
    """Elements [begin, end) of `ary` along `axis`."""

    def read(*i: PrimExpr) -> PrimExpr:
        return ary[i[:axis] + (i[axis] + begin,) + i[axis + 1 :]]

    shape = [*ary.shape[:axis], end - begin, *ary.shape[axis + 1 :]]
    return compute(shape, read, name="T_split", tag=INJECTIVE)


def _split_bounds(indices_or_sections: Any, extent: int) -> list[int]:
    """[0, cut, ..., extent]: where each section of a split starts, then the extent."""
    if isinstance(indices_or_sections, int | IntImm):
        sections = const_ints("split", "indices_or_sections", indices_or_sections)[0]
        if sections <= 0 or extent % sections != 0:
            raise op_error(
                "split",
                "indices_or_sections",
                f"{sections} sections do not divide the axis of extent {extent} evenly",
                hint="pass a list of split positions instead",
            )
        step = extent // sections
        return list(range(0, extent + 1, step)) if step else [0] * (sections + 1)
    cuts = const_ints("split", "indices_or_sections", indices_or_sections)
    cuts = [cut + extent if cut < 0 else cut for cut in cuts]
    bounds = [0, *cuts, extent]
    if any(x > y for x, y in pairwise(bounds)):
        raise op_error(
            "split",
            "indices_or_sections",
            f"positions {cuts} must be ascending and within [0, {extent}]",
        )
    return bounds


def strided_slice(
    a: Tensor,
    begin: Any,
    end: Any,
    strides: Any = None,
    axes: Any = None,
    slice_mode: str = "end",
    assume_inbound: bool = True,
) -> Tensor:
    """Elements `begin:end:strides` of `a` along each sliced axis, as NumPy's basic slicing
    (negative positions count from the end; ends beyond the axis are clamped). With
    slice_mode="size", `end` holds the slice sizes (-1: to the end) and strides are 1."""
    del assume_inbound  # TVM's hint for symbolic bounds; constant bounds are clamped exactly here
    expect_tensor("strided_slice", "a", a)
    if not (is_static(_dims(a.shape)) and is_static(_dims(begin)) and is_static(_dims(end))):
        return _symbolic_strided_slice(a, begin, end, strides, axes, slice_mode)
    shape = get_const_tuple(a.shape)
    slices = _slices(shape, begin, end, strides, axes, slice_mode)
    ranges = [range(*s.indices(n)) for s, n in zip(slices, shape, strict=True)]

    def read(*i: PrimExpr) -> PrimExpr:
        return a[tuple(r.start + index * r.step for r, index in zip(ranges, i, strict=True))]

    return compute([len(r) for r in ranges], read, name="T_strided_slice", tag=INJECTIVE)


def _symbolic_strided_slice(
    a: Tensor, begin: Any, end: Any, strides: Any, axes: Any, mode: str
) -> Tensor:
    """strided_slice where the extents or bounds are symbolic: positive steps, "end" mode;
    bounds clamp as NumPy's (tessel.arith.dims.slice_range)."""
    op = "strided_slice"
    if mode != "end":
        raise op_error(op, "slice_mode", 'a symbolic slice takes slice_mode "end"')
    shape, begins, ends = _dims(a.shape), _dims(begin), _dims(end)
    steps = [] if strides is None else const_ints(op, "strides", strides)
    if any(step <= 0 for step in steps):
        raise op_error(op, "strides", f"a symbolic slice takes positive steps, not {steps}")
    named = _sliced_axes(axes, len(begins), len(shape))
    starts: list[Dim] = [0] * len(shape)
    lengths, step_of = list(shape), [1] * len(shape)
    for k, axis in enumerate(named):
        step_of[axis] = steps[k] if k < len(steps) else 1
        stop = ends[k] if k < len(ends) else None
        starts[axis], lengths[axis] = slice_range(begins[k], stop, step_of[axis], shape[axis])

    def read(*i: PrimExpr) -> PrimExpr:
        return a[tuple(s + index * t for s, index, t in zip(starts, i, step_of, strict=True))]

    return compute(lengths, read, name="T_strided_slice", tag=INJECTIVE)


def _slices(
    shape: tuple[int, ...], begin: Any, end: Any, strides: Any, axes: Any, mode: str
) -> list[slice]:
    """One Python slice per axis of `shape` from strided_slice's arguments."""
    op = "strided_slice"
    if mode not in ("end", "size"):
        raise op_error(op, "slice_mode", f'expected "end" or "size", got {mode!r}')
    begins, ends = const_ints(op, "begin", begin), const_ints(op, "end", end)
    steps = [] if strides is None or mode == "size" else const_ints(op, "strides", strides)
    named = _sliced_axes(axes, len(begins), len(shape))
    for argument, values in (("end", ends), ("strides", steps)):
        if len(values) > len(named):
            raise op_error(op, argument, f"has {len(values)} entries for {len(named)} sliced axes")
    if 0 in steps:
        raise op_error(op, "strides", f"{steps} holds a zero step")
    slices = [slice(None)] * len(shape)
    for k, axis in enumerate(named):
        stop = (
            ends[k] if k < len(ends) else None
        )  # a missing end: to the end in the step's direction
        step = steps[k] if k < len(steps) else 1
        slices[axis] = (
            _size_slice(begins[k], stop, shape[axis])
            if mode == "size"
            else slice(begins[k], stop, step)
        )
    return slices


def _sliced_axes(axes: Any, count: int, ndim: int) -> list[int]:
    """The axes that `begin` (of `count` entries) applies to: the first ones, or `axes`."""
    op = "strided_slice"
    if axes is None:
        if count > ndim:
            raise op_error(op, "begin", f"has {count} entries but the tensor has rank {ndim}")
        return list(range(count))
    named = [normalize_axis(op, axis, ndim, "axes") for axis in const_ints(op, "axes", axes)]
    if len(set(named)) != len(named):
        raise op_error(op, "axes", f"{list(axes)} names an axis twice")
    if len(named) != count:
        raise op_error(op, "begin", f"has {count} entries for the {len(named)} axes in `axes`")
    return named


def _size_slice(start: int, size: int | None, extent: int) -> slice:
    """The slice of `size` elements from `start` (size None or negative: to the end)."""
    start = start + extent if start < 0 else start
    return slice(start, extent if size is None or size < 0 else start + size, 1)


def trilu(data: Tensor, k: Any, upper: bool) -> Tensor:
    """The upper (`upper`) or lower triangle of the matrices in the last two axes of `data`, the
    rest zero: element (i, j) is kept where j - i >= k (upper) or j - i <= k (lower). `k` is an
    int or a scalar expression (such as `k_tensor()`, the element of a rank-0 tensor)."""
    expect_tensor("trilu", "data", data)
    if data.ndim < 2:
        raise op_error("trilu", "data", f"needs rank 2 or more, got rank {data.ndim}")
    zero = builders.const(0, data.dtype)

    def read(*i: PrimExpr) -> PrimExpr:
        offset = builders.cast(i[-1] - i[-2], "int64")
        diagonal = builders.cast(builders.convert(k), "int64")
        keep = offset >= diagonal if upper else offset <= diagonal
        return builders.select(keep, data[i], zero)

    return compute(data.shape, read, name="T_trilu", tag=INJECTIVE)
