"""Calls between the PrimFuncs of one module in C (tessel.tir.module_calls).

A function another one calls is defined as a `static` internal function taking what its entry
takes (data pointers, `restrict` when it promises noalias, and scalars), plus the module's
constant table when it or a function it calls reads module constants. Its exported entry is a
wrapper that calls it, so the runtime's checked call and a call from `main` run the same code;
a function with a bare handle parameter (`A_data: T.handle("float32")`) has no entry, since the
runtime cannot check what such a parameter points to. A call passes each pointer cast to the
parameter's C type (an arena is bytes) and returns the callee's error, after freeing what the
caller allocated, when the callee fails.

`restrict` stays sound when `main` passes views of one arena: each callee's own parameters do
not overlap (checked for constant offsets by tessel.tir.module_calls, guaranteed by the graph's
memory planner), and the arena itself is not a parameter of the callee.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tessel.codegen.c_types import c_type
from tessel.codegen.errors import CodegenError
from tessel.ir.expr import Call, GlobalVar, Var
from tessel.ir.module import IRModule
from tessel.support.names import unique_name
from tessel.tir.function import PrimFunc
from tessel.tir.module_calls import called_names, module_calls


@dataclass(frozen=True)
class CalleeC:
    """How C code calls the internal function of a module function."""

    symbol: str  # the static function's name
    param_types: tuple[str, ...]  # the C type of each parameter, in order
    table: bool  # takes the module's constant table last


def param_c_type(func: PrimFunc, param: Var, restrict: bool) -> str:
    """The C type of a parameter of a module function (a pointer for a buffer or a handle)."""
    buffer = func.buffer_map.get(param)
    qualifier = " restrict" if restrict else ""
    if buffer is not None:
        return f"{c_type(buffer.dtype)}*{qualifier}"
    if param.dtype.is_handle:
        annotation = param.type_annotation
        element = "void" if annotation is None else c_type(annotation.element_type)
        return f"{element}*{qualifier}"
    return c_type(param.dtype)


def needs_constant_table(mod: IRModule, reads_constants: Callable[[PrimFunc], bool]) -> set[str]:
    """The functions that take the constant table: those reading module constants, and their
    callers (a callee's table comes from its caller)."""
    funcs = {gv.name_hint: f for gv, f in mod.items() if isinstance(f, PrimFunc)}
    needs = {name for name, func in funcs.items() if reads_constants(func)}
    callees = {name: {_callee(c) for c in module_calls(func)} for name, func in funcs.items()}
    changed = True
    while changed:  # the call graph has no cycles, so this stops
        changed = False
        for name in funcs:
            if name not in needs and callees[name] & needs:
                needs.add(name)
                changed = True
    return needs


def internal_functions(
    mod: IRModule, symbols: dict[str, str], taken: set[str], tables: set[str]
) -> dict[str, CalleeC]:
    """The called functions' internal C functions, named before any body is written."""
    callees: dict[str, CalleeC] = {}
    for name in sorted(called_names(mod), key=mod.names().index):
        func = mod[name]
        restrict = bool(func.attrs.get("tir.noalias", True))
        types = tuple(param_c_type(func, p, restrict) for p in func.params)
        symbol = unique_name(f"{symbols[name]}_impl", taken)
        callees[name] = CalleeC(symbol, types, name in tables)
    return callees


def has_bare_handle(func: PrimFunc) -> bool:
    """True if a parameter is a handle without a buffer (such a function is internal only)."""
    return any(p.dtype.is_handle and p not in func.buffer_map for p in func.params)


def call_text(callee: CalleeC, args: list[str], table: str | None) -> str:
    """The C call of an internal function; each argument cast to its parameter's type."""
    types = [t.replace(" restrict", "") for t in callee.param_types]
    texts = [f"({t})({a})" for t, a in zip(types, args, strict=True)]
    if callee.table:
        if table is None:
            raise CodegenError(
                "a function reading module constants is called from one without the constant table",
                rule="codegen.call-constants",
            )
        texts.append(table)
    return f"{callee.symbol}({', '.join(texts)})"


def wrapper_text(
    header: str, callee: CalleeC, arg_names: list[str], checks: list[str] | None = None
) -> str:
    """The exported entry of a called function: its `checks` (C statements: the extents the
    internal function computes from its scalars, given to the entry as sizes), then a call of
    the internal one."""
    call = f"  return {callee.symbol}({', '.join(arg_names)});"
    return "\n".join([f"{header} {{", *(checks or []), call, "}", ""])


def _callee(call: Call) -> str:
    assert isinstance(call.op, GlobalVar)
    return call.op.name_hint
