"""LayoutRewrite's packing of a weight in NumPy. A rule's packing stage (cache_read, then
transform_layout) is one copy block, `P'[s(v)] = P[g(v)]` with one side the block's iterators
in order and the other a split, fuse or reordering of them, zero where P' pads. Such a map is a
few pad, reshape and transpose steps (tessel.schedule.layout_steps), which NumPy runs at memory
speed with nothing to compile: the packing function's C build was 0.2-0.3 s of every cold
compile of a model with packed weights, and of each candidate CombineParallelDense measures. A
stage of any other form (or whose map is no such steps) gives None, and LayoutRewrite runs its
compiled packing function instead."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tessel.ir.builders import is_const_int
from tessel.ir.expr import Call, FloatImm, IntImm, PrimExpr, Var
from tessel.ir.functor import post_order
from tessel.schedule.layout_steps import Gather, LayoutRecord, evaluate_index, steps_for_index_map
from tessel.support.errors import TesselError
from tessel.tir.block import Block, BlockRealize, IterVarType
from tessel.tir.buffer import Buffer, BufferLoad
from tessel.tir.builtin import if_then_else_op
from tessel.tir.function import PrimFunc
from tessel.tir.index_map import IndexMap
from tessel.tir.stmt import BufferStore

# Points of a packed weight compared with the packing function's own definition after NumPy
# packs it: a wrong decomposition of the map shows, and the compiled function runs instead.
SPOT_CHECKS = 64


@dataclass(frozen=True)
class PackingCopy:
    """A packing stage's copy: `target[store] = source[load]` over the block iterators `iters`
    (extents `extents`), `pad` where the load falls outside the source."""

    source: Buffer
    target: Buffer
    iters: tuple[Var, ...]
    extents: tuple[int, ...]
    store: tuple[PrimExpr, ...]
    load: tuple[PrimExpr, ...]
    pad: float | int


def packing_copy(pack: PrimFunc) -> PackingCopy | None:
    """The copy `pack` (a lifted packing stage: source P, then target P') makes, if it is one
    block of that form (the module docstring); None otherwise."""
    if len(pack.params) != 2:
        return None
    source, target = (pack.buffer_map.get(p) for p in pack.params)
    realizes = [n for n in post_order(pack.body) if isinstance(n, BlockRealize)]
    inner = [r for r in realizes if r.block.name_hint != "root"]
    if source is None or target is None or len(inner) != 1:
        return None
    realize = inner[0]
    block: Block = realize.block
    store = block.body
    if not is_const_int(realize.predicate, 1) or not isinstance(store, BufferStore):
        return None
    if store.buffer is not target or block.init is not None:
        return None
    extents = []
    for iv in block.iter_vars:
        if iv.iter_type != IterVarType.DATA_PAR or not is_const_int(iv.dom.min, 0):
            return None
        if not isinstance(iv.dom.extent, IntImm):
            return None
        extents.append(iv.dom.extent.value)
    found = _load_and_pad(store.value, source)
    if found is None:
        return None
    load, pad = found
    iters = tuple(iv.var for iv in block.iter_vars)
    return PackingCopy(source, target, iters, tuple(extents), tuple(store.indices), load, pad)


def _load_and_pad(
    value: PrimExpr, source: Buffer
) -> tuple[tuple[PrimExpr, ...], float | int] | None:
    """The source indices a copy reads and its padding value: `P[g]`, or `if_then_else(c, P[g],
    pad)` / `if_then_else(c, pad, P[g])` with a constant pad."""
    if isinstance(value, BufferLoad) and value.buffer is source:
        return tuple(value.indices), 0
    if not isinstance(value, Call) or value.op is not if_then_else_op:
        return None
    _, then, other = value.args
    for load, pad in ((then, other), (other, then)):
        is_load = isinstance(load, BufferLoad) and load.buffer is source
        if is_load and isinstance(pad, FloatImm | IntImm):
            return tuple(load.indices), pad.value
    return None


def packing_record(copy: PackingCopy) -> LayoutRecord | None:
    """The pad, reshape and transpose steps from the source's layout to the target's, when the
    copy's map is made of them; None otherwise (a gather, or no map the steps know)."""
    source_shape = _shape(copy.source)
    target_shape = _shape(copy.target)
    if source_shape is None or target_shape is None:
        return None
    try:
        if copy.store == copy.iters and copy.extents == target_shape:
            # The block runs over P' and reads P at g(v): the steps are those of g's inverse.
            inverse = IndexMap(copy.iters, copy.load).inverse(copy.extents)
            initial, final = inverse.initial_indices, inverse.final_indices
        elif copy.load == copy.iters and copy.extents == source_shape:
            initial, final = copy.iters, copy.store
        else:
            return None
        steps = steps_for_index_map(initial, final, source_shape, copy.pad, target_shape)
    except (TesselError, ValueError):
        return None
    if any(isinstance(step, Gather) for step in steps):
        return None  # tabulated per element: the compiled function is faster
    record = LayoutRecord(copy.source.name, source_shape, steps)
    return record if record.new_shape == target_shape else None


def pack_array(copy: PackingCopy, record: LayoutRecord, array: np.ndarray) -> np.ndarray | None:
    """`array` (the source) packed by `record`'s steps, if SPOT_CHECKS points of the copy's own
    definition agree with the result; None otherwise."""
    packed = record.forward(array).astype(array.dtype, copy=False)
    if packed.shape != _shape(copy.target):
        return None
    rng = np.random.default_rng(0)
    points = {
        var: rng.integers(0, extent, SPOT_CHECKS, dtype=np.int64)
        for var, extent in zip(copy.iters, copy.extents, strict=True)
    }
    stores = tuple(np.broadcast_to(evaluate_index(e, points), SPOT_CHECKS) for e in copy.store)
    loads = tuple(np.broadcast_to(evaluate_index(e, points), SPOT_CHECKS) for e in copy.load)
    inside = np.all([(0 <= i) & (i < n) for i, n in zip(loads, array.shape, strict=True)], axis=0)
    expected = np.full(SPOT_CHECKS, copy.pad, dtype=array.dtype)
    clipped = tuple(np.clip(i, 0, n - 1) for i, n in zip(loads, array.shape, strict=True))
    expected[inside] = array[clipped][inside]
    got = packed[stores]
    same = (
        (got == expected) | (np.isnan(got) & np.isnan(expected))
        if got.dtype.kind == "f"
        else got == expected
    )
    return packed if bool(np.all(same)) else None


def _shape(buffer: Buffer) -> tuple[int, ...] | None:
    """The buffer's constant shape, or None."""
    dims = tuple(getattr(d, "value", None) for d in buffer.shape)
    return None if any(d is None for d in dims) else dims  # type: ignore[return-value]
