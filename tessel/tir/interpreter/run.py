"""Entry points: compile a PrimFunc to closures once, then run it on NumPy arguments."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tessel.ir.module import IRModule
from tessel.tir.function import PrimFunc
from tessel.tir.interpreter.arguments import compile_argument_binder, defined_by_parameters
from tessel.tir.interpreter.calls import FunctionReturn
from tessel.tir.interpreter.compiler import Compiler
from tessel.tir.interpreter.errors import InterpreterError
from tessel.tir.interpreter.values import Fn
from tessel.tir.interpreter.views import CONSTANTS_SLOT, compile_buffer_binder


@dataclass(frozen=True)
class CompiledFunction:
    """A PrimFunc compiled to closures; call it like the function (arrays are written in place)."""

    func: PrimFunc
    initial_env: tuple[Any, ...]
    bind_arguments: Callable[[list, Sequence[Any]], None]
    body: Fn

    def __call__(self, *args: Any, constants: Sequence[np.ndarray] | None = None) -> Any:
        env = list(self.initial_env)
        if constants is not None:
            env[CONSTANTS_SLOT] = constants
        with np.errstate(all="ignore"):  # IEEE results (inf, nan) are the semantics, not news
            self.bind_arguments(env, args)
            try:
                self.body(env)
            except FunctionReturn as ret:
                return ret.value
        return None


def compile_prim_func(func: PrimFunc) -> CompiledFunction:
    """Compile `func` once, to run it many times."""
    if not isinstance(func, PrimFunc):
        raise InterpreterError(
            f"the interpreter runs a PrimFunc, got {type(func).__name__}",
            rule="interpreter.argument",
        )
    c = Compiler()
    bind_arguments = compile_argument_binder(c, func)
    with c.binding(defined_by_parameters(func)), c.declaring(func.param_buffers()):
        body = c.stmt(func.body)
    data_vars = [b.data for b in func.param_buffers()] + list(func.params)
    implicit = [compile_buffer_binder(c, b) for v in data_vars for b in c.take_implicit(v)]
    c.check_all_buffers_defined()

    def run_body(env: list) -> None:
        for bind in implicit:
            bind(env)
        body(env)

    return CompiledFunction(func, tuple(c.initial_env), bind_arguments, run_body)


def _select_function(mod: IRModule, name: str | None) -> PrimFunc:
    if name is not None:
        return mod[name]
    if "main" in mod:
        return mod["main"]
    if len(mod.functions) == 1:
        return next(iter(mod.functions.values()))
    raise InterpreterError(
        f"the module has several functions {mod.names()} and none is `main`; pass name=",
        rule="interpreter.argument",
    )


def run(
    func: PrimFunc | IRModule,
    *args: Any,
    name: str | None = None,
    constants: Sequence[np.ndarray] | None = None,
) -> Any:
    """Run a PrimFunc (or the function `name` of an IRModule, default "main") on `args`.

    One argument per parameter: a NumPy array for each buffer parameter (read and written in
    place), a number for each scalar parameter. `constants` backs AllocateConst nodes that use
    irmod_storage_idx; for a module it defaults to the module's "constants" attribute.
    Returns the value of T.ret(...) if the function returns one, else None.
    """
    if isinstance(func, IRModule):
        if constants is None:
            constants = func.attrs.get("constants")
        func = _select_function(func, name)
    return compile_prim_func(func)(*args, constants=constants)
