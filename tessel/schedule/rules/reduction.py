"""The default schedule's rule for row reductions (softmax, log_softmax, layer_norm, and sum,
mean, max, min over the last axis): the kernel runs row by row. The group is a reduction, the
reductions after it that read its result (softmax's sum reads the max), and the data-parallel block
that consumes them (the anchor: softmax's normalisation, layer_norm's output, mean's division, or a
reshape fused after them that keeps the rows: it must read the row results at its leading loops,
whose count may differ from the reductions'), or else the last reduction. Every reduction moves
under the anchor's innermost row loop with compute_at, so each row is read while it is in cache; a
reduction over at least one vector is split into vectors of partial results with rfactor (init and
update vectorized: a max/min update is a vector compare and select since codegen keeps NaN that way;
as a lane loop it took softmax's max 0.32 ms for 0.06 ms at [1, 12, 128, 128]), up to four
independent ones where the row is long enough, and a write-back that reduces them to one vector,
then its lanes; the anchor's loop along the row is vectorized; the row loops are fused into one
parallel loop. The partial results of one reduction fill one vector register of the target; a row
shorter than that stays scalar. The rule is a plan (`plan_row_reduction`: RowReductionPlan) and its
application (`apply_row_reduction`, which reports the steps the schedule refused: a refusal costs
speed, never correctness)."""

from __future__ import annotations

from dataclasses import dataclass

from tessel.ir.builders import is_const_int
from tessel.ir.expr import IntImm, Var
from tessel.ir.functor import post_order
from tessel.ir.target import Target
from tessel.schedule import BlockRV, LoopRV, Schedule, ScheduleError
from tessel.schedule.rules.plan import Applied, recording_refusals, refuse, rule_target
from tessel.schedule.rules.steps import (
    is_plain_nest,
    parallel_fused,
    try_step,
    vectorize_by,
    vectorized_init,
)
from tessel.schedule.state import block_names
from tessel.tir.block import Block, IterVarType
from tessel.tir.buffer import BufferLoad
from tessel.tir.stmt import BufferStore


@dataclass(frozen=True, slots=True)
class RowReduction:
    """A block `W[rows.. (, 0)] = W[..] op f(X[rows.., k], ..)` reducing over the last axis k of
    its data, for `rows` leading data-parallel iterators (then a unit one, with keepdims)."""

    rows: int


def match_row_reduction(block: Block) -> RowReduction | None:
    """`block` as a reduction over the last axis of the data it reads, or None."""
    reduce = [iv for iv in block.iter_vars if iv.iter_type == IterVarType.COMM_REDUCE]
    spatial = [iv for iv in block.iter_vars if iv.iter_type == IterVarType.DATA_PAR]
    if block.init is None or len(reduce) != 1 or len(spatial) + 1 != len(block.iter_vars):
        return None
    store, k = block.body, reduce[0]
    if not isinstance(store, BufferStore):
        return None
    if tuple(store.indices) != tuple(iv.var for iv in spatial):
        return None
    rows = _row_count(store, k.var, [iv.var for iv in spatial])
    if rows is None or rows == 0:
        return None
    if rows < len(spatial) and not is_const_int(spatial[-1].dom.extent, 1):
        return None  # the kept axis of a keepdims reduction has extent 1
    return RowReduction(rows)


def _row_count(store: BufferStore, k: Var, spatial: list[Var]) -> int | None:
    """The number of row iterators: each load along k reads `X[spatial[:rows].., k]`, with the
    output indexed by those rows alone or followed by one kept unit axis."""
    loads = [
        node
        for node in post_order(store.value)
        if isinstance(node, BufferLoad) and any(v is k for v in _vars_in(node))
    ]
    if not loads:
        return None
    rows = len(loads[0].indices) - 1
    if len(spatial) not in (rows, rows + 1):
        return None
    for load in loads:
        *row_indices, last = load.indices
        if last is not k or len(row_indices) != rows:
            return None
        if not all(index is var for index, var in zip(row_indices, spatial, strict=False)):
            return None
    return rows


def _vars_in(load: BufferLoad) -> list[Var]:
    return [node for index in load.indices for node in post_order(index) if isinstance(node, Var)]


@dataclass(frozen=True, slots=True)
class RowReductionPlan:
    """The row-reduction rule's choices for a group: the `reductions` (softmax's max and sum),
    the data-parallel `middles` between them (softmax's exp), the `anchor` that consumes them
    row by row (None: the last reduction ends the group) with its `row_loops` row loops, each
    reduction split into vectors of partial results of `vector_bytes`."""

    block: str
    reductions: tuple[str, ...]
    middles: tuple[str, ...]
    anchor: str | None
    row_loops: int
    vector_bytes: int


def plan_row_reduction(
    sch: Schedule, name: str, target: Target | str | None = None
) -> RowReductionPlan | None:
    """The row-reduction rule's plan for the group that starts at the block `name` on `target`
    (None: this machine), or None if `name` is not a row reduction in the plain nest (rows..,
    k) TOPI builds. The plan reads the schedule: the group is the blocks that read the first
    one's results."""
    block = sch.get_block(name)
    reduction = match_row_reduction(sch.block(block).block)
    if reduction is None or not is_plain_nest(sch, block):
        return None
    reductions, middles, anchor, anchor_rows = _group(sch, name, reduction.rows)
    return RowReductionPlan(
        name,
        tuple(rv.name for rv in reductions),
        tuple(rv.name for rv in middles),
        anchor.name if anchor is not None else None,
        # The anchor's own row loops: a reshape fused after softmax over (1, 3, 197, 197)
        # writes (3, 197, 197), two row loops for the reductions' three (the unit one dropped).
        anchor_rows if anchor is not None else reduction.rows,
        rule_target(target).vector_bytes,
    )


def apply_row_reduction(sch: Schedule, plan: RowReductionPlan) -> Applied:
    """Apply `plan`: every block of the group under the innermost row loop of the anchor (or
    the last reduction), the reductions in vectors of partial results, the row loops fused
    into one parallel loop."""
    with recording_refusals() as refused:
        blocks = _apply(sch, plan)
    return Applied(plan, frozenset(blocks), tuple(refused))


def _apply(sch: Schedule, plan: RowReductionPlan) -> set[str]:
    reductions = [sch.get_block(n) for n in plan.reductions]
    middles = [sch.get_block(n) for n in plan.middles]
    anchor = sch.get_block(plan.anchor) if plan.anchor is not None else None
    last = anchor if anchor is not None else reductions.pop()
    rows = sch.get_loops(last)[: plan.row_loops]
    # compute_at under the innermost row loop, consumers first, before fusing: the schedule
    # then need not prove that the fused loop's `f // 128 % 12` covers every row.
    group = sorted(reductions + middles, key=lambda rv: block_names(sch.func).index(rv.name))
    moved = [rv for rv in reversed(group) if _compute_at(sch, rv, rows[-1])]
    done = {last.name} | {rv.name for rv in moved}
    for rv in moved:
        if rv in middles:
            # Under the row loops of `last`: an anchor that reshapes (softmax's [1, 3, 197, 197]
            # read as [3, 197, 197]) has fewer of them than the reduction.
            _vectorize_row(sch, rv, plan.row_loops)
        else:
            done |= vectorize_reduction(sch, rv, plan.vector_bytes)
    if anchor is not None:
        _vectorize_row(sch, anchor, plan.row_loops)
    else:
        done |= _vectorize_last_reduction(sch, last, rows[-1], plan.vector_bytes)
    parallel_fused(sch, rows)
    return done


def schedule_row_reduction(
    sch: Schedule, name: str, target: Target | str | None = None
) -> Applied | None:
    """Plan and apply the row-reduction rule to the group that starts at `name`; None (nothing
    changed) if `name` is not a row reduction in the plain nest (rows.., k) TOPI builds."""
    plan = plan_row_reduction(sch, name, target)
    return None if plan is None else apply_row_reduction(sch, plan)


def _compute_at(sch: Schedule, block: BlockRV, loop: LoopRV) -> bool:
    """Whether `block` moved under `loop`."""
    return try_step(lambda: sch.compute_at(block, loop)) is not False


def _vectorize_last_reduction(
    sch: Schedule, block: BlockRV, row: LoopRV, vector_bytes: int
) -> set[str]:
    """vectorize_reduction for the reduction that ends the group: its write-back lands after
    the row loops when they hold only the partial results, so it moves back under them, to
    run while the row is in cache."""
    factored = vectorize_reduction(sch, block, vector_bytes, reduce_chains=False)
    row_var = sch.loop(row).loop_var
    if factored and all(sch.loop(loop).loop_var is not row_var for loop in sch.get_loops(block)):
        try_step(lambda: sch.reverse_compute_at(block, row))
    if factored:
        factored |= _reduce_chains(sch, block, vector_bytes)
    return factored


def _group(
    sch: Schedule, name: str, rows: int
) -> tuple[list[BlockRV], list[BlockRV], BlockRV | None, int]:
    """The row reductions from `name` on that read each other's results (softmax's max and sum),
    the data-parallel blocks between them (softmax's exp, kept as a block because two blocks
    read it), and the data-parallel block that consumes them (the anchor), if there is one,
    with its number of row loops (_anchor_rows; 0 without an anchor)."""
    reductions, middles = [sch.get_block(name)], []
    reduced = {w.buffer.name for w in sch.block(reductions[0]).block.writes}
    produced = set(reduced)
    names = block_names(sch.func)
    for position, later in enumerate(names[names.index(name) + 1 :], names.index(name) + 1):
        rv = sch.get_block(later)
        block = sch.block(rv).block
        if not any(r.buffer.name in produced for r in block.reads):
            continue
        found = match_row_reduction(block)
        if found is not None and found.rows == rows and is_plain_nest(sch, rv):
            reductions.append(rv)
            reduced |= {w.buffer.name for w in block.writes}
            produced |= {w.buffer.name for w in block.writes}
            continue
        anchor_rows = _anchor_rows(sch, rv, reduced)
        if anchor_rows == rows and _feeds_reduction(sch, block, names[position + 1 :], rows):
            middles.append(rv)
            produced |= {w.buffer.name for w in block.writes}
            continue
        if anchor_rows is None:
            return reductions, middles, None, 0
        return reductions, middles, rv, anchor_rows
    return reductions, middles, None, 0


def _feeds_reduction(sch: Schedule, block: Block, later: list[str], rows: int) -> bool:
    """Whether a row reduction among the `later` blocks reads what `block` writes."""
    written = {w.buffer.name for w in block.writes}
    for name in later:
        other = sch.block(sch.get_block(name)).block
        if any(r.buffer.name in written for r in other.reads):
            found = match_row_reduction(other)
            return found is not None and found.rows == rows
    return False


def _anchor_rows(sch: Schedule, block: BlockRV, reduced: set[str]) -> int | None:
    """The number of row loops of `block` as an anchor of reductions writing the buffers
    `reduced`, or None if it is not one: data-parallel in a plain nest, reading those results
    at its leading iterators in order (unit indices aside), its row loops then optionally one
    loop along the row (softmax's normalisation; mean's division has none). A block reading
    the results another way (a reshape that merged rows, `T_sum[0, r // 197, r % 197, 0]`) is
    not an anchor: computing the reductions under its loops would redo each row for every
    element it writes."""
    realize = sch.block(block).block
    iter_vars = [iv.var for iv in realize.iter_vars]
    if any(iv.iter_type != IterVarType.DATA_PAR for iv in realize.iter_vars):
        return None
    reads = [r for r in realize.reads if r.buffer.name in reduced]
    if not reads or not is_plain_nest(sch, block):
        return None
    row_counts = set()
    for read in reads:
        indices = [r.min for r in read.region]
        used = [i for i in indices if not is_const_int(i, 0)]
        if not all(isinstance(i, Var) for i in used) or used != iter_vars[: len(used)]:
            return None
        if not all(is_const_int(r.extent, 1) for r in read.region):
            return None
        row_counts.add(len(used))
    if len(row_counts) != 1:
        return None
    (rows,) = row_counts
    return rows if rows >= 1 and len(iter_vars) in (rows, rows + 1) else None


def vectorize_reduction(
    sch: Schedule, block: BlockRV, vector_bytes: int, reduce_chains: bool = True
) -> set[str]:
    """Split the reduction loop into vectors of partial results (rfactor), initialised and
    updated by vector: CHAINS independent vectors where the row holds at least two of each,
    since one vector is one dependency chain (softmax's max: a compare and a blend per step,
    0.29 of its time as one chain), else one. The write-back reduces them, first the chains
    to one vector (_reduce_chains, unless the caller does it) then its lanes. The new blocks'
    names."""
    k = sch.get_loops(block)[-1]
    extent = sch.loop(k).extent
    lanes = _lanes(sch, block, vector_bytes)
    if isinstance(extent, IntImm) and extent.value < lanes:
        return set()  # a short row: scalar, in cache
    # A row of run-time length (a shape symbol's): one chain, its last vector predicated.
    chains = _chain_count(extent.value, lanes) if isinstance(extent, IntImm) else 1
    try:
        if chains > 1:
            k_outer, k_chain, k_lane = sch.split(k, [None, chains, lanes])
            k_inner = sch.fuse(k_chain, k_lane)
        else:
            k_outer, k_inner = sch.split(k, [None, lanes])
        rf = sch.rfactor(k_inner, factor_axis=-1)
    except ScheduleError as error:
        refuse(error)
        return set()
    init = vectorized_init(sch, rf, k_outer, lanes)
    vectorize_by(sch, sch.get_loops(rf)[-1], lanes)
    factored = {rf.name} | ({init.name} if isinstance(init, BlockRV) else set())
    if reduce_chains:
        factored |= _reduce_chains(sch, block, vector_bytes)
    return factored


def _lanes(sch: Schedule, block: BlockRV, vector_bytes: int) -> int:
    """How many of the block's results fill one vector of `vector_bytes`."""
    return vector_bytes * 8 // sch.block(block).block.writes[0].buffer.dtype.bits


# Independent vectors of partial results per reduction: enough to cover the latency of a
# vector compare-and-blend (max) or add (sum) with the loads in flight.
CHAINS = 4


def _chain_count(extent: int, lanes: int) -> int:
    """The most chains (CHAINS, 2, 1) that split `extent` exactly, each at least two vectors
    long: a remainder would leave the chains a predicate, and one-vector chains gain
    nothing over the write-back they add."""
    for chains in (CHAINS, 2):
        if extent % (chains * lanes) == 0 and extent // (chains * lanes) >= 2:
            return chains
    return 1


def _reduce_chains(sch: Schedule, write_back: BlockRV, vector_bytes: int) -> set[str]:
    """Where `write_back` reduces several vectors of partial results, reduce them first to one
    vector (a second rfactor, by vector) so that only one vector is reduced lane by lane. The
    new blocks' names."""
    loop = sch.get_loops(write_back)[-1]
    extent = sch.loop(loop).extent
    lanes = _lanes(sch, write_back, vector_bytes)
    if not isinstance(extent, IntImm) or extent.value <= lanes or extent.value % lanes != 0:
        return set()
    try:
        chain, lane = sch.split(loop, [None, lanes])
        rf = sch.rfactor(lane, factor_axis=-1)
    except ScheduleError as error:
        refuse(error)
        return set()
    init = vectorized_init(sch, rf, chain)
    try_step(lambda: sch.vectorize(lane))
    try_step(lambda: sch.unroll(chain))
    return {rf.name} | ({init.name} if isinstance(init, BlockRV) else set())


def _vectorize_row(sch: Schedule, anchor: BlockRV, rows: int) -> None:
    """Vectorize the anchor's loop along the row, if it has one (not mean's division)."""
    loops = sch.get_loops(anchor)
    if len(loops) > rows:
        try_step(lambda: sch.vectorize(loops[-1]))
