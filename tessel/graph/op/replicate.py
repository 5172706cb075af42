"""Operators that replicate data: stack (a new axis), repeat (elements in a row) and tile (the
whole tensor), with Relay's names and attributes."""

from __future__ import annotations

import numpy as np

from tessel import topi
from tessel.graph.op.common import same_as
from tessel.graph.op.op_def import Args, Attr, Attrs, OpDef, OpPattern
from tessel.graph.ty import Type


def _stack_rel(args: Args, attrs: Attrs) -> Type:
    fields = args.tensors("data")
    if not fields:
        raise args.error("data", "must hold at least one tensor")
    first = fields[0]
    for k, field in enumerate(fields[1:], start=1):
        if (field.shape, field.dtype) != (first.shape, first.dtype):
            raise args.error(
                "data",
                f"field {k} is {list(field.shape)} {field.dtype} but field 0 is "
                f"{list(first.shape)} {first.dtype}; stacked tensors must be alike",
            )
    axis = args.axis("axis", attrs.axis, first.ndim + 1)
    return same_as(first, (*first.shape[:axis], len(fields), *first.shape[axis:]))


def _repeat_rel(args: Args, attrs: Attrs) -> Type:
    data = args.tensor("data")
    if attrs.repeats < 0:
        raise args.error("repeats", f"is {attrs.repeats}; it must be non-negative")
    axis = args.axis("axis", attrs.axis, data.ndim)
    shape = list(data.shape)
    shape[axis] *= attrs.repeats
    return same_as(data, shape)


def _tile_rel(args: Args, attrs: Attrs) -> Type:
    data = args.tensor("data")
    if any(r < 0 for r in attrs.reps):
        raise args.error("reps", f"is {list(attrs.reps)}; every count must be non-negative")
    rank = max(data.ndim, len(attrs.reps))
    shape = (1,) * (rank - data.ndim) + data.shape
    reps = (1,) * (rank - len(attrs.reps)) + attrs.reps
    return same_as(data, tuple(n * r for n, r in zip(shape, reps, strict=True)))


OPERATORS = (
    OpDef(
        "stack",
        ("data",),
        (Attr("axis", "int", 0),),
        _stack_rel,
        lambda xs, *, attrs: topi.stack(xs, attrs.axis),
        lambda xs, *, attrs: np.stack(xs, axis=attrs.axis),
        OpPattern.INJECTIVE,
        "The tensors of a tuple, all alike, joined along a new axis `axis`.",
    ),
    OpDef(
        "repeat",
        ("data",),
        (Attr("repeats", "int"), Attr("axis", "int")),
        _repeat_rel,
        lambda x, *, attrs: topi.repeat(x, attrs.repeats, attrs.axis),
        lambda x, *, attrs: np.repeat(x, attrs.repeats, axis=attrs.axis),
        OpPattern.BROADCAST,
        "Each element repeated `repeats` times in a row along `axis` (numpy.repeat).",
    ),
    OpDef(
        "tile",
        ("data",),
        (Attr("reps", "ints"),),
        _tile_rel,
        lambda x, *, attrs: topi.tile(x, attrs.reps),
        lambda x, *, attrs: np.tile(x, attrs.reps),
        OpPattern.INJECTIVE,
        "The whole tensor repeated reps[d] times along each axis (numpy.tile).",
    ),
)

__all__ = ["OPERATORS"]
