"""The default schedule's rule for channel-blocked convolutions (topi.nn.conv2d_NCHWc,
group_conv2d_NCHWc and depthwise_conv2d_NCHWc, what AlterOpLayout makes of a model's NCHW
convolutions).

A block `C[n, oc, oh, ow, ocb] += I[n, .., ocb or ic_inner] * W[oc, .., ocb]` over (ic_outer, kh,
kw, ic_inner) or, depthwise, (di, dj): its oc_bn output channels are already one contiguous vector
of the data, the weight and the output, so nothing is packed or transposed. The output row is split
by the largest of X_TILES dividing it (no tail), or by a tile that leaves a tail where that is
clearly cheaper (column_tile: a 13-column row in tiles of 7 and 6, not 13 of 1); rows too short for
the tile are taken several at a time; the loops become (n, oc_o, oh_o, ow_o, reductions, oh_i, ow_i,
oc_i, ocb) with ocb vectorized and oh_i, ow_i, oc_i unrolled (two channel blocks per tile for conv2d
when the register file holds 8 x 32 accumulators, three for odd multiples of 3: each input element
broadcast once feeds that many weight vectors), ic_inner two steps an iteration and the depthwise
window unrolled; the accumulators are a scope-local tile stored once per tile by a write-back into
which the epilogue (bias, clip, a residual add) is inlined, as whole vectors; n, oc_o, oh_o fused
and run in parallel. The zero padding stays its own loop nest (a vector copy of oc_bn channels per
pixel), except for depthwise convs and input blocks of one channel, which read through it inlined.
The rule is a plan (`plan_conv_nchwc`: ConvNCHWcPlan) and its application (`apply_conv_nchwc`,
which reports the steps the schedule refused: a refusal costs speed, never correctness)."""

from __future__ import annotations

from dataclasses import dataclass

from tessel.ir.expr import Add, Var
from tessel.ir.functor import post_order
from tessel.ir.target import Target
from tessel.schedule import BlockRV, LoopRV, Schedule, ScheduleError
from tessel.schedule.rules.gemm import accumulator_rows, gemm_columns
from tessel.schedule.rules.plan import Applied, recording_refusals, refuse, rule_target
from tessel.schedule.rules.steps import (
    is_accumulation,
    is_plain_nest,
    local_tile,
    parallel_fused,
    plan_and_apply,
    try_step,
    uncast,
    vectorized_init,
)
from tessel.tir.block import Block, IterVarType
from tessel.tir.buffer import BufferLoad
from tessel.tir.stmt import BufferStore

# Output columns per tile, for this rule and the NCHW one (rules.conv): the largest of these
# dividing the width (no tail loop), unless column_tile finds a tail cheaper. Seven or eight
# 16-channel accumulators fit AVX-512's 32 registers with room for the weights.
X_TILES = (8, 7, 6, 5, 4, 3, 2, 1)

# The cost model of column_tile: a tile's reduction step issues one FMA per accumulator vector
# on FMA_PORTS ports, and each accumulator's next FMA waits FMA_LATENCY cycles for its last, so
# a step takes max(accumulators / ports, latency) cycles: a tile of fewer than 8 accumulators
# leaves the ports idle (13x13 3x3 64->256 in 13 tiles of one column: 63 GFLOP/s, in tiles of
# 7 and 6: 180; the best dividing tile of 13 is 1).
FMA_PORTS, FMA_LATENCY = 2, 4
# A tile leaving a tail must beat the best dividing one by this factor: the tail is a second
# copy of the unrolled tile (code size, compile time), and a row of whole tiles was measured
# fast (55 columns in 11 tiles of 5 ran at 250 GFLOP/s).
TAIL_GAIN = 0.9


def row_cycles(width: int, tile: int, vectors: int) -> float:
    """The modelled cycles of one reduction step over a row of `width` output columns in tiles
    of `tile` columns (the last one shorter when `tile` does not divide it), each column
    `vectors` accumulator vectors."""
    full, tail = divmod(width, tile)
    cycles = full * max(tile * vectors / FMA_PORTS, FMA_LATENCY)
    return cycles + (max(tail * vectors / FMA_PORTS, FMA_LATENCY) if tail else 0)


def column_tile(width: int, tiles: tuple[int, ...], vectors: int) -> int:
    """The output columns of a conv's register tile over a row of `width`: the first of
    `tiles` dividing it, or the cheapest of `tiles` (row_cycles; ties to the first) where
    that is cheaper by TAIL_GAIN, its last tile a shorter tail."""
    dividing = next((t for t in tiles if width % t == 0), 1)
    best = min(tiles, key=lambda t: (row_cycles(width, t, vectors), tiles.index(t)))
    if row_cycles(width, best, vectors) < TAIL_GAIN * row_cycles(width, dividing, vectors):
        return best
    return dividing


def match_conv_nchwc(block: Block) -> bool:
    """Whether `block` is a blocked convolution: five spatial iterators indexing the output in
    order, reductions (ic_outer, kh, kw, ic_inner) or (di, dj), and a product of a data load
    whose last index is ic_inner (conv2d) or ocb (depthwise) with a weight load whose last
    index is ocb: ocb then runs along contiguous vectors of all three."""
    spatial = [iv.var for iv in block.iter_vars if iv.iter_type == IterVarType.DATA_PAR]
    reduce = [iv.var for iv in block.iter_vars if iv.iter_type == IterVarType.COMM_REDUCE]
    store = block.body
    if block.init is None or len(spatial) != 5 or len(reduce) not in (2, 4):
        return False
    if len(spatial) + len(reduce) != len(block.iter_vars) or not isinstance(store, BufferStore):
        return False
    if not all(a is b for a, b in zip(store.indices, spatial, strict=True)):
        return False
    if not is_accumulation(store):
        return False
    product = uncast(store.value.b)  # type: ignore[attr-defined]  # an Add (is_accumulation)
    data, weight = uncast(product.a), uncast(product.b)
    if not isinstance(data, BufferLoad) or not isinstance(weight, BufferLoad):
        return False
    lane = reduce[3] if len(reduce) == 4 else spatial[4]
    return _reads_lane(data, lane, spatial[4]) and _last_index_is(weight, spatial[4])


def _reads_by_output_block(block: Block) -> bool:
    """Whether the conv's data load depends on the output channel block (a grouped conv: each
    block of outputs reads its own group's channels)."""
    chunk = block.iter_vars[1].var
    product = uncast(block.body.value.b)  # type: ignore[attr-defined]  # matched above
    data = uncast(product.a)
    return any(node is chunk for index in data.indices for node in post_order(index))


def _strided(block: Block) -> bool:
    """Whether the conv's data load's column index is other than `ow + kw` (a stride or a
    dilation)."""
    ow, kw = block.iter_vars[3].var, block.iter_vars[7].var
    product = uncast(block.body.value.b)  # type: ignore[attr-defined]  # matched above
    column = uncast(product.a).indices[3]
    return not (isinstance(column, Add) and {id(column.a), id(column.b)} == {id(ow), id(kw)})


def _last_index_is(load: BufferLoad, var: Var) -> bool:
    return bool(load.indices) and load.indices[-1] is var


def _reads_lane(data: BufferLoad, lane: Var, ocb: Var) -> bool:
    """Whether the data's last index is `lane`, or `lane` plus an offset that does not vary
    along the output vector `ocb` (a grouped conv's group inside a wider input block, as
    `oc_chunk % 2 * 8 + ic_inner`): ocb's vector then broadcasts one input element."""
    if _last_index_is(data, lane):
        return True
    index = data.indices[-1] if data.indices else None
    if not isinstance(index, Add) or not (index.a is lane or index.b is lane):
        return False
    offset = index.a if index.b is lane else index.b
    return not any(node is ocb or node is lane for node in post_order(offset))


@dataclass(frozen=True, slots=True)
class ConvNCHWcPlan:
    """The blocked-conv rule's choices for one block: a register tile of `channel_blocks`
    output channel blocks x `rows` rows x `columns` columns of accumulator vectors (the row's
    last tile shorter where `columns` does not divide it); ic_inner `ic_steps` steps a loop
    iteration (unrolled), kw unrolled instead where ic_inner is 1 (`unroll_kw`), the depthwise
    window unrolled (`unroll_window`); the zero padding inlined into the convolution
    (`inline_padding`) rather than a copy of its own; the outer loops fused into the kernel's
    parallel loop (`parallel`; else the caller runs an enclosing loop in parallel); kw the
    innermost reduction, unrolled with the tile (`kw_innermost`: a grouped conv, whose input
    element feeds one vector of a tile column, so that an element loaded once serves the
    columns that read it at the window's kw taps)."""

    block: str
    channel_blocks: int
    rows: int
    columns: int
    ic_steps: int = 1
    unroll_kw: bool = False
    unroll_window: bool = False
    inline_padding: bool = False
    parallel: bool = True
    kw_innermost: bool = False


def plan_conv_nchwc(
    block: Block, target: Target | str | None = None, *, height: int | None = None
) -> ConvNCHWcPlan | None:
    """The blocked-conv rule's plan for `block` on `target` (None: this machine), or None if
    `block` is not a blocked convolution; `height` overrides the rows the tile spans (a conv
    chain's row block)."""
    if not match_conv_nchwc(block):
        return None
    cpu = rule_target(target)
    max_columns, max_channels = accumulator_rows(cpu), gemm_columns(cpu)
    # Symbolic extents: one channel block, row and column a tile; ic_inner not stepped.
    extents = [getattr(iv.dom.extent, "value", None) for iv in block.iter_vars]
    _, chunks, rows, width, block_lanes = (1 if e is None else e for e in extents[:5])
    reductions = extents[5:]
    if height is not None:
        rows = height
    # conv2d: two channel blocks a tile where the accumulators fit, each broadcast input read
    # once for both, or three (fewer columns) when the blocks are an odd multiple of 3 (144
    # channels: 32 -> 144 1x1 at 28x28 from 0.054 to 0.042 ms); depthwise reads a different
    # input per block, so one.
    # A grouped conv reads its own input channels for each block: two blocks a tile share
    # no broadcast, but their groups share the input's cache lines (a block of 16 channels
    # holds two groups of 8), read once for both (RegNetY's 3x3 48 -> 48 in groups of 8,
    # stride 2 at 112x112: 0.51 to 0.44 ms).
    pair = 1
    grouped = len(reductions) == 4 and _reads_by_output_block(block)
    if len(reductions) == 4 and 2 * block_lanes <= max_channels:
        pair = 2 if chunks % 2 == 0 else (3 if chunks % 3 == 0 and not grouped else 1)
    if pair == 3:  # the accumulators of two blocks' tile, in three blocks
        max_columns = max(1, max_columns * 2 // 3)
    # Two blocks of 8 columns are 16 accumulators besides the two steps' weights: gcc 12 then
    # copies every accumulator at the loop's back edge and spills one, so 7 where it divides
    # the row too (3x3 64->64 at 56x56: 1.09 to 0.93 ms; 32->32 at 112x112: 1.10 to 0.91).
    tiles = (7, *X_TILES) if pair == 2 else X_TILES
    x_tile = column_tile(width, tuple(t for t in tiles if t <= max_columns), pair)
    # A row shorter than the tile (4x4 maps): several rows a tile, so the accumulators still
    # fill the registers and each weight vector loaded serves twice the outputs (ResNet-18's
    # 512-channel convs at 4x4 are weight-bound: the model went from 0.91x to 0.86x ORT).
    tile_rows = next(r for r in (4, 2, 1) if r * x_tile <= max_columns and rows % r == 0)
    ic_inner = (reductions[3] or 0) if len(reductions) == 4 else 0
    kw_innermost = grouped and (reductions[2] or 1) > 1
    return ConvNCHWcPlan(
        block.name_hint,
        pair,
        tile_rows,
        x_tile,
        ic_steps=2 if ic_inner and ic_inner % 2 == 0 and not kw_innermost else 1,
        unroll_kw=ic_inner == 1 or kw_innermost,
        kw_innermost=kw_innermost,
        unroll_window=len(reductions) == 2,
        # The zero padding inlined for depthwise: its bounds test is one scalar condition per
        # input vector (the lanes are channels), a select per load; the copy it saves cost as
        # much as the convolution (MobileNetV2: 1.12x to 1.03x ORT). And for an input block of
        # one channel (a first conv on RGB), whose copy is one scalar per pixel (3x3 3->32 at
        # 112x112: 0.049 to 0.038 ms; 7x7 3->64: 0.275 to 0.25). conv2d over blocks of 16
        # keeps the copy: a test per broadcast input element costs more (ResNet-18: 0.86x to
        # 0.96x).
        # A strided grouped conv too: its copy writes four times the output, for a few FMAs
        # an element (the 3x3 above: 0.44 to 0.39 ms; 104 -> 104 at 56x56: 0.34 to 0.30).
        inline_padding=len(reductions) == 2 or ic_inner == 1 or (grouped and _strided(block)),
    )


def apply_conv_nchwc(sch: Schedule, block: BlockRV, plan: ConvNCHWcPlan) -> Applied:
    """Apply `plan` to the blocked conv `block` (in the plain nest TOPI builds): its zero
    padding inlined or scheduled as a vector copy, then the register tile."""
    with recording_refusals() as refused:
        if plan.inline_padding:
            for producer in try_step(lambda: sch.get_producers(block)) or []:
                if _copies_a_parameter(sch, producer):
                    try_step(lambda producer=producer: sch.compute_inline(producer))
        padding = _schedule_padding(sch, block)
        n, oc, oh, ow, ocb, *reductions = sch.get_loops(block)
        if plan.kw_innermost:  # (ic_outer, kh, ic_inner, kw)
            reductions = [reductions[0], reductions[1], reductions[3], reductions[2]]
        done = tile_conv_nchwc(sch, block, [n], (oc, oh, ow, ocb), reductions, plan)
        if done and isinstance(padding, BlockRV):
            done.add(padding.name)
    return Applied(plan, frozenset(done), tuple(refused))


def schedule_conv_nchwc(
    sch: Schedule, name: str, target: Target | str | None = None
) -> Applied | None:
    """Plan and apply the blocked-conv rule to the block `name`; None (nothing changed) if it
    is not one or its loops are not the plain nest TOPI builds."""
    return plan_and_apply(sch, name, lambda block: plan_conv_nchwc(block, target), apply_conv_nchwc)


def tile_conv_nchwc(
    sch: Schedule,
    block: BlockRV,
    outer: list[LoopRV],
    spatial: tuple[LoopRV, LoopRV, LoopRV, LoopRV],
    reductions: list[LoopRV],
    plan: ConvNCHWcPlan,
) -> set[str]:
    """The register tile of `plan` for the blocked conv `block` over its loops `spatial`
    (output channel blocks, rows, columns, lanes) and `reductions`, under `outer`; `outer`
    with the channel and row tiles fused into one parallel loop when the plan says so. The
    names of the blocks scheduled, empty if the tiling was refused."""
    name = block.name
    oc, oh, ow, ocb = spatial
    try:
        oc_o, oc_i = sch.split(oc, [None, plan.channel_blocks])
        oh, oh_i = sch.split(oh, [None, plan.rows])
        ow_o, ow_i = sch.split(ow, [None, plan.columns])
        sch.reorder(oc_o, oh, ow_o, *reductions, oh_i, ow_i, oc_i, ocb)
    except ScheduleError as error:
        refuse(error)
        return set()
    write_back = local_tile(sch, block, ow_o)
    if write_back is not None:
        # Its loops under ow_o (unit extents dropped): lanes vectorized, the rest unrolled.
        loops = sch.get_loops(write_back)
        anchor = sch.loop(ow_o).loop_var
        depth = next(k for k, loop in enumerate(loops) if sch.loop(loop).loop_var is anchor)
        tile_loops = loops[depth + 1 :]
        try_step(lambda: sch.vectorize(tile_loops[-1]))
        for loop in tile_loops[:-1]:
            try_step(lambda loop=loop: sch.unroll(loop))
    # Fused after compute_at: the write-back's coverage proof needs the tile loops unfused.
    if plan.parallel:
        parallel_fused(sch, [*outer, oc_o, oh])
    init = vectorized_init(sch, block, reductions[0])
    try_step(lambda: sch.vectorize(ocb))
    try_step(lambda: sch.unroll(oh_i))
    try_step(lambda: sch.unroll(ow_i))
    try_step(lambda: sch.unroll(oc_i))
    _unroll_reductions(sch, reductions, plan)
    blocks = (init, write_back)
    return {name} | {rv.name for rv in blocks if isinstance(rv, BlockRV)}


def _unroll_reductions(sch: Schedule, reductions: list[LoopRV], plan: ConvNCHWcPlan) -> None:
    """ic_inner in steps of the plan's `ic_steps`, or kw or the depthwise window unrolled."""
    if plan.ic_steps > 1:
        # ic_inner, innermost, two steps a loop iteration: gcc copied all 16 accumulators between
        # registers at each back edge of a one-step loop. In the weights' order, (ic_outer, kh,
        # kw, ic_inner), the kernel streams them in order: ResNet-18 ran at 0.91x onnxruntime
        # so, 1.32x with ic_inner outside the window, 1.07x with four steps unrolled.
        parts = try_step(lambda: sch.split(reductions[3], [None, plan.ic_steps]))
        if parts:
            try_step(lambda: sch.unroll(parts[1]))
    elif plan.unroll_kw:
        # ic_inner of 1 (3 input channels, a first conv), or a grouped conv's kw put innermost:
        # kw unrolled.
        try_step(lambda: sch.unroll(reductions[3] if plan.kw_innermost else reductions[2]))
    if plan.unroll_window:
        # Depthwise: the window unrolled with the columns, so the C compiler loads each input
        # vector once for the kw outputs that read it (10 loads per row of 8, not 24).
        for loop in reductions:
            try_step(lambda loop=loop: sch.unroll(loop))


def _copies_a_parameter(sch: Schedule, block: BlockRV) -> bool:
    """Whether `block` reads one buffer, a parameter of the function (the zero padding of the
    conv's input, not a computation to repeat at every use)."""
    reads = {region.buffer for region in sch.block(block).block.reads}
    return len(reads) == 1 and reads <= set(sch.func.buffer_map.values())


def _schedule_padding(sch: Schedule, block: BlockRV) -> BlockRV | None:
    """The zero padding that produces the conv's data, (n, c, h, w, cb): n, c, h fused and
    parallel, w a plain loop, cb a vector. Fusing w too would cost a division per vector to
    recover it (the copy ran at half the conv's time so)."""
    producers = try_step(lambda: sch.get_producers(block)) or []
    for producer in producers:
        loops = sch.get_loops(producer)
        if len(loops) != 5 or not is_plain_nest(sch, producer):
            continue
        if sch.block(producer).block.writes[0].buffer.ndim != 5:
            continue
        parallel_fused(sch, loops[:3])
        try_step(lambda loops=loops: sch.vectorize(loops[4]))
        return producer
    return None
