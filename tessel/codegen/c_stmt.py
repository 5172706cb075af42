"""Printing lowered TensorIR statements as the body of a C function.

Memory (DESIGN.md section 6): an allocation goes on the stack when its size is a constant no
larger than the target's `max_stack_alloca_size` (or its scope is `global.stack`), otherwise on
the heap (`global.workspace` always), freed when its scope ends and on every early return.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

import numpy as np

from tessel.codegen.c_expr import ExprPrinter, c_string
from tessel.codegen.c_names import NameScope
from tessel.codegen.c_types import c_type, float_literal, int_literal, reject_vector
from tessel.codegen.errors import CodegenError
from tessel.ir import builders
from tessel.ir.expr import Call, IntImm, PrimExpr, StringImm
from tessel.ir.target import Target
from tessel.tir import builtin
from tessel.tir import stmt as S
from tessel.tir.block import Block, BlockRealize

_ALIGNMENT = 64
_MAX_UNROLL = 1024


@cache
def _method_name(printer_cls: type, node_cls: type) -> str | None:
    for klass in node_cls.__mro__:
        name = f"stmt_{klass.__name__}"
        if hasattr(printer_cls, name):
            return name
    return None


class StmtPrinter(ExprPrinter):
    """C lines for the statements of one function body."""

    def __init__(self, names: NameScope, target: Target, constants: Sequence[Any] = ()) -> None:
        super().__init__(names)
        self.target = target
        self.constants = constants
        self.lines: list[str] = []
        self.depth = 1
        self.parallel_depth = 0
        self.heap_pointers: list[str] = []  # to free on an early return

    def emit(self, text: str) -> None:
        """Append one line at the current indentation."""
        self.lines.append("  " * self.depth + text)

    def stmt(self, node: S.Stmt) -> None:
        """Emit the C code of `node`."""
        method = _method_name(type(self), type(node))
        if method is None:
            raise CodegenError(
                f"the C backend cannot print `{type(node).__name__}` statements",
                rule="codegen.unsupported-node",
            )
        getattr(self, method)(node)

    def block(self, node: S.Stmt) -> None:
        """Emit `node` one level deeper (the caller writes the braces)."""
        self.depth += 1
        self.stmt(node)
        self.depth -= 1

    def stmt_SeqStmt(self, node: S.SeqStmt) -> None:
        for item in node.seq:
            self.stmt(item)

    def stmt_BufferStore(self, node: S.BufferStore) -> None:
        if node.predicate is not None:
            reject_vector(f"a predicated store to `{node.buffer.name}`")
        c_type(node.value.dtype)  # rejects a vector store
        target = f"{self.buffer_pointer(node.buffer)}[{self.flat_index(node.buffer, node.indices)}]"
        self.emit(f"{target} = {self.expr(node.value)};")

    def stmt_Evaluate(self, node: S.Evaluate) -> None:
        value = node.value
        if isinstance(value, Call) and value.op is builtin.assume_op:
            return  # a compile-time fact: no run-time code
        if isinstance(value, Call):
            self.emit(f"(void){self.expr(value)};")

    def stmt_LetStmt(self, node: S.LetStmt) -> None:
        value = self.expr(node.value)
        self.emit(f"{c_type(node.var.dtype)} {self.names.bind(node.var)} = {value};")
        self.stmt(node.body)

    def stmt_AttrStmt(self, node: S.AttrStmt) -> None:
        self.stmt(node.body)  # attributes are hints; none changes the C code yet

    def stmt_IfThenElse(self, node: S.IfThenElse) -> None:
        self.emit(f"if ({self.expr(node.condition)}) {{")
        self.block(node.then_case)
        if node.else_case is not None:
            self.emit("} else {")
            self.block(node.else_case)
        self.emit("}")

    def stmt_While(self, node: S.While) -> None:
        self.emit(f"while ({self.expr(node.condition)}) {{")
        self.block(node.body)
        self.emit("}")

    def stmt_AssertStmt(self, node: S.AssertStmt) -> None:
        if not isinstance(node.message, StringImm):
            raise CodegenError("an assert message must be a string", rule="codegen.assert-message")
        if self.parallel_depth:
            raise CodegenError(
                "assert inside a parallel loop is not supported yet (a parallel loop cannot "
                "return early)",
                rule="codegen.assert-in-parallel",
            )
        self.emit(f"if (!{self.expr(node.condition)}) {{")
        self.depth += 1
        self.emit(f"tessel_set_error({c_string(node.message.value)});")
        self._emit_error_return()
        self.depth -= 1
        self.emit("}")
        self.stmt(node.body)

    def _emit_error_return(self) -> None:
        for pointer in reversed(self.heap_pointers):
            self.emit(f"free({pointer});")
        self.emit("return -1;")

    def stmt_For(self, node: S.For) -> None:
        if node.kind is S.ForKind.THREAD_BINDING:
            raise CodegenError(
                f"loop `{node.loop_var.name}` is bound to `{node.thread_binding}`, which the C "
                "target has no threads for",
                rule="codegen.thread-binding",
                hint="use T.parallel for CPU threads",
            )
        start = self.expr(node.min)
        end = self.expr(builders.add(node.min, node.extent))
        parallel = node.kind is S.ForKind.PARALLEL and not self.parallel_depth
        if parallel:
            self.emit("#pragma omp parallel for")
        elif node.kind is S.ForKind.UNROLLED and isinstance(node.extent, IntImm):
            self.emit(f"#pragma GCC unroll {min(max(node.extent.value, 1), _MAX_UNROLL)}")
        var = self.names.bind(node.loop_var)
        self.emit(f"for ({c_type(node.loop_var.dtype)} {var} = {start}; {var} < {end}; ++{var}) {{")
        self.parallel_depth += parallel
        self.block(node.body)
        self.parallel_depth -= parallel
        self.emit("}")

    def stmt_DeclBuffer(self, node: S.DeclBuffer) -> None:
        if not self.names.is_bound(node.buffer.data):
            raise CodegenError(
                f"buffer `{node.buffer.name}` is declared over memory that was never allocated",
                rule="codegen.unallocated-buffer",
            )
        self.stmt(node.body)

    def stmt_Allocate(self, node: S.Allocate) -> None:
        if not builders.is_const_int(node.condition, 1):
            raise CodegenError(
                f"allocation `{node.buffer_var.name}` has a condition; not supported yet",
                rule="codegen.conditional-allocate",
            )
        count = _product(node.extents)
        element = c_type(node.dtype)
        name = self.names.bind(node.buffer_var)
        if self._on_stack(node, count):
            length = max(count.value, 1)  # type: ignore[union-attr]  # _on_stack checked IntImm
            self.emit(f"{element} {name}[{length}] __attribute__((aligned({_ALIGNMENT})));")
            self.stmt(node.body)
            return
        self._emit_heap_allocation(name, element, count, node.buffer_var.name)
        self.heap_pointers.append(name)
        self.stmt(node.body)
        self.heap_pointers.pop()
        self.emit(f"free({name});")

    def _on_stack(self, node: S.Allocate, count: PrimExpr) -> bool:
        annotation = node.buffer_var.type_annotation
        scope = annotation.storage_scope if annotation is not None else "global"
        if scope == "global.stack":
            if not isinstance(count, IntImm):
                raise CodegenError(
                    f"`{node.buffer_var.name}` is in scope global.stack but its size `{count}` "
                    "is not a constant",
                    rule="codegen.dynamic-stack",
                )
            return True
        if scope == "global.workspace" or not isinstance(count, IntImm):
            return False
        return count.value * node.dtype.itemsize <= self.target.max_stack_alloca_size

    def _emit_heap_allocation(self, name: str, element: str, count: PrimExpr, hint: str) -> None:
        size = f"((size_t)({self.expr(count)}) * sizeof({element}))"
        rounded = f"({size} / {_ALIGNMENT} * {_ALIGNMENT} + {_ALIGNMENT})"
        self.emit(f"{element}* {name} = ({element}*)aligned_alloc({_ALIGNMENT}, {rounded});")
        if self.parallel_depth:
            self.emit(f"if ({name} == NULL) abort();  /* no early return out of a parallel loop */")
            return
        self.emit(f"if ({name} == NULL) {{")
        self.depth += 1
        self.emit(f"tessel_set_error({c_string(f'out of memory allocating `{hint}`')});")
        self._emit_error_return()
        self.depth -= 1
        self.emit("}")

    def stmt_AllocateConst(self, node: S.AllocateConst) -> None:
        data = node.data if node.data is not None else self._module_constant(node)
        values = np.asarray(data).reshape(-1)
        literal = float_literal if node.dtype.is_float else int_literal
        items = ", ".join(literal(v.item(), node.dtype) for v in values) or "0"
        name = self.names.bind(node.buffer_var)
        element = c_type(node.dtype)
        self.emit(f"static const {element} {name}[{max(values.size, 1)}] = {{{items}}};")
        self.stmt(node.body)

    def _module_constant(self, node: S.AllocateConst) -> Any:
        index = node.irmod_storage_idx
        if index is None or not 0 <= index < len(self.constants):
            raise CodegenError(
                f"constant `{node.buffer_var.name}` refers to module constant {index}, but the "
                f"module has {len(self.constants)}",
                rule="codegen.constant-index",
            )
        return self.constants[index]

    def stmt_Block(self, node: Block) -> None:
        raise CodegenError(
            f"block `{node.name_hint}` reached code generation; lower the function first",
            rule="codegen.block",
            hint="tessel.transform.lower runs LowerBlocks",
        )

    def stmt_BlockRealize(self, node: BlockRealize) -> None:
        self.stmt_Block(node.block)


def _product(extents: tuple[PrimExpr, ...]) -> PrimExpr:
    total: PrimExpr = builders.const(1, extents[0].dtype) if extents else builders.const(1)
    for extent in extents:
        total = total * extent
    return total
