"""Einstein summation (TVM's topi.einsum) as one compute: the output's labels are its axes, the
other labels are reduction axes, and the body is the product of the operands' elements.

Subscripts follow NumPy: letters name axes, a letter repeated within one operand reads its
diagonal (`ii->i`), `...` stands for broadcast axes aligned from the right, and without `->` the
output is the `...` axes followed by the letters used once, in sorted order. An extent of 1
stretches against a larger one, for letters and `...` alike, as in NumPy.
"""

from __future__ import annotations

from typing import Any

from tessel import te
from tessel.ir.expr import IntImm, PrimExpr
from tessel.te.tensor import Tensor
from tessel.topi.nn.utils import same_extent
from tessel.topi.utils import expect_tensor, op_error, shape_str

OP = "einsum"


def einsum(subscripts: str, *operand: Tensor) -> Tensor:
    """The Einstein summation of the operands described by `subscripts` (numpy.einsum's
    notation, e.g. "bij,bjk->bik"), summing over the labels absent from the output."""
    if not isinstance(subscripts, str):
        raise op_error(OP, "subscripts", f"expected a string, got {type(subscripts).__name__}")
    if not operand:
        raise op_error(OP, "operand", "expected at least one tensor")
    tensors = [expect_tensor(OP, f"operand[{i}]", t) for i, t in enumerate(operand)]
    for index, tensor in enumerate(tensors[1:], start=1):
        if tensor.dtype != tensors[0].dtype:
            raise op_error(
                OP,
                f"operand[{index}]",
                f"dtype {tensor.dtype} differs from {tensors[0].dtype} of `operand[0]`",
                hint="cast the operands to one dtype with topi.cast",
            )
    labels, output = parse_subscripts(subscripts, [t.ndim for t in tensors])
    extents = _label_extents(subscripts, tensors, labels)
    reduced = [label for label in extents if label not in output]
    axes = {label: te.reduce_axis((0, extents[label]), name=_var_name(label)) for label in reduced}

    def product(*indices: Any) -> PrimExpr:
        index_of = dict(zip(output, indices, strict=True)) | {k: v.var for k, v in axes.items()}
        value = None
        for tensor, tensor_labels in zip(tensors, labels, strict=True):
            element = tensor[_element(tensor, tensor_labels, index_of)]
            value = element if value is None else value * element
        assert value is not None, "einsum has at least one operand"
        return te.sum(value, axis=list(axes.values())) if axes else value

    return te.compute(
        [extents[label] for label in output],
        product,
        name="T_einsum",
        tag="einsum",
        varargs_names=[_var_name(label) for label in output] or None,
    )


def parse_subscripts(subscripts: str, ranks: list[int]) -> tuple[list[list[str]], list[str]]:
    """The labels of each operand's axes and of the output, `...` expanded into labels "0",
    "1", ... (the broadcast axes, numbered from the left of the widest `...`)."""
    text = subscripts.replace(" ", "")
    inputs, arrow, output_text = text.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(ranks):
        raise op_error(
            OP,
            "subscripts",
            f"{subscripts!r} has {len(terms)} operands but {len(ranks)} tensors were given",
        )
    for term in [*terms, *([output_text] if arrow else [])]:
        letters = term.replace("...", "")
        if term.count("...") > 1 or not all(c.isascii() and c.isalpha() for c in letters):
            raise op_error(
                OP, "subscripts", f"{term!r} in {subscripts!r} is not letters and at most one `...`"
            )
    ellipsis_ranks = []
    for index, (term, rank) in enumerate(zip(terms, ranks, strict=True)):
        named = len(term.replace("...", ""))
        if ("..." in term and named > rank) or ("..." not in term and named != rank):
            raise op_error(
                OP,
                f"operand[{index}]",
                f"subscripts {term!r} name {named} axes but the tensor has {rank}",
            )
        ellipsis_ranks.append(rank - named if "..." in term else 0)
    broadcast = [str(d) for d in range(max(ellipsis_ranks))]
    labels = [_expand(t, broadcast, r) for t, r in zip(terms, ellipsis_ranks, strict=True)]
    if arrow:
        if broadcast and "..." not in output_text:
            raise op_error(
                OP, "subscripts", f"{subscripts!r}: the output drops the `...` axes of the inputs"
            )
        output = _expand(output_text, broadcast, len(broadcast))
        _check_output(subscripts, output, labels)
    else:
        letters = inputs.replace("...", "").replace(",", "")
        output = broadcast + sorted(c for c in set(letters) if letters.count(c) == 1)
    return labels, output


def _expand(term: str, broadcast: list[str], count: int) -> list[str]:
    """A term's labels with its `...` standing for the last `count` broadcast labels."""
    head, dots, tail = term.partition("...")
    if not dots:
        return list(term)
    return [*head, *broadcast[len(broadcast) - count :], *tail]


def _check_output(subscripts: str, output: list[str], labels: list[list[str]]) -> None:
    if len(set(output)) != len(output):
        raise op_error(OP, "subscripts", f"{subscripts!r}: the output names a label twice")
    known = {label for term in labels for label in term}
    unknown = sorted(label for label in output if label not in known)
    if unknown:
        raise op_error(
            OP, "subscripts", f"{subscripts!r}: output labels {unknown} are in no operand"
        )


def _label_extents(
    subscripts: str, tensors: list[Tensor], labels: list[list[str]]
) -> dict[str, PrimExpr]:
    """The extent of every label: equal wherever it appears, or 1 in some places (broadcast)."""
    extents: dict[str, PrimExpr] = {}
    for index, (tensor, tensor_labels) in enumerate(zip(tensors, labels, strict=True)):
        for label, extent in zip(tensor_labels, tensor.shape, strict=True):
            known = extents.get(label)
            if known is None or _is_one(known):
                extents[label] = extent
            elif not _is_one(extent) and not same_extent(known, extent):
                name = "`...`" if label.isdigit() else repr(label)
                raise op_error(
                    OP,
                    f"operand[{index}]",
                    f"{subscripts!r}: label {name} has extent {extent} in this tensor (shape "
                    f"{shape_str(tensor.shape)}) but {known} elsewhere",
                )
    return extents


def _element(tensor: Tensor, labels: list[str], index_of: dict[str, Any]) -> tuple[Any, ...]:
    """The element of an operand read at the given label indices (0 along stretched axes)."""
    return tuple(
        0 if _is_one(extent) else index_of[label]
        for label, extent in zip(labels, tensor.shape, strict=True)
    )


def _is_one(extent: PrimExpr) -> bool:
    return isinstance(extent, IntImm) and extent.value == 1


def _var_name(label: str) -> str:
    return f"e{label}" if label.isdigit() else label
