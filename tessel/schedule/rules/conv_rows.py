"""The NCHW conv rule's variants that vectorize along the output row (tessel.schedule.rules.conv
chooses among them): grouped and depthwise convolutions whose channels read different inputs
(GroupedRowsPlan: the row is the vector, the channels' accumulators unrolled, a strided input
laid out by column parity), TOPI's depthwise_conv2d_nchw on long rows (DepthwiseRowsPlan: tiles
of rows in registers, each channel's padding in its own parallel iteration), and the last resort
for a depthwise one (DepthwiseLoopsPlan); with the block-shape helpers the conv rule shares."""

from __future__ import annotations

from dataclasses import dataclass

from tessel.ir.expr import Add, IntImm, Mul, PrimExpr
from tessel.schedule import BlockRV, Schedule, ScheduleError
from tessel.schedule.rules.plan import refuse
from tessel.schedule.rules.steps import (
    consumer_under,
    local_tile,
    parallel_fused,
    try_step,
    uncast,
    vectorized_init,
)
from tessel.tir.block import Block
from tessel.tir.buffer import BufferLoad
from tessel.tir.index_map import IndexMap
from tessel.tir.stmt import BufferStore

# Grouped: output columns are the vector, of up to a vector's lanes (a row of 7 is one vector of
# 8, 7 lanes enabled), and GROUPED_TILE_F channels' accumulators.
GROUPED_TILE_F = 16
# Depthwise rows at least this long are the vector (schedule_depthwise_rows); shorter ones
# (7x7, 14x14 maps) vectorize across channel blocks.
DEPTHWISE_ROW_MIN = 16


@dataclass(frozen=True, slots=True)
class GroupedRowsPlan:
    """A grouped or depthwise conv vectorized along the output row: vectors of up to `lanes`
    columns (the row cut into chunks of `lanes` when `split_row`), `channels` channels'
    accumulators unrolled; the padded input laid out by column parity for a column `stride`
    of 2 to 4 (1: as it is)."""

    block: str
    channels: int
    lanes: int
    split_row: bool
    stride: int = 1


@dataclass(frozen=True, slots=True)
class DepthwiseRowsPlan:
    """TOPI's depthwise_conv2d_nchw with stride 1 on long rows: vectors of `lanes` columns,
    tiles of `rows` rows accumulating in registers, each channel's padding computed in its own
    parallel iteration."""

    block: str
    rows: int
    lanes: int


@dataclass(frozen=True, slots=True)
class DepthwiseLoopsPlan:
    """The last resort for a depthwise conv: the window outside the row, which is vectorized;
    n, c, y in parallel."""

    block: str


def grouped_rows_plan(block: Block, extents: list[int | None], lanes: int) -> GroupedRowsPlan:
    width = extents[3] or 0
    data = data_load(block)
    stride = column_stride(data.indices[3]) if data is not None and len(data.indices) == 4 else 1
    return GroupedRowsPlan(
        block.name_hint,
        channel_tile(extents[1], GROUPED_TILE_F),
        lanes,
        split_row=not 0 < width <= lanes,
        stride=stride if stride in (2, 3, 4) else 1,
    )


def schedule_grouped_rows(sch: Schedule, block: BlockRV, plan: GroupedRowsPlan) -> set[str]:
    """A grouped or depthwise conv2d: its f_i output channels read f_i different input
    channels, so the vector runs along the output columns x_i (a whole row up to the plan's
    lanes, in chunks of lanes beyond: a tail is masked, UnswitchGuards keeps it off the full
    chunks), the f_i accumulators unrolled in a scope-local tile [f, x] the C compiler keeps in
    registers, with the epilogue inlined into its write-back. With stride 2 the padded input
    is laid out by column parity (_split_by_stride), so each vector reads contiguous columns."""
    name = block.name
    n, f, y, x, c, r, s = sch.get_loops(block)
    if plan.stride > 1:
        _split_by_stride(sch, block, plan.stride)
    try:
        f_o, f_i = sch.split(f, [None, plan.channels])
        x_o = None
        if plan.split_row:
            x_o, x = sch.split(x, [None, plan.lanes])
        sch.reorder(f_o, y, *([x_o] if x_o is not None else []), c, r, s, f_i, x)
    except ScheduleError as error:
        refuse(error)
        return set()
    tile = x_o if x_o is not None else y
    write_back = local_tile(sch, block, tile)
    if write_back is not None:
        try_step(lambda: sch.vectorize(sch.get_loops(write_back)[-1]))
    outer = parallel_fused(sch, [n, f_o, y])
    init = vectorized_init(sch, block, c)
    try_step(lambda: sch.vectorize(x))
    try_step(lambda: sch.unroll(f_i))
    epilogue = None if write_back else consumer_under(sch, block, outer)
    blocks = (init, epilogue, write_back)
    return {name} | {rv.name for rv in blocks if isinstance(rv, BlockRV)}


def depthwise_rows_plan(
    block: Block, extents: list[int | None], max_lanes: int
) -> DepthwiseRowsPlan | None:
    """TOPI's depthwise_conv2d_nchw (loops n, c, y, x, r, s) with stride 1 on rows of at
    least DEPTHWISE_ROW_MIN columns: lanes dividing the width (no masked tail), up to 4 rows
    a tile; None where it does not apply."""
    data = data_load(block)
    if len(extents) != 6 or data is None or len(data.indices) != 4:
        return None
    if column_stride(data.indices[3]) != 1:
        return None  # strided columns: a vector would gather
    width = extents[3] or 0
    lanes = next((v for v in (16, 8, 4) if v <= max_lanes and width % v == 0), 0)
    if width < DEPTHWISE_ROW_MIN or not lanes:
        return None
    return DepthwiseRowsPlan(block.name_hint, divisor_tile(extents[2], (4, 3, 2, 1)), lanes)


def schedule_depthwise_rows(sch: Schedule, block: BlockRV, plan: DepthwiseRowsPlan) -> set[str]:
    """The vector along the output row, a tile of `plan.rows` rows of it accumulating over
    the window in registers (each weight broadcast once per tile's vectors), and each
    channel's zero padding computed in its own parallel iteration (compute_at), a plane that
    stays in cache. 32 channels at 112x112: 0.29 ms in the channel-blocked layout (a gather
    to block, a transpose to write back), 0.087 here."""
    name = block.name
    n, c, y, x, r, s = sch.get_loops(block)
    producers = try_step(lambda: sch.get_producers(block)) or []
    try:
        y, y_i = sch.split(y, [None, plan.rows])
        x, x_i = sch.split(x, [None, plan.lanes])
        sch.reorder(y, x, r, s, y_i, x_i)
    except ScheduleError as error:
        refuse(error)
        return set()
    write_back = local_tile(sch, block, x)
    if write_back is not None:
        *_, tile_rows, columns = sch.get_loops(write_back)
        try_step(lambda: sch.vectorize(columns))
        try_step(lambda: sch.unroll(tile_rows))
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


def _split_by_stride(sch: Schedule, block: BlockRV, stride: int) -> None:
    """Lay the padded input a strided convolution reads at [.., y * S + r, x * S + s] out as
    [.., h, w % S, w // S] (its producer writes it so), so that consecutive x read consecutive
    addresses: vector loads instead of one load per lane."""
    data = data_load(sch.block(block).block)
    producers = try_step(lambda: sch.get_producers(block)) or []
    reads = [region.buffer for region in sch.block(block).block.reads]
    if data is None or not producers or data.buffer not in reads:
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


def column_stride(index: PrimExpr) -> int:
    """S of a column index `x * S + s` (or `x * S`); 1 for any other form."""
    if isinstance(index, Add):
        index = index.a
    if isinstance(index, Mul) and isinstance(index.b, IntImm):
        return index.b.value
    return 1


def data_load(block: Block) -> BufferLoad | None:
    """The data operand of the conv's update (the product's first factor), if it is a load."""
    store = block.body
    assert isinstance(store, BufferStore)
    data = uncast(uncast(store.value.b).a)  # type: ignore[attr-defined]  # an Add (is_accumulation)
    return data if isinstance(data, BufferLoad) else None


def divisor_tile(extent: int | None, tiles: tuple[int, ...]) -> int:
    """The first of `tiles` dividing a constant `extent` (1 for a symbolic one, None)."""
    value = 1 if extent is None else extent
    return next(t for t in tiles if value % t == 0)


def channel_tile(extent: int | None, largest: int) -> int:
    """The largest power of two up to `largest` dividing `extent`: a split with no tail, since a
    tail's guard makes every vector access of the unrolled tile predicated (slow, and long to
    compile: MobileNet's cold build took 190 s with tails)."""
    return divisor_tile(extent, tuple(t for t in (32, 16, 8, 4, 2, 1) if t <= largest))


def schedule_depthwise_loops(sch: Schedule, block: BlockRV) -> set[str]:
    name = block.name
    n, c, y, x, r, s = sch.get_loops(block)
    try:
        sch.reorder(r, s, x)
    except ScheduleError as error:
        refuse(error)
        return set()
    outer = parallel_fused(sch, [n, c, y])
    init = vectorized_init(sch, block, r)
    try_step(lambda: sch.vectorize(x))
    epilogue = consumer_under(sch, block, outer)
    return {name} | {rv.name for rv in (init, epilogue) if isinstance(rv, BlockRV)}
