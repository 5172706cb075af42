"""LoweringError: a lowering pass found IR that does not meet its precondition."""

from __future__ import annotations

from tessel.support.errors import UserError


class LoweringError(UserError):
    """A pass's precondition does not hold; `rule` names it (e.g. `flatten_buffer.no-blocks`)."""
