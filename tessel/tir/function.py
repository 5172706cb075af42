"""PrimFunc: a TensorIR function with parameters, their buffers, a body and attributes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tessel.ir.expr import Var
from tessel.ir.node import Node
from tessel.support.dtype import DataType
from tessel.support.errors import IRTypeError
from tessel.support.frozen_map import FrozenMap, freeze
from tessel.tir.buffer import Buffer
from tessel.tir.stmt import Stmt


@dataclass(frozen=True, slots=True, eq=False)
class PrimFunc(Node):
    """A TensorIR function; `buffer_map` gives the Buffer behind each handle parameter."""

    params: tuple[Var, ...]
    body: Stmt
    ret_type: DataType | None = None
    buffer_map: FrozenMap[Var, Buffer] = field(default_factory=FrozenMap)
    attrs: FrozenMap[str, Any] = field(default_factory=FrozenMap)

    def __post_init__(self) -> None:
        if not isinstance(self.buffer_map, FrozenMap):
            object.__setattr__(self, "buffer_map", FrozenMap(self.buffer_map))
        if not isinstance(self.attrs, FrozenMap):
            object.__setattr__(self, "attrs", freeze(self.attrs))
        symbol = self.attrs.get("global_symbol")
        if symbol is not None and not isinstance(symbol, str):
            raise IRTypeError(
                f"the attribute `global_symbol` of a PrimFunc must be a string, got {symbol!r}",
                rule="prim_func.global-symbol",
            )
        params = set(self.params)
        for var in self.buffer_map:
            if var not in params:
                raise IRTypeError(f"buffer_map names `{var.name}`, which is not a parameter")

    @property
    def name(self) -> str | None:
        """The function's global symbol, if it has one."""
        return self.attrs.get("global_symbol")

    def with_name(self, name: str) -> PrimFunc:
        """This function with `global_symbol` set to `name`."""
        return PrimFunc(
            self.params,
            self.body,
            self.ret_type,
            self.buffer_map,
            self.attrs.set("global_symbol", name),
            span=self.span,
        )

    def param_buffers(self) -> list[Buffer]:
        """The buffers of the handle parameters, in parameter order."""
        return [self.buffer_map[p] for p in self.params if p in self.buffer_map]
