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
makes the vector loop fall back to scalar code. Each step is tried and skipped where the schedule
refuses it (ScheduleError): a refusal costs speed, never correctness."""

from __future__ import annotations

from dataclasses import dataclass

from tessel.ir.expr import Add, IntImm, Mul, PrimExpr, Var
from tessel.ir.functor import post_order
from tessel.schedule import BlockRV, Schedule, ScheduleError
from tessel.schedule.rules.conv_nchwc import X_TILES, column_tile, match_conv_nchwc
from tessel.schedule.rules.steps import (
    consumer_under,
    inline_consumer,
    is_accumulation,
    is_plain_nest,
    parallel_fused,
    try_step,
    uncast,
    vectorized_init,
)
from tessel.schedule.state import block_names
from tessel.tir.block import Block, IterVarType
from tessel.tir.buffer import BufferLoad
from tessel.tir.index_map import IndexMap
from tessel.tir.stmt import BufferStore

TILE_F = 16
# Grouped: output columns are the vector, of up to VECTOR_X lanes (a row of 7 is one vector of 8,
# 7 lanes enabled), and GROUPED_TILE_F channels' accumulators.
VECTOR_X = 16
GROUPED_TILE_F = 16
# Grouped convs with at least this many output channels per group (RegNet's 8, ResNeXt's 4 x 32
# and up) take the conv2d micro-kernel with a tile of a group's channels (_group_channel_tile).
GROUP_VECTOR_MIN = 8
# Depthwise rows at least this long are the vector (_schedule_depthwise_rows); shorter ones
# (7x7, 14x14 maps) vectorize across channel blocks.
DEPTHWISE_ROW_MIN = 16


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


def schedule_conv(
    sch: Schedule,
    name: str,
    max_columns: int = X_TILES[0],
    max_channels: int = TILE_F,
    max_lanes: int = VECTOR_X,
) -> set[str]:
    """Tile the conv block `name`, with at most `max_columns` output columns of `max_channels`
    channels' accumulators (what the vector registers hold: 8 x 32 with 32 of them) and vectors
    of at most `max_lanes` float32; the names of the blocks it scheduled, empty (nothing
    changed) if it is not one or its loops are not the plain nest TOPI builds."""
    block = sch.get_block(name)
    realize = sch.block(block)
    conv = match_conv(realize.block)
    if conv is None or not is_plain_nest(sch, block):
        return set()
    if conv.grouped:
        group_tile = _group_channel_tile(sch, block, max_channels)
        if group_tile is not None:
            return _schedule_conv2d(sch, block, name, max_columns, f_tile=group_tile)
    if conv.depthwise or conv.grouped:
        rows = _schedule_depthwise_rows(sch, block, name, max_lanes) if conv.depthwise else None
        if rows is not None:
            return rows
        blocked = _block_depthwise_data(sch, block)
        if blocked is None:
            fallback = _schedule_depthwise if conv.depthwise else _schedule_grouped
            return fallback(sch, block, name)
        tile = _channel_tile(sch.loop(sch.get_loops(block)[1]).extent)
        return _schedule_conv2d(sch, block, name, max_columns, f_tile=tile) | blocked
    return _schedule_conv2d(sch, block, name, max_columns, max_channels)


def _schedule_conv2d(
    sch: Schedule,
    block: BlockRV,
    name: str,
    max_columns: int,
    max_channels: int = TILE_F,
    f_tile: int | None = None,
) -> set[str]:
    # TOPI's depthwise_conv2d_nchw has no input-channel reduction: the nest is (n, f, y, x, r, s).
    loops = sch.get_loops(block)
    n, f, y, x = loops[:4]
    reductions = loops[4:]
    if f_tile is None:
        f_tile = _channel_tile(sch.loop(f).extent, max_channels)
    width = getattr(sch.loop(x).extent, "value", 1)  # a symbolic row: tiles of 1
    vectors = max(1, f_tile // TILE_F)  # accumulator vectors a column (f_i is split by TILE_F)
    x_tile = column_tile(width, tuple(t for t in X_TILES if t <= max_columns), vectors)
    packed = _pack_weight(sch, block, f_tile)
    try:
        f_o, f_i = sch.split(f, [None, f_tile])
        x, x_i = sch.split(x, [None, x_tile])
        sch.reorder(f_o, y, x, *reductions, x_i, f_i)
    except ScheduleError:
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
        inline_consumer(sch, write_back)
        if try_step(lambda: sch.reverse_compute_at(write_back, x)) is not False:
            # Along the output row: contiguous stores, the tile read across its [x, f] layout;
            # the channels unrolled, so every index into the tile is a constant and gcc keeps it
            # in registers (1x1 convs with few input channels: 12% faster).
            *_, channels, columns = sch.get_loops(write_back)
            try_step(lambda: sch.vectorize(columns))
            try_step(lambda: sch.unroll(channels))
    # Fused after compute_at: the write-back's coverage proof needs the tile loops unfused.
    outer = parallel_fused(sch, [n, f_o, y])
    init = vectorized_init(sch, block, reductions[0])
    if f_tile > TILE_F:  # vectors of TILE_F channels, unrolled
        vectors = try_step(lambda: sch.split(f_i, [None, TILE_F]))
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


def _schedule_grouped(sch: Schedule, block: BlockRV, name: str) -> set[str]:
    """A grouped or depthwise conv2d: its f_i output channels read f_i different input
    channels, so the vector runs along the output columns x_i (a whole row up to VECTOR_X, in
    chunks of VECTOR_X beyond: a tail is masked, UnswitchGuards keeps it off the full chunks),
    the f_i accumulators unrolled in a scope-local tile [f, x] the C compiler keeps in
    registers, with the epilogue inlined into its write-back. With stride 2 the padded input
    is laid out by column parity (_split_by_stride), so each vector reads contiguous columns."""
    n, f, y, x, c, r, s = sch.get_loops(block)
    width = getattr(sch.loop(x).extent, "value", 0)
    _split_by_stride(sch, block)
    try:
        f_o, f_i = sch.split(f, [None, _channel_tile(sch.loop(f).extent, GROUPED_TILE_F)])
        x_o = None
        if not 0 < width <= VECTOR_X:
            x_o, x = sch.split(x, [None, VECTOR_X])
        sch.reorder(f_o, y, *([x_o] if x_o is not None else []), c, r, s, f_i, x)
    except ScheduleError:
        return set()
    tile = x_o if x_o is not None else y
    write_back = try_step(lambda: sch.cache_write(block, 0, "local"))
    if isinstance(write_back, BlockRV):
        inline_consumer(sch, write_back)
        if try_step(lambda: sch.reverse_compute_at(write_back, tile)) is not False:
            try_step(lambda: sch.vectorize(sch.get_loops(write_back)[-1]))
        else:
            write_back = None
    outer = parallel_fused(sch, [n, f_o, y])
    init = vectorized_init(sch, block, c)
    try_step(lambda: sch.vectorize(x))
    try_step(lambda: sch.unroll(f_i))
    epilogue = None if write_back else consumer_under(sch, block, outer)
    blocks = (init, epilogue, write_back)
    return {name} | {rv.name for rv in blocks if isinstance(rv, BlockRV)}


def _schedule_depthwise_rows(
    sch: Schedule, block: BlockRV, name: str, max_lanes: int
) -> set[str] | None:
    """TOPI's depthwise_conv2d_nchw with stride 1 on rows of at least DEPTHWISE_ROW_MIN
    columns: the vector runs along the output row (lanes dividing the width, so no masked
    tail), a tile of up to 4 rows of it accumulates over the window in registers (each weight
    broadcast once per 4 vectors), and each channel's zero padding is computed in its own
    parallel iteration (compute_at), a plane that stays in cache. 32 channels at 112x112:
    0.29 ms in the channel-blocked layout (a gather to block, a transpose to write back), 0.087
    here. The names of the blocks it scheduled, or None where it does not apply (nothing
    changed, unless the schedule refused a split or the reorder half way)."""
    loops = sch.get_loops(block)
    realize = sch.block(block)
    store = realize.block.body
    assert isinstance(store, BufferStore)
    data = uncast(uncast(store.value.b).a)  # type: ignore[attr-defined]  # an Add (is_accumulation)
    if len(loops) != 6 or not isinstance(data, BufferLoad) or len(data.indices) != 4:
        return None
    if _column_stride(data.indices[3]) != 1:
        return None  # strided columns: a vector would gather
    n, c, y, x, r, s = loops
    width = getattr(sch.loop(x).extent, "value", 0)
    lanes = next((v for v in (16, 8, 4) if v <= max_lanes and width % v == 0), 0)
    if width < DEPTHWISE_ROW_MIN or not lanes:
        return None
    rows = _divisor_tile(sch.loop(y).extent, (4, 3, 2, 1))
    producers = try_step(lambda: sch.get_producers(block)) or []
    try:
        y, y_i = sch.split(y, [None, rows])
        x, x_i = sch.split(x, [None, lanes])
        sch.reorder(y, x, r, s, y_i, x_i)
    except ScheduleError:
        return None
    write_back = try_step(lambda: sch.cache_write(block, 0, "local"))
    if isinstance(write_back, BlockRV):
        inline_consumer(sch, write_back)
        if try_step(lambda: sch.reverse_compute_at(write_back, x)) is not False:
            *_, tile_rows, columns = sch.get_loops(write_back)
            try_step(lambda: sch.vectorize(columns))
            try_step(lambda: sch.unroll(tile_rows))
        else:
            write_back = None
    outer = parallel_fused(sch, [n, c])
    padded = set()
    for producer in producers:
        if try_step(lambda producer=producer: sch.compute_at(producer, outer)) is not False:
            try_step(lambda producer=producer: sch.vectorize(sch.get_loops(producer)[-1]))
            padded.add(producer.name)
    init = vectorized_init(sch, block, r)
    try_step(lambda: sch.vectorize(x_i))
    try_step(lambda: sch.unroll(y_i))
    epilogue = None if write_back else consumer_under(sch, block, outer)
    blocks = (init, epilogue, write_back)
    return {name} | padded | {rv.name for rv in blocks if isinstance(rv, BlockRV)}


def _block_depthwise_data(sch: Schedule, block: BlockRV) -> set[str] | None:  # noqa: C901 - a pattern match over the block's form
    """For a depthwise conv2d (output channel f reads input channel f alone: `I[n, f + rc, ..]`
    with one rc, or `I[n, f, ..]` in TOPI's depthwise_conv2d_nchw), lay the input it reads
    out by channel blocks, [n, c // F, h, w, c % F] (F the channel tile), so that F output
    channels read one contiguous vector and the conv2d tile (f vectorized, x unrolled,
    accumulators [x, f]) applies: on 7x7 and 14x14 maps a row is too short to be the vector.
    The input's producer (the zero padding) writes that layout, F channels a vector; without
    one, a copy (cache_read) does. The names of the blocks added, or None (nothing changed) if
    the block is not depthwise or the layout is refused."""
    realize = sch.block(block)
    store = realize.block.body
    assert isinstance(store, BufferStore)
    data = uncast(uncast(store.value.b).a)  # type: ignore[attr-defined]  # an Add (is_accumulation)
    f = realize.block.iter_vars[1]
    reductions = [iv for iv in realize.block.iter_vars if iv.iter_type == IterVarType.COMM_REDUCE]
    if not isinstance(data, BufferLoad) or len(data.indices) != 4:
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
    tile = _channel_tile(f.dom.extent)
    if tile < 4:
        return None
    reads = [region.buffer for region in realize.block.reads]
    if data.buffer not in reads:
        return None
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


def _split_by_stride(sch: Schedule, block: BlockRV) -> None:
    """Lay the padded input a strided convolution reads at [.., y * S + r, x * S + s] out as
    [.., h, w % S, w // S] (its producer writes it so), so that consecutive x read consecutive
    addresses: vector loads instead of one load per lane."""
    store = sch.block(block).block.body
    assert isinstance(store, BufferStore)
    data = uncast(uncast(store.value.b).a)  # type: ignore[attr-defined]  # an Add (is_accumulation)
    if not isinstance(data, BufferLoad) or len(data.indices) != 4:
        return
    stride = _column_stride(data.indices[3])
    producers = try_step(lambda: sch.get_producers(block)) or []
    if stride not in (2, 3, 4) or not producers:
        return
    reads = [region.buffer for region in sch.block(block).block.reads]
    if data.buffer not in reads:
        return
    layout = IndexMap.from_func(lambda b, o, h, w: (b, o, h, w % stride, w // stride), ndim=4)
    if (
        try_step(
            lambda: sch.transform_layout(
                block, ("read", reads.index(data.buffer)), layout, pad_value=0.0
            )
        )
        is False
    ):
        return
    # The producer's columns in the new order (parity outer), so it writes whole vectors.
    producer = producers[0]
    *_, w = sch.get_loops(producer)
    parts = try_step(lambda: sch.split(w, [None, stride]))
    if parts:
        try_step(lambda: sch.reorder(parts[1], parts[0]))


def _column_stride(index: PrimExpr) -> int:
    """S of a column index `x * S + s` (or `x * S`); 1 for any other form."""
    if isinstance(index, Add):
        index = index.a
    if isinstance(index, Mul) and isinstance(index.b, IntImm):
        return index.b.value
    return 1


def _pack_weight(sch: Schedule, block: BlockRV, f_tile: int) -> str | None:
    """Copy the weight W[f, c, r, s] into W'[f // f_tile, c, r, s, f % f_tile], so the tile's
    f_tile output channels are one contiguous vector per (c, r, s); the copy block's name.
    A weight that is a constant of the model is packed once at compile time instead
    (tessel.graph.passes.layout_rewrite lifts this block out of the kernel)."""
    store = sch.block(block).block.body
    assert isinstance(store, BufferStore)
    product = uncast(store.value.b)  # type: ignore[attr-defined]  # an Add (is_accumulation)
    weight = uncast(product.b)
    reads = [region.buffer for region in sch.block(block).block.reads]
    if not isinstance(weight, BufferLoad) or weight.buffer not in reads:
        return None
    index = reads.index(weight.buffer)

    def packed(o: PrimExpr, i: PrimExpr, h: PrimExpr, w: PrimExpr) -> tuple[PrimExpr, ...]:
        return (o // f_tile, i, h, w, o % f_tile)

    copy = try_step(lambda: sch.cache_read(block, index, "global"))
    if not isinstance(copy, BlockRV):
        return None
    layout = IndexMap.from_func(packed, ndim=4)
    try_step(lambda: sch.transform_layout(block, ("read", index), layout))
    # In parallel over (f, c): a kernel called with a weight that is not a constant packs it
    # at every call (128 -> 128 3x3: 0.6 MB, serial it was 6% of the conv at two threads).
    parallel_fused(sch, sch.get_loops(copy)[:2])
    return copy.name


def _group_channel_tile(sch: Schedule, block: BlockRV, largest: int) -> int | None:
    """For a grouped conv2d whose groups have at least GROUP_VECTOR_MIN output channels, the
    channel tile of the conv2d micro-kernel: a power of two dividing the group's output
    channels, so the tile's channels all read the same input channels (one broadcast input
    element per step, as in an ungrouped conv2d). None where the groups are narrower (their
    channels read different inputs: _schedule_grouped vectorizes the row instead)."""
    loops = sch.get_loops(block)
    store = sch.block(block).block.body
    assert isinstance(store, BufferStore)
    data = uncast(uncast(store.value.b).a)  # type: ignore[attr-defined]  # an Add
    if not isinstance(data, BufferLoad) or len(data.buffer.shape) != 4 or len(loops) != 7:
        return None
    extents = [getattr(sch.loop(loop).extent, "value", None) for loop in (loops[1], loops[4])]
    inputs = getattr(data.buffer.shape[1], "value", None)
    if None in (*extents, inputs) or not inputs:
        return None
    outputs, per_group_in = extents
    groups = inputs // per_group_in
    if groups < 1 or inputs % per_group_in or outputs % groups:
        return None
    tile = _divisor_tile(IntImm("int32", outputs // groups), (32, 16, 8, 4, 2, 1))
    tile = min(tile, largest)
    return tile if tile >= GROUP_VECTOR_MIN else None


def _divisor_tile(extent: PrimExpr, tiles: tuple[int, ...]) -> int:
    """The first of `tiles` dividing a constant `extent` (1 for a symbolic one)."""
    value = getattr(extent, "value", 1)
    return next(t for t in tiles if value % t == 0)


def _channel_tile(extent: PrimExpr, largest: int = TILE_F) -> int:
    """The largest power of two up to TILE_F dividing `extent`: a split with no tail, since a
    tail's guard makes every vector access of the unrolled tile predicated (slow, and long to
    compile: MobileNet's cold build took 190 s with tails)."""
    return _divisor_tile(extent, tuple(t for t in (32, 16, 8, 4, 2, 1) if t <= largest))


def _schedule_depthwise(sch: Schedule, block: BlockRV, name: str) -> set[str]:
    n, c, y, x, r, s = sch.get_loops(block)
    try:
        sch.reorder(r, s, x)
    except ScheduleError:
        return set()
    outer = parallel_fused(sch, [n, c, y])
    init = vectorized_init(sch, block, r)
    try_step(lambda: sch.vectorize(x))
    epilogue = consumer_under(sch, block, outer)
    return {name} | {rv.name for rv in (init, epilogue) if isinstance(rv, BlockRV)}
