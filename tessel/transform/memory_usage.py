"""The memory a lowered module needs besides its arguments: stack, workspace and constants.

docs/architecture.md §6: the memory planner counts constants. Per function, the report gives

- stack and workspace bytes: the peak over the function's nested allocation scopes (an
  allocation is live for its `Allocate`'s body, as the C code frees or pops it at the end of its
  scope; allocations in sibling scopes do not add up). Each allocation is put on the stack or in
  the workspace by `tir.stack_placement`, the rule code generation applies, so the split is the
  C code's. Allocations of symbolic size (always workspace) cannot be counted: they are listed
  by name. An allocation inside a parallel loop counts once, i.e. per thread;
- constant bytes: constant arrays held in the function (`AllocateConst` with data) and the
  module constants it refers to (`irmod_storage_idx`, after ExtractConstants).

Module constants are deduplicated by ExtractConstants, so the module total counts each one
once, however many functions use it. Run the report on the lowered module (after
StorageRewrite, so shared allocations count once).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from tessel.ir.expr import Call
from tessel.ir.functor import Visitor
from tessel.ir.module import IRModule
from tessel.ir.target import Target
from tessel.tir.function import PrimFunc
from tessel.tir.module_calls import check_module_calls, is_module_call, module_calls
from tessel.tir.stack_placement import allocation_bytes, placement_of, storage_scope
from tessel.tir.stmt import Allocate, AllocateConst
from tessel.transform.errors import LoweringError, require_no_blocks
from tessel.transform.extract_constants import CONSTANTS_ATTR


@dataclass(frozen=True)
class FunctionMemory:
    """What one function allocates: peak stack and workspace, and its constants."""

    name: str
    stack_bytes: int
    workspace_bytes: int
    dynamic_workspace: tuple[str, ...]  # allocations of symbolic size, not in workspace_bytes
    inline_constant_bytes: int  # constant arrays held in the function itself
    module_constants: tuple[int, ...]  # indices of the module constants it refers to
    module_constant_bytes: int  # their bytes, each once

    @property
    def constant_bytes(self) -> int:
        """Bytes of every constant the function reads."""
        return self.inline_constant_bytes + self.module_constant_bytes


@dataclass(frozen=True)
class MemoryUsage:
    """The memory report of a module for one target (print it for a table)."""

    target: Target
    functions: tuple[FunctionMemory, ...]
    constant_bytes: int  # the module's constants: module constants once, plus inline ones

    def __getitem__(self, name: str) -> FunctionMemory:
        """The report of the function named `name`."""
        for function in self.functions:
            if function.name == name:
                return function
        raise KeyError(f"no function `{name}` in the report; it has {self.names()}")

    def names(self) -> list[str]:
        """The names of the reported functions, in module order."""
        return [f.name for f in self.functions]

    def __str__(self) -> str:
        header = ("function", "stack", "workspace", "constants")
        rows = [header] + [_row(f) for f in self.functions]
        widths = [max(len(row[k]) for row in rows) for k in range(len(header))]
        lines = [
            f"memory usage in bytes (target {self.target.kind}, max_stack_alloca_size "
            f"{self.target.max_stack_alloca_size})"
        ]
        for row in rows:
            cells = [row[0].ljust(widths[0])] + [
                c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)
            ]
            lines.append("  ".join(cells).rstrip())
        lines.append(f"constants of the module (extracted ones once): {self.constant_bytes}")
        if any(f.dynamic_workspace for f in self.functions):
            lines.append("+dyn: plus workspace of symbolic size, not counted")
        return "\n".join(lines)


def _row(function: FunctionMemory) -> tuple[str, str, str, str]:
    workspace = str(function.workspace_bytes) + ("+dyn" if function.dynamic_workspace else "")
    return (
        function.name,
        str(function.stack_bytes),
        workspace,
        str(function.constant_bytes),
    )


def memory_usage(mod: IRModule | PrimFunc, target: Target | str = "c") -> MemoryUsage:
    """Stack, workspace and constant bytes of each lowered function of `mod` for `target`."""
    target = Target.of(target)
    if isinstance(mod, PrimFunc):
        mod = IRModule.from_func(mod)
    constants = tuple(mod.attrs.get(CONSTANTS_ATTR, ()))
    check_module_calls(mod)  # no recursion: each callee's report is ready before its callers'
    reports: dict[str, FunctionMemory] = {}

    def report(name: str) -> FunctionMemory:
        if name not in reports:
            func = mod[name]
            callees = {n: report(n) for n in {c.op.name_hint for c in module_calls(func)}}
            reports[name] = _function_memory(name, func, target, constants, callees)
        return reports[name]

    functions = [report(gv.name_hint) for gv, f in mod.items() if isinstance(f, PrimFunc)]
    used = sorted({i for f in functions for i in f.module_constants})
    total = sum(_nbytes(constants[i]) for i in used)
    total += sum(f.inline_constant_bytes for f in functions)
    return MemoryUsage(target, tuple(functions), total)


def _function_memory(
    name: str,
    func: PrimFunc,
    target: Target,
    constants: tuple[Any, ...],
    callees: dict[str, FunctionMemory],
) -> FunctionMemory:
    require_no_blocks(
        func,
        f"memory_usage (of `{name}`)",
        "memory_usage.not-lowered",
        "report on the module tessel.transform.lower returns",
    )
    counter = _Counter(target, callees)
    counter.visit(func.body)
    for index in counter.module_constants:
        if not 0 <= index < len(constants):
            raise LoweringError(
                f"`{name}` refers to module constant {index}, but the module has {len(constants)}",
                rule="memory_usage.constant-index",
            )
    used = tuple(sorted(counter.module_constants))
    return FunctionMemory(
        name,
        counter.peak["stack"],
        counter.peak["workspace"],
        tuple(counter.dynamic),
        counter.inline_constant_bytes,
        used,
        sum(_nbytes(constants[i]) for i in used),
    )


def _nbytes(array: Any) -> int:
    return int(np.asarray(array).nbytes)


class _Counter(Visitor):
    """Peak bytes live on the stack and in the workspace, over nested allocation scopes."""

    def __init__(self, target: Target, callees: dict[str, FunctionMemory]) -> None:
        self.target = target
        self.callees = callees
        self.live = {"stack": 0, "workspace": 0}
        self.peak = {"stack": 0, "workspace": 0}
        self.dynamic: list[str] = []
        self.inline_constant_bytes = 0
        self.module_constants: set[int] = set()

    def visit_Allocate(self, node: Allocate) -> None:
        nbytes = allocation_bytes(node.dtype, node.extents)
        place = placement_of(node, self.target)  # as codegen will place it
        if nbytes is None and place == "stack":
            raise LoweringError(
                f"`{node.buffer_var.name}` is in scope {storage_scope(node)} but its size is "
                "not a constant",
                rule="memory_usage.dynamic-stack",
                hint="the stack needs a constant size; use scope global or global.workspace",
            )
        if nbytes is None:
            self.dynamic.append(node.buffer_var.name)
        size = nbytes or 0
        self.live[place] += size
        self.peak[place] = max(self.peak[place], self.live[place])
        self.generic_visit(node)
        self.live[place] -= size

    def visit_Call(self, node: Call) -> None:
        self.generic_visit(node)
        if not is_module_call(node):
            return
        callee = self.callees[node.op.name_hint]  # type: ignore[union-attr]  # a GlobalVar
        for place, nbytes in (("stack", callee.stack_bytes), ("workspace", callee.workspace_bytes)):
            self.peak[place] = max(self.peak[place], self.live[place] + nbytes)
        self.dynamic.extend(f"{callee.name}.{d}" for d in callee.dynamic_workspace)
        self.module_constants.update(callee.module_constants)

    def visit_AllocateConst(self, node: AllocateConst) -> None:
        if node.data is not None:
            self.inline_constant_bytes += int(node.data.nbytes)
        elif node.irmod_storage_idx is not None:
            self.module_constants.add(node.irmod_storage_idx)
        self.generic_visit(node)
