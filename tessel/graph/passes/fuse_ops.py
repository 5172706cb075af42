"""FuseOps: group operator calls into `Primitive=1` functions, each to become one kernel.

The grouping (post-dominator based, by pattern kind) is Relay's; see `fuse_partition`. Each
group becomes a function of the values it reads from outside (`%p0`, `%p1`, ... in the order
the group's body first reads them), called where the group's last node was:

    %0 = fn (%p0: Tensor[...], %p1: Tensor[...], Primitive=1) -> Tensor[...] {
      %1 = nn.conv2d(%p0, %p1);
      nn.relu(%1)
    };
    %0(%x, %w)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from tessel.graph.expr import Call, Expr, Function, Tuple, TupleGetItem, Var
from tessel.graph.op.device import DEVICE_OPERATORS
from tessel.graph.passes import fuse_cost
from tessel.graph.passes.fuse_partition import ChainDecision, ForwardGraph, Partition, partition
from tessel.graph.passes.rewriter import ExprRewriter, is_primitive, rewrite_functions
from tessel.ir.expr import Op
from tessel.ir.module import IRModule
from tessel.ir.node import with_changes
from tessel.ir.transform import Pass, PassContext


def _operands(expr: Expr) -> tuple[Any, ...]:
    """What a node of a fused group reads (call arguments, tuple fields, the projected tuple)."""
    if isinstance(expr, Call):
        return expr.args
    if isinstance(expr, Tuple):
        return expr.fields
    if isinstance(expr, TupleGetItem):
        return (expr.tuple_value,)
    return ()


def _with_operands(expr: Expr, operands: tuple[Any, ...]) -> Expr:
    if isinstance(expr, Call):
        return with_changes(expr, args=operands)
    if isinstance(expr, Tuple):
        return with_changes(expr, fields=operands)
    if isinstance(expr, TupleGetItem):
        return with_changes(expr, tuple_value=operands[0])
    return expr


class _GroupBuilder:
    """The body of one fused function, rebuilt from the group's original nodes; an operand
    from outside the group becomes a parameter (one per distinct outside value)."""

    def __init__(self, fuser: _Fuser, root: int) -> None:
        self.fuser, self.root = fuser, root
        self.params: list[Var] = []
        self.arguments: list[Expr] = []
        self.param_of: dict[int, Var] = {}
        self.built: dict[int, Expr] = {}

    def inside(self, operand: Any) -> bool:
        node = self.fuser.graph.index.get(id(operand)) if isinstance(operand, Expr) else None
        return node is not None and self.fuser.groups.find(node) == self.root

    def param(self, operand: Expr) -> Var:
        argument = self.fuser.rewritten(operand)
        if id(argument) not in self.param_of:
            var = Var(f"p{len(self.params)}", operand.checked_type)
            self.param_of[id(argument)] = var
            self.params.append(var)
            self.arguments.append(argument)
        return self.param_of[id(argument)]

    def body(self, root: Expr) -> Expr:
        """Walk the group depth first, operands left to right (so parameters are numbered in
        the order a recursive walk meets them), iteratively."""
        stack: list[list[Any]] = [[root, 0]]
        while stack:
            frame = stack[-1]
            node, position = frame
            operands = _operands(node)
            if position < len(operands):
                frame[1] += 1
                operand = operands[position]
                if self.inside(operand):
                    if id(operand) not in self.built:
                        stack.append([operand, 0])
                elif isinstance(operand, Expr):
                    self.param(operand)
                continue
            stack.pop()
            self.built[id(node)] = _with_operands(node, tuple(self._new(o) for o in operands))
        return self.built[id(root)]

    def _new(self, operand: Any) -> Any:
        if self.inside(operand):
            return self.built[id(operand)]
        if isinstance(operand, Expr):
            return self.param_of[id(self.fuser.rewritten(operand))]
        return operand


class _Fuser(ExprRewriter):
    """Replaces the last node of each group by a call of the group's function."""

    def __init__(self, graph: ForwardGraph, groups: Partition) -> None:
        super().__init__()
        self.graph, self.groups = graph, groups

    def enters(self, func: Function) -> bool:
        return not is_primitive(func)

    def rewritten(self, expr: Expr) -> Expr:
        return self._new(expr)

    def rewrite_node(self, old: Expr, new: Expr) -> Expr:
        node = self.graph.index.get(id(old))
        if node is None or self.groups.find(node) != node or not self._makes_function(old, node):
            return new  # outside any group, or inside one (its root's function holds it)
        builder = _GroupBuilder(self, node)
        body = builder.body(old)
        func = Function(tuple(builder.params), body, old.checked_type, {"Primitive": 1})
        return Call(func, tuple(builder.arguments))

    def _makes_function(self, old: Expr, node: int) -> bool:
        """Operator calls make a function, even alone; so does a projection of a tuple of its
        own group. A tuple, a variable or a constant on its own does not, nor does a device
        operator: a `device_copy` is a step of the executor between two devices' kernels, not a
        kernel of either (LowerTE keeps it), and an `on_device` is PlanDevices's to consume."""
        if isinstance(old, Call):
            return isinstance(old.op, Op) and old.op.name not in DEVICE_OPERATORS
        if isinstance(old, TupleGetItem):
            producer = self.graph.index.get(id(old.tuple_value))
            return producer is not None and self.groups.find(producer) == node
        return False


def fuse(
    func: Function,
    fuse_opt_level: int,
    max_depth: int,
    max_anchors: int = 1,
    chain_pays: ChainDecision | None = None,
) -> Function:
    """`func` with its operator calls grouped into Primitive functions."""
    if is_primitive(func):
        return func
    graph, groups = partition(func, fuse_opt_level, max_depth, max_anchors, chain_pays)
    result = _Fuser(graph, groups).rewrite(func)
    assert isinstance(result, Function)
    return result


# PassContext config: the most anchors per fused function, overriding the pass's own
# `max_anchors` (1 turns multi-anchor fusion off in a pipeline that has it on).
MAX_ANCHORS = "fuse_ops.max_anchors"


@dataclass(frozen=True)
class FuseOps(Pass):
    """Fuse operators into `Primitive=1` functions by their pattern kinds, as Relay does:
    elementwise/broadcast/injective chains; an out_elemwise_fusable anchor (nn.conv2d, nn.dense,
    nn.batch_matmul) with the elementwise ops after it; elementwise ops into the reduction they
    feed; injective fields into a tuple fused into its consumer (concatenate). Opaque operators
    get a function of their own. `fuse_opt_level=0` puts every operator alone; `max_depth`
    bounds the operators in one function. `max_anchors` above 1 fuses chains of anchors
    (softmax counting as one between products) into one function (the TY-NNP seed's
    multi-anchor fusion), each chain only where the cost model (`fuse_cost.chain_pays`) says
    one kernel pays when `by_cost`, else every chain."""

    fuse_opt_level: int = 2
    max_depth: int = 256
    max_anchors: int = 1
    by_cost: bool = False
    name: ClassVar[str] = "fuse_ops"

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        max_anchors = int(ctx.config.get(MAX_ANCHORS, self.max_anchors))
        decision = fuse_cost.chain_pays if self.by_cost else None
        return rewrite_functions(
            mod,
            lambda _, func: fuse(func, self.fuse_opt_level, self.max_depth, max_anchors, decision),
        )


__all__ = ["MAX_ANCHORS", "FuseOps", "fuse"]
