"""Schedule methods: tensorize (intrinsics are registered in `tessel.schedule.tensor_intrin`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from tessel.schedule.errors import ScheduleError
from tessel.schedule.handles import BlockRV, LoopRV
from tessel.schedule.primitives import tensorize as tensorize_primitive
from tessel.schedule.primitives.blockize import blockize
from tessel.schedule.recording import recorded
from tessel.schedule.tensor_intrin import TensorIntrin, TensorIntrinError

if TYPE_CHECKING:
    from tessel.schedule.schedule import Schedule
    from tessel.tir.function import PrimFunc


class TensorizeMethods:
    """Mixed into Schedule: tensorize."""

    _func: PrimFunc

    @recorded
    def tensorize(self, block_or_loop: BlockRV | LoopRV, intrin_name: str) -> None:
        """Replace a block's body (a loop is blockized first) by the impl of the tensor
        intrinsic `intrin_name`, once the block matches the intrinsic's desc."""
        sch = cast("Schedule", self)  # a mixin: self is always a Schedule
        try:
            intrin = TensorIntrin.get(intrin_name)
        except TensorIntrinError as err:
            raise ScheduleError("tensorize", "unknown-intrin", err.message, hint=err.hint) from err
        block = block_or_loop
        if isinstance(block_or_loop, LoopRV):
            self._func, name = blockize(sch, block_or_loop)
            block = BlockRV(name)
        self._func = tensorize_primitive.tensorize(sch, cast(BlockRV, block), intrin)
