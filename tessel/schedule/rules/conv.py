"""The default schedule's rule for NCHW convolutions (topi.nn.conv2d_nchw, depthwise_conv2d_nchw).

conv2d: a block `C[n, f, y, x] += I[..] * W[f, c, r, s]` with reductions (c, r, s) gets the
direct-convolution micro-kernel of TVM's x86 NCHWc schedules, kept in NCHW at the graph: the weight
is packed (cache_read + transform_layout) to W'[f // F, c, r, s, f % F], F the largest power of two
up to the rule's channel tile (32 where 32 vector registers hold 8 x 32 accumulators, else 16)
dividing the channels; f is split by F and x by the largest of X_TILES dividing the width, or with a
tail where that is clearly cheaper (conv_nchwc.column_tile); loops (n, f_o, y, x_o, c, r, s, x_i,
f_i) with f_i vectorized (one contiguous vector of W' times a broadcast input element; two,
unrolled, for F = 32) and x_i unrolled; the accumulators are a scope-local tile laid out [x, f]
(cache_write + transform_layout) that the C compiler keeps in registers, stored once per tile by a
write-back block into which the epilogue (bias, batch norm, relu, a residual add) is inlined; n,
f_o, y fused and run in parallel. A weight that is a model constant is packed once at compile time
(tessel.graph.passes.layout_rewrite). The f-vectorized tile runs at 3x the speed of the x-vectorized
one it replaced (64->64 3x3 at 28x28, one thread); 32 channels rather than 16 took ResNet's 3x3
convs another 10-25%.

Depthwise conv2d (groups = channels, the graph's depthwise convolutions): the padding block
writes the input in channel blocks [n, c // F, h, w, c % F], so F output channels read one
contiguous vector and the conv2d tile applies unchanged (a 7x7 map has rows too short to be the
vector: 576 channels at 7x7 went from 0.19 to 0.045 ms). A grouped conv2d whose groups have 8
output channels or more (RegNet's group width 8, ResNeXt's) takes the conv2d tile too, with a
channel tile inside one group, so the tile's channels read the same input element, broadcast
(RegNetY-400MF's 3x3 grouped convs at one thread: 4-7x slower than onnxruntime before, 2.4-3x
faster after). Other grouped convs, and depthwise ones with fewer than 4 channels in a block:
the vector runs along the output row (whole up to 16
columns, then chunks of 16 with a masked tail), the channels' accumulators unrolled in a local
tile with the epilogue in its write-back; with stride 2 the padded input is laid out by column
parity [.., h, w % 2, w // 2], so a vector reads contiguous columns. TOPI's
depthwise_conv2d_nchw (reductions r, s) with stride 1 and rows of 16 columns or more vectorizes
the output row, 4-row tiles accumulating in registers and each channel's padding computed in
its own parallel iteration (32 channels at 112x112: 0.29 to 0.087 ms; PyTorch 0.16); on
shorter rows it takes the channel-blocked tile when its channel multiplier is 1 (32 channels at
112x112 had gone from 0.43 to 0.28 ms that way); else the reductions go outside x, which is
vectorized, and n, c, y run in parallel. The zero-padding block
feeding a convolution is kept as its own loop nest (`conv_padding`): inlined, its bounds check
makes the vector loop fall back to scalar code.

The rule is a plan (`plan_conv`: ConvTilePlan here, or one of the row-vectorized variants of
tessel.schedule.rules.conv_rows: GroupedRowsPlan, DepthwiseRowsPlan, DepthwiseLoopsPlan) and its
application (`apply_conv`, which reports the steps the schedule refused: a refusal costs speed,
never correctness)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from tessel.ir.expr import Add, PrimExpr, Var
from tessel.ir.functor import post_order
from tessel.ir.target import Target
from tessel.schedule import BlockRV, Schedule, ScheduleError
from tessel.schedule.rules.conv_nchwc import X_TILES, column_tile, match_conv_nchwc
from tessel.schedule.rules.conv_rows import (
    DepthwiseLoopsPlan,
    DepthwiseRowsPlan,
    GroupedRowsPlan,
    channel_tile,
    data_load,
    depthwise_rows_plan,
    divisor_tile,
    grouped_rows_plan,
    schedule_depthwise_loops,
    schedule_depthwise_rows,
    schedule_grouped_rows,
)
from tessel.schedule.rules.gemm import accumulator_rows, gemm_columns
from tessel.schedule.rules.plan import (
    LAYOUT_REWRITE_PREPROC,
    Applied,
    recording_refusals,
    refuse,
    rule_target,
    vector_lanes,
)
from tessel.schedule.rules.steps import (
    consumer_under,
    is_accumulation,
    move_write_back,
    parallel_fused,
    plan_and_apply,
    try_step,
    uncast,
    vectorized_init,
)
from tessel.schedule.state import block_names
from tessel.tir.block import Block, IterVarType
from tessel.tir.buffer import BufferLoad
from tessel.tir.index_map import IndexMap
from tessel.tir.stmt import BufferStore

# Grouped convs with at least this many output channels per group (RegNet's 8, ResNeXt's 4 x 32
# and up) take the conv2d micro-kernel with a tile of a group's channels (_group_channel_tile).
GROUP_VECTOR_MIN = 8


@dataclass(frozen=True, slots=True)
class Conv:
    """What the rule needs to know about a conv block: whether it is depthwise (two reduction
    iterators r, s) rather than conv2d (three: c, r, s), and whether a conv2d is grouped (the
    input channel it reads depends on the output channel f)."""

    depthwise: bool
    grouped: bool = False


def match_conv(block: Block) -> Conv | None:
    """The shape of `block` if it is `C[n, f, y, x] += I[..] * W[..]` over four spatial and
    (for conv2d, with W read at [f, c, r, s]) three or (depthwise) two reduction iterators."""
    spatial = [iv.var for iv in block.iter_vars if iv.iter_type == IterVarType.DATA_PAR]
    reduce = [iv.var for iv in block.iter_vars if iv.iter_type == IterVarType.COMM_REDUCE]
    if block.init is None or len(spatial) != 4 or len(reduce) not in (2, 3):
        return None
    store = block.body
    if len(spatial) + len(reduce) != len(block.iter_vars) or not isinstance(store, BufferStore):
        return None
    outputs = zip(store.indices, spatial, strict=True)
    if not all(a is b for a, b in outputs) or not is_accumulation(store):
        return None
    if len(reduce) == 2:
        return Conv(depthwise=True)
    if not _reads_weight(store, (spatial[1], *reduce)):
        return None
    return Conv(depthwise=False, grouped=_data_depends_on(store, spatial[1]))


def _data_depends_on(store: BufferStore, f: Var) -> bool:
    """Whether the product's data operand (the factor that is not the weight) mentions `f`."""
    product = uncast(store.value.b)  # type: ignore[attr-defined]  # an Add (is_accumulation)
    data = uncast(product.a)
    return not isinstance(data, BufferLoad) or any(
        node is f for index in data.indices for node in post_order(index)
    )


def _reads_weight(store: BufferStore, indices: tuple[Var, ...]) -> bool:
    """Whether one factor of the update's product is a load at exactly W[f, c, r, s]."""
    product = uncast(store.value.b)  # type: ignore[attr-defined]  # an Add (is_accumulation)
    return any(
        isinstance(operand, BufferLoad)
        and len(operand.indices) == len(indices)
        and all(a is b for a, b in zip(operand.indices, indices, strict=True))
        for operand in (uncast(product.a), uncast(product.b))
    )


def conv_padding(sch: Schedule) -> set[str]:
    """The names of the blocks that produce a convolution's input (its zero padding): kept as
    their own loop nests, so the convolution reads them without bounds checks and vectorizes."""
    names: set[str] = set()
    for name in block_names(sch.func):
        block = sch.get_block(name)
        conv = sch.block(block).block
        if name == "root" or (match_conv(conv) is None and not match_conv_nchwc(conv)):
            continue
        producers = try_step(lambda block=block: sch.get_producers(block)) or []
        names |= {producer.name for producer in producers}
    return names


@dataclass(frozen=True, slots=True)
class ConvTilePlan:
    """The conv2d micro-kernel for one block: `channels` output channels (vectors of `lanes`)
    by `columns` output columns of accumulators; the weight packed to [f // channels, c, r, s,
    f % channels] (`pack_weight`); for a depthwise conv, the input laid out in blocks of
    `data_blocks` channels first (0: not), and `fallback` applied instead if the schedule
    refuses that layout."""

    block: str
    channels: int
    columns: int
    lanes: int
    pack_weight: bool = True
    data_blocks: int = 0
    fallback: GroupedRowsPlan | DepthwiseLoopsPlan | None = None


ConvPlan = ConvTilePlan | GroupedRowsPlan | DepthwiseRowsPlan | DepthwiseLoopsPlan


def plan_conv(block: Block, target: Target | str | None = None) -> ConvPlan | None:
    """The NCHW conv rule's plan for `block` on `target` (None: this machine), or None if
    `block` is not a convolution (match_conv)."""
    conv = match_conv(block)
    if conv is None:
        return None
    cpu = rule_target(target)
    bits = block.writes[0].buffer.dtype.bits if block.writes else 32
    lanes = vector_lanes(cpu, bits)
    max_columns, max_channels = accumulator_rows(cpu), gemm_columns(cpu, bits)
    name = block.name_hint
    extents = [getattr(iv.dom.extent, "value", None) for iv in block.iter_vars]
    if conv.grouped:
        group_tile = _group_channel_tile(block, extents, max_channels)
        if group_tile is not None:
            return _tile_plan(block, extents, group_tile, max_columns, lanes)
    if not (conv.depthwise or conv.grouped):
        channels = channel_tile(extents[1], max_channels)
        return _tile_plan(block, extents, channels, max_columns, lanes)
    if conv.depthwise:
        rows = depthwise_rows_plan(block, extents, lanes)
        if rows is not None:
            return rows
    fallback: GroupedRowsPlan | DepthwiseLoopsPlan
    if conv.depthwise:
        fallback = DepthwiseLoopsPlan(name)
    else:
        fallback = grouped_rows_plan(block, extents, lanes)
    data_blocks = _depthwise_data_blocks(block, lanes)
    if data_blocks is None:
        return fallback
    tile = _tile_plan(block, extents, data_blocks, max_columns, lanes)
    return replace(tile, data_blocks=data_blocks, fallback=fallback)


def _tile_plan(
    block: Block, extents: list[int | None], channels: int, max_columns: int, lanes: int
) -> ConvTilePlan:
    """The conv2d micro-kernel of `channels` output channels for `block`: its columns by the
    cost of the row's tiles (conv_nchwc.column_tile)."""
    width = extents[3] or 1  # a symbolic row: tiles of 1
    vectors = max(1, channels // lanes)  # accumulator vectors a column
    columns = column_tile(width, tuple(t for t in X_TILES if t <= max_columns), vectors)
    return ConvTilePlan(block.name_hint, channels, columns, lanes, _weight_read(block) is not None)


def apply_conv(sch: Schedule, block: BlockRV, plan: ConvPlan) -> Applied:
    """Apply `plan` to the conv `block` (in the plain nest TOPI builds); the blocks scheduled
    are empty if the schedule refused the tiling."""
    with recording_refusals() as refused:
        blocks = _apply(sch, block, plan)
    return Applied(plan, frozenset(blocks), tuple(refused))


def _apply(sch: Schedule, block: BlockRV, plan: ConvPlan) -> set[str]:
    if isinstance(plan, DepthwiseRowsPlan):
        return schedule_depthwise_rows(sch, block, plan)
    if isinstance(plan, GroupedRowsPlan):
        return schedule_grouped_rows(sch, block, plan)
    if isinstance(plan, DepthwiseLoopsPlan):
        return schedule_depthwise_loops(sch, block)
    blocked: set[str] = set()
    if plan.data_blocks:
        layout = _block_depthwise_data(sch, block, plan.data_blocks)
        if layout is None:
            assert plan.fallback is not None
            return _apply(sch, block, plan.fallback)
        blocked = layout
    return _schedule_conv2d(sch, block, plan) | blocked


def schedule_conv(sch: Schedule, name: str, target: Target | str | None = None) -> Applied | None:
    """Plan and apply the NCHW conv rule to the block `name`; None (nothing changed) if it is
    not a convolution or its loops are not the plain nest TOPI builds."""
    return plan_and_apply(sch, name, lambda block: plan_conv(block, target), apply_conv)


def _schedule_conv2d(sch: Schedule, block: BlockRV, plan: ConvTilePlan) -> set[str]:
    # TOPI's depthwise_conv2d_nchw has no input-channel reduction: the nest is (n, f, y, x, r, s).
    name = block.name
    loops = sch.get_loops(block)
    n, f, y, x = loops[:4]
    reductions = loops[4:]
    packed = _pack_weight(sch, block, plan.channels) if plan.pack_weight else None
    try:
        f_o, f_i = sch.split(f, [None, plan.channels])
        x, x_i = sch.split(x, [None, plan.columns])
        sch.reorder(f_o, y, x, *reductions, x_i, f_i)
    except ScheduleError as error:
        refuse(error)
        return {packed} if packed else set()
    # The tile's accumulators in a scope-local buffer laid out [x, f]: allocated per tile
    # (PlanBufferAllocation), a few vectors the C compiler keeps in registers, stored to the
    # output once per tile instead of loaded and stored at every step of the reduction.
    write_back = try_step(lambda: sch.cache_write(block, 0, "local"))
    epilogue = None
    if isinstance(write_back, BlockRV):
        try_step(
            lambda: sch.transform_layout(
                block, ("write", 0), IndexMap.from_func(lambda b, o, h, w: (b, h, w, o), ndim=4)
            )
        )
        if move_write_back(sch, write_back, x):
            # Along the output row: contiguous stores, the tile read across its [x, f] layout;
            # the channels unrolled, so every index into the tile is a constant and gcc keeps it
            # in registers (1x1 convs with few input channels: 12% faster).
            *_, channels, columns = sch.get_loops(write_back)
            try_step(lambda: sch.vectorize(columns))
            try_step(lambda: sch.unroll(channels))
    # Fused after compute_at: the write-back's coverage proof needs the tile loops unfused.
    outer = parallel_fused(sch, [n, f_o, y])
    init = vectorized_init(sch, block, reductions[0])
    if plan.channels > plan.lanes:  # vectors of `lanes` channels, unrolled
        vectors = try_step(lambda: sch.split(f_i, [None, plan.lanes]))
        if vectors:
            f_io, f_i = vectors
            try_step(lambda: sch.unroll(f_io))
    try_step(lambda: sch.vectorize(f_i))
    try_step(lambda: sch.unroll(x_i))
    if not isinstance(write_back, BlockRV):
        epilogue = consumer_under(sch, block, outer)
    blocks = (init, epilogue, write_back)
    names = {name, *([packed] if packed else [])}
    return names | {rv.name for rv in blocks if isinstance(rv, BlockRV)}


def _depthwise_data_blocks(block: Block, lanes: int) -> int | None:
    """For a depthwise conv2d (output channel f reads input channel f alone: `I[n, f + rc, ..]`
    with one rc, or `I[n, f, ..]` in TOPI's depthwise_conv2d_nchw), the channel blocks its
    input is laid out in, [n, c // F, h, w, c % F] (F the channel tile, at most a vector of
    `lanes`), so that F output channels read one contiguous vector and the conv2d tile (f
    vectorized, x unrolled, accumulators [x, f]) applies: on 7x7 and 14x14 maps a row is too
    short to be the vector. None if the block is not depthwise or F would be under 4."""
    data = data_load(block)
    f = block.iter_vars[1]
    reductions = [iv for iv in block.iter_vars if iv.iter_type == IterVarType.COMM_REDUCE]
    if data is None or len(data.indices) != 4:
        return None
    if len(reductions) == 2:  # TOPI's depthwise_conv2d_nchw: channel f reads channel f
        if data.indices[1] is not f.var:
            return None
    else:
        rc = reductions[0]
        if getattr(rc.dom.extent, "value", 0) != 1 or not _is_channel(
            data.indices[1], f.var, rc.var
        ):
            return None
    tile = channel_tile(getattr(f.dom.extent, "value", None), lanes)
    if tile < 4 or data.buffer not in [region.buffer for region in block.reads]:
        return None
    return tile


def _block_depthwise_data(sch: Schedule, block: BlockRV, tile: int) -> set[str] | None:
    """Lay the depthwise conv's input out in blocks of `tile` channels (_depthwise_data_blocks):
    its producer (the zero padding) writes that layout, `tile` channels a vector; without one,
    a copy (cache_read) does. The names of the blocks added, or None (nothing changed) if the
    layout is refused."""
    data = data_load(sch.block(block).block)
    assert data is not None
    reads = [region.buffer for region in sch.block(block).block.reads]
    producers = try_step(lambda: sch.get_producers(block)) or []
    added: set[str] = set()
    if not producers:
        copy = try_step(lambda: sch.cache_read(block, reads.index(data.buffer), "global"))
        if not isinstance(copy, BlockRV):
            return None
        producers, added = [copy], {copy.name}
    layout = IndexMap.from_func(lambda b, c, h, w: (b, c // tile, h, w, c % tile), ndim=4)
    index = [region.buffer for region in sch.block(block).block.reads].index(
        sch.block(producers[0]).block.writes[0].buffer
    )
    if try_step(lambda: sch.transform_layout(block, ("read", index), layout)) is False:
        return None
    # The producer writes F channels a vector: its channel loop split, the inner part last.
    n, c, h, w = sch.get_loops(producers[0])
    parts = try_step(lambda: sch.split(c, [None, tile]))
    if parts:
        try_step(lambda: sch.reorder(h, w, parts[1]))
        try_step(lambda: sch.vectorize(parts[1]))
    return added


def _is_channel(index: PrimExpr, f: Var, rc: Var) -> bool:
    """Whether a data channel index is `f` or `f + rc` (the channel the output channel is)."""
    if index is f:
        return True
    return isinstance(index, Add) and index.a is f and index.b is rc


def _weight_read(block: Block) -> int | None:
    """The read index of the conv's weight (the product's second factor), if it is a load of
    a buffer the block declares it reads."""
    store = block.body
    assert isinstance(store, BufferStore)
    weight = uncast(uncast(store.value.b).b)  # type: ignore[attr-defined]  # an Add (is_accumulation)
    reads = [region.buffer for region in block.reads]
    if not isinstance(weight, BufferLoad) or weight.buffer not in reads:
        return None
    return reads.index(weight.buffer)


def _pack_weight(sch: Schedule, block: BlockRV, f_tile: int) -> str | None:
    """Copy the weight W[f, c, r, s] into W'[f // f_tile, c, r, s, f % f_tile], so the tile's
    f_tile output channels are one contiguous vector per (c, r, s); the copy block's name.
    A weight that is a constant of the model is packed once at compile time instead
    (tessel.graph.passes.layout_rewrite lifts this block, marked LAYOUT_REWRITE_PREPROC, out
    of the kernel)."""
    index = _weight_read(sch.block(block).block)
    if index is None:
        return None

    def packed(o: PrimExpr, i: PrimExpr, h: PrimExpr, w: PrimExpr) -> tuple[PrimExpr, ...]:
        return (o // f_tile, i, h, w, o % f_tile)

    copy = try_step(lambda: sch.cache_read(block, index, "global"))
    if not isinstance(copy, BlockRV):
        return None
    layout = IndexMap.from_func(packed, ndim=4)
    try_step(lambda: sch.transform_layout(block, ("read", index), layout))
    try_step(lambda: sch.annotate(copy, LAYOUT_REWRITE_PREPROC, True))
    # In parallel over (f, c): a kernel called with a weight that is not a constant packs it
    # at every call (128 -> 128 3x3: 0.6 MB, serial it was 6% of the conv at two threads).
    parallel_fused(sch, sch.get_loops(copy)[:2])
    return copy.name


def _group_channel_tile(block: Block, extents: list[int | None], largest: int) -> int | None:
    """For a grouped conv2d whose groups have at least GROUP_VECTOR_MIN output channels, the
    channel tile of the conv2d micro-kernel: a power of two dividing the group's output
    channels, so the tile's channels all read the same input channels (one broadcast input
    element per step, as in an ungrouped conv2d). None where the groups are narrower (their
    channels read different inputs: schedule_grouped_rows vectorizes the row instead)."""
    data = data_load(block)
    if data is None or len(data.buffer.shape) != 4 or len(extents) != 7:
        return None
    outputs, per_group_in = extents[1], extents[4]
    inputs = getattr(data.buffer.shape[1], "value", None)
    if outputs is None or per_group_in is None or not inputs:
        return None
    groups = inputs // per_group_in
    if groups < 1 or inputs % per_group_in or outputs % groups:
        return None
    tile = min(divisor_tile(outputs // groups, (32, 16, 8, 4, 2, 1)), largest)
    return tile if tile >= GROUP_VECTOR_MIN else None
