"""LoweringError: a lowering pass found IR that does not meet its precondition."""

from __future__ import annotations

from tessel.support.errors import UserError
from tessel.tir.analysis.blocks import first_block
from tessel.tir.function import PrimFunc


class LoweringError(UserError):
    """A pass's precondition does not hold; `rule` names it (e.g. `flatten_buffer.no-blocks`)."""


def require_no_blocks(func: PrimFunc, who: str, rule: str, hint: str) -> None:
    """Raise LoweringError (`rule`) if a block remains in `func`: `who` needs loop-level IR."""
    block = first_block(func.body)
    if block is not None:
        raise LoweringError(
            f"{who} needs a function without blocks, but block `{block.name_hint}` remains",
            rule=rule,
            hint=hint,
        )
