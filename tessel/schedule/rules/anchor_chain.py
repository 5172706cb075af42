"""The default schedule's rule for a kernel of several anchors in a chain (multi-anchor fusion:
attention's QK^T -> softmax -> PV, an MLP's dense -> relu -> dense, a chain of convolutions):
the anchors are scheduled together, so that what the first computes is read by the second
while in cache.

Products: the last product's rows are split into blocks of R rows (with its batch loops, the
kernel's parallel loop); every block of the chain between the first anchor and the last is
computed under that loop (compute_at, consumers first), for the R rows the last anchor's block
reads. The intermediates then live one row block at a time: R x S scores of attention (R = 32,
S = 128: 16 KiB, in L1) instead of the whole [heads, S, S] tensor between two kernels. Under
the shared loop each GEMM gets the register tile of the GEMM rule (tessel.schedule.rules.gemm),
without its own parallel loop, and each reduction the rule of row reductions (vectors of
partial results); the other blocks are vectorized along their last loop. Operands the GEMM rule
packs are packed first, at the root, once for all row blocks.

Convolutions (channel-blocked, as AlterOpLayout leaves them): the last convolution's output
rows are split into blocks (with the batch, the parallel loop), every block between the first
convolution and the last is computed per row block with the rows its windows need (the halo,
which neighbouring blocks compute again; each parallel iteration gets its own intermediates,
tessel.transform.plan_buffer_allocation), and each convolution gets the blocked-conv rule's
register tile (tessel.schedule.rules.conv_nchwc) under the shared loop. The halo's bounds keep
the tile's write-back from moving under the tile, so those accumulators stay in memory: on
this machine fused conv chains are slower than apart, and the cost model does not fuse them.

Whether a chain is fused at all is the graph's decision (FuseOps' `max_anchors` and its cost
model, tessel.graph.passes.fuse_cost); this rule only schedules the kernels it is given. The
rule is a plan (`plan_anchor_chain`: AnchorChainPlan) and its application (`apply_anchor_chain`,
which reports the steps the schedule refused: a refusal costs speed, never correctness)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from tessel.ir.target import Target
from tessel.schedule import BlockRV, LoopRV, Schedule, ScheduleError
from tessel.schedule.primitives.block_queries import mentions_var
from tessel.schedule.rules.conv_nchwc import (
    ConvNCHWcPlan,
    match_conv_nchwc,
    plan_conv_nchwc,
    tile_conv_nchwc,
)
from tessel.schedule.rules.gemm import (
    PREFETCH_BYTES,
    Gemm,
    GemmPlan,
    OperandPacking,
    accumulator_rows,
    apply_packing,
    match_gemm,
    plan_gemm,
    row_tile,
    tile_gemm,
)
from tessel.schedule.rules.plan import Applied, recording_refusals, refuse, rule_target
from tessel.schedule.rules.reduction import match_row_reduction, vectorize_reduction
from tessel.schedule.rules.steps import is_plain_nest, parallel_fused, try_step
from tessel.schedule.state import block_names
from tessel.tir.block import Block, IterVarType

# The widest intermediate row block the chain keeps: half of a 48 KiB L1 data cache, so that the
# next anchor's operand tiles fit beside it.
BLOCK_BYTES = 24 * 1024
# Row blocks are multiples of the GEMM rule's row tile, at most this many rows.
MAX_BLOCK_ROWS = 64
# A conv chain's row block keeps every intermediate's rows (all channels) within this much of
# the L2 cache, counting HALO_ROWS more rows for the windows.
CONV_BLOCK_BYTES = 256 * 1024
HALO_ROWS = 2


def gemm_chain(sch: Schedule) -> list[str]:
    """The GEMM-like blocks (in plain nests) of which the last reads, through the blocks between
    them, what the first writes; empty when the function has no such chain."""
    return _chain(sch, _is_gemm)


def conv_chain(sch: Schedule) -> list[str]:
    """The channel-blocked convolutions (in plain nests) of which the last reads, through the
    blocks between them (activations, zero padding), what the first writes; empty when the
    function has no such chain."""
    return _chain(sch, _is_conv)


def _chain(sch: Schedule, is_anchor: Callable[[Schedule, str], bool]) -> list[str]:
    """The anchors (by `is_anchor`) that read, through other blocks, what the first writes,
    with the first; empty unless there are two."""
    names = [n for n in block_names(sch.func) if n != "root"]
    anchors = [n for n in names if is_anchor(sch, n)]
    if len(anchors) < 2:
        return []
    feeds = _dependents(sch, names, anchors[0])
    chain = [a for a in anchors if a == anchors[0] or a in feeds]
    return chain if len(chain) >= 2 else []


def chain_operands(sch: Schedule, chain: list[str]) -> set[str]:
    """The data-parallel blocks the chain's anchors read directly (softmax's normalisation, a
    relu between two dense layers): kept as blocks, since inlined into a GEMM they would be
    recomputed for every column tile."""
    if not chain:
        return set()
    anchors = {n: sch.block(sch.get_block(n)).block for n in chain}
    kept = set()
    for name in block_names(sch.func):
        if name == "root" or name in anchors:
            continue
        block = sch.block(sch.get_block(name)).block
        written = {w.buffer.name for w in block.writes}
        if any(r.buffer.name in written for a in anchors.values() for r in a.reads):
            kept.add(name)
    return kept


@dataclass(frozen=True, slots=True)
class AnchorChainPlan:
    """The anchor-chain rule's choices for a kernel: the `anchors` (GEMMs, or channel-blocked
    convolutions when `conv`), the `members` computed per row block (the first anchor and the
    blocks up to the last), `block_rows` rows of the last anchor per row block (the kernel's
    parallel loop), the anchors' operand packings (GEMMs), and `tiles`: the register tiles the
    anchors get, each planned once it is under the shared loop (from its loops there), so
    the plan that `apply_anchor_chain` reports has them and the one `plan_anchor_chain` makes
    has none."""

    block: str
    anchors: tuple[str, ...]
    members: tuple[str, ...]
    block_rows: int
    conv: bool = False
    packings: tuple[OperandPacking | None, ...] = ()
    tiles: tuple[GemmPlan | ConvNCHWcPlan, ...] = ()


def plan_anchor_chain(
    sch: Schedule, chain: list[str], target: Target | str | None = None
) -> AnchorChainPlan:
    """The anchor-chain rule's plan for the `chain` (gemm_chain or conv_chain) on `target`
    (None: this machine): its members and row blocks, read from the schedule."""
    cpu = rule_target(target)
    members = _members(sch, chain)
    last = sch.block(sch.get_block(chain[-1])).block
    if _is_conv(sch, chain[-1]):
        height = getattr(last.iter_vars[2].dom.extent, "value", 0)
        rows = conv_block_rows(height, _row_bytes(sch, members))
        return AnchorChainPlan(chain[-1], tuple(chain), tuple(members), rows, conv=True)
    packings = []
    for name in chain:
        plan = plan_gemm(sch.block(sch.get_block(name)).block, cpu)
        assert plan is not None
        packings.append(plan.packing)
    last_gemm = match_gemm(last)
    assert last_gemm is not None
    rows = _extent(last, last_gemm.i)
    block_rows = _block_rows(sch, members, rows, accumulator_rows(cpu))
    return AnchorChainPlan(
        chain[-1], tuple(chain), tuple(members), block_rows, packings=tuple(packings)
    )


def apply_anchor_chain(
    sch: Schedule, plan: AnchorChainPlan, target: Target | str | None = None
) -> Applied:
    """Apply `plan`: the chain's blocks under the last anchor's row blocks, each anchor with
    its register tile for `target` (None: this machine); the blocks scheduled are empty if
    the last anchor could not be split. The plan reported has the tiles chosen."""
    cpu = rule_target(target)
    tiles: list[GemmPlan | ConvNCHWcPlan] = []
    with recording_refusals() as refused:
        if plan.conv:
            blocks = _schedule_conv_chain(sch, plan, cpu, tiles)
        else:
            blocks = _schedule_gemm_chain(sch, plan, cpu, tiles)
    return Applied(replace(plan, tiles=tuple(tiles)), frozenset(blocks), tuple(refused))


def schedule_anchor_chain(
    sch: Schedule, chain: list[str], target: Target | str | None = None
) -> Applied:
    """Plan and apply the anchor-chain rule to `chain`."""
    return apply_anchor_chain(sch, plan_anchor_chain(sch, chain, target), target)


def _schedule_gemm_chain(
    sch: Schedule, plan: AnchorChainPlan, cpu: Target, tiles: list[GemmPlan | ConvNCHWcPlan]
) -> set[str]:
    """The GEMM chain's blocks under (batch, row block) of the last GEMM, after the anchors'
    operands are packed at the root (once for all row blocks)."""
    for name, packing in zip(plan.anchors, plan.packings, strict=True):
        apply_packing(sch, sch.get_block(name), packing)
    before = set(block_names(sch.func))
    last = sch.get_block(plan.anchors[-1])
    *batch, i, j, k = sch.get_loops(last)
    split = try_step(lambda: sch.split(i, [None, plan.block_rows]))
    if split is False:
        return set()
    i_o, i_i = split
    moved = [n for n in reversed(plan.members) if _compute_at(sch, sch.get_block(n), i_o)]
    shared = len(batch) + 1
    done = {plan.anchors[-1]} | set(moved)
    for name in moved:
        done |= _schedule_member(sch, name, shared, cpu, tiles)
    last_plan = _tile_in_chain(sch.block(last).block, cpu, plan.block_rows)
    tiles.append(last_plan)
    done |= tile_gemm(sch, last, [], (i_i, j, k), last_plan)
    parallel_fused(sch, [*batch, i_o])
    return done | (set(block_names(sch.func)) - before)


def _tile_in_chain(block: Block, cpu: Target, rows: int) -> GemmPlan:
    """The GEMM rule's tile for an anchor under the chain's shared loop, over `rows` rows:
    nothing packed (the chain packs at the root) or padded, no loop of its own in parallel."""
    plan = plan_gemm(block, cpu)
    assert plan is not None
    tile = row_tile(rows, accumulator_rows(cpu))
    return replace(
        plan,
        rows=tile,
        packing=None,
        padding=(),
        prefetch_bytes=PREFETCH_BYTES if tile == 1 else 0,
        parallel=False,
    )


def _schedule_conv_chain(
    sch: Schedule, plan: AnchorChainPlan, cpu: Target, tiles: list[GemmPlan | ConvNCHWcPlan]
) -> set[str]:
    """The conv chain's blocks under (batch, row block) of the last convolution: each row block
    computes the rows of every intermediate it reads (with the rows of the windows' halo, which
    neighbouring blocks compute again), each convolution tiled by the blocked-conv rule."""
    before = set(block_names(sch.func))
    last = sch.get_block(plan.anchors[-1])
    n, oc, oh, ow, ocb, *reductions = sch.get_loops(last)
    try:
        oh_o, oh_i = sch.split(oh, [None, plan.block_rows])
        sch.reorder(oh_o, oc)
    except ScheduleError as error:
        refuse(error)
        return set()
    moved = [m for m in reversed(plan.members) if _compute_at(sch, sch.get_block(m), oh_o, True)]
    done = {plan.anchors[-1]} | set(moved)
    for name in moved:
        block = sch.get_block(name)
        own = sch.get_loops(block)[2:]
        if match_conv_nchwc(sch.block(block).block) and len(own) >= 7:
            spatial = (own[1], own[2], own[3], own[4])
            tile = _conv_tile_in_chain(sch, block, own[2], cpu)
            tiles.append(tile)
            done |= tile_conv_nchwc(sch, block, [own[0]], spatial, own[5:], tile)
        elif own:
            try_step(lambda own=own: sch.vectorize(own[-1]))
    tile = _conv_tile_in_chain(sch, last, oh_i, cpu)
    tiles.append(tile)
    done |= tile_conv_nchwc(sch, last, [], (oc, oh_i, ow, ocb), reductions, tile)
    parallel_fused(sch, [n, oh_o])
    return done | (set(block_names(sch.func)) - before)


def _conv_tile_in_chain(sch: Schedule, block: BlockRV, rows: LoopRV, cpu: Target) -> ConvNCHWcPlan:
    """The blocked-conv rule's tile for a convolution under the chain's shared loop, over the
    rows of its loop `rows` there, without a parallel loop of its own."""
    height = getattr(sch.loop(rows).extent, "value", 1)
    plan = plan_conv_nchwc(sch.block(block).block, cpu, height=height)
    assert plan is not None
    return replace(plan, parallel=False)


def _row_bytes(sch: Schedule, members: list[str]) -> int:
    """Bytes of one output row of every intermediate the members write (all channels)."""
    total = 0
    for name in members:
        buffer = sch.block(sch.get_block(name)).block.writes[0].buffer
        extents = [getattr(d, "value", 1) for d in buffer.shape]
        if len(extents) == 5:  # [n, c_outer, h, w, c_inner]
            total += extents[1] * extents[3] * extents[4] * buffer.dtype.bits // 8
    return total


def conv_block_rows(height: int, row_bytes: int) -> int:
    """Output rows per block of a conv chain: the most rows dividing `height`, leaving at
    least two blocks, whose intermediates (with a halo of HALO_ROWS) fit CONV_BLOCK_BYTES;
    the fewest rows when none fits."""
    divisors = [r for r in range(1, height // 2 + 1) if height % r == 0]
    if not divisors:
        return max(1, height)
    fitting = [r for r in divisors if (r + HALO_ROWS) * row_bytes <= CONV_BLOCK_BYTES]
    return max(fitting) if fitting else min(divisors)


def _is_conv(sch: Schedule, name: str) -> bool:
    block = sch.get_block(name)
    return match_conv_nchwc(sch.block(block).block) and is_plain_nest(sch, block)


def _is_gemm(sch: Schedule, name: str) -> bool:
    block = sch.get_block(name)
    return match_gemm(sch.block(block).block) is not None and is_plain_nest(sch, block)


def _members(sch: Schedule, chain: list[str]) -> list[str]:
    """The blocks from the chain's first anchor to its last, the last excluded, in program
    order: the first and every block that reads what it writes (through others) and that the
    last reads (through others)."""
    names = [n for n in block_names(sch.func) if n != "root"]
    after_first = _dependents(sch, names, chain[0])
    before_last = _producers(sch, names, chain[-1])
    return [chain[0]] + [n for n in names if n in after_first and n in before_last]


def _producers(sch: Schedule, names: list[str], last: str) -> set[str]:
    """The blocks whose writes `last` reads, directly or through others."""
    read = {r.buffer.name for r in sch.block(sch.get_block(last)).block.reads}
    found: set[str] = set()
    for name in reversed(names[: names.index(last)]):
        block = sch.block(sch.get_block(name)).block
        if any(w.buffer.name in read for w in block.writes):
            found.add(name)
            read |= {r.buffer.name for r in block.reads}
    return found


def _dependents(sch: Schedule, names: list[str], first: str) -> set[str]:
    """The blocks that read, directly or through others, what `first` writes."""
    written = {w.buffer.name for w in sch.block(sch.get_block(first)).block.writes}
    found: set[str] = set()
    for name in names[names.index(first) + 1 :]:
        block = sch.block(sch.get_block(name)).block
        if any(r.buffer.name in written for r in block.reads):
            found.add(name)
            written |= {w.buffer.name for w in block.writes}
    return found


def _extent(block: Block, var) -> int:
    extent = next(iv.dom.extent for iv in block.iter_vars if iv.var is var)
    return getattr(extent, "value", 0)


def _block_rows(sch: Schedule, members: list[str], rows: int, tile: int) -> int:
    """block_rows for the widest row of what the members write."""
    width = 1
    for name in members:
        buffer = sch.block(sch.get_block(name)).block.writes[0].buffer
        last = getattr(buffer.shape[-1], "value", 1) if buffer.shape else 1
        width = max(width, last * buffer.dtype.bits // 8)
    return block_rows(rows, width, tile)


def block_rows(rows: int, row_bytes: int, tile: int) -> int:
    """Rows per block of a product chain with `rows` rows whose widest intermediate row is
    `row_bytes`: the most (a multiple of the row `tile` dividing `rows`, up to MAX_BLOCK_ROWS)
    whose row block fits BLOCK_BYTES; the fewest such when none fits, all rows when none
    divides (`tile` when `rows` is symbolic)."""
    if rows <= 0:
        return tile
    candidates = [r for r in range(tile, min(rows, MAX_BLOCK_ROWS) + 1, tile) if rows % r == 0]
    fitting = [r for r in candidates if r * row_bytes <= BLOCK_BYTES]
    if fitting:
        return max(fitting)
    return min(candidates) if candidates else rows


def _compute_at(sch: Schedule, block: BlockRV, loop: LoopRV, unit_loops: bool = False) -> bool:
    return try_step(lambda: sch.compute_at(block, loop, unit_loops)) is not False


def _schedule_member(
    sch: Schedule, name: str, shared: int, cpu: Target, tiles: list[GemmPlan | ConvNCHWcPlan]
) -> set[str]:
    """Schedule one block moved under the shared loop by its own loops: a GEMM's register
    tile, a reduction's vectors of partial results, else its last loop vectorized."""
    block = sch.get_block(name)
    realize = sch.block(block)
    own = sch.get_loops(block)[shared:]
    gemm = match_gemm(realize.block)
    if gemm is not None:
        ijk = _gemm_loops(sch, block, gemm, own)
        if ijk is None:
            return set()
        rows = sch.loop(ijk[0]).extent.value  # type: ignore[attr-defined]  # constant loops (_gemm_loops)
        plan = _tile_in_chain(realize.block, cpu, rows)
        tiles.append(plan)
        return tile_gemm(sch, block, [], ijk, plan)
    if match_row_reduction(realize.block) is not None or _is_reduction(realize.block):
        return vectorize_reduction(sch, block, cpu.vector_bytes)
    if own:
        try_step(lambda: sch.vectorize(own[-1]))
    return set()


def _is_reduction(block: Block) -> bool:
    return any(iv.iter_type == IterVarType.COMM_REDUCE for iv in block.iter_vars)


def _gemm_loops(
    sch: Schedule, block: BlockRV, gemm: Gemm, own: list[LoopRV]
) -> tuple[LoopRV, LoopRV, LoopRV] | None:
    """The block's own loops that drive its i, j and k, the last three in that order, each
    of constant extent; None otherwise."""
    if len(own) < 3:
        return None
    realize = sch.block(block)
    values = dict(zip((iv.var for iv in realize.block.iter_vars), realize.iter_values, strict=True))
    loops = own[-3:]
    for loop, var in zip(loops, (gemm.i, gemm.j, gemm.k), strict=True):
        loop_var = sch.loop(loop).loop_var
        if not mentions_var(values[var], loop_var):
            return None
        if getattr(sch.loop(loop).extent, "value", 0) <= 0:
            return None
    return loops[0], loops[1], loops[2]


__all__ = [
    "AnchorChainPlan",
    "apply_anchor_chain",
    "block_rows",
    "chain_operands",
    "conv_block_rows",
    "conv_chain",
    "gemm_chain",
    "plan_anchor_chain",
    "schedule_anchor_chain",
]
