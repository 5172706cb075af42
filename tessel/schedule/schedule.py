"""Schedule: a function being scheduled, its trace, and the primitives as methods
(docs/architecture.md §5)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tessel.ir.module import IRModule
from tessel.schedule import primitives as P
from tessel.schedule.errors import ScheduleError
from tessel.schedule.handles import BlockRV, BufferAxisRV, LoopRV
from tessel.schedule.methods.cache import CacheMethods
from tessel.schedule.methods.compute import ComputeMethods
from tessel.schedule.methods.layout import LayoutMethods, ParamLayout
from tessel.schedule.methods.reduction import ReductionMethods
from tessel.schedule.methods.tensorize import TensorizeMethods
from tessel.schedule.primitives.unit_iters import drop_unit_iters
from tessel.schedule.recording import recorded
from tessel.schedule.state import Located, block_names, find_block_realize, find_loop
from tessel.schedule.trace import Trace
from tessel.tir.block import BlockRealize
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import For


class Schedule(ComputeMethods, CacheMethods, ReductionMethods, TensorizeMethods, LayoutMethods):
    """Schedules one PrimFunc (of a module, by name): `Schedule(func)`, then primitives."""

    def __init__(
        self, func_or_mod: PrimFunc | IRModule, func_name: str | None = None, *, verify: bool = True
    ) -> None:
        """`verify` checks the IR after every primitive (TVM's debug_mask)."""
        self.verify = verify
        if isinstance(func_or_mod, IRModule):
            names = func_or_mod.names()
            self._name = func_name or (names[0] if len(names) == 1 else "main")
            if self._name not in names:
                raise ValueError(f"the module has functions {names}; pass func_name= to pick one")
            self._module: IRModule | None = func_or_mod
            func = func_or_mod[self._name]
        else:
            self._name, self._module, func = func_name or "main", None, func_or_mod
        names = block_names(func)
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ScheduleError(
                "schedule",
                "unique-block-names",
                f"block names must be unique, but {duplicates} occur twice",
                func=func,
            )
        self._func: PrimFunc = func
        self.trace = Trace()
        self._layouts: dict[str, ParamLayout] = {}
        self._buffer_axes: dict[str, list[BufferAxisRV]] = {}

    # ------------------------------------------------------------------ the function
    @property
    def func(self) -> PrimFunc:
        """The function as scheduled so far."""
        return self._func

    @property
    def mod(self) -> IRModule:
        """The module with the scheduled function in place."""
        if self._module is None:
            return IRModule.from_func(self._func, self._name)
        return self._module.with_function(self._name, self._func)

    # ------------------------------------------------------------------ lookups
    def block(self, rv: BlockRV | str, primitive: str = "get") -> BlockRealize:
        """The BlockRealize a handle (or a block name) names (ScheduleError if it is gone)."""
        name = rv if isinstance(rv, str) else rv.name
        located = find_block_realize(self._func, name)
        if located is None:
            raise ScheduleError(primitive, "stale-handle", f"no block `{name}` in the function")
        _refuse_in_init(primitive, located, f"block `{name}`")
        return located.node

    def loop(self, rv: LoopRV, primitive: str = "get") -> For:
        """The For loop a handle names (ScheduleError if a primitive removed it)."""
        located = find_loop(self._func, rv.loop_var)
        if located is None:
            raise ScheduleError(
                primitive,
                "stale-handle",
                f"loop `{rv.loop_var.name}` is no longer in the function "
                "(a primitive such as fuse or split replaced it)",
            )
        _refuse_in_init(primitive, located, f"loop `{rv.loop_var.name}`")
        return located.node

    @recorded
    def get_block(self, name: str) -> BlockRV:
        """The block called `name`."""
        if find_block_realize(self._func, name) is None:
            raise ScheduleError(
                "get_block",
                "no-such-block",
                f"no block `{name}`; blocks: {block_names(self._func)}",
            )
        return BlockRV(name)

    @recorded
    def get_loops(self, block: BlockRV) -> list[LoopRV]:
        """The loops around `block` inside its enclosing block, outermost first."""
        located = find_block_realize(self._func, block.name)
        if located is None:
            raise ScheduleError("get_loops", "stale-handle", f"no block `{block.name}`")
        return [LoopRV(loop.loop_var) for loop in located.enclosing_loops()]

    # ------------------------------------------------------------------ loop primitives
    @recorded
    def split(
        self, loop: LoopRV, factors: Sequence[int | None], preserve_unit_iters: bool = True
    ) -> list[LoopRV]:
        """Split `loop` into nested loops of the given extents (one None is inferred); without
        `preserve_unit_iters` (TVM's flag) unit loops leave the bindings under it."""
        func, new_vars = P.split(self, loop, list(factors))
        self._func = func if preserve_unit_iters else drop_unit_iters(func, new_vars[0])
        return [LoopRV(v) for v in new_vars]

    @recorded
    def fuse(self, *loops: LoopRV, preserve_unit_iters: bool = True) -> LoopRV:
        """Fuse directly nested loops into one; without `preserve_unit_iters` (TVM's flag) unit
        loops leave the bindings under it."""
        func, var = P.fuse(self, loops)
        self._func = func if preserve_unit_iters else drop_unit_iters(func, var)
        return LoopRV(var)

    @recorded
    def reorder(self, *loops: LoopRV) -> None:
        """Reorder loops of one perfect nest into the given order."""
        self._func = P.reorder(self, loops)

    @recorded
    def parallel(self, loop: LoopRV) -> None:
        """Run `loop`'s iterations in parallel (OpenMP in C)."""
        self._func = P.set_kind(self, "parallel", loop)

    @recorded
    def vectorize(self, loop: LoopRV, vector_length: int | None = None) -> None:
        """Mark `loop` to be vectorized, `vector_length` iterations a vector op (masked lanes)."""
        # With a length, the same code as split(loop, [None, vector_length]) and vectorizing
        # the inner loop (TVM's SVE RFC 18); without, the target's vector width decides.
        self._func = P.vectorize(self, loop, vector_length)

    @recorded
    def unroll(self, loop: LoopRV) -> None:
        """Mark `loop` to be unrolled."""
        self._func = P.set_kind(self, "unroll", loop)

    @recorded
    def bind(self, loop: LoopRV, thread_axis: str) -> None:
        """Bind `loop` to a thread axis (`threadIdx.x`, `blockIdx.x`, ...)."""
        self._func = P.set_kind(self, "bind", loop, thread_axis)

    @recorded
    def annotate(self, target: LoopRV | BlockRV, ann_key: str, ann_val: Any) -> None:
        """Attach an annotation (any script value) to a loop or block."""
        self._func = P.annotate(self, target, ann_key, ann_val)

    @recorded
    def unannotate(self, target: LoopRV | BlockRV, ann_key: str) -> None:
        """Remove an annotation from a loop or block."""
        self._func = P.annotate(self, target, ann_key, None, remove=True)


def _refuse_in_init(primitive: str, located: Located, what: str) -> None:
    owner = located.init_owner()
    if owner is not None:
        raise ScheduleError(
            primitive,
            "in-init",
            f"{what} is in the init of block `{owner.name_hint}`, which runs as "
            "part of that block and is not scheduled on its own",
            hint=f"decompose_reduction of `{owner.name_hint}` makes the init a block of its own",
        )
