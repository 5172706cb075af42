"""einsum (Relay's `einsum(data, equation)`): the Einstein summation of a tuple of tensors,
lowered to `topi.einsum`, one compute that reads each operand where the equation says."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tessel import topi
from tessel.graph.op.op_def import Args, Attr, Attrs, OpDef, OpPattern
from tessel.graph.ty import TensorType, Type
from tessel.support.errors import UserError
from tessel.topi.einsum import parse_subscripts


def _einsum_rel(args: Args, attrs: Attrs) -> Type:
    fields = args.tensors("data")
    if not fields:
        raise args.error("data", "must hold at least one tensor")
    for k, field in enumerate(fields[1:], start=1):
        if field.dtype != fields[0].dtype:
            raise args.error(
                "data", f"field {k} has dtype {field.dtype} but field 0 has {fields[0].dtype}"
            )
    try:
        labels, output = parse_subscripts(attrs.equation, [f.ndim for f in fields])
    except UserError as err:
        raise args.error("equation", f"{attrs.equation!r} does not fit the tensors: {err}") from err
    extents = _label_extents(args, attrs.equation, labels, [f.shape for f in fields])
    return TensorType(tuple(extents[label] for label in output), fields[0].dtype)


def _label_extents(
    args: Args, equation: str, labels: list[list[str]], shapes: list[Sequence[int]]
) -> dict[str, int]:
    """Each label's extent: equal wherever it appears, or 1 where it is broadcast."""
    extents: dict[str, int] = {}
    for index, (term, shape) in enumerate(zip(labels, shapes, strict=True)):
        for label, extent in zip(term, shape, strict=True):
            known = extents.get(label)
            if known is None or known == 1:
                extents[label] = extent
            elif extent not in (1, known):
                name = "`...`" if label.isdigit() else repr(label)
                raise args.error(
                    "data",
                    f"field {index}: label {name} of {equation!r} has extent {extent}, "
                    f"but {known} elsewhere",
                )
    return extents


def _einsum_ref(xs: Sequence[np.ndarray], *, attrs: Attrs) -> np.ndarray:
    dtype = xs[0].dtype
    return np.asarray(np.einsum(attrs.equation, *xs), dtype=dtype)


OPERATORS = (
    OpDef(
        "einsum",
        ("data",),
        (Attr("equation", "str"),),
        _einsum_rel,
        lambda xs, *, attrs: topi.einsum(attrs.equation, *xs),
        _einsum_ref,
        # a reduction with any access pattern: kernels of its own, as other opaque operators
        OpPattern.OPAQUE,
        "The Einstein summation of the tensors of `data` by `equation` (numpy.einsum's "
        "notation, `...` broadcast from the right).",
    ),
)
