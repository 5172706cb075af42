"""CombineParallelDense: several products of one value (a transformer layer's Q/K/V projections,
a GRU's gates) become one kernel, by either of the two strategies of the TVM
discussion "Yet another dense op combine strategy"
(https://discuss.tvm.ai/t/yet-another-dense-op-combine-strategy/7126):

- **batch** (Relay's): `nn.batch_matmul(stack((%x, %x, ...)), stack((%w1, %w2, ...)))`, split
  back along the batch axis; every weight must have the same shape, and the data is 2-D.
- **concat** (that discussion's proposal, which TVM never shipped as a choice): one wider
  `nn.dense(%x, concatenate((%w1, %w2, ...)))` whose columns are sliced back per branch
  (`strided_slice`, `slice_mode="size"`); widths may differ and the data may have any rank.

The elementwise operators after each product (bias add, scale, activation, and for concat a
reshape that keeps the last axis) are combined too, level by level while every branch has the
same operator with operands that can be stacked or concatenated (Relay's CheckLevel).

`to_batch=True` or `False` picks the strategy; `to_batch=None` (the default) lets the cost model
of `combine_cost` choose per group between the two and leaving the products alone: measured
times of the kernels on the target, kept in an on-disk table. TVM offered the strategies as a
flag and never the choice.

The stacked or concatenated weights are calls that FoldConstant folds into one Constant; it is
no one weight, so it has no name_hint (an exported model calls it `constant_<k>`), while a
weight the pass leaves alone keeps its name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from tessel.graph.expr import Call, Expr, Function, Tuple, TupleGetItem
from tessel.graph.passes.infer_type import annotate, infer_expr_types
from tessel.graph.passes.parallel_branches import (
    BATCH,
    CONCAT,
    SEPARATE,
    DataflowIndex,
    Product,
    attrs_key,
    branch_from,
    dataflow_nodes,
    parallel_products,
    tensor_type,
)
from tessel.graph.passes.rewriter import ExprRewriter, is_primitive, rewrite_functions
from tessel.graph.traversal import post_order_exprs
from tessel.ir.expr import GlobalVar, Op
from tessel.ir.module import IRModule
from tessel.ir.target import Target
from tessel.ir.transform import Pass, PassContext
from tessel.support.errors import InternalError, UserError

# PassContext config: a callable (products: Sequence[Product]) -> strategy, replacing the
# measured cost model (tests, and users who know their target).
STRATEGY_CHOOSER = "combine_parallel_dense.choose"


def _call(name: str, args: Sequence[Expr], **attrs: object) -> Call:
    return Call(Op(name), tuple(args), attrs)


@dataclass(frozen=True)
class _Operand:
    """How one non-branch operand of a combined level is built."""

    position: int
    combined: Expr


def _batch_operand(operands: list[Expr], rows: int) -> Expr | None:
    """The operand of a batched level: shared as it is, or each operand raised to rank 2 and
    stacked along a new batch axis; None when they cannot be."""
    types = [tensor_type(o) for o in operands]
    if any(t is None or t.ndim > 2 for t in types):
        return None
    if all(o is operands[0] for o in operands):
        return operands[0]
    # None types returned None above
    if any((t.shape, t.dtype) != (types[0].shape, types[0].dtype) for t in types):  # type: ignore[union-attr]
        return None
    missing = 2 - types[0].ndim  # type: ignore[union-attr]  # None types returned None above
    extra = {"num_newaxis": missing} if missing > 1 else {}
    raised = [_call("expand_dims", (o,), axis=0, **extra) if missing else o for o in operands]
    return _call("stack", (Tuple(tuple(raised)),), axis=0)


def _concat_operand(operands: list[Expr], widths: list[int]) -> Expr | None:
    """The operand of a concatenated level: shared as it is when it broadcasts along the last
    axis, else each operand widened to its branch's width (repeat) and concatenated along the
    last axis; None when the leading axes differ."""
    types = [tensor_type(o) for o in operands]
    if any(t is None for t in types):
        return None
    first = types[0]
    # None types returned None above
    if all(o is operands[0] for o in operands) and (first.ndim == 0 or first.shape[-1] == 1):  # type: ignore[union-attr]
        return operands[0]
    # None types returned None above
    if any(t.ndim != first.ndim or t.shape[:-1] != first.shape[:-1] for t in types):  # type: ignore[union-attr]
        return None
    parts: list[Expr] = []
    for operand, ty, width in zip(operands, types, widths, strict=True):
        if ty.ndim == 0:  # type: ignore[union-attr]  # None types returned None above
            operand = _call("expand_dims", (operand,), axis=-1)
        last = 1 if ty.ndim == 0 else ty.shape[-1]  # type: ignore[union-attr]  # checked
        if last != width:
            if last != 1:
                return None
            # None types returned None above
            operand = _call("repeat", (operand,), repeats=width, axis=max(ty.ndim - 1, 0))  # type: ignore[union-attr]
        parts.append(operand)
    # None types returned None above
    return _call("concatenate", (Tuple(tuple(parts)),), axis=max(first.ndim - 1, 0))  # type: ignore[union-attr]


class _Group:
    """Branches to combine by one strategy, and the combined expression that replaces them."""

    def __init__(self, index: DataflowIndex, products: list[Product], strategy: str) -> None:
        self.products, self.strategy = products, strategy
        self.branches = [branch_from(index, p, keep_reshape=strategy == CONCAT) for p in products]
        self.widths = [p.width for p in products]
        self.members = {id(node) for branch in self.branches for node in branch}
        self.index = index

    def combined_levels(self) -> list[list[_Operand]]:
        """The operands of each follower level that combines (level 1 up), stopping at the
        first level where the branches differ."""
        levels: list[list[_Operand]] = []
        depth = min(len(b) for b in self.branches)
        for level in range(1, depth):
            calls = [b[level] for b in self.branches]
            operands = self._level_operands(calls, [b[level - 1] for b in self.branches])
            if operands is None:
                break
            levels.append(operands)
        return levels

    def _level_operands(self, calls: list[Call], prevs: list[Expr]) -> list[_Operand] | None:
        first = calls[0]
        position = next(k for k, a in enumerate(first.args) if a is prevs[0])
        # A reshape's new shape differs with the branch's width; its leading axes must not.
        # a branch's calls have Op ops (is_follower)
        drop = ("newshape",) if first.op.name == "reshape" else ()  # type: ignore[union-attr]
        key = (first.op.name, attrs_key(first, drop))  # type: ignore[union-attr]  # an Op
        for call, prev in zip(calls, prevs, strict=True):
            # a branch's calls have Op ops (is_follower)
            if (call.op.name, attrs_key(call, drop)) != key or call.args[position] is not prev:  # type: ignore[union-attr]
                return None
            # a follower is tensor-typed (is_follower)
            if tensor_type(call).dtype != tensor_type(first).dtype:  # type: ignore[union-attr]
                return None
        if first.op.name == "reshape":  # type: ignore[union-attr]  # an Op (is_follower)
            # a follower is tensor-typed (is_follower)
            leading = {tensor_type(c).shape[:-1] for c in calls}  # type: ignore[union-attr]
            return [] if len(leading) == 1 else None
        operands: list[_Operand] = []
        for k in range(len(first.args)):
            if k == position:
                continue
            column = [c.args[k] for c in calls]
            if any(self.index.depends_on(o, self.members) for o in column):
                return None
            rows = tensor_type(prevs[0]).shape[0]  # type: ignore[union-attr]  # typed (is_follower)
            combined = (
                _batch_operand(column, rows)
                if self.strategy == BATCH
                else _concat_operand(column, self.widths)
            )
            if combined is None:
                return None
            operands.append(_Operand(k, combined))
        return operands

    def replacements(self) -> dict[int, Expr]:
        """The expression that replaces each branch's last combined node."""
        levels = self.combined_levels()
        value = self._product()
        for level, operands in enumerate(levels, start=1):
            value = self._level(level, value, operands)
        ends = [b[len(levels)] for b in self.branches]
        if self.strategy == BATCH:
            parts = _call("split", (value,), indices_or_sections=len(ends), axis=0)
            pieces = [
                _call("squeeze", (TupleGetItem(parts, k),), axis=(0,)) for k in range(len(ends))
            ]
        else:
            pieces = self._slices(value, ends)
        return {id(end): piece for end, piece in zip(ends, pieces, strict=True)}

    def _product(self) -> Expr:
        first = self.products[0]
        name = first.call.op.name  # type: ignore[union-attr]  # an Op
        attrs = dict(first.call.attrs)
        weights = Tuple(tuple(p.weight for p in self.products))
        if self.strategy == BATCH:
            data = Tuple(tuple(p.data for p in self.products))
            batch_attrs = {"out_dtype": attrs["out_dtype"]} if attrs.get("out_dtype") else {}
            if not first.transpose_b:
                batch_attrs["transpose_b"] = False
            return Call(
                Op("nn.batch_matmul"),
                (_call("stack", (data,), axis=0), _call("stack", (weights,), axis=0)),
                batch_attrs,
            )
        attrs["units"] = sum(self.widths)
        weight = _call("concatenate", (weights,), axis=0 if first.transpose_b else 1)
        return Call(Op(name), (first.data, weight), attrs)

    def _level(self, level: int, value: Expr, operands: list[_Operand]) -> Expr:
        first = self.branches[0][level]
        if first.op.name == "reshape":  # type: ignore[union-attr]  # an Op (is_follower)
            shape = tensor_type(first).shape  # type: ignore[union-attr]  # typed (is_follower)
            return _call("reshape", (value,), newshape=(*shape[:-1], sum(self.widths)))
        args = list(first.args)
        position = next(k for k, a in enumerate(first.args) if a is self.branches[0][level - 1])
        args[position] = value
        for operand in operands:
            args[operand.position] = operand.combined
        # a branch's calls have Op ops (is_follower)
        if self.strategy == BATCH and first.op.name == "nn.bias_add":  # type: ignore[union-attr]
            # the batch axis comes first: the bias, [N] or stacked [G, 1, N], broadcasts
            return Call(Op("add"), tuple(args))
        return Call(first.op, tuple(args), first.attrs)

    def _slices(self, value: Expr, ends: list[Expr]) -> list[Expr]:
        end_type = tensor_type(ends[0])  # typed (is_follower)
        rank = end_type.ndim  # type: ignore[union-attr]
        pieces, offset = [], 0
        for width in self.widths:
            if end_type.is_static:  # type: ignore[union-attr]
                attrs = {
                    "begin": (0,) * (rank - 1) + (offset,),
                    "end": (-1,) * (rank - 1) + (width,),
                    "strides": (1,) * rank,
                    "slice_mode": "size",
                }
            else:  # symbolic rows: the last axis alone, by its bounds (what symbolic slices take)
                attrs = {"begin": (offset,), "end": (offset + width,), "axes": (rank - 1,)}
            pieces.append(_call("strided_slice", (value,), **attrs))
            offset += width
        return pieces


Chooser = Callable[[Sequence[Product]], str]


def _candidate_groups(
    index: DataflowIndex, min_num_branches: int, to_batch: bool | None, choose: Chooser
) -> list[_Group]:
    """The groups to combine in this round, each with its strategy."""
    groups: list[_Group] = []
    for products in parallel_products(index):
        if to_batch is True:
            by_weight: dict[tuple[int, ...], list[Product]] = {}
            for p in products:
                # as_product checked data and weight types
                by_weight.setdefault(tensor_type(p.weight).shape, []).append(p)  # type: ignore[union-attr]
            for same in by_weight.values():
                if len(same) >= min_num_branches and batchable(same):
                    groups.append(_Group(index, same, BATCH))
        elif len(products) >= min_num_branches:
            strategy = CONCAT if to_batch is False else choose(products)
            if strategy not in (BATCH, CONCAT, SEPARATE):
                raise UserError(
                    f"unknown combine strategy {strategy!r}", rule="combine_parallel_dense.strategy"
                )
            if strategy == BATCH and not batchable(products):
                raise UserError(
                    "the batch strategy needs 2-D data and weights of one shape",
                    rule="combine_parallel_dense.strategy",
                )
            if strategy != SEPARATE:
                groups.append(_Group(index, products, strategy))
    return groups


def batchable(products: Sequence[Product]) -> bool:
    """Whether the batch strategy applies: 2-D data of static shape (its stack takes constant
    shapes), every weight of one shape."""
    shapes = {tensor_type(p.weight).shape for p in products}  # type: ignore[union-attr]  # typed
    data = tensor_type(products[0].data)  # as_product checked data and weight types
    return len(shapes) == 1 and data.ndim == 2 and data.is_static  # type: ignore[union-attr]


class _Replacer(ExprRewriter):
    """Replace each group's ends by their pieces of the combined product. A replacement is
    built from the original leaves (data, weights, operands), and rewritten in its turn with
    the same memo, so a leaf that another group changed (a layer's input, downstream of the
    layer before's combined products) is read in its rewritten form."""

    def __init__(self, replacements: dict[int, Expr]) -> None:
        super().__init__()
        self.replacements = replacements

    def enters(self, func: Function) -> bool:
        return not is_primitive(func)

    def rewrite_node(self, old: Expr, new: Expr) -> Expr:
        replacement = self.replacements.get(id(old))
        return new if replacement is None else self.rewrite(replacement)


def combine(
    func: Function,
    min_num_branches: int,
    to_batch: bool | None,
    choose: Chooser,
    mod: IRModule | None = None,
) -> Function:
    """`func` (of `mod`) with its groups of parallel products combined, every group found in a
    round at once, until a round finds none: a group's replacement reads only the group's
    leaves (data, weights, operands that do not depend on it), and a later group may read its
    slices."""
    if is_primitive(func):
        return func
    while True:
        order = dataflow_nodes(func)
        if order is None:
            return func
        index = DataflowIndex(order)
        groups = _candidate_groups(index, min_num_branches, to_batch, choose)
        if not groups:
            return func
        replacements = {k: v for group in groups for k, v in group.replacements().items()}
        result = _Replacer(replacements).rewrite(func)
        assert isinstance(result, Function)
        if result is func:  # each round must replace its groups' ends
            raise InternalError("CombineParallelDense found a group it could not replace")
        # One typing a round, of this function alone unless it calls others by name: a round
        # a group over MiniLM's encoder typed `main` six times (a third of a warm compile).
        context = mod if _calls_globals(result) else None
        typed = annotate(result, infer_expr_types(result, context).types)
        assert isinstance(typed, Function)
        func = typed


def _calls_globals(func: Function) -> bool:
    """Whether `func` refers to a global function (which its typing needs the module for)."""
    return any(
        isinstance(node, GlobalVar) or (isinstance(node, Call) and isinstance(node.op, GlobalVar))
        for node in post_order_exprs(func)
    )


@dataclass(frozen=True)
class CombineParallelDense(Pass):
    """Combine groups of at least `min_num_branches` products (`nn.dense`, `nn.matmul`) of one
    value, with the elementwise operators after them: `to_batch=True` stacks them into one
    `nn.batch_matmul`, `False` concatenates their weights into one wider product, None (the
    default) chooses per group by measured cost (`combine_cost`), leaving a group alone when
    combining does not pay."""

    min_num_branches: int = 3
    to_batch: bool | None = None
    target: Target | None = None  # what the cost model measures on (None: this machine)
    jobs: int | None = None  # processes compiling its candidates (None: the usable cores)
    name: ClassVar[str] = "combine_parallel_dense"

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        if self.min_num_branches < 2:
            raise UserError(
                f"min_num_branches is {self.min_num_branches}; a group has at least 2 branches",
                rule="combine_parallel_dense.min_num_branches",
            )
        choose = ctx.config.get(STRATEGY_CHOOSER)
        if choose is None and self.to_batch is None:
            from tessel.graph.passes.combine_cost import measured_chooser

            choose = measured_chooser(ctx, self.target, self.jobs)
        return rewrite_functions(
            mod,
            lambda _, func: combine(func, self.min_num_branches, self.to_batch, choose, mod),
        )


__all__ = ["BATCH", "CONCAT", "SEPARATE", "STRATEGY_CHOOSER", "CombineParallelDense", "combine"]
