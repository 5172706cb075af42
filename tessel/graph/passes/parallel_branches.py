"""The analysis behind CombineParallelDense: products (`nn.dense`, `nn.matmul`) that read the same
value, and the chain of elementwise operators that follows each of them.

A *branch* starts at a product and extends through its only consumer while that consumer is an
elementwise or broadcasting operator (or, for the concatenating strategy, a reshape that keeps
the last axis), as Relay's ParallelOpCombiner extends branches. Products read "the same value"
when their data arguments compute the same thing: importers often write one `reshape(%x)` per
MatMul, so data arguments are compared by value numbering, not by identity.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from functools import partial
from typing import Any

from tessel.arith.dims import broadcast_dims, dims_equal
from tessel.graph.expr import Call, Expr, Function, If, Let
from tessel.graph.op import get_op
from tessel.graph.op.op_def import OpPattern
from tessel.graph.traversal import children, expr_children, post_order_exprs
from tessel.graph.ty import TensorType
from tessel.ir.expr import Op

PRODUCTS = ("nn.dense", "nn.matmul")
BATCH, CONCAT, SEPARATE = "batch", "concat", "separate"  # the strategies for a group


def tensor_type(expr: Expr) -> TensorType | None:
    """The checked tensor type of `expr`, None for tuples, functions and untyped nodes."""
    ty = expr.checked_type
    return ty if isinstance(ty, TensorType) else None


def attrs_key(call: Call, drop: tuple[str, ...] = ()) -> tuple[Any, ...]:
    """A hashable summary of a call's complete attributes (defaults filled in)."""
    attrs = get_op(call.op.name).normalize_attrs(call.attrs)  # type: ignore[union-attr]  # an Op
    return tuple(sorted((k, repr(v)) for k, v in attrs.items() if k not in drop))


@dataclass(frozen=True)
class Product:
    """A product call and what it multiplies: data [..., K] by a 2-D weight."""

    call: Call
    transpose_b: bool  # the weight is [N, K] (nn.dense, or nn.matmul with transpose_b)

    @property
    def data(self) -> Expr:
        return self.call.args[0]

    @property
    def weight(self) -> Expr:
        return self.call.args[1]

    @property
    def width(self) -> int:
        """N: the extent of the output's last axis."""
        shape = tensor_type(self.weight).shape  # type: ignore[union-attr]  # typed
        return shape[0] if self.transpose_b else shape[1]


def as_product(expr: Expr) -> Product | None:
    """`expr` as a combinable product, else None."""
    if not (isinstance(expr, Call) and isinstance(expr.op, Op) and expr.op.name in PRODUCTS):
        return None
    data, weight, out = tensor_type(expr.args[0]), tensor_type(expr.args[1]), tensor_type(expr)
    if data is None or weight is None or out is None or weight.ndim != 2 or data.ndim < 1:
        return None
    attrs = get_op(expr.op.name).normalize_attrs(expr.attrs)
    if expr.op.name == "nn.dense":
        return Product(expr, transpose_b=True)
    if attrs.transpose_a:
        return None
    return Product(expr, transpose_b=bool(attrs.transpose_b))


def dataflow_nodes(func: Function) -> list[Expr] | None:
    """The nodes of `func`'s body in post-order, nested functions (closures, fused kernels)
    kept whole; None when the body has a `let` or an `if`: combining across scopes could read
    a value where it is not bound, or compute a branch unconditionally, so the pass runs on
    graph normal form (ToGraphNormalForm runs before it in the pipeline)."""
    order = list(post_order_exprs(func.body, _dataflow_children))
    return None if any(isinstance(expr, Let | If) for expr in order) else order


# The nodes of a dataflow body: nested functions are leaves.
_dataflow_children = partial(children, enter_functions=False)


class DataflowIndex:
    """Consumers and value numbers of every node of a function's dataflow body."""

    def __init__(self, order: list[Expr]) -> None:
        self.order = order
        self.consumers: dict[int, list[Expr]] = defaultdict(list)
        for expr in self.order:
            if isinstance(expr, Function):
                continue
            for child in expr_children(expr):
                self.consumers[id(child)].append(expr)
        self.value_number = self._number()

    def _number(self) -> dict[int, int]:
        """Equal numbers for operator calls of equal operators, attributes and operands (the
        table is flat, so deep graphs hash in constant depth)."""
        table: dict[tuple[Any, ...], int] = {}
        numbers: dict[int, int] = {}
        for expr in self.order:
            if isinstance(expr, Call) and isinstance(expr.op, Op):
                key: tuple[Any, ...] = (
                    expr.op.name,
                    attrs_key(expr),
                    tuple(numbers.get(id(a), -1 - id(a)) for a in expr.args),
                )
            else:
                key = ("node", id(expr))
            numbers[id(expr)] = table.setdefault(key, len(table))
        return numbers

    def only_consumer(self, expr: Expr) -> Expr | None:
        """The one node that reads `expr` (once), else None."""
        users = self.consumers.get(id(expr), [])
        return users[0] if len(users) == 1 else None

    def depends_on(self, expr: Expr, nodes: set[int]) -> bool:
        """Whether `expr` is or reads (transitively) one of `nodes` (ids)."""
        stack, seen = [expr], set()
        while stack:
            node = stack.pop()
            if id(node) in nodes:
                return True
            if id(node) in seen:
                continue
            seen.add(id(node))
            stack.extend(expr_children(node))
        return False


def is_follower(call: Expr, prev: Expr, keep_reshape: bool) -> bool:
    """Whether `call` maps `prev` elementwise along its last axis, so it commutes with slicing
    that axis: an elementwise or NumPy-broadcasting operator reading `prev` once; with
    `keep_reshape`, also a reshape that keeps the last axis."""
    if not (isinstance(call, Call) and isinstance(call.op, Op)):
        return False
    out, before = tensor_type(call), tensor_type(prev)
    types = [tensor_type(a) for a in call.args]
    if out is None or before is None or any(t is None for t in types):
        return False
    if sum(a is prev for a in call.args) != 1 or out.shape[-1:] != before.shape[-1:]:
        return False
    if call.op.name == "reshape":
        return keep_reshape and out.ndim >= 1 and before.ndim >= 1
    if get_op(call.op.name).pattern > OpPattern.BROADCAST:
        return False
    attrs = get_op(call.op.name).normalize_attrs(call.attrs)
    if call.op.name == "nn.bias_add":  # its bias runs along the last axis
        return attrs.axis % before.ndim == before.ndim - 1 and call.args[0] is prev
    if "axis" in attrs or "axes" in attrs:  # expand_dims, repeat, prelu: not NumPy broadcasting
        return False
    try:
        # None types returned False above; symbolic dimensions broadcast by proof
        shape = broadcast_dims(*(t.shape for t in types))  # type: ignore[union-attr]
    except ValueError:
        return False
    return len(shape) == out.ndim and all(
        dims_equal(x, y) for x, y in zip(shape, out.shape, strict=True)
    )


def branch_from(index: DataflowIndex, product: Product, keep_reshape: bool) -> list[Call]:
    """The product and the chain of followers that only it feeds."""
    branch: list[Call] = [product.call]
    while True:
        consumer = index.only_consumer(branch[-1])
        if consumer is None or not is_follower(consumer, branch[-1], keep_reshape):
            return branch
        assert isinstance(consumer, Call)
        branch.append(consumer)


def parallel_products(index: DataflowIndex) -> list[list[Product]]:
    """Products grouped by what they compute from (data value, operator and attributes, dtypes,
    reduced extent), each group in evaluation order; groups of one product are left out."""
    groups: dict[tuple[Any, ...], list[Product]] = defaultdict(list)
    for expr in index.order:
        product = as_product(expr)
        if product is None:
            continue
        data, weight = tensor_type(product.data), tensor_type(product.weight)
        key = (
            index.value_number[id(product.data)],
            product.call.op.name,  # type: ignore[union-attr]  # as_product checked the op is an Op
            attrs_key(product.call, drop=("units",)),
            data.dtype,  # type: ignore[union-attr]  # as_product checked both are tensors
            weight.dtype,  # type: ignore[union-attr]  # as_product checked both are tensors
            data.shape,  # type: ignore[union-attr]  # as_product checked both are tensors
        )
        groups[key].append(product)
    return [independent(index, group) for group in groups.values() if len(group) > 1]


def independent(index: DataflowIndex, products: list[Product]) -> list[Product]:
    """The products whose weight reads no other product of the group (a weight computed from
    a sibling cannot be combined with it)."""
    calls = {id(p.call) for p in products}
    return [p for p in products if not index.depends_on(p.weight, calls - {id(p.call)})]


__all__ = [
    "BATCH",
    "CONCAT",
    "SEPARATE",
    "DataflowIndex",
    "Product",
    "as_product",
    "attrs_key",
    "branch_from",
    "dataflow_nodes",
    "independent",
    "is_follower",
    "parallel_products",
    "tensor_type",
]
