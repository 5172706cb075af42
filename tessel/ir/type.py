"""Types that are not data types: pointer types carry a buffer's storage scope."""

from __future__ import annotations

from dataclasses import dataclass

from tessel.support.dtype import DataType


@dataclass(frozen=True, slots=True)
class PointerType:
    """The type of a buffer's data variable: what it points to, and in which memory scope."""

    element_type: DataType
    storage_scope: str = "global"
