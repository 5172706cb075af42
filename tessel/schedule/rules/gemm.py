"""The default schedule's rule for GEMM-like blocks (dense, matmul, batch_matmul): a block whose
update is `C[..., i, j] = C[..., i, j] + A[...] * B[...]` with one reduction iterator k gets a
register tile: i split by a tile of ROW_TILES (the fastest once padding is counted), j by one
or two vectors (the target's lanes for the output's dtype), loops ordered (outer..., j_o, i_o,
k, i_i, j_i) so that a panel of B serves every row tile while in cache, the init decomposed
above k, i_i unrolled and j_i vectorized (in unrolled vectors), the outer loops fused and run
in parallel. The accumulators are a scope-local tile (cache_write) the C compiler keeps in
registers, stored once per tile by a write-back block into which the epilogue (bias, relu, a
residual add) is inlined; 4x the speed of accumulating in C itself. Rows or columns the tile
does not divide are padded (pad_einsum, RFC 77's padding): the padded output is the local tile
and the block copying it back the write-back, so only the write-back is guarded (matmul 127³:
0.43 ms with guarded tails, 0.046 padded; 128³: 0.037). When the B operand is not contiguous
along j (dense's W[j, k]), or the GEMM has PACK_ROWS rows or more, it is copied into panels
[..., j // columns, k, j % columns], so j_i reads whole vectors of one stream; a weight that is
a model constant is packed once at compile time instead (tessel.graph.passes.layout_rewrite
lifts the copy, marked LAYOUT_REWRITE_PREPROC). A one-row GEMM (batch 1) prefetches its stream
of B ahead (`pragma_software_prefetch`).

The rule is a plan and its application: `plan_gemm(block, target)` chooses every knob
(GemmPlan), `apply_gemm(sch, block, plan)` applies it and reports the steps the schedule
refused (a refusal costs speed, never correctness)."""

from __future__ import annotations

from dataclasses import dataclass

from tessel.ir.expr import PrimExpr, Var
from tessel.ir.target import Target
from tessel.schedule import BlockRV, LoopRV, Schedule, ScheduleError
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

# Reductions shorter than this keep one vector of columns (attention's QK^T, k = 32: 0.08 ms with
# 8 x 16 tiles, 0.14 ms with 8 x 32).
SHORT_REDUCTION = 64
# A contiguous B operand is packed too, into panels, from this many rows on (matmul 1024³: 0.6x
# NumPy's time packed, 1.1-1.3x not; 128x384x384 takes 1.5x as long with the copy).
PACK_ROWS = 512
# How far ahead a one-row GEMM prefetches its stream of B: 8 to 16 iterations of a 32-column panel.
PREFETCH_BYTES = 1024
# Rows per tile, with each one's speed relative to 8 rows (measured: 44x384x384, 100x384x384,
# 36x384x384 and 42x384x384 at one thread, AVX-512, two vectors of columns). Fewer rows load
# each weight vector for fewer multiply-adds: 4 rows ran at 102 GFLOP/s where 8 rows of the
# same GEMM padded from 44 to 48 ran at 216.
MAX_ROWS = 8
ROW_TILES = {MAX_ROWS: 1.0, 7: 0.97, 6: 0.95, 5: 0.87, 4: 0.47}


@dataclass(frozen=True, slots=True)
class Gemm:
    """What the rule needs to know about a GEMM-like block: its output's last two iterators."""

    i: Var
    j: Var
    k: Var


def match_gemm(block: Block) -> Gemm | None:
    """The (i, j, k) of `block` if it is `C[.., i, j] += A[..] * B[..]` with one reduction k."""
    reduce = [iv.var for iv in block.iter_vars if iv.iter_type == IterVarType.COMM_REDUCE]
    spatial = [iv.var for iv in block.iter_vars if iv.iter_type == IterVarType.DATA_PAR]
    if block.init is None or len(reduce) != 1 or len(spatial) < 2:
        return None
    if len(spatial) + 1 != len(block.iter_vars) or not isinstance(block.body, BufferStore):
        return None
    store = block.body
    if tuple(store.indices[-2:]) != tuple(spatial[-2:]) or not is_accumulation(store):
        return None
    columns = next(iv.dom.extent for iv in block.iter_vars if iv.var is spatial[-1])
    if getattr(columns, "value", None) == 1:
        return None  # a row reduction kept as a column (sum of squares, keepdims): not a GEMM
    return Gemm(spatial[-2], spatial[-1], reduce[0])


def row_tile(rows: int, max_rows: int = MAX_ROWS) -> int:
    """The rows of a tile, up to `max_rows`: all of them when fewer, else the tile of ROW_TILES
    whose padded rows (pad_einsum pads to a multiple of the tile) over its relative speed are
    least: a divisor where one runs nearly as fast as the largest (42 rows: 7), else the
    largest tile with a few rows of padding (44 rows: 8, padded to 48, rather than 4)."""
    top = min(MAX_ROWS, max_rows)
    if 0 < rows < top:
        return rows
    if rows <= 0:
        return top  # symbolic: every tile divides it
    tiles = [t for t in ROW_TILES if t <= top] or [top]
    return min(tiles, key=lambda t: (-(-rows // t) * t / ROW_TILES.get(t, 1.0), -t))


@dataclass(frozen=True, slots=True)
class OperandPacking:
    """The operand read `read` of a GEMM (indexed by j at axis `j_axis` and by k at `k_axis`)
    copied into panels [.., j // columns, k, .., j % columns] (zero-padded): the tile's columns
    read whole vectors of one stream."""

    read: int
    j_axis: int
    k_axis: int
    columns: int


@dataclass(frozen=True, slots=True)
class GemmPlan:
    """The GEMM rule's choices for one block: a register tile of `rows` x `columns`
    accumulators (vectors of `lanes`), the operand packed into panels (or None), pad_einsum's
    factor for each block iterator (all 1: nothing padded), how far ahead a one-row GEMM
    prefetches its stream of B (0: no prefetch), and whether the outer loops and the tiles
    are fused into the kernel's parallel loop (else the caller runs an enclosing loop in
    parallel: the anchor-chain rule)."""

    block: str
    rows: int
    columns: int
    lanes: int
    packing: OperandPacking | None = None
    padding: tuple[int, ...] = ()
    prefetch_bytes: int = 0
    parallel: bool = True


def accumulator_rows(target: Target) -> int:
    """How many rows (GEMM) or columns (conv2d) of 16 float32 accumulators a register tile may
    have: the vector registers less four (operands and broadcasts), 8 at most. AVX-512: 8;
    AVX2: 6."""
    per_row = max(1, 64 // target.vector_bytes)
    return max(1, min(MAX_ROWS, (target.vector_registers - 4) // per_row))


def gemm_columns(target: Target, bits: int = 32) -> int:
    """Columns of a GEMM register tile (output channels of a conv2d tile) for elements of
    `bits` bits: 128 bytes of them where 32 vector registers hold 8 x 32 float32 accumulators
    (8-10% faster on MiniLM's dense layers, 10-25% on ResNet's 3x3 convs with AVX-512), else
    64 bytes; at least one vector."""
    row_bytes = 128 if target.vector_registers >= 32 else 64
    return max(vector_lanes(target, bits), row_bytes * 8 // bits)


def plan_gemm(block: Block, target: Target | str | None = None) -> GemmPlan | None:
    """The GEMM rule's plan for `block` on `target` (None: this machine), or None if `block` is
    not GEMM-like (match_gemm)."""
    gemm = match_gemm(block)
    if gemm is None:
        return None
    cpu = rule_target(target)
    bits = block.writes[0].buffer.dtype.bits if block.writes else 32
    lanes = vector_lanes(cpu, bits)
    columns = gemm_columns_for(block, gemm, gemm_columns(cpu, bits), lanes)
    rows = row_tile(_extent_of(block, gemm.i), accumulator_rows(cpu))
    strided = _strided_operand(block, gemm)
    packing = OperandPacking(*strided, columns) if strided is not None else None
    return GemmPlan(
        block.name_hint,
        rows,
        columns,
        lanes,
        packing,
        _padding(block, gemm, rows, columns),
        PREFETCH_BYTES if rows == 1 else 0,
    )


def gemm_columns_for(block: Block, gemm: Gemm, columns: int, lanes: int) -> int:
    """The columns of the register tile of `block`: `columns`, or one vector of `lanes` where
    a short reduction or a narrow output would not pay for a second one."""
    if 0 < _extent_of(block, gemm.k) < SHORT_REDUCTION:
        return lanes  # a short reduction does not pay for the wider tile's init and store
    if 0 < _extent_of(block, gemm.j) <= lanes:
        return lanes  # a second vector would be all padding (a classifier's 10 outputs)
    return columns


def _padding(block: Block, gemm: Gemm, rows: int, columns: int) -> tuple[int, ...]:
    """pad_einsum's factor for each iterator of `block`: rows and columns padded to multiples
    of the tile, so that no update or init of a tile is guarded (a tail's guard masks every
    vector access and keeps the accumulators out of registers: a 127³ matmul ran 3x slower
    than 128³); 1 where the tile divides, or the extent is symbolic."""
    factors = {gemm.i: rows, gemm.j: columns}
    padding = []
    for iv in block.iter_vars:
        extent = getattr(iv.dom.extent, "value", 0)
        factor = factors.get(iv.var, 1)
        padding.append(factor if extent > 0 and extent % factor else 1)
    return tuple(padding)


def _extent_of(block: Block, var: Var) -> int:
    """The constant extent of the block iterator `var` (0 when symbolic: every tile divides
    it, the first is taken)."""
    extent = next(iv.dom.extent for iv in block.iter_vars if iv.var is var)
    return getattr(extent, "value", 0)


def _strided_operand(block: Block, gemm: Gemm) -> tuple[int, int, int] | None:
    """(read index, axis of j, axis of k) of the operand indexed by j but not contiguous along
    it, or of a contiguous one in a GEMM with at least PACK_ROWS rows (where the copy is paid
    back: its k rows are then one stream instead of k strided ones)."""
    store = block.body
    assert isinstance(store, BufferStore)
    product = uncast(store.value.b)  # type: ignore[attr-defined]  # an Add (is_accumulation)
    many_rows = _extent_of(block, gemm.i) >= PACK_ROWS
    for operand in (uncast(product.a), uncast(product.b)):
        if not isinstance(operand, BufferLoad):
            continue
        axes = [p for p, index in enumerate(operand.indices) if index is gemm.j]
        if len(axes) != 1 or (axes[0] == len(operand.indices) - 1 and not many_rows):
            continue
        k_axes = [p for p, index in enumerate(operand.indices) if index is gemm.k]
        reads = [r.buffer for r in block.reads]
        if operand.buffer in reads and len(k_axes) == 1:
            return reads.index(operand.buffer), axes[0], k_axes[0]
    return None


def apply_packing(sch: Schedule, block: BlockRV, packing: OperandPacking | None) -> None:
    """Copy the operand `packing` names into its panels (cache_read + transform_layout), the
    copy marked as a packing stage (LAYOUT_REWRITE_PREPROC) for LayoutRewrite."""
    if packing is None:
        return
    ndim = len(sch.block(block).block.reads[packing.read].buffer.shape)
    axis, k_axis, columns = packing.j_axis, packing.k_axis, packing.columns

    def packed(*axes: PrimExpr) -> tuple[PrimExpr, ...]:
        # j // columns just before k (a panel: columns of every k contiguous), j % columns last.
        order: list[PrimExpr] = []
        for p, a in enumerate(axes):
            if p == k_axis:
                order.append(axes[axis] // columns)
            if p != axis:
                order.append(a)
        return (*order, axes[axis] % columns)

    try:
        copy = sch.cache_read(block, packing.read, "global")
        sch.transform_layout(
            block, ("read", packing.read), IndexMap.from_func(packed, ndim=ndim), pad_value=0.0
        )
    except ScheduleError as error:
        refuse(error)
        return
    try_step(lambda: sch.annotate(copy, LAYOUT_REWRITE_PREPROC, True))


def _pad_to_tiles(sch: Schedule, block: BlockRV, padding: tuple[int, ...]) -> BlockRV | None:
    """Pad the block's iterators by `padding` (pad_einsum); the block copying the padded
    output back, or None if nothing was padded."""
    if all(p == 1 for p in padding):
        return None
    before = set(block_names(sch.func))
    if try_step(lambda: sch.pad_einsum(block, list(padding))) is False:
        return None
    added = [name for name in block_names(sch.func) if name not in before]
    return next((sch.get_block(name) for name in added if name.endswith("_unpad")), None)


def apply_gemm(sch: Schedule, block: BlockRV, plan: GemmPlan) -> Applied:
    """Apply `plan` to the GEMM `block` (in the plain nest (outer..., i, j, k) TOPI builds):
    pack, pad, tile. The blocks scheduled are empty if the tiling was refused."""
    with recording_refusals() as refused:
        apply_packing(sch, block, plan.packing)
        unpad = _pad_to_tiles(sch, block, plan.padding)
        *outer, i, j, k = sch.get_loops(block)
        blocks = tile_gemm(sch, block, outer, (i, j, k), plan, unpad)
    return Applied(plan, frozenset(blocks), tuple(refused))


def schedule_gemm(sch: Schedule, name: str, target: Target | str | None = None) -> Applied | None:
    """Plan and apply the GEMM rule to the block `name`; None (nothing changed) if it is not
    GEMM-like or its loops are not the plain nest (outer..., i, j, k) TOPI builds."""
    return plan_and_apply(sch, name, lambda block: plan_gemm(block, target), apply_gemm)


def tile_gemm(
    sch: Schedule,
    block: BlockRV,
    outer: list[LoopRV],
    ijk: tuple[LoopRV, LoopRV, LoopRV],
    plan: GemmPlan,
    unpad: BlockRV | None = None,
) -> set[str]:
    """The register tile of `plan` for the GEMM `block` over its loops `ijk` (rows, columns,
    reduction), under `outer`: rows x columns accumulators in a local tile written back once,
    with the epilogue inlined into the write-back; `outer` and the column and row tiles fused
    into one parallel loop when the plan says so. The names of the blocks scheduled, empty if
    the tiling was refused."""
    name = block.name
    i, j, k = ijk
    try:
        i_o, i_i = sch.split(i, [None, plan.rows])
        j_o, j_i = sch.split(j, [None, plan.columns])
        # Columns outside rows: one panel of B (K x columns) serves every row tile while it is
        # in cache, and a row tile streams only its K x rows of A; with rows outside, each row
        # tile streamed all of B (44x384x1536: 217 to 255 GFLOP/s; 1024x384x1536: 240 to 257).
        sch.reorder(j_o, i_o, k, i_i, j_i)
    except ScheduleError as error:
        refuse(error)
        return set()
    # The rows x columns accumulators in a scope-local buffer, allocated per tile: registers in
    # the C compiler's hands, stored to C once per tile, with the epilogue (bias, gelu's
    # arithmetic, a residual add) inlined into that store.
    if unpad is not None and try_step(lambda: sch.set_scope(block, 0, "local")) is not False:
        write_back: BlockRV | bool = unpad  # the padded output is the accumulator tile
    else:
        write_back = try_step(lambda: sch.cache_write(block, 0, "local"))
    if isinstance(write_back, BlockRV):
        if not move_write_back(sch, write_back, i_o):
            write_back = None
        elif plan.rows > 1:
            # The store of a tile of rows (with its epilogue: bias, gelu, a residual add) by
            # vectors along the row: dense 1024x384x1536 with a bias went from 220 to 246
            # GFLOP/s. A one-row tile (batch 1) is left to gcc, which vectorizes it itself; as
            # vectors it took the MLP 3-6% longer.
            try_step(lambda: sch.vectorize(sch.get_loops(write_back)[-1]))
    tile = parallel_fused(sch, [*outer, j_o, i_o]) if plan.parallel else i_o
    if plan.prefetch_bytes:
        # One row (batch 1): a GEMV, which streams B once and does little else; its loads are
        # asked for ahead of time (MLP 784-512-512-10 at one thread: 0.91 to 0.85x onnxruntime).
        try_step(lambda: sch.annotate(k, "pragma_software_prefetch", plan.prefetch_bytes))
    init = _vectorize_update(sch, block, k, i_i, j_i, plan.lanes)
    epilogue = None if write_back else consumer_under(sch, block, tile)
    blocks = (init, epilogue, write_back)
    return {name} | {rv.name for rv in blocks if isinstance(rv, BlockRV)}


def _vectorize_update(
    sch: Schedule, block: BlockRV, k: LoopRV, i_i: LoopRV, j_i: LoopRV, lanes: int
) -> BlockRV | bool:
    """The init decomposed above k, then the update's columns vectorized (in vectors of
    `lanes`, unrolled) and its rows unrolled; the init, or False (and nothing done) if the
    schedule refuses the decomposition."""
    init = vectorized_init(sch, block, k)
    if init is False:
        return False
    if getattr(sch.loop(j_i).extent, "value", 0) > lanes:
        vectors = try_step(lambda: sch.split(j_i, [None, lanes]))
        if vectors:
            j_io, j_i = vectors
            try_step(lambda: sch.unroll(j_io))
    try_step(lambda: sch.vectorize(j_i))
    try_step(lambda: sch.unroll(i_i))
    return init
