"""PrimFuncPass: a pass written per PrimFunc, applied to every PrimFunc of a module."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tessel.ir.module import IRModule
from tessel.ir.transform import Pass, PassContext
from tessel.tir.function import PrimFunc


@dataclass(frozen=True)
class PrimFuncPass(Pass):
    """A pass that rewrites each PrimFunc on its own; other functions pass through unchanged."""

    name: ClassVar[str] = "prim_func_pass"

    def transform(self, func: PrimFunc, ctx: PassContext) -> PrimFunc:
        """Rewrite one function; subclasses override this."""
        raise NotImplementedError

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        for gv, func in mod.items():
            if not isinstance(func, PrimFunc):
                continue
            new_func = self.transform(func, ctx)
            if new_func is not func:
                mod = mod.with_function(gv.name_hint, new_func)
        return mod
