"""The analysis behind FuseOps, as Relay's fusion describes it: a forward dataflow graph of one
function, its post-dominator tree, and the grouping of nodes by fusion pattern.

A node may join the group of its immediate post-dominator (the nearest node every path from it
reaches) when every node on those paths has a pattern the fusion rule allows; all the nodes on
the paths join too, so a group is convex and every consumer of a fused node is in its group.
The three phases (Relay's): 0 fuses an out_elemwise_fusable anchor (conv2d, dense) with the
elementwise ops after it and elementwise/broadcast chains (also into reductions); 1 fuses
injective ops and tuples into what follows; 2 fuses injective fields into a tuple that has
itself been fused into an injective consumer (concatenate).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from tessel.graph.expr import Call, Constant, Expr, Tuple, TupleGetItem
from tessel.graph.op import get_op
from tessel.graph.op.op_def import OpPattern
from tessel.graph.traversal import fusion_children, post_order_exprs
from tessel.graph.ty import TensorType, TupleType
from tessel.ir.expr import Op

ELEMWISE, BROADCAST, INJECTIVE = OpPattern.ELEMWISE, OpPattern.BROADCAST, OpPattern.INJECTIVE
COMM_REDUCE, ANCHOR = OpPattern.COMM_REDUCE, OpPattern.OUT_ELEMWISE_FUSABLE
TUPLE, OPAQUE = OpPattern.TUPLE, OpPattern.OPAQUE

# Operators that are opaque alone but join a chain of anchors as one (multi-anchor fusion):
# attention's softmax between QK^T and PV, along the last axis, where a row of scores is the
# unit a co-scheduled kernel computes before the next product reads it.
CHAIN_REDUCTIONS = frozenset({"nn.softmax"})

# Scalars of these dtypes are inlined into a fused function (the code generators take them as
# immediates); other constants stay arguments.
_INLINE_SCALAR_DTYPES = frozenset({"int32", "int64", "float32", "float64", "bool"})


# Sub-expressions that are nodes of the fusion graph (a Primitive function is a leaf).
graph_children = fusion_children


@dataclass
class ForwardGraph:
    """Nodes in post-order (producers first), each with its pattern and its consumers
    (`outputs`: consumer index and the pattern of that edge); `extern` marks nodes used where
    nothing may fuse (a function result, a let, a branch, a parameter)."""

    nodes: list[Expr] = field(default_factory=list)
    index: dict[int, int] = field(default_factory=dict)
    pattern: list[OpPattern] = field(default_factory=list)
    outputs: list[list[tuple[int, OpPattern]]] = field(default_factory=list)
    extern: list[bool] = field(default_factory=list)

    chain_reductions: bool = False  # CHAIN_REDUCTIONS count as anchors (multi-anchor fusion)

    @staticmethod
    def build(root: Expr, chain_reductions: bool = False) -> ForwardGraph:
        graph = ForwardGraph(chain_reductions=chain_reductions)
        for expr in post_order_exprs(root, fusion_children):
            graph.index[id(expr)] = len(graph.nodes)
            graph.nodes.append(expr)
            graph.pattern.append(OPAQUE)
            graph.outputs.append([])
            graph.extern.append(False)
        for position, expr in enumerate(graph.nodes):
            graph._link(position, expr)
        graph.extern[graph.index[id(root)]] = True
        return graph

    def _use(self, operand: Expr, consumer: int | None, pattern: OpPattern = OPAQUE) -> None:
        """Record that `consumer` reads `operand` (None: read where nothing fuses)."""
        source = self.index[id(operand)]
        if consumer is None:
            self.extern[source] = True
        else:
            self.outputs[source].append((consumer, pattern))

    def _link(self, position: int, expr: Expr) -> None:
        if isinstance(expr, Call):
            self._link_call(position, expr)
        elif isinstance(expr, Constant):
            scalar = expr.data.ndim == 0 and str(expr.data.dtype) in _INLINE_SCALAR_DTYPES
            self.pattern[position] = ELEMWISE if scalar else OPAQUE
        elif isinstance(expr, Tuple):
            self.pattern[position] = TUPLE
            for item in expr.fields:
                tensor = isinstance(item.checked_type, TensorType)
                self._use(item, position if tensor else None, INJECTIVE)
        elif isinstance(expr, TupleGetItem):
            self._link_getitem(position, expr)
        else:  # Var, Function, Let, If: opaque, and nothing fuses across their boundaries
            for child in fusion_children(expr):
                self._use(child, None)

    def _link_call(self, position: int, call: Call) -> None:
        if isinstance(call.op, Expr):  # a call of a function value
            self._use(call.op, None)
        if not isinstance(call.op, Op):
            for arg in call.args:
                if isinstance(arg, Expr):
                    self._use(arg, position)
            return
        pattern = get_op(call.op.name).pattern
        if self.chain_reductions and _chains_as_anchor(call):
            pattern = ANCHOR
        elif self.chain_reductions and is_unit_reshape(call):
            pattern = ELEMWISE  # a view: the elements keep their order (attention's [1, h, ..])
        self.pattern[position] = pattern
        result = call.checked_type
        for arg in call.args:
            edge = pattern
            if (
                edge == BROADCAST
                and isinstance(arg.checked_type, TensorType)
                and isinstance(result, TensorType)
                and arg.checked_type.shape == result.shape
            ):
                edge = ELEMWISE  # no broadcasting along this edge
            self._use(arg, position, edge)

    def _link_getitem(self, position: int, item: TupleGetItem) -> None:
        ty = item.tuple_value.checked_type
        if isinstance(ty, TupleType) and all(isinstance(f, TensorType) for f in ty.fields):
            self.pattern[position] = INJECTIVE
            self._use(item.tuple_value, position, INJECTIVE)
        else:
            self._use(item.tuple_value, None)


def _chains_as_anchor(call: Call) -> bool:
    """Whether `call` is a CHAIN_REDUCTIONS operator along its last axis."""
    if call.op.name not in CHAIN_REDUCTIONS:  # type: ignore[union-attr]  # an Op (caller checks)
        return False
    ty = call.checked_type
    axis = int(call.attrs.get("axis", -1))
    return isinstance(ty, TensorType) and len(ty.shape) > 0 and axis in (-1, len(ty.shape) - 1)


def is_unit_reshape(call: Call) -> bool:
    """Whether `call` is a reshape that only inserts or removes axes of extent 1."""
    if getattr(call.op, "name", None) != "reshape" or not call.args:
        return False
    source, result = call.args[0].checked_type, call.checked_type
    if not isinstance(source, TensorType) or not isinstance(result, TensorType):
        return False
    return [d for d in source.shape if d != 1] == [d for d in result.shape if d != 1]


@dataclass
class PostDominatorTree:
    """For each node, its immediate post-dominator (`parent`, -1 for none), its depth, and the
    strongest pattern met on the way there (`pattern`)."""

    parent: list[int]
    depth: list[int]
    pattern: list[OpPattern]

    @staticmethod
    def build(graph: ForwardGraph) -> PostDominatorTree:
        n = len(graph.nodes)
        tree = PostDominatorTree([-1] * n, [1] * n, [OPAQUE] * n)
        for node in reversed(range(n)):  # consumers come later in post-order: done first
            if graph.extern[node] or not graph.outputs[node]:
                continue
            parent, pattern = tree._common_dominator(graph.outputs[node])
            tree.parent[node] = parent
            tree.depth[node] = tree.depth[parent] + 1 if parent >= 0 else 1
            tree.pattern[node] = pattern
        return tree

    def _common_dominator(self, outputs: list[tuple[int, OpPattern]]) -> tuple[int, OpPattern]:
        parent, pattern = outputs[0][0], max(ELEMWISE, outputs[0][1])
        for consumer, edge in outputs[1:]:
            parent, pattern = self._common_ancestor(parent, consumer, pattern)
            pattern = max(pattern, edge)
        return parent, pattern

    def _common_ancestor(self, a: int, b: int, pattern: OpPattern) -> tuple[int, OpPattern]:
        """The lowest common ancestor of `a` and `b`, with the patterns climbed through."""
        while a != b:
            if a < 0 or b < 0:
                return -1, pattern
            if self.depth[a] >= self.depth[b]:
                pattern, a = max(pattern, self.pattern[a]), self.parent[a]
            else:
                pattern, b = max(pattern, self.pattern[b]), self.parent[b]
        return a, pattern


Condition = Callable[[OpPattern, bool], bool]  # (pattern on the path, is it the sink)


class Partition:
    """Union-find groups over the graph's nodes; `find(node)` is the group's root, its last
    (post-dominating) node."""

    def __init__(
        self,
        graph: ForwardGraph,
        max_depth: int,
        max_anchors: int = 1,
        unchained: frozenset[int] = frozenset(),
    ) -> None:
        n = len(graph.nodes)
        self.graph, self.max_depth, self.max_anchors = graph, max_depth, max_anchors
        self.unchained = unchained  # anchors the cost model keeps out of chains
        self.tree = PostDominatorTree.build(graph)
        self.group = list(range(n))
        self.pattern = list(graph.pattern)  # a node's own group pattern, as Relay keeps it
        self.anchored = [p == ANCHOR for p in graph.pattern]
        self.anchors = [int(p == ANCHOR) for p in graph.pattern]  # per group root
        self.size = [1] * n

    def find(self, node: int) -> int:
        root = node
        while self.group[root] != root:
            root = self.group[root]
        while self.group[node] != root:
            self.group[node], node = root, self.group[node]
        return root

    def run(self, phases: int) -> Partition:
        for phase in range(phases):
            for node in range(len(self.graph.nodes)):
                self._try_fuse(node, phase)
        return self

    # -- the fusion rules -------------------------------------------------------------------

    def _try_fuse(self, node: int, phase: int) -> None:
        parent = self.tree.parent[node]
        if parent < 0 or self.pattern[node] == OPAQUE:
            return
        if self._size_with(node, parent) > self.max_depth:
            return
        if phase == 2:
            self._fuse_into_tuple(node, parent)
        elif self.find(node) != self.find(parent) and self.pattern[parent] != TUPLE:
            self._fuse_by_kind(node, parent, phase)

    def _fuse_by_kind(self, node: int, parent: int, phase: int) -> None:
        kind, path = self.pattern[node], self.tree.pattern[node]
        if kind == ANCHOR:
            if phase == 0 and path == ELEMWISE:
                self._fuse_if(node, parent, lambda k, sink: k <= BROADCAST)
            elif phase == 0 and path == ANCHOR and self._may_chain(node, parent):
                # multi-anchor: this anchor group feeds the next anchor, which it joins
                self._fuse_if(
                    node, parent, lambda k, sink: k <= BROADCAST or (sink and k == ANCHOR)
                )
        elif kind <= BROADCAST:
            if path <= INJECTIVE or path == COMM_REDUCE:
                # side branches may be injective; the sink may also be a reduction or an anchor
                self._fuse_if(node, parent, lambda k, sink: k <= (ANCHOR if sink else INJECTIVE))
        elif kind in (INJECTIVE, TUPLE) and phase == 1:  # after phase 0, so anchors fuse first
            self._fuse_if(node, parent, lambda k, sink: k <= INJECTIVE)

    def _may_chain(self, node: int, parent: int) -> bool:
        """Whether `node`'s anchor group may join the anchor `parent` (max_anchors, and the
        chain decision)."""
        if self.max_anchors <= 1 or self.graph.pattern[parent] != ANCHOR:
            return False
        if parent in self.unchained:
            return False
        return self.anchors[self.find(node)] + self.anchors[self.find(parent)] <= self.max_anchors

    def _fuse_into_tuple(self, node: int, parent: int) -> None:
        root_pattern = self.pattern[self.find(parent)]
        if self.pattern[node] > INJECTIVE or root_pattern == TUPLE:
            return
        if self.pattern[parent] == TUPLE and root_pattern <= INJECTIVE:
            self._fuse_if(node, parent, lambda k, sink: k <= INJECTIVE)

    def _fuse_if(self, src: int, sink: int, condition: Condition) -> None:
        if self._paths_satisfy(src, sink, condition):
            self._commit(src, sink)

    # -- paths from a node to its post-dominator ----------------------------------------------

    def _between(self, src: int, sink: int) -> list[int]:
        """Every node on a path from `src` to `sink`, `sink` included and `src` not."""
        seen: set[int] = set()
        stack = [consumer for consumer, _ in self.graph.outputs[src]]
        while stack:
            node = stack.pop()
            if node in seen:
                continue
            seen.add(node)
            if node != sink:
                stack.extend(consumer for consumer, _ in self.graph.outputs[node])
        return sorted(seen)

    def _paths_satisfy(self, src: int, sink: int, condition: Condition) -> bool:
        return all(
            condition(self.pattern[self.find(node)], node == sink)
            for node in self._between(src, sink)
        )

    def _size_with(self, src: int, sink: int) -> int:
        """How many nodes the sink's group would hold with `src` and its paths fused in."""
        roots = {self.find(src)} | {self.find(n) for n in self._between(src, sink)}
        return sum(self.size[r] for r in roots)

    def _commit(self, src: int, sink: int) -> None:
        target = self.find(sink)
        for node in [src, *self._between(src, sink)]:
            self._merge(node, target)

    def _merge(self, child: int, parent: int) -> None:
        child, parent = self.find(child), self.find(parent)
        if child == parent:
            return
        self.size[parent] += self.size[child]
        self.anchors[parent] += self.anchors[child]
        self.group[child] = parent
        if self.anchored[child]:  # the anchor's pattern becomes the group's
            self.anchored[parent] = True
            self.pattern[parent] = max(self.pattern[child], self.pattern[parent])


ChainDecision = Callable[[list[Call]], bool]


def partition(
    root: Expr,
    fuse_opt_level: int,
    max_depth: int,
    max_anchors: int = 1,
    chain_pays: ChainDecision | None = None,
) -> tuple[ForwardGraph, Partition]:
    """The fusion groups of the dataflow graph under `root` (a function). With `max_anchors`
    above 1, each group of several anchors is kept only where `chain_pays` (the cost model)
    says one kernel for its calls is worth it; the anchors of a refused group are partitioned
    again, each on its own."""
    graph = ForwardGraph.build(root, chain_reductions=max_anchors > 1)
    phases = 3 if fuse_opt_level >= 1 else 0
    unchained: frozenset[int] = frozenset()
    while True:
        groups = Partition(graph, max_depth, max_anchors, unchained).run(phases)
        if max_anchors <= 1 or chain_pays is None:
            return graph, groups
        refused = _refused_anchors(graph, groups, chain_pays)
        if not refused - unchained:
            return graph, groups
        unchained |= refused


def _refused_anchors(graph: ForwardGraph, groups: Partition, chain_pays: ChainDecision) -> set[int]:
    """The anchors, after the first of each, of the multi-anchor groups `chain_pays` refuses."""
    members: dict[int, list[int]] = {}
    for node in range(len(graph.nodes)):
        members.setdefault(groups.find(node), []).append(node)
    refused: set[int] = set()
    for root, nodes in members.items():
        if groups.anchors[root] <= 1:
            continue
        calls = [graph.nodes[n] for n in nodes if isinstance(graph.nodes[n], Call)]
        if not chain_pays(calls):  # type: ignore[arg-type]  # filtered to calls
            anchors = [n for n in nodes if graph.pattern[n] == ANCHOR]
            refused |= set(anchors[1:])
    return refused


__all__ = ["ForwardGraph", "Partition", "PostDominatorTree", "graph_children", "partition"]
