"""Shape operators: reshape (Relay's newshape codes), transpose, squeeze, expand_dims,
concatenate, split, strided_slice, broadcast_to, nn.pad, trilu."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tessel import topi
from tessel.arith.dims import (
    Dim,
    dim_product,
    dim_text,
    dims_equal,
    inferred_extent,
    is_static,
    slice_range,
)
from tessel.graph.op.common import same_as, shape_list, te_shape
from tessel.graph.op.op_def import Args, Attr, Attrs, OpDef, OpPattern
from tessel.graph.ty import TupleType, Type
from tessel.ir.expr import PrimExpr
from tessel.support.dtype import DataType


class _ShapeError(ValueError):
    """A shape attribute that does not fit the data (the relation names the attribute)."""


# --- reshape -----------------------------------------------------------------------------------


def relay_newshape(  # noqa: C901 - Relay's special values, one case each
    shape: Sequence[int], newshape: Sequence[int], allowzero: bool = False
) -> tuple[int, ...]:
    """The shape Relay's `reshape` produces: 0 copies an input extent (unless `allowzero`), -1 is
    inferred, -2 copies the remaining extents, -3 merges two, -4 splits one into the next two."""
    out: list[int] = []
    infer: int | None = None
    src, i = 0, 0
    while i < len(newshape):
        code = newshape[i]
        if (
            isinstance(code, PrimExpr) or code > 0 or (code == 0 and allowzero)
        ):  # a symbolic extent, as an imported shape gives it
            out.append(code)
            src += 1
        elif code == 0:
            if src >= len(shape):
                raise _ShapeError(
                    f"{list(newshape)}: the 0 at position {i} has no input extent to copy"
                )
            out.append(shape[src])
            src += 1
        elif code == -1:
            if infer is not None:
                raise _ShapeError(f"{list(newshape)} holds more than one -1")
            infer, src = len(out), src + 1
            out.append(1)
        elif code == -2:
            out.extend(shape[src:])
            src = len(shape)
        elif code == -3:
            if src + 1 >= len(shape):
                raise _ShapeError(
                    f"{list(newshape)}: the -3 at position {i} needs two input extents"
                )
            out.append(shape[src] * shape[src + 1])
            src += 2
        elif code == -4:
            out.extend(_split_extent(shape, src, newshape, i))
            src, i = src + 1, i + 2
        else:
            raise _ShapeError(f"{list(newshape)} holds {code}; extents are >= -4")
        i += 1
    return _infer_extent(shape, newshape, out, infer)


def _split_extent(shape: Sequence[int], src: int, newshape: Sequence[int], i: int) -> list[int]:
    if src >= len(shape) or i + 2 >= len(newshape):
        raise _ShapeError(
            f"{list(newshape)}: the -4 at position {i} needs an extent and two factors"
        )
    extent, a, b = shape[src], newshape[i + 1], newshape[i + 2]
    if a == -1 and b > 0:
        a = extent // b
    elif b == -1 and a > 0:
        b = extent // a
    if not dims_equal(dim_product((a, b)), extent) or a <= 0 or b <= 0:
        raise _ShapeError(
            f"{list(newshape)}: cannot split extent {dim_text(extent)} into "
            f"{newshape[i + 1]} x {newshape[i + 2]}"
        )
    return [a, b]


def _infer_extent(
    shape: Sequence[Dim], newshape: Sequence[int], out: list[Dim], infer: int | None
) -> tuple[Dim, ...]:
    size = dim_product(shape)
    if infer is not None:
        inferred = inferred_extent(shape, out[:infer] + out[infer + 1 :])
        if inferred is None:
            raise _ShapeError(
                f"cannot infer the -1 in {list(newshape)} for input shape {shape_list(shape)}"
            )
        out[infer] = inferred
    total = dim_product(out)
    if not dims_equal(total, size):
        raise _ShapeError(
            f"{list(newshape)} gives shape {shape_list(out)} of {dim_text(total)} elements but "
            f"the input has shape {shape_list(shape)} ({dim_text(size)} elements)"
        )
    return tuple(out)


def _reshape_rel(args: Args, attrs: Attrs) -> Type:
    data = args.tensor("data")
    try:
        return same_as(data, relay_newshape(data.shape, attrs.newshape, attrs.allowzero))
    except _ShapeError as err:
        raise args.error("newshape", str(err)) from err


def _reshape_shape(shape: Sequence[int], attrs: Attrs) -> tuple[int, ...]:
    return relay_newshape(tuple(shape), attrs.newshape, attrs.allowzero)


# --- transpose, squeeze, expand_dims, broadcast_to ---------------------------------------------


def _permutation(attrs: Attrs, ndim: int) -> tuple[int, ...]:
    if not attrs.axes:
        return tuple(range(ndim - 1, -1, -1))
    return tuple(a % ndim if ndim else a for a in attrs.axes)


def _transpose_rel(args: Args, attrs: Attrs) -> Type:
    data = args.tensor("data")
    if attrs.axes:
        for axis in attrs.axes:
            args.axis("axes", axis, data.ndim)
    perm = _permutation(attrs, data.ndim)
    if sorted(perm) != list(range(data.ndim)):
        raise args.error("axes", f"{list(attrs.axes)} is not a permutation of {data.ndim} axes")
    return same_as(data, [data.shape[p] for p in perm])


def _squeezed(attrs: Attrs, shape: Sequence[int]) -> list[int]:
    if attrs.axis is None:
        return [d for d, n in enumerate(shape) if n == 1]
    return sorted({a % len(shape) for a in attrs.axis})


def _squeeze_rel(args: Args, attrs: Attrs) -> Type:
    data = args.tensor("data")
    for axis in attrs.axis or ():
        axis = args.axis("axis", axis, data.ndim)
        if data.shape[axis] != 1:
            raise args.error("axis", f"names axis {axis} of extent {data.shape[axis]}, not 1")
    dropped = _squeezed(attrs, data.shape)
    return same_as(data, [n for d, n in enumerate(data.shape) if d not in dropped])


def _expand_dims_rel(args: Args, attrs: Attrs) -> Type:
    data = args.tensor("data")
    axis = args.axis("axis", attrs.axis, data.ndim + 1)
    if attrs.num_newaxis < 0:
        raise args.error("num_newaxis", f"must be non-negative, got {attrs.num_newaxis}")
    return same_as(data, (*data.shape[:axis], *[1] * attrs.num_newaxis, *data.shape[axis:]))


def _expand_dims_ref(x: np.ndarray, *, attrs: Attrs) -> np.ndarray:
    axis = attrs.axis % (x.ndim + 1)
    return x.reshape(*x.shape[:axis], *[1] * attrs.num_newaxis, *x.shape[axis:])


def _broadcast_to_rel(args: Args, attrs: Attrs) -> Type:
    data, target = args.tensor("data"), tuple(attrs.shape)
    lead = len(target) - data.ndim
    if lead < 0 or any(
        not (dims_equal(s, t) or (isinstance(s, int) and s == 1))
        for s, t in zip(data.shape, target[lead:], strict=True)
    ):
        raise args.error(
            "shape", f"{shape_list(target)}: cannot broadcast shape {shape_list(data.shape)} to it"
        )
    return same_as(data, target)


# --- concatenate, split ------------------------------------------------------------------------


def _concatenate_rel(args: Args, attrs: Attrs) -> Type:
    fields = args.tensors("data")
    if not fields:
        raise args.error("data", "must hold at least one tensor")
    first = fields[0]
    axis = args.axis("axis", attrs.axis, first.ndim)
    for k, field in enumerate(fields[1:], start=1):
        if field.dtype != first.dtype:
            raise args.error(
                "data", f"field {k} has dtype {field.dtype} but field 0 has {first.dtype}"
            )
        if field.ndim != first.ndim or any(
            not dims_equal(a, b)
            for d, (a, b) in enumerate(zip(field.shape, first.shape, strict=True))
            if d != axis
        ):
            raise args.error(
                "data",
                f"field {k} has shape {shape_list(field.shape)} but field 0 has "
                f"{shape_list(first.shape)}; "
                f"only axis {axis} may differ",
            )
    extent = sum(f.shape[axis] for f in fields)
    return same_as(first, (*first.shape[:axis], extent, *first.shape[axis + 1 :]))


def split_bounds(indices_or_sections: int | Sequence[int], extent: int) -> list[int]:
    """[0, cut, ..., extent]: where each section of a split starts, then the extent (TOPI's)."""
    if isinstance(indices_or_sections, int):
        sections = indices_or_sections
        if sections <= 0 or extent % sections:
            raise _ShapeError(
                f"{sections} sections do not divide the axis of extent {extent} evenly"
            )
        step = extent // sections
        return [k * step for k in range(sections + 1)]
    cuts = [c + extent if c < 0 else c for c in indices_or_sections]
    bounds = [0, *cuts, extent]
    if any(x > y for x, y in zip(bounds, bounds[1:], strict=False)):
        raise _ShapeError(
            f"positions {list(indices_or_sections)} must be ascending and within [0, {extent}]"
        )
    return bounds


def _split_rel(args: Args, attrs: Attrs) -> Type:
    data = args.tensor("data")
    axis = args.axis("axis", attrs.axis, data.ndim)
    try:
        bounds = split_bounds(attrs.indices_or_sections, data.shape[axis])
    except _ShapeError as err:
        raise args.error("indices_or_sections", str(err)) from err
    return TupleType(
        tuple(
            same_as(data, (*data.shape[:axis], end - begin, *data.shape[axis + 1 :]))
            for begin, end in zip(bounds, bounds[1:], strict=False)
        )
    )


def _split_ref(x: np.ndarray, *, attrs: Attrs) -> tuple[np.ndarray, ...]:
    axis = attrs.axis % x.ndim
    bounds = split_bounds(attrs.indices_or_sections, x.shape[axis])
    return tuple(
        np.take(x, range(begin, end), axis=axis)
        for begin, end in zip(bounds, bounds[1:], strict=False)
    )


# --- strided_slice -----------------------------------------------------------------------------


def slices(attrs: Attrs, shape: Sequence[int]) -> list[slice]:
    """One Python slice per axis from strided_slice's attributes (NumPy's basic slicing)."""
    ndim = len(shape)
    begin, end = attrs.begin, attrs.end
    axes = range(len(begin)) if attrs.axes is None else [a % ndim for a in attrs.axes]
    steps = attrs.strides if attrs.strides and attrs.slice_mode == "end" else ()
    result = [slice(None)] * ndim
    for k, axis in enumerate(axes):
        stop = end[k] if k < len(end) else None
        if attrs.slice_mode == "size":
            start = begin[k] + shape[axis] if begin[k] < 0 else begin[k]
            stop = shape[axis] if stop is None or stop < 0 else start + stop
            result[axis] = slice(start, stop, 1)
        else:
            result[axis] = slice(begin[k], stop, steps[k] if k < len(steps) else 1)
    return result


def _strided_slice_rel(args: Args, attrs: Attrs) -> Type:
    data = args.tensor("data")
    if attrs.slice_mode not in ("end", "size"):
        raise args.error("slice_mode", f'must be "end" or "size", got {attrs.slice_mode!r}')
    count = len(attrs.begin)
    if attrs.axes is None and count > data.ndim:
        raise args.error("begin", f"has {count} entries but `data` has rank {data.ndim}")
    if attrs.axes is not None:
        named = {args.axis("axes", a, data.ndim) for a in attrs.axes}
        if len(named) != len(attrs.axes) or len(attrs.axes) != count:
            raise args.error("axes", f"{list(attrs.axes)} must name {count} distinct axes")
    for name in ("end", "strides"):
        if len(getattr(attrs, name) or ()) > count:
            raise args.error(name, f"has more entries than `begin` ({count})")
    if 0 in (attrs.strides or ()):
        raise args.error("strides", f"{list(attrs.strides)} holds a zero step")
    if not (data.is_static and is_static(attrs.begin) and is_static(attrs.end)):
        return same_as(data, _symbolic_slice_extents(args, attrs, data.shape))
    ranges = [
        range(*s.indices(n)) for s, n in zip(slices(attrs, data.shape), data.shape, strict=True)
    ]
    return same_as(data, [len(r) for r in ranges])


def _symbolic_slice_extents(args: Args, attrs: Attrs, shape: Sequence[Dim]) -> list[Dim]:
    """strided_slice's result extents where the data or the bounds are symbolic (see
    tessel.arith.dims.slice_range); steps must be positive, in "end" mode."""
    if attrs.slice_mode != "end" or any(step < 0 for step in attrs.strides or ()):
        raise args.error("strides", "must be positive, in slice_mode 'end', for a symbolic slice")
    ndim = len(shape)
    axes = range(len(attrs.begin)) if attrs.axes is None else [a % ndim for a in attrs.axes]
    extents = list(shape)
    for k, axis in enumerate(axes):
        end = attrs.end[k] if k < len(attrs.end) else None
        step = attrs.strides[k] if attrs.strides and k < len(attrs.strides) else 1
        extents[axis] = slice_range(attrs.begin[k], end, step, shape[axis])[1]
    return extents


def _strided_slice_lower(x, *, attrs: Attrs):
    return topi.strided_slice(
        x, attrs.begin, attrs.end, attrs.strides or None, attrs.axes, attrs.slice_mode
    )


# --- nn.pad ------------------------------------------------------------------------------------


def _pad_rel(args: Args, attrs: Attrs) -> Type:
    data, value = args.tensor("data"), args.tensor("pad_value", ndim=0)
    if value.dtype != data.dtype:
        raise args.error("pad_value", f"has dtype {value.dtype} but `data` has {data.dtype}")
    widths = attrs.pad_width
    if len(widths) != data.ndim or any(len(w) != 2 or min(w) < 0 for w in widths):
        raise args.error(
            "pad_width",
            f"must hold one non-negative (before, after) pair per axis of `data` "
            f"(rank {data.ndim}), got {[list(w) for w in widths]}",
        )
    if attrs.pad_mode not in ("constant", "edge", "reflect"):
        raise args.error(
            "pad_mode", f"must be 'constant', 'edge' or 'reflect', got {attrs.pad_mode!r}"
        )
    if attrs.pad_mode == "reflect" and any(
        max(w) >= n for w, n in zip(widths, data.shape, strict=True)
    ):
        raise args.error(
            "pad_width", f"reflect padding must be narrower than each axis {list(data.shape)}"
        )
    return same_as(data, [n + w[0] + w[1] for n, w in zip(data.shape, widths, strict=True)])


def _pad_lower(x, value, *, attrs: Attrs):
    before = [w[0] for w in attrs.pad_width]
    after = [w[1] for w in attrs.pad_width]
    return topi.nn.pad(x, before, after, pad_value=value(), pad_mode=attrs.pad_mode)


def _pad_ref(x: np.ndarray, value: np.ndarray, *, attrs: Attrs) -> np.ndarray:
    widths = [tuple(w) for w in attrs.pad_width]
    if attrs.pad_mode == "constant":
        return np.pad(x, widths, mode="constant", constant_values=value.item())
    return np.pad(x, widths, mode=attrs.pad_mode)


# --- trilu --------------------------------------------------------------------------------------


def _trilu_rel(args: Args, attrs: Attrs) -> Type:
    data = args.tensor("data")
    k = args.tensor("k", ndim=0)
    if not DataType.of(k.dtype).is_integer:
        raise args.error("k", f"must be an integer scalar, got dtype {k.dtype}")
    if data.ndim < 2:
        raise args.error("data", f"must have rank 2 or more, got rank {data.ndim}")
    return data


def _trilu_ref(data: np.ndarray, k: np.ndarray, *, attrs: Attrs) -> np.ndarray:
    rows, cols = np.indices(data.shape[-2:])
    keep = (cols - rows >= k) if attrs.upper else (cols - rows <= k)
    return np.where(keep, data, np.zeros((), data.dtype))


OPERATORS = (
    OpDef(
        "reshape",
        ("data",),
        (Attr("newshape", "dims"), Attr("allowzero", "bool", False)),
        _reshape_rel,
        lambda x, *, attrs: topi.reshape(x, _reshape_shape(te_shape(x), attrs)),
        lambda x, *, attrs: x.reshape(_reshape_shape(x.shape, attrs)),
        OpPattern.INJECTIVE,
        "The same elements in a new shape (Relay's 0, -1, -2, -3, -4 codes).",
    ),
    OpDef(
        "transpose",
        ("data",),
        (Attr("axes", "ints", None, optional=True),),
        _transpose_rel,
        lambda x, *, attrs: topi.transpose(x, _permutation(attrs, x.ndim)),
        lambda x, *, attrs: x.transpose(_permutation(attrs, x.ndim)),
        OpPattern.INJECTIVE,
        "Permute the axes (None: reverse them).",
    ),
    OpDef(
        "squeeze",
        ("data",),
        (Attr("axis", "ints", None, optional=True),),
        _squeeze_rel,
        lambda x, *, attrs: topi.squeeze(x, _squeezed(attrs, te_shape(x))),
        lambda x, *, attrs: x.reshape(
            [n for d, n in enumerate(x.shape) if d not in _squeezed(attrs, x.shape)]
        ),
        OpPattern.INJECTIVE,
        "Drop axes of extent 1 (None: all of them).",
    ),
    OpDef(
        "expand_dims",
        ("data",),
        (Attr("axis", "int"), Attr("num_newaxis", "int", 1)),
        _expand_dims_rel,
        lambda x, *, attrs: topi.expand_dims(x, attrs.axis, attrs.num_newaxis),
        _expand_dims_ref,
        OpPattern.INJECTIVE,
        "Insert `num_newaxis` axes of extent 1 at `axis`.",
    ),
    OpDef(
        "broadcast_to",
        ("data",),
        (Attr("shape", "dims"),),
        _broadcast_to_rel,
        lambda x, *, attrs: topi.broadcast_to(x, attrs.shape),
        lambda x, *, attrs: np.broadcast_to(x, attrs.shape).copy(),
        OpPattern.BROADCAST,
        "Broadcast to `shape` by NumPy's rules.",
    ),
    OpDef(
        "concatenate",
        ("data",),
        (Attr("axis", "int", 0),),
        _concatenate_rel,
        lambda xs, *, attrs: topi.concatenate(xs, attrs.axis),
        lambda xs, *, attrs: np.concatenate(xs, axis=attrs.axis),
        OpPattern.INJECTIVE,
        "The tensors of a tuple joined along `axis`.",
    ),
    OpDef(
        "split",
        ("data",),
        (Attr("indices_or_sections", "int_or_ints"), Attr("axis", "int", 0)),
        _split_rel,
        lambda x, *, attrs: topi.split(x, attrs.indices_or_sections, attrs.axis),
        _split_ref,
        OpPattern.INJECTIVE,
        "A tuple of sections of `data` along `axis`.",
    ),
    OpDef(
        "strided_slice",
        ("data",),
        (
            Attr("begin", "dims"),
            Attr("end", "dims"),
            Attr("strides", "ints", None, optional=True),
            Attr("axes", "ints", None, optional=True),
            Attr("slice_mode", "str", "end"),
        ),
        _strided_slice_rel,
        _strided_slice_lower,
        lambda x, *, attrs: x[tuple(slices(attrs, x.shape))].copy(),
        OpPattern.INJECTIVE,
        "Elements begin:end:strides along each sliced axis (NumPy's basic slicing).",
    ),
    OpDef(
        "trilu",
        ("data", "k"),
        (Attr("upper", "bool", True),),
        _trilu_rel,
        lambda x, k, *, attrs: topi.trilu(x, k(), attrs.upper),
        _trilu_ref,
        OpPattern.INJECTIVE,
        "The upper (j - i >= k) or lower (j - i <= k) triangle of the last two axes, else 0.",
    ),
    OpDef(
        "nn.pad",
        ("data", "pad_value"),
        (Attr("pad_width", "ints_list"), Attr("pad_mode", "str", "constant")),
        _pad_rel,
        _pad_lower,
        _pad_ref,
        OpPattern.INJECTIVE,
        "`data` padded by pad_width[d] = (before, after) on each axis.",
    ),
)

__all__ = ["OPERATORS", "relay_newshape", "slices", "split_bounds"]
