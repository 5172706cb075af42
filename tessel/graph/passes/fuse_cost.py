"""The cost model FuseOps decides multi-anchor fusion by: whether one kernel for a chain of
anchors (attention's QK^T -> softmax -> PV, dense -> relu -> dense) moves fewer bytes than one
kernel per anchor.

A fused chain is scheduled by row blocks of its last product (tessel.schedule.rules.
anchor_chain): per block, every anchor of the chain computes the rows the next one reads, so the
intermediates stay in cache (`saved`: each materialised intermediate is written once and read
once less from memory). The price is that each product's second operand (the weight, or K and V
per head) is read once per row block instead of once per kernel (`extra`); an operand of at most
`CACHE_BYTES` stays in cache between blocks and costs nothing. The chain is fused when the
bytes saved exceed the bytes added by `MARGIN`, and when its row blocks (times its batch) give
each thread PARALLEL_BLOCKS_PER_THREAD of them, since they are the fused kernel's only parallel
loop.

Only chains of products (dense, matmul, batch_matmul) with elementwise operators, unit reshapes
and softmax between them are fused. Convolution chains are scheduled together too (row blocks
with the windows' halo recomputed), but measured slower on this machine at every shape tried, so
the model refuses them: with the halo's bounds on the rows, the register tile's write-back
cannot be placed per tile, and the accumulators live in memory (`python
benchmarks/multi_anchor.py`, 1 thread: conv3x3 chain 64 channels at 56x56, 9.9 ms fused against
3.9 ms apart; MobileNetV2 inverted residual at 28x28, 1.42 against 0.48; every chain of a
ResNet-18, 21.0 against 9.5).

Measured on this machine (same benchmark, median ms at 1 / 2 threads): MiniLM's attention core
(12 heads, 128 tokens) 0.43 / 0.37 fused against 0.48 / 0.38 apart, which the model fuses; a
128x384 -> 1536 -> 384 MLP 3.56 / 1.78 fused against 2.41 / 1.27 apart, which it does not (its
2.3 MB weights would be read by 16 row blocks).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from tessel.graph.expr import Call
from tessel.graph.op import get_op
from tessel.graph.op.op_def import OpPattern
from tessel.graph.passes.fuse_partition import is_unit_reshape
from tessel.graph.ty import TensorType
from tessel.ir.expr import Op
from tessel.runtime.threads import default_threads
from tessel.schedule.rules.anchor_chain import block_rows
from tessel.schedule.rules.default import accumulator_rows, host_target

PRODUCTS = frozenset({"nn.dense", "nn.matmul", "nn.batch_matmul"})
# Operators a fused chain may hold between its products besides elementwise ones.
CHAIN_OPERATORS = PRODUCTS | frozenset({"nn.softmax"})
# An operand this small stays in the L2 cache while the row blocks read it again.
CACHE_BYTES = 512 * 1024
MARGIN = 2.0
# A fused chain runs its row blocks (and batches) in parallel, and nothing else: it needs this
# many per thread, else the kernels apart, parallel over their column tiles, are faster (a
# batch-2 MLP would be one row block on one core).
PARALLEL_BLOCKS_PER_THREAD = 4


def _type(expr) -> TensorType | None:
    ty = getattr(expr, "checked_type", None)
    return ty if isinstance(ty, TensorType) else None


def _bytes(ty: TensorType) -> int:
    return math.prod(int(d) for d in ty.shape) * _itemsize(ty.dtype)


def _itemsize(dtype: str) -> int:
    digits = "".join(c for c in dtype if c.isdigit())
    return max(1, int(digits or 32) // 8)


def _op_name(call: Call) -> str:
    return call.op.name if isinstance(call.op, Op) else ""


def _chains(call: Call) -> bool:
    """Whether the rule schedules `call` inside a chain: a chain operator or an elementwise one."""
    name = _op_name(call)
    if is_unit_reshape(call):
        return True
    return name in CHAIN_OPERATORS or (bool(name) and get_op(name).pattern <= OpPattern.BROADCAST)


def chain_pays(calls: Sequence[Call]) -> bool:
    """Whether the operator calls of a multi-anchor group (in dataflow order) should be one
    kernel: a chain of products with elementwise operators and softmax between them, whose
    fused schedule moves fewer bytes (see the module's note)."""
    anchors = [c for c in calls if _op_name(c) in CHAIN_OPERATORS]
    products = [c for c in anchors if _op_name(c) in PRODUCTS]
    if len(products) < 2 or anchors[0] is not products[0] or anchors[-1] is not products[-1]:
        return False
    if any(not _chains(c) for c in calls):
        return False  # convolutions, pooling, reshapes: not scheduled together
    types = [_type(c) for c in anchors]
    if any(t is None or any(not isinstance(d, int) for d in t.shape) for t in types):
        return False  # symbolic shapes: no sizes to weigh
    last = types[-1]
    assert last is not None
    rows = int(last.shape[-2]) if len(last.shape) >= 2 else 1
    batch = math.prod(int(d) for d in last.shape[:-2]) if len(last.shape) > 2 else 1
    intermediates = [t for t in types[:-1] if t is not None]
    row_bytes = max(int(t.shape[-1]) * _itemsize(t.dtype) for t in intermediates)
    blocks = rows // block_rows(rows, row_bytes, accumulator_rows(host_target()))
    if batch * blocks < PARALLEL_BLOCKS_PER_THREAD * default_threads():
        return False  # the row blocks are the fused kernel's only parallel loop
    saved = 2 * sum(_bytes(t) for t in intermediates)
    extra = 0
    for product in products:
        operand = _type(product.args[1])
        if operand is None:
            return False
        per_batch = _bytes(operand) // max(1, batch if len(operand.shape) > 2 else 1)
        if per_batch > CACHE_BYTES:
            extra += (blocks - 1) * _bytes(operand)
    return saved > MARGIN * extra


__all__ = ["CHAIN_OPERATORS", "PRODUCTS", "chain_pays"]
