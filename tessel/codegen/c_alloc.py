"""N-d physical allocations in C: chunks, as Hexagon's discontiguous (2-d) VTCM allocations.

FlattenBuffer leaves an allocation whose buffer has axis separators with one extent per physical
axis, (P0, ..., Pk). It becomes P0 * ... * P(k-1) chunks of Pk elements, found through the outer
axes flattened row-major (c_access.py prints the accesses), and is placed by the one rule of
tir/stack_placement.py, applied to the bytes of all its chunks:

- on the stack, a two-dimensional C array `T A[rows][Pk]`: its rows are the chunks, so `A[r][c]`
  reads the same as through a table, with no table to fill;
- in the workspace, a table `T** A` of chunks allocated one by one, all through the runtime's
  workspace allocator (c_prelude.py) and each checked for NULL: an error return frees the chunks
  allocated so far (the table's other entries are still NULL, which tessel_workspace_free
  ignores) and the table; both are freed when the scope ends.
"""

from __future__ import annotations

from tessel.codegen.c_names import NameScope
from tessel.codegen.c_prelude import ALIGNMENT
from tessel.codegen.c_types import c_type
from tessel.codegen.errors import CodegenError
from tessel.ir import builders
from tessel.ir.expr import IntImm, PrimExpr, Var
from tessel.ir.target import Target
from tessel.support.dtype import DataType, int64
from tessel.support.names import c_string_literal
from tessel.tir import stmt as S
from tessel.tir.device_memory import allocation_device
from tessel.tir.layout import extent_product
from tessel.tir.stack_placement import STACK_SCOPE, placement_of, storage_scope


class ChunkAllocation:
    """Emits allocations for StmtPrinter (which provides the attributes declared here): on the
    stack, in the workspace, in a device's own memory (tessel/tir/device_memory.py), and N-d
    ones as chunks."""

    names: NameScope
    target: Target
    chunk_tables: dict[Var, tuple[PrimExpr, ...]]
    cleanups: list[tuple[str, ...]]  # C lines freeing each live heap allocation, outermost first
    parallel_depth: int
    checked_divisions: int
    depth: int

    def emit(self, text: str) -> None:
        raise NotImplementedError  # StmtPrinter emits lines

    def stmt(self, node: S.Stmt) -> None:
        raise NotImplementedError

    def expr(self, node: PrimExpr) -> str:
        raise NotImplementedError

    def emit_division_check(self, where: str) -> None:
        raise NotImplementedError

    def emit_failure_if(self, condition: str, record: str) -> None:
        raise NotImplementedError

    def stmt_Allocate(self, node: S.Allocate) -> None:
        if not builders.is_const_int(node.condition, 1):
            raise CodegenError(
                f"allocation `{node.buffer_var.name}` has a condition; not supported yet",
                rule="codegen.conditional-allocate",
            )
        count = extent_product(node.extents)
        on_stack = self._on_stack(node, count)
        if len(node.extents) > 1:  # N-d physical memory (axis separators): chunks, c_alloc.py
            self.chunked_allocation(node, on_stack)
            return
        element = c_type(node.dtype)
        name = self.names.declare(self.names.bind(node.buffer_var), f"{element}* {{}}")
        if on_stack:
            length = max(count.value, 1)  # type: ignore[union-attr]  # _on_stack checked IntImm
            self.emit(f"{element} {name}[{length}] __attribute__((aligned({ALIGNMENT})));")
            self.stmt(node.body)
            return
        device = allocation_device(node)
        if device is not None:  # a device's own memory (tessel/tir/device_memory.py)
            free = f"tessel_dev_free({device[0]}, {name});"
            allocator = f"tessel_dev_alloc({device[0]}, {device[1]}, "
            self._emit_heap_allocation(name, element, count, node.buffer_var.name, allocator)
        else:
            free = f"tessel_workspace_free({name});"
            self._emit_heap_allocation(name, element, count, node.buffer_var.name)
        self.cleanups.append((free,))
        self.stmt(node.body)
        self.cleanups.pop()
        self.emit(free)

    def _on_stack(self, node: S.Allocate, count: PrimExpr) -> bool:
        if storage_scope(node) == STACK_SCOPE and not isinstance(count, IntImm):
            raise CodegenError(
                f"`{node.buffer_var.name}` is in scope global.stack but its size `{count}` "
                "is not a constant",
                rule="codegen.dynamic-stack",
            )
        # Recorded by LowerMemoryScopes (the rule lives in tir, which the memory report reads).
        return placement_of(node, self.target) == "stack"

    def _emit_heap_allocation(
        self,
        name: str,
        element: str,
        count: PrimExpr,
        hint: str,
        allocator: str = "tessel_workspace_alloc(",
    ) -> None:
        mark = self.checked_divisions
        count_text = self.expr(count)
        if self.checked_divisions != mark:
            count_text = self.local(f"{hint}_count", count.dtype, count_text)
            self.emit_division_check(f"the size of `{hint}`")
        size = f"(size_t)({count_text}) * sizeof({element})"
        self.emit(f"{element}* {name} = ({element}*){allocator}{size});")
        where = "the workspace" if allocator.startswith("tessel_workspace") else "device memory"
        self._emit_null_check(name, f"out of memory allocating `{hint}` in {where}")

    def local(self, hint: str, dtype: DataType, text: str) -> str:
        raise NotImplementedError

    def chunked_allocation(self, node: S.Allocate, on_stack: bool) -> None:
        """Emit the N-d allocation `node` as chunks (see the module), its body, and its frees."""
        name = self.names.bind(node.buffer_var)
        self.chunk_tables[node.buffer_var] = node.extents
        element = c_type(node.dtype)
        rows = extent_product([builders.cast(e, int64) for e in node.extents[:-1]])
        chunk = node.extents[-1]
        if on_stack:  # stack_placement allows only constant sizes there
            assert isinstance(rows, IntImm)
            assert isinstance(chunk, IntImm)
            shape = f"[{max(rows.value, 1)}][{max(chunk.value, 1)}]"
            self.names.declare(name, f"{element} (*{{}})[{max(chunk.value, 1)}]")
            self.emit(f"{element} {name}{shape} __attribute__((aligned({ALIGNMENT})));")
            self.stmt(node.body)
            return
        hint = node.buffer_var.name
        rows_text, chunk_text = self._sizes(hint, rows, chunk)
        self._emit_table(name, element, rows_text, hint)
        free_var = self.names.fresh(f"{hint}_free")
        cleanup = (
            f"for (int64_t {free_var} = 0; {free_var} < {rows_text}; ++{free_var}) "
            f"tessel_workspace_free({name}[{free_var}]);",
            f"tessel_workspace_free({name});",
        )
        self.cleanups.append(cleanup)  # from here, an error return frees the chunks and table
        self._emit_chunks(name, element, rows_text, chunk_text, hint)
        self.stmt(node.body)
        self.cleanups.pop()
        for line in cleanup:
            self.emit(line)

    def _sizes(self, hint: str, rows: PrimExpr, chunk: PrimExpr) -> tuple[str, str]:
        """The C of the chunk count and the chunk extent, each computed once into a local
        unless constant (their checked divisions then checked before anything is allocated)."""
        mark = self.checked_divisions
        texts = []
        for what, value in (("rows", rows), ("extent", chunk)):
            if isinstance(value, IntImm):
                texts.append(str(value.value))
                continue
            local = self.names.declare(self.names.fresh(f"{hint}_{what}"), "int64_t {}")
            self.emit(f"int64_t {local} = {self.expr(value)};")
            texts.append(local)
        if self.checked_divisions != mark:
            self.emit_division_check(f"the size of `{hint}`")
        return texts[0], texts[1]

    def _emit_table(self, name: str, element: str, rows: str, hint: str) -> None:
        self.names.declare(name, f"{element}** {{}}")
        size = f"(size_t)({rows}) * sizeof({element}*)"
        self.emit(f"{element}** {name} = ({element}**)tessel_workspace_alloc({size});")
        self._emit_null_check(name, f"out of memory allocating the chunk table of `{hint}`")
        # NULL entries until each chunk is allocated: an error return frees only those.
        self.emit(f"__builtin_memset({name}, 0, {size});")

    def _emit_chunks(self, name: str, element: str, rows: str, chunk: str, hint: str) -> None:
        var = self.names.fresh(f"{hint}_chunk")
        size = f"(size_t)({chunk}) * sizeof({element})"
        self.emit(f"for (int64_t {var} = 0; {var} < {rows}; ++{var}) {{")
        self.emit(f"  {name}[{var}] = ({element}*)tessel_workspace_alloc({size});")
        self.depth += 1
        self._emit_null_check(f"{name}[{var}]", f"out of memory allocating a chunk of `{hint}`")
        self.depth -= 1
        self.emit("}")

    def _emit_null_check(self, pointer: str, message: str) -> None:
        if self.parallel_depth:
            self.emit(f"if ({pointer} == NULL) abort();  /* no return out of a parallel loop */")
            return
        self.emit_failure_if(
            f"{pointer} == NULL", f"tessel_set_error({c_string_literal(message)});"
        )
