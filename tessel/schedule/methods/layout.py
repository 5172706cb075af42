"""Schedule methods that change buffer layouts (docs/architecture.md §5): transform_layout,
the step-by-step buffer primitives (get_buffer_axes, buffer_split, buffer_fuse,
buffer_reorder), set_axis_separator, transform_block_layout, and the graph-level records of
changed parameters."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tessel.ir import builders
from tessel.ir.expr import FloatImm, IntImm, PrimExpr
from tessel.schedule.errors import ScheduleError
from tessel.schedule.handles import BlockRV, BufferAxisRV
from tessel.schedule.layout_steps import LayoutRecord, Step, steps_for_index_map
from tessel.schedule.primitives import buffer_axes as A
from tessel.schedule.primitives.block_layout import set_axis_separator, transform_block_layout
from tessel.schedule.primitives.layout import (
    LayoutChange,
    as_index_map,
    function_buffers,
    plan_change,
    resolve_buffer,
    rewrite_function,
)
from tessel.schedule.primitives.layout_padding import compose_assumption, place_padding
from tessel.schedule.primitives.layout_reduction import check_reduction_padding
from tessel.schedule.primitives.pad_einsum import pad_einsum
from tessel.schedule.recording import recorded, recorded_as
from tessel.tir.buffer import Buffer
from tessel.tir.index_map import IndexMap

if TYPE_CHECKING:
    from tessel.tir.function import PrimFunc


@dataclass(frozen=True)
class ParamLayout:
    """A parameter's layout so far: its original buffer, the one map composed from every step,
    the constant pad of its padding (None: none or unspecified) and the graph-level record."""

    original: Buffer
    index_map: IndexMap
    pad: PrimExpr | None
    record: LayoutRecord | None


class LayoutMethods:
    """Mixed into Schedule: the layout primitives."""

    _func: PrimFunc
    _layouts: dict[str, ParamLayout]
    _buffer_axes: dict[str, list[BufferAxisRV]]

    def transform_layout(
        self,
        block: BlockRV,
        buffer: Any,
        index_map: Any,
        pad_value: Any = None,
        *,
        assume_injective_transform: bool = False,
    ) -> None:
        """Give `buffer` (`("read"|"write", i)`, a name, or a Buffer) the layout `index_map`
        everywhere; new elements are padding holding `pad_value` (docs/architecture.md §5)."""
        # self is a Schedule
        old = resolve_buffer(self, "transform_layout", block, buffer)  # type: ignore[arg-type]
        imap = as_index_map(
            self,
            "transform_layout",
            index_map,
            len(old.shape),
            _index_dtype(old.shape),
        )
        if callable(pad_value) and not isinstance(pad_value, IndexMap | PrimExpr):
            pad_value = IndexMap.from_func(
                pad_value, ndim=len(imap.final_indices), index_dtype=_index_dtype(old.shape)
            )
        spec = buffer if isinstance(buffer, tuple | list | str) else old.name
        self._transform_layout(
            block, spec, imap, pad_value, assume_injective_transform=assume_injective_transform
        )

    @recorded_as("transform_layout")
    def _transform_layout(
        self,
        block: BlockRV,
        buffer: Any,
        index_map: IndexMap,
        pad_value: Any,
        *,
        assume_injective_transform: bool,
    ) -> None:
        # self is a Schedule
        old = resolve_buffer(self, "transform_layout", block, buffer)  # type: ignore[arg-type]
        self._relayout("transform_layout", old, index_map, pad_value, assume_injective_transform)
        self._buffer_axes.pop(old.name, None)

    # ------------------------------------------------------------------ step by step
    @recorded
    def get_buffer_axes(self, block: BlockRV, buffer: Any) -> list[BufferAxisRV]:
        """Handles to the axes of `buffer`'s current layout, in order."""
        # self is a Schedule
        old = resolve_buffer(self, "get_buffer_axes", block, buffer)  # type: ignore[arg-type]
        axes = [BufferAxisRV(old.name) for _ in old.shape]
        self._buffer_axes[old.name] = axes
        return list(axes)

    @recorded
    def buffer_split(
        self, axis: BufferAxisRV, factors: Sequence[int | None], pad_value: Any = None
    ) -> list[BufferAxisRV]:
        """Split one buffer axis into `len(factors)` axes (one factor may be None: inferred),
        padding the axis when the factors' product exceeds it; the outermost factor may not pass
        the rows the axis fills (`ceil(extent / inner)`). Returns the new axes."""
        buffer, axes, position = self._axis("buffer_split", axis)
        # self is a Schedule
        imap, parts = A.split_map(self, buffer, position, factors)  # type: ignore[arg-type]
        steps = A.split_record(buffer, position, parts, pad_value)
        self._relayout("buffer_split", buffer, imap, pad_value, False, steps)
        new_axes = [BufferAxisRV(buffer.name) for _ in parts]
        self._buffer_axes[buffer.name] = axes[:position] + new_axes + axes[position + 1 :]
        return new_axes

    @recorded
    def buffer_fuse(self, *axes: BufferAxisRV) -> BufferAxisRV:
        """Fuse consecutive buffer axes (in order) into one. Returns the fused axis."""
        buffer, current, positions = self._axes("buffer_fuse", axes)
        imap = A.fuse_map(self, buffer, positions)  # type: ignore[arg-type]  # self is a Schedule
        self._relayout("buffer_fuse", buffer, imap, None, False, A.fuse_record(buffer, positions))
        fused = BufferAxisRV(buffer.name)
        self._buffer_axes[buffer.name] = (
            current[: positions[0]] + [fused] + current[positions[-1] + 1 :]
        )
        return fused

    @recorded
    def buffer_reorder(self, *axes: BufferAxisRV) -> None:
        """Put the given buffer axes, at the positions they occupy together, in the given order."""
        buffer, current, positions = self._axes("buffer_reorder", axes, consecutive=False)
        order = A.reorder_permutation(len(current), positions)
        imap = A.permute_map(buffer, order)
        self._relayout("buffer_reorder", buffer, imap, None, False, A.reorder_record(buffer, order))
        self._buffer_axes[buffer.name] = [current[k] for k in order]

    def buffer_index_map(self, buffer: str) -> IndexMap | None:
        """The one map composed from every layout step on parameter `buffer` (None: unchanged)."""
        layout = self._layouts.get(buffer)
        return None if layout is None else layout.index_map

    def layout_records(self) -> dict[str, LayoutRecord]:
        """For each parameter whose layout changed: the graph-level steps there and back."""
        return {
            name: layout.record
            for name, layout in self._layouts.items()
            if layout.record is not None
        }

    # ------------------------------------------------------------------ other layout primitives
    @recorded
    def set_axis_separator(
        self, block: BlockRV, buffer: Any, axis_separators: Sequence[int]
    ) -> None:
        """Group `buffer`'s axes into physical axes, split before each of `axis_separators`."""
        # self is a Schedule
        old = resolve_buffer(self, "set_axis_separator", block, buffer)  # type: ignore[arg-type]
        # self is a Schedule
        self._func = set_axis_separator(self, old, tuple(axis_separators))  # type: ignore[arg-type]

    @recorded
    def pad_einsum(self, block: BlockRV, padding: Sequence[int]) -> None:
        """Pad the block's spatial iterators to multiples of `padding` (a factor per iterator):
        inputs it would read past are zero-padded copies, its output a padded buffer copied back
        by a new block `<output>_unpad` (tiles then divide the domain; RFC 77)."""
        self._func = pad_einsum(self, block, list(padding))  # type: ignore[arg-type]  # a Schedule

    def transform_block_layout(self, block: BlockRV, index_map: Any) -> None:
        """Remap the block's iteration space by the bijection `index_map` (over its iterators)."""
        # self is a Schedule
        iters = self.block(block, "transform_block_layout").block.iter_vars  # type: ignore[attr-defined]
        imap = as_index_map(
            self,
            "transform_block_layout",
            index_map,
            len(iters),
            _index_dtype([iv.var for iv in iters]),
        )
        self._transform_block_layout(block, imap)

    @recorded_as("transform_block_layout")
    def _transform_block_layout(self, block: BlockRV, index_map: IndexMap) -> None:
        # self is a Schedule
        self._func = transform_block_layout(self, block, index_map)  # type: ignore[arg-type]

    # ------------------------------------------------------------------ the shared machinery
    def _relayout(
        self,
        primitive: str,
        old: Buffer,
        imap: IndexMap,
        pad_value: Any,
        assume_injective: bool,
        steps: tuple[Step, ...] | None = None,
    ) -> None:
        """Apply one layout change of `old`, placing its padding; remember a parameter's history."""
        # self is a Schedule
        change = plan_change(self, primitive, old, imap, pad_value, assume_injective)  # type: ignore[arg-type]
        # self is a Schedule
        check_reduction_padding(self, primitive, self._func, change)  # type: ignore[arg-type]
        func = rewrite_function(self._func, change)
        param = old in self._func.buffer_map.values()
        prior = self._layouts.get(old.name) if param else None
        composed = compose_assumption(func, prior, change) if prior is not None else None
        self._func = composed if composed is not None else place_padding(func, change)
        if param:
            self._layouts[old.name] = self._param_layout(prior, change, steps)

    def _param_layout(
        self, prior: ParamLayout | None, change: LayoutChange, steps: tuple[Step, ...] | None
    ) -> ParamLayout:
        original = change.old if prior is None else prior.original
        imap = change.index_map if prior is None else prior.index_map.then(change.index_map)
        pad = change.pad if change.has_padding else (None if prior is None else prior.pad)
        record = _record(prior, change, steps)
        return ParamLayout(original, imap, pad, record)

    def _axis(self, primitive: str, axis: BufferAxisRV) -> tuple[Buffer, list[BufferAxisRV], int]:
        """The buffer, its current axes and the position of `axis`, or a stale-handle error."""
        axes = self._buffer_axes.get(axis.buffer, [])
        position = next((k for k, a in enumerate(axes) if a is axis), None)
        if position is None:
            raise ScheduleError(
                primitive,
                "stale-handle",
                f"this axis of `{axis.buffer}` is not one of its current axes (a later "
                "layout step replaced it); call get_buffer_axes again",
                func=self._func,
            )
        buffer = next(b for b in function_buffers(self._func) if b.name == axis.buffer)
        return buffer, axes, position

    def _axes(
        self, primitive: str, axes: Sequence[BufferAxisRV], *, consecutive: bool = True
    ) -> tuple[Buffer, list[BufferAxisRV], list[int]]:
        if not axes or len({a.buffer for a in axes}) != 1:
            raise ScheduleError(
                primitive,
                "axes-of-one-buffer",
                "give one or more axes, all of the same buffer",
                func=self._func,
            )
        buffer, current, _ = self._axis(primitive, axes[0])
        positions = [self._axis(primitive, a)[2] for a in axes]
        if len(set(positions)) != len(positions):
            raise ScheduleError(
                primitive, "distinct-axes", "an axis is given twice", func=self._func
            )
        if consecutive and positions != list(range(positions[0], positions[0] + len(positions))):
            raise ScheduleError(
                primitive,
                "consecutive-axes",
                f"buffer_fuse fuses consecutive axes in order; got positions {positions} "
                f"of `{buffer.name}`",
                func=self._func,
            )
        return buffer, current, positions


def _record(
    prior: ParamLayout | None, change: LayoutChange, steps: tuple[Step, ...] | None
) -> LayoutRecord | None:
    """The parameter's graph-level record with this change's steps appended (None when a shape
    is not constant: graph-level steps need static shapes)."""
    shape = _static_shape(change.old.shape)
    if shape is None or (prior is not None and prior.record is None):
        return None
    if steps is None:
        pad = change.pad if change.pad is not None else builders.const(0, change.old.dtype)
        if not isinstance(pad, IntImm | FloatImm):
            pad = builders.const(0, change.old.dtype)
        steps = steps_for_index_map(
            change.index_map.initial_indices,
            change.index_map.final_indices,
            shape,
            pad.value,
            _static_shape(change.new.shape),
        )
    if prior is None:
        record = LayoutRecord(change.old.name, shape, tuple(steps))
    else:
        assert prior.record is not None
        record = prior.record.then(tuple(steps))
    # The caller lays the argument out by the record, the function by its signature.
    assert record.new_shape == _static_shape(change.new.shape), (record, change.new.shape)
    return record


def _static_shape(shape: Sequence[PrimExpr]) -> tuple[int, ...] | None:
    if all(builders.is_const_int(e) for e in shape):
        return tuple(e.value for e in shape)  # type: ignore[attr-defined]  # IntImms
    return None


def _index_dtype(indices: Any) -> str:
    """int64 where the buffer's shape (or the block's iterators) are int64, else int32."""
    return "int64" if any(str(getattr(e, "dtype", "")) == "int64" for e in indices) else "int32"
