"""IRModule: named functions (PrimFuncs now, graph functions later) plus module attributes."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

from tessel.ir.expr import GlobalVar
from tessel.ir.node import Node
from tessel.support.errors import UserError
from tessel.support.frozen_map import FrozenMap, freeze

# A weak reference slot (Python 3.11's dataclasses): passes remember modules by identity without
# keeping them alive (InferType's typed modules); on 3.10 they do without.
_WEAKREF_SLOT = {"weakref_slot": True} if sys.version_info >= (3, 11) else {}


@dataclass(frozen=True, slots=True, eq=False, **_WEAKREF_SLOT)
class IRModule(Node):
    """A set of functions keyed by GlobalVar, with module-level attributes (e.g. "constants")."""

    functions: FrozenMap[GlobalVar, Any] = field(default_factory=FrozenMap)
    attrs: FrozenMap[str, Any] = field(default_factory=FrozenMap)

    def __post_init__(self) -> None:
        if not isinstance(self.functions, FrozenMap):
            object.__setattr__(self, "functions", FrozenMap(self.functions))
        if not isinstance(self.attrs, FrozenMap):
            object.__setattr__(self, "attrs", freeze(self.attrs))
        names = [gv.name_hint for gv in self.functions]
        if len(set(names)) != len(names):
            raise UserError(f"an IRModule has two functions with one name: {sorted(names)}")

    @staticmethod
    def from_func(func: Any, name: str | None = None) -> IRModule:
        """A module holding one function, named by `name`, its global symbol, or "main"."""
        name = name or getattr(func, "name", None) or "main"
        return IRModule(FrozenMap({GlobalVar(name): func}))

    @staticmethod
    def from_dict(functions: dict[str, Any], attrs: dict[str, Any] | None = None) -> IRModule:
        """A module from a name -> function dict."""
        return IRModule(
            FrozenMap({GlobalVar(name): f for name, f in functions.items()}), freeze(attrs or {})
        )

    def get_global_var(self, name: str) -> GlobalVar:
        """The GlobalVar named `name`; a clear error listing the names if there is none."""
        for gv in self.functions:
            if gv.name_hint == name:
                return gv
        raise KeyError(f"no function `{name}` in the module; it has {self.names()}")

    def names(self) -> list[str]:
        """Function names in insertion order."""
        return [gv.name_hint for gv in self.functions]

    def __getitem__(self, key: str | GlobalVar) -> Any:
        gv = self.get_global_var(key) if isinstance(key, str) else key
        return self.functions[gv]

    def __contains__(self, name: str) -> bool:
        return name in self.names()

    def items(self) -> list[tuple[GlobalVar, Any]]:
        """(GlobalVar, function) pairs in insertion order."""
        return list(self.functions.items())

    def with_function(self, name: str, func: Any) -> IRModule:
        """A module with `name` bound to `func` (replacing a function of that name)."""
        functions = dict(self.functions)
        gv = next((g for g in functions if g.name_hint == name), None) or GlobalVar(name)
        functions[gv] = func
        return IRModule(FrozenMap(functions), self.attrs)

    def with_attr(self, key: str, value: Any) -> IRModule:
        """A module with the attribute `key` set."""
        return IRModule(self.functions, self.attrs.set(key, freeze(value)))
