"""ExtractConstants: hoist constant arrays into the module attribute "constants" (TVM's RFC 22).

Every `AllocateConst` that carries `data` is rewritten to refer to the module's "constants" by
`irmod_storage_idx` instead (the two are exclusive, docs/architecture.md §6). Identical arrays (same
dtype, shape and bytes) share one entry, across all functions of the module, so code generation
emits or receives each constant once. Constants already in the attribute keep their indices; an
`AllocateConst` already using `irmod_storage_idx` is left alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from tessel.ir.functor import Mutator
from tessel.ir.module import IRModule
from tessel.ir.node import Node, with_changes
from tessel.ir.transform import Pass, PassContext
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import AllocateConst

CONSTANTS_ATTR = "constants"

_Key = tuple[str, tuple[int, ...], bytes]


@dataclass(frozen=True)
class ExtractConstants(Pass):
    """Move the data of every AllocateConst into the module's "constants", deduplicated."""

    name: ClassVar[str] = "extract_constants"

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        pool = _ConstantPool(mod.attrs.get(CONSTANTS_ATTR, ()))
        for gv, func in mod.items():
            if not isinstance(func, PrimFunc):
                continue
            new_func = with_changes(func, body=_Hoister(pool).visit(func.body))
            if new_func is not func:
                mod = mod.with_function(gv.name_hint, new_func)
        if pool.added:
            mod = mod.with_attr(CONSTANTS_ATTR, tuple(pool.arrays))
        return mod


class _ConstantPool:
    """The module's constants so far, and the index of each distinct array among them."""

    def __init__(self, existing: Sequence[np.ndarray]) -> None:
        self.arrays: list[np.ndarray] = list(existing)
        self.index: dict[_Key, int] = {}
        for i, array in enumerate(self.arrays):
            self.index.setdefault(_key(np.asarray(array)), i)
        self.added = False

    def add(self, data: np.ndarray) -> int:
        """The index of an array equal to `data`, appending a read-only copy if there is none."""
        key = _key(data)
        if key not in self.index:
            array = np.array(data, copy=True, order="C")
            array.setflags(write=False)
            self.index[key] = len(self.arrays)
            self.arrays.append(array)
            self.added = True
        return self.index[key]


def _key(array: np.ndarray) -> _Key:
    """Equal keys exactly for arrays of the same dtype, shape and bytes (so -0.0 differs from
    0.0, and a NaN equals a NaN with the same bits)."""
    return array.dtype.str, tuple(array.shape), np.ascontiguousarray(array).tobytes()


class _Hoister(Mutator):
    def __init__(self, pool: _ConstantPool) -> None:
        super().__init__()
        self.pool = pool

    def visit_AllocateConst(self, node: AllocateConst) -> Node:
        if node.data is None:
            return with_changes(node, body=self.visit(node.body))
        index = self.pool.add(node.data)  # before the body: indices follow program order
        return with_changes(node, data=None, irmod_storage_idx=index, body=self.visit(node.body))
