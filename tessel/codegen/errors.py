"""CodegenError: lowered IR that the C code generator cannot (yet) turn into C."""

from __future__ import annotations

from tessel.support.errors import UserError


class CodegenError(UserError):
    """The IR holds something C generation does not support; `rule` names it (`codegen.*`)."""
