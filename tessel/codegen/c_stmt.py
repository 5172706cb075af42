"""Printing lowered TensorIR statements as the body of a C function.

Memory (docs/architecture.md §6): an allocation goes on the stack when its size is a constant no
larger than the target's `max_stack_alloca_size` (or its scope is `global.stack`), otherwise on
the heap (`global.workspace` always), freed when its scope ends and on every early return. An
allocation of several physical axes (axis separators) is a table of chunks (c_alloc.py).

Checked divisions (c_prelude.py): a statement whose expressions contain one computes them into
locals first, then returns the error if a division failed, and only then has its effect (a
store, a call, an allocation, entering a loop or a branch). A parallel loop cannot return, so
inside one whose body has checked divisions every store and call is skipped once a division
failed, and the error is returned after the loop.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from tessel.codegen.c_access import all_lanes_test, masked_copy_helper
from tessel.codegen.c_alloc import ChunkAllocation
from tessel.codegen.c_calls import CalleeC, call_text
from tessel.codegen.c_expr import STATUS, ExprPrinter, is_checked_division
from tessel.codegen.c_names import NameScope
from tessel.codegen.c_parallel import call_lines, outline
from tessel.codegen.c_pragma import (
    is_pragma,
    loop_pragmas,
    pragma_comment,
    prefetch_distance,
    prefetch_loads,
)
from tessel.codegen.c_types import c_type, float_literal, int_literal
from tessel.codegen.errors import CodegenError
from tessel.ir import builders
from tessel.ir.expr import Call, IntImm, PrimExpr, StringImm, Var
from tessel.ir.functor import method_name, post_order
from tessel.ir.node import with_changes
from tessel.ir.target import Target
from tessel.support.dtype import DataType, int64, uint64
from tessel.support.names import c_string_literal
from tessel.tir import builtin
from tessel.tir import stmt as S
from tessel.tir.block import Block, BlockRealize
from tessel.tir.layout import extent_product
from tessel.tir.module_calls import is_module_call

_MAX_UNROLL = 1024
# Streams one loop prefetches at most: a GEMV reads one, a tile a few.
_MAX_PREFETCH_STREAMS = 4


class StmtPrinter(ExprPrinter, ChunkAllocation):
    """C lines for the statements of one function body."""

    def __init__(
        self,
        names: NameScope,
        target: Target,
        constants: Sequence[Any] = (),
        *,
        linked: Sequence[str] = (),
        table: str | None = None,
        callees: Mapping[str, CalleeC] | None = None,
        returned: str | None = None,
        function_symbol: str,
        fresh_global: Callable[[str], str],
    ) -> None:
        super().__init__(names)
        self.function_symbol = function_symbol  # what outlined loop bodies are named after
        # A name unique in the whole file (outlined functions are file-scope).
        self.fresh_global = fresh_global
        self.outlined: list[str] = []  # the C definitions of the outlined parallel loops
        self.returned = returned  # the pointer T.ret writes through (c_source.py), if any
        self.callees = callees or {}  # the internal function of each called module function
        self.target = target
        self.constants = constants  # the module's "constants"
        self.linked = linked  # with link_params: the blob symbol of each constant (c_blob.py)
        self.table = table  # without: the name of the constant table parameter
        self.lines: list[str] = []
        self.depth = 1
        self.parallel_depth = 0
        self.cleanups: list[tuple[str, ...]] = []  # C lines freeing the live heap allocations
        self.guard_effects = False  # in a parallel loop whose body has checked divisions

    def emit(self, text: str) -> None:
        """Append one line at the current indentation."""
        self.lines.append("  " * self.depth + text)

    def stmt(self, node: S.Stmt) -> None:
        """Emit the C code of `node`."""
        method = method_name(type(self), type(node), "stmt_")
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

    # ------------------------------------------------------------------ checked divisions
    def local(self, hint: str, dtype: DataType, text: str) -> str:
        """Emit `T name = text;` and return the fresh local's name."""
        name = self.names.declare(self.names.fresh(hint), f"{c_type(dtype)} {{}}")
        self.emit(f"{c_type(dtype)} {name} = {text};")
        return name

    def emit_division_check(self, where: str) -> None:
        """Return the error of a failed checked division (outside parallel loops, which skip
        their effects instead: see `effect`)."""
        if self.parallel_depth:
            return
        self.emit_failure_if(
            f"!tessel_division_ok(&{STATUS})",
            f"tessel_set_division_error({STATUS}, {c_string_literal(where)});",
        )

    def emit_failure_if(self, condition: str, record: str) -> None:
        """`if (condition) { record the message; return the error }`."""
        self.emit(f"if ({condition}) {{")
        self.depth += 1
        self.emit(record)
        self._emit_error_return()
        self.depth -= 1
        self.emit("}")

    def effect(self, text: str) -> None:
        """Emit a statement with a side effect (skipped after a failed division in a parallel
        loop)."""
        guard = f"if (tessel_division_ok(&{STATUS})) " if self.guard_effects else ""
        self.emit(f"{guard}{text}")

    def checked_value(self, node: PrimExpr, hint: str, where: str) -> str:
        """The C text of `node`; if it has checked divisions, the name of a local holding its
        value, after which the check is emitted."""
        mark = self.checked_divisions
        text = self.expr(node)
        if self.checked_divisions == mark:
            return text
        name = self.local(hint, node.dtype, text)
        self.emit_division_check(where)
        return name

    # ------------------------------------------------------------------ statements
    def stmt_BufferStore(self, node: S.BufferStore) -> None:
        if node.predicate is not None or any(i.dtype.is_vector for i in node.indices):
            self._vector_store(node)
            return
        mark = self.checked_divisions
        pointer, physical_index = self.access_parts(node.buffer, node.indices)
        index, value = self.expr(physical_index), self.expr(node.value)
        if self.checked_divisions != mark:
            if len(node.indices) > 1:  # the chunk's pointer holds the outer indices
                element = c_type(node.buffer.dtype)
                chunk = self.names.declare(self.names.fresh("chunk"), f"{element}* {{}}")
                self.emit(f"{element}* {chunk} = {pointer};")
                pointer = chunk
            index = self.local("index", physical_index.dtype, index)
            value = self.local("value", node.value.dtype, value)
            self.emit_division_check(f"the store to `{node.buffer.name}`")
        self.effect(f"{pointer}[{index}] = {value};")

    def _vector_store(self, node: S.BufferStore) -> None:
        """A vector store: one unaligned copy when contiguous and no lane is disabled, else a
        per-lane loop that skips the lanes the predicate disables."""
        lanes = node.value.dtype.lanes
        mark = self.checked_divisions
        pointer, indices = self.vector_access(node.buffer, node.indices, lanes)
        value = self.expr(node.value)
        if not node.value.dtype.is_vector:
            value = self.broadcast_text(node.value.dtype.with_lanes(lanes), value)
        mask_mark = self.checked_divisions
        mask = None
        if node.predicate is not None:
            mask = f"{c_type(node.predicate.dtype)} tessel_m = {self.expr(node.predicate)};"
        # A contiguous mask tested on its last lane is computed only where a lane is disabled,
        # unless it has checked divisions (they must run before the check below).
        last_lane = None
        if indices is None and node.predicate is not None and self.checked_divisions == mask_mark:
            last_lane = self.last_lane_test(node.predicate)
        self.emit("{")
        self.depth += 1
        self.emit(f"{c_type(node.value.dtype.with_lanes(lanes))} tessel_v = {value};")
        if indices is not None:
            index_type = c_type(node.indices[-1].dtype.with_lanes(lanes))  # the chunk's index
            self.emit(f"{index_type} tessel_i = {indices};")
        if mask is not None and last_lane is None:
            self.emit(mask)
        if self.checked_divisions != mark:
            self.emit_division_check(f"the store to `{node.buffer.name}`")
        if indices is None and mask is None:
            self.effect(f"__builtin_memcpy({pointer}, &tessel_v, sizeof(tessel_v));")
        elif indices is None:
            element = node.value.dtype.element.itemsize
            self._masked_copy_store(pointer, lanes, last_lane, mask, element)
        else:
            self._per_lane_store(pointer, "tessel_i[tessel_l]", lanes, mask is not None)
        self.depth -= 1
        self.emit("}")

    def _masked_copy_store(
        self, pointer: str, lanes: int, last_lane: str | None, mask: str | None, element_bytes: int
    ) -> None:
        """A contiguous masked store: one copy when no lane is disabled (every chunk of a
        vectorized loop but the last), else lane by lane. With `last_lane` (a scalar test) the
        mask is declared in the per-lane branch only; without, it is declared already."""
        every = last_lane or all_lanes_test("tessel_m", lanes)
        self.emit(f"if ({every}) {{")
        self.effect(f"  __builtin_memcpy({pointer}, &tessel_v, sizeof(tessel_v));")
        self.emit("} else {")
        self.depth += 1
        if last_lane is not None and mask is not None:
            self.emit(mask)
        if masked_copy_helper(lanes, element_bytes):
            self.effect(f"tessel_masked_store4x{lanes}({pointer}, &tessel_v, &tessel_m);")
        else:
            self._per_lane_store(pointer, "tessel_l", lanes, masked=True)
        self.depth -= 1
        self.emit("}")

    def _per_lane_store(self, pointer: str, element: str, lanes: int, masked: bool) -> None:
        """Store the lanes of `tessel_v` one by one (those `tessel_m` enables, when `masked`)."""
        test = "if (tessel_m[tessel_l]) " if masked else ""
        guard = f"if (tessel_division_ok(&{STATUS})) " if self.guard_effects else ""
        self.emit("#pragma omp simd")
        self.emit(f"for (int32_t tessel_l = 0; tessel_l < {lanes}; ++tessel_l) {{")
        self.emit(f"  {guard}{test}{pointer}[{element}] = tessel_v[tessel_l];")
        self.emit("}")

    def stmt_Evaluate(self, node: S.Evaluate) -> None:
        value = node.value
        if isinstance(value, Call) and value.op is builtin.assume_op:
            return  # a compile-time fact: no run-time code
        if not isinstance(value, Call):
            return
        if is_module_call(value):
            self._module_call(value)
            return
        if value.op is builtin.ret_op:
            self._return_value(value)
            return
        if any(is_checked_division(n) for n in post_order(value)):
            value = self._call_with_local_arguments(value)
            self.emit_division_check(f"the arguments of `{_callee_name(value)}`")
        self.effect(f"(void){self.expr(value)};")

    def _module_call(self, call: Call) -> None:
        """A call of a module function's internal C function (c_calls.py); its failure is
        returned, after the frees of this function's live allocations."""
        name = call.op.name_hint  # type: ignore[union-attr]  # a module call's op is a GlobalVar
        if self.parallel_depth:
            raise CodegenError(
                f"a call of the module function `{name}` inside a parallel loop (which cannot "
                "return the callee's error)",
                rule="codegen.call-in-parallel",
                hint="call it outside the parallel loop, or make the loop serial",
            )
        if any(is_checked_division(n) for n in post_order(call)):
            call = self._call_with_local_arguments(call)
            self.emit_division_check(f"the arguments of `{name}`")
        callee = self.callees.get(name)
        if callee is None:
            raise CodegenError(
                f"`{name}` is not a function of the module being compiled",
                rule="module-call.unknown-function",
            )
        text = call_text(callee, [self.expr(a) for a in call.args], self.table)
        self.emit_failure_if(f"{text} != 0", "/* the callee recorded its error */")

    def _return_value(self, call: Call) -> None:
        """T.ret(v): write v through the returned pointer, free the live heap allocations and
        return success; from anywhere but a parallel loop, which cannot return."""
        if self.returned is None:
            raise CodegenError(
                "T.ret in a function without a return type",
                rule="codegen.ret",
                hint="declare the type it returns: def f(...) -> T.int32",
            )
        if self.parallel_depth:
            raise CodegenError(
                "T.ret inside a parallel loop (which cannot return early)",
                rule="codegen.ret",
                hint="make the loop serial, or write the result into a buffer",
            )
        value = self.checked_value(call.args[0], "value", "the value of T.ret")
        self.emit("{")
        self.depth += 1
        self.emit(f"*{self.returned} = {value};")
        for lines in reversed(self.cleanups):
            for line in lines:
                self.emit(line)
        self.emit("return 0;")
        self.depth -= 1
        self.emit("}")

    def _call_with_local_arguments(self, call: Call) -> Call:
        """`call` with each argument that is not a string replaced by a local holding it."""
        args: list[PrimExpr] = []
        for arg in call.args:
            if isinstance(arg, StringImm):
                args.append(arg)
                continue
            var = Var("arg", arg.dtype)
            name = self.names.declare(self.names.bind(var), f"{c_type(arg.dtype)} {{}}")
            self.emit(f"{c_type(arg.dtype)} {name} = {self.expr(arg)};")
            args.append(var)
        return with_changes(call, args=tuple(args))

    def stmt_LetStmt(self, node: S.LetStmt) -> None:
        mark = self.checked_divisions
        value = self.expr(node.value)
        name = self.names.declare(self.names.bind(node.var), f"{c_type(node.var.dtype)} {{}}")
        self.emit(f"{c_type(node.var.dtype)} {name} = {value};")
        if self.checked_divisions != mark:
            self.emit_division_check(f"the value of `{node.var.name}`")
        self.stmt(node.body)

    def stmt_AttrStmt(self, node: S.AttrStmt) -> None:
        if node.attr_key in ("thread_extent", "virtual_thread"):
            thread = getattr(node.node, "thread_tag", "") or str(node.node)
            raise CodegenError(
                f"a launch of the GPU thread axis `{thread}` (T.launch_thread) reached the C "
                "backend, which has no GPU threads",
                rule="codegen.thread-launch",
                hint="build for a GPU target (not available yet), or use T.parallel loops",
            )
        if not is_pragma(node):
            self.stmt(node.body)  # other attributes are hints; none changes the C code yet
            return
        self.emit(pragma_comment(node))  # AutoUnrollLoop has applied an unroll budget already
        self.stmt(node.body)

    def stmt_IfThenElse(self, node: S.IfThenElse) -> None:
        condition = self.checked_value(node.condition, "condition", "an if condition")
        self.emit(f"if ({condition}) {{")
        self.block(node.then_case)
        if node.else_case is not None:
            self.emit("} else {")
            self.block(node.else_case)
        self.emit("}")

    def stmt_While(self, node: S.While) -> None:
        # After a failed division in a parallel loop, stores are skipped: a while loop there
        # must stop too, or it might never see its condition change.
        failed = f" && tessel_division_ok(&{STATUS})" if self.guard_effects else ""
        if not any(is_checked_division(n) for n in post_order(node.condition)):
            self.emit(f"while ({self.expr(node.condition)}{failed}) {{")
            self.block(node.body)
            self.emit("}")
            return
        # The condition is computed, and checked, before every iteration.
        self.emit("while (true) {")
        self.depth += 1
        condition = self.local("condition", node.condition.dtype, self.expr(node.condition))
        self.emit_division_check("a while condition")
        self.emit(f"if (!({condition}{failed})) break;")
        self.stmt(node.body)
        self.depth -= 1
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
        condition = self.checked_value(node.condition, "condition", "an assert condition")
        self.emit(f"if (!{condition}) {{")
        self.depth += 1
        self.emit(f"tessel_set_error({c_string_literal(node.message.value)});")
        self._emit_error_return()
        self.depth -= 1
        self.emit("}")
        self.stmt(node.body)

    def _emit_error_return(self) -> None:
        for lines in reversed(self.cleanups):
            for line in lines:
                self.emit(line)
        self.emit("return -1;")

    def _streams(self, loop: S.For) -> list[str]:
        """C pointers to the start of each contiguous stream `loop` loads (prefetch_loads):
        what a `pragma_software_prefetch` asks the loop to prefetch."""
        pointers: list[str] = []
        for load in prefetch_loads(loop):
            mark = self.checked_divisions
            pointer, gathered = self.vector_access(load.buffer, load.indices, load.dtype.lanes)
            if gathered is None and self.checked_divisions == mark and pointer not in pointers:
                pointers.append(pointer)
        return pointers[:_MAX_PREFETCH_STREAMS]

    def stmt_For(self, node: S.For) -> None:
        if node.kind is S.ForKind.THREAD_BINDING:
            raise CodegenError(
                f"loop `{node.loop_var.name}` is bound to `{node.thread_binding}`, which the C "
                "target has no threads for",
                rule="codegen.thread-binding",
                hint="use T.parallel for CPU threads",
            )
        pragmas, body = loop_pragmas(node)
        if pragmas:  # about this loop: said before it
            for pragma in pragmas:
                self.emit(pragma_comment(pragma))
            node = with_changes(node, body=body)
        start, end = self._loop_bounds(node)
        parallel = node.kind is S.ForKind.PARALLEL and not self.parallel_depth
        # One iteration is not worth a parallel region (waking the team costs microseconds: a
        # classifier's single-tile dense); the loop is still treated as parallel otherwise.
        single = isinstance(node.extent, IntImm) and node.extent.value <= 1
        # The pool's bounds are int64: a uint64 loop, whose bounds may not fit, runs on the caller.
        if parallel and not single and node.loop_var.dtype != uint64:
            self._parallel_loop(node, start, end, pragmas)
            return
        if node.kind is S.ForKind.UNROLLED and isinstance(node.extent, IntImm):
            self.emit(f"#pragma GCC unroll {min(max(node.extent.value, 1), _MAX_UNROLL)}")
        elif node.kind is S.ForKind.VECTORIZED:  # not lowered by VectorizeLoop (unlowered IR)
            self.emit("#pragma omp simd")
        self._loop(node, start, end, pragmas, parallel)

    def _parallel_loop(self, node: S.For, start: str, end: str, pragmas: list) -> None:
        """The loop's body outlined into a function the thread pool runs (c_parallel.py)."""
        declared, bound = dict(self.names.declared), self.names.local_names()
        lines, depth = self.lines, self.depth
        self.lines, self.depth = [], 1
        try:
            self._loop(node, "tessel_begin", "tessel_end", pragmas, True, outlined=True)
            body = self.lines
        finally:
            self.lines, self.depth = lines, depth
        trampoline = self.fresh_global(f"{self.function_symbol}_parallel")
        body_name = self.fresh_global(f"{trampoline}_body")
        loop = outline(trampoline, body_name, body, declared, bound)
        self.outlined.append(loop.definitions)
        for line in call_lines(loop, self.names.fresh("closure"), start, end):
            self.emit(line)
        if loop.status:
            self.emit_division_check(f"the parallel loop `{node.loop_var.name}`")

    def _loop(
        self,
        node: S.For,
        start: str,
        end: str,
        pragmas: list,
        parallel: bool,
        *,
        outlined: bool = False,
    ) -> None:
        """The C loop itself; a parallel one (outlined, or of one iteration) checks its
        divisions after the loop, in the function that can return the error."""
        var_type = c_type(node.loop_var.dtype)
        var = self.names.declare(self.names.bind(node.loop_var), f"{var_type} {{}}")
        self.emit(f"for ({var_type} {var} = {start}; {var} < {end}; ++{var}) {{")
        distance = next(filter(None, map(prefetch_distance, pragmas)), None)
        if distance is not None:
            self.depth += 1
            for pointer in self._streams(node):
                self.emit(f"__builtin_prefetch((const char*){pointer} + {distance}, 0, 0);")
            self.depth -= 1
        guarded = parallel and any(is_checked_division(n) for n in post_order(node.body))
        self.parallel_depth += parallel
        outer_guard, self.guard_effects = self.guard_effects, self.guard_effects or guarded
        self.block(node.body)
        self.parallel_depth -= parallel
        self.guard_effects = outer_guard
        self.emit("}")
        if guarded and not outlined:
            self.emit_division_check(f"the parallel loop `{node.loop_var.name}`")

    def _loop_bounds(self, node: S.For) -> tuple[str, str]:
        """The loop's first value and its end, each computed once before the loop (the body may
        change what the bounds read). A computed end is 64-bit, so `min + extent` cannot
        overflow."""
        var_dtype = node.loop_var.dtype
        end_dtype = uint64 if var_dtype.is_uint else int64
        if isinstance(node.min, IntImm) and isinstance(node.extent, IntImm):
            last = node.min.value + node.extent.value
            fits = var_dtype.min_value() <= last <= var_dtype.max_value()
            return self.expr(node.min), int_literal(last, var_dtype if fits else end_dtype)
        mark = self.checked_divisions
        name = node.loop_var.name
        start = self.expr(node.min)
        if not isinstance(node.min, IntImm):
            start = self.local(f"{name}_start", var_dtype, start)
        extent = self.expr(node.extent)
        if builders.is_const_int(node.min, 0):
            end_text = extent
        else:
            wide = c_type(end_dtype)
            end_text = f"({wide}){start} + ({wide})({extent})"
        end = self.local(f"{name}_end", end_dtype, end_text)
        if self.checked_divisions != mark:
            self.emit_division_check(f"the bounds of loop `{name}`")
        return start, end

    def stmt_DeclBuffer(self, node: S.DeclBuffer) -> None:
        if not self.names.is_bound(node.buffer.data):
            raise CodegenError(
                f"buffer `{node.buffer.name}` is declared over memory that was never allocated",
                rule="codegen.unallocated-buffer",
            )
        self.stmt(node.body)

    def stmt_AllocateConst(self, node: S.AllocateConst) -> None:
        element = c_type(node.dtype)
        if node.data is None:  # a module constant: embedded once per file, or passed in
            index = self._module_constant(node)
            name = self.names.declare(self.names.bind(node.buffer_var), f"const {element}* {{}}")
            if self.table is None:
                self.emit(f"const {element}* {name} = (const {element}*){self.linked[index]};")
            else:
                self.emit(f"const {element}* {name} = (const {element}*){self.table}[{index}];")
            self.stmt(node.body)
            return
        # Data in the IR (ExtractConstants did not run): a constant array local to the function.
        values = np.asarray(node.data).reshape(-1)
        literal = float_literal if node.dtype.is_float else int_literal
        items = ", ".join(literal(v.item(), node.dtype) for v in values) or "0"
        name = self.names.declare(self.names.bind(node.buffer_var), f"const {element}* {{}}")
        self.emit(f"static const {element} {name}[{max(values.size, 1)}] = {{{items}}};")
        self.stmt(node.body)

    def _module_constant(self, node: S.AllocateConst) -> int:
        """The index of the module constant `node` refers to, checked against its type."""
        index = node.irmod_storage_idx
        if index is None or not 0 <= index < len(self.constants):
            raise CodegenError(
                f"constant `{node.buffer_var.name}` refers to module constant {index}, but the "
                f"module has {len(self.constants)}",
                rule="codegen.constant-index",
            )
        array = np.asarray(self.constants[index])
        count = extent_product(node.extents)
        if (
            array.dtype != node.dtype.element.numpy
            or not isinstance(count, IntImm)
            or array.size != count.value * node.dtype.lanes
        ):
            raise CodegenError(
                f"constant `{node.buffer_var.name}` expects {[str(e) for e in node.extents]} "
                f"of {node.dtype}, but module constant {index} is {list(array.shape)} of "
                f"{array.dtype}",
                rule="codegen.constant-type",
            )
        return index

    def stmt_Block(self, node: Block) -> None:
        raise CodegenError(
            f"block `{node.name_hint}` reached code generation; lower the function first",
            rule="codegen.block",
            hint="tessel.transform.lower runs LowerOpaqueBlock",
        )

    def stmt_BlockRealize(self, node: BlockRealize) -> None:
        self.stmt_Block(node.block)


def _callee_name(call: Call) -> str:
    """The name of the function `call` calls, for error messages."""
    externs = (builtin.call_extern_op, builtin.call_pure_extern_op)
    if call.op in externs and isinstance(call.args[0], StringImm):
        return call.args[0].value
    return getattr(call.op, "name", "call")
