"""Einsum: for floats, composed from transpose, reshape, strided_slice (diagonals), sum and
nn.batch_matmul; for integers, the graph's `einsum`.

The equation's operands are combined left to right. A label repeated within one operand takes
the diagonal; a label in one operand only and not in the output is summed out first. Two
operands then contract: the labels both hold and something later needs (the output or an operand
still to come) are batch axes, the other shared labels are contracted, and the rest are kept
from each side: a batch_matmul of [batch, left, contracted] by [batch, right, contracted], which
the matmul schedules make fast; with nothing to contract, the broadcast product. Integer operands
are one `einsum` call instead (topi.einsum's compute, exact in the operands' type, where
batch_matmul computes in floating point). `...` stands for the same broadcast axes in every
operand, aligned from the right as NumPy does.
"""

from __future__ import annotations

import math
import string

import numpy as np

from tessel.frontend.onnx.converters.reduce import Result, apply, data_of, reshape
from tessel.frontend.onnx.node import OnnxNode
from tessel.frontend.onnx.opsets import Entry, every_opset
from tessel.frontend.onnx.relay import call, const, fold, tuple_of

# Labels that stand for the axes of `...` (not letters, so they never clash with the equation's).
_ELLIPSIS_LABELS = string.digits + "!#$%&*+/:;<=>?@^_`|~"


class _Term:
    """One operand while the equation is evaluated: its value, the label of each axis, and the
    extent of each axis."""

    def __init__(self, value: Result, labels: list[str], shape: list[int]) -> None:
        self.value, self.labels, self.shape = value, labels, shape

    def transposed(self, labels: list[str]) -> _Term:
        """The term with its axes in the order of `labels` (a permutation of its own)."""
        if labels == self.labels:
            return self
        perm = tuple(self.labels.index(label) for label in labels)
        value = apply("transpose", self.value, axes=perm)
        return _Term(value, labels, [self.shape[p] for p in perm])

    def reshaped(self, shape: list[int], labels: list[str]) -> _Term:
        """The term's data seen with `shape` (same elements, same order), axes `labels`."""
        if shape == self.shape:
            return _Term(self.value, labels, shape)
        return _Term(reshape(self.value, shape), labels, shape)

    def summed(self, labels: set[str]) -> _Term:
        """The term summed over the axes of `labels`."""
        axes = tuple(d for d, label in enumerate(self.labels) if label in labels)
        if not axes:
            return self
        value = apply("sum", self.value, axis=axes, keepdims=False)
        keep = [d for d in range(len(self.labels)) if d not in axes]
        return _Term(value, [self.labels[d] for d in keep], [self.shape[d] for d in keep])


def _ellipsis_rank(node: OnnxNode, terms: list[str], ranks: list[int]) -> int:
    """The number of axes `...` stands for (the most any operand gives it), once each operand
    is checked to name its input's axes with letters and at most one `...`."""
    if len(terms) != len(ranks):
        raise node.error(f"the equation has {len(terms)} operands, the node {len(ranks)} inputs")
    ellipsis_rank = 0
    for term, rank in zip(terms, ranks, strict=True):
        letters = term.replace("...", "")
        if term.count("...") > 1 or (letters and not letters.isalpha()):
            raise node.error(f"operand {term!r} is not letters and at most one `...`")
        if "..." in term and rank >= len(letters):
            ellipsis_rank = max(ellipsis_rank, rank - len(letters))
        elif len(letters) != rank:
            raise node.error(f"operand {term!r} names {len(letters)} axes, its input has {rank}")
    if ellipsis_rank > len(_ELLIPSIS_LABELS):
        raise node.error(f"`...` stands for {ellipsis_rank} axes, more than supported")
    return ellipsis_rank


def _parse(node: OnnxNode, ranks: list[int]) -> tuple[list[list[str]], list[str]]:
    """The labels of each operand's axes and of the output, `...` expanded."""
    equation = node.attr("equation", "").replace(" ", "")
    inputs, arrow, output = equation.partition("->")
    terms = inputs.split(",")
    ellipsis_rank = _ellipsis_rank(node, terms, ranks)
    broadcast = list(_ELLIPSIS_LABELS[:ellipsis_rank])

    def expand(term: str, rank: int) -> list[str]:
        head, dots, tail = term.partition("...")
        if not dots:
            return list(term)
        count = rank - len(head) - len(tail)
        return [*head, *broadcast[ellipsis_rank - count :], *tail]

    labels = [expand(t, r) for t, r in zip(terms, ranks, strict=True)]
    if arrow:
        if output.count("...") > 1 or not output.replace("...", "").isalpha() and output.strip("."):
            raise node.error(f"the output {output!r} is not letters and at most one `...`")
        out = expand(output, ellipsis_rank + len(output.replace("...", "")))
    else:  # implicit: the broadcast axes, then the letters used once, sorted
        counts = {c: inputs.count(c) for c in inputs if c.isalpha()}
        out = broadcast + sorted(c for c, n in counts.items() if n == 1)
    if len(set(out)) != len(out):
        raise node.error(f"the output of equation {equation!r} names a label twice")
    return labels, out


def _diagonal(node: OnnxNode, term: _Term) -> _Term:
    """The term with each label repeated on its axes reduced to their diagonal: the two axes
    moved last, flattened, and every (n + 1)-th element taken."""
    while len(set(term.labels)) != len(term.labels):
        label = next(c for c in term.labels if term.labels.count(c) > 1)
        first = term.labels.index(label)
        second = term.labels.index(label, first + 1)
        n = term.shape[first]
        if term.shape[second] != n:
            raise node.error(f"label {label!r} has extents {n} and {term.shape[second]}")
        rest = [d for d in range(len(term.labels)) if d not in (first, second)]
        perm = (*rest, first, second)
        value = term.value
        if perm != tuple(range(len(perm))):
            value = apply("transpose", value, axes=perm)
        shape = [term.shape[d] for d in rest]
        value = reshape(value, (*shape, n * n))
        if n > 1:
            value = apply(
                "strided_slice",
                value,
                begin=(0,),
                end=(n * n,),
                strides=(n + 1,),
                axes=(len(shape),),
            )
        term = _Term(value, [term.labels[d] for d in rest] + [label], [*shape, n])
    return term


def _broadcast(node: OnnxNode, a: _Term, b: _Term) -> tuple[_Term, _Term]:
    """The two terms with each shared axis at one extent (an extent 1 broadcast, as `...`)."""
    for label in set(a.labels) & set(b.labels):
        m, n = a.shape[a.labels.index(label)], b.shape[b.labels.index(label)]
        if m == n:
            continue
        if 1 not in (m, n):
            raise node.error(f"label {label!r} has extents {m} and {n}, which do not broadcast")
        small, size = (a, n) if m == 1 else (b, m)
        shape = [size if c == label else e for c, e in zip(small.labels, small.shape, strict=True)]
        small.value = apply("broadcast_to", small.value, shape=tuple(shape))
        small.shape = shape
    return a, b


def _contract(node: OnnxNode, a: _Term, b: _Term, needed: set[str]) -> _Term:
    """The product of two terms, summed over the shared labels not `needed` later."""
    a, b = _broadcast(node, a, b)
    shared = [c for c in a.labels if c in b.labels]
    batch = [c for c in shared if c in needed]
    summed = [c for c in shared if c not in needed]
    left = [c for c in a.labels if c not in shared]
    right = [c for c in b.labels if c not in shared]
    extent = dict(zip(a.labels + b.labels, a.shape + b.shape, strict=True))
    sizes = [math.prod(extent[c] for c in group) for group in (batch, left, right, summed)]
    # (batch_matmul over an empty contraction would leave its output unwritten: the sum of
    # the broadcast product writes sum's identity, 0.)
    if summed and sizes[3] > 0:
        lhs = a.transposed(batch + left + summed).reshaped([sizes[0], sizes[1], sizes[3]], [])
        rhs = b.transposed(batch + right + summed).reshaped([sizes[0], sizes[2], sizes[3]], [])
        product = apply("nn.batch_matmul", lhs.value, rhs.value, transpose_b=True)
        labels = batch + left + right
        return _Term(product, [], [sizes[0], sizes[1], sizes[2]]).reshaped(
            [extent[c] for c in labels], labels
        )
    # Nothing to contract (or an empty contraction): the broadcast product, then the sum.
    labels = batch + left + right + summed
    lhs = a.transposed(batch + left + summed)
    rhs = b.transposed(batch + right + summed)
    lhs = lhs.reshaped([extent[c] if c not in right else 1 for c in labels], labels)
    rhs = rhs.reshaped([extent[c] if c not in left else 1 for c in labels], labels)
    product = apply("multiply", lhs.value, rhs.value)
    return _Term(product, labels, [extent[c] for c in labels]).summed(set(summed))


def convert_einsum(node: OnnxNode) -> Result:
    """Einsum: the terms combined left to right, then transposed to the output's labels."""
    count = len(node.inputs)
    shapes = [list(node.shape(i)) for i in range(count)]
    dtype = node.input(0).type.dtype
    if dtype == "bool" or any(node.input(i).type.dtype != dtype for i in range(count)):
        raise node.error(
            f"needs numeric operands of one dtype, got "
            f"{[node.input(i).type.dtype for i in range(count)]}"
        )
    labels, out = _parse(node, [len(s) for s in shapes])
    if not dtype.startswith("float"):
        return _einsum_op(node, labels, out)
    terms = [_diagonal(node, _Term(data_of(node, i), labels[i], shapes[i])) for i in range(count)]
    unknown = set(out) - {c for t in terms for c in t.labels}
    if unknown:
        raise node.error(f"output labels {sorted(unknown)} are in no operand")
    for index, term in enumerate(terms):  # sum out what only this operand has
        elsewhere = set(out).union(*(t.labels for j, t in enumerate(terms) if j != index))
        terms[index] = term.summed(set(term.labels) - elsewhere)
    result = terms[0]
    for index in range(1, count):
        needed = set(out).union(*(t.labels for t in terms[index + 1 :]))
        result = _contract(node, result, terms[index], needed)
    result = result.summed(set(result.labels) - set(out))
    final = result.transposed(out).value
    return final.astype(dtype) if isinstance(final, np.ndarray) else final


def _einsum_op(node: OnnxNode, labels: list[list[str]], out: list[str]) -> Result:
    """Integer operands: the graph's `einsum` (topi.einsum's one compute), exact in the operands'
    type, the `...` axes written as letters the equation does not use."""
    spare = iter(c for c in string.ascii_letters if c not in node.attr("equation", ""))
    letter = {c: (c if c.isalpha() else next(spare)) for term in [*labels, out] for c in term}
    equation = ",".join("".join(letter[c] for c in term) for term in labels)
    equation += "->" + "".join(letter[c] for c in out)
    operands = [data_of(node, i) for i in range(len(labels))]
    if all(isinstance(x, np.ndarray) for x in operands):
        return fold("einsum", tuple(operands), equation=equation)
    return call(
        "einsum",
        tuple_of([const(x) if isinstance(x, np.ndarray) else x for x in operands]),
        equation=equation,
    )


TABLE: dict[str, tuple[Entry, ...]] = {
    "Einsum": every_opset(convert_einsum, first=12),
}
