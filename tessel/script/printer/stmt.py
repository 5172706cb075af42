"""Statements. Let, assert, allocate and decl_buffer print their body at the same indentation
(the parser nests the rest of the block in them)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

from tessel.ir.expr import Call, IntImm, StringImm
from tessel.script.printer.block import print_block, print_block_realize
from tessel.script.printer.buffer import buffer_arguments, has_default_offset
from tessel.script.printer.context import Context
from tessel.script.printer.expr import ExprPrinter, same_expr
from tessel.script.printer.free_vars import walk
from tessel.script.printer.literals import (
    annotation_value,
    dtype_annotation,
    dtype_literal,
    python_number,
    quote,
    typed_int_literal,
)
from tessel.script.printer.loops import LoopPrinter
from tessel.tir import stmt as S
from tessel.tir.block import Block, BlockRealize, IterVar, IterVarType
from tessel.tir.buffer import Buffer


class StmtPrinter:
    """Emits the lines of statements into the context's output."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.expr = ExprPrinter(ctx)
        self.loops = LoopPrinter(self)
        self._handlers: dict[type, Callable[[Any], None]] = {
            S.SeqStmt: self._seq,
            S.BufferStore: self._store,
            S.Evaluate: self._evaluate,
            S.LetStmt: self._let,
            S.AssertStmt: self._assert,
            S.IfThenElse: self._if,
            S.While: self._while,
            S.AttrStmt: self._attr,
            S.Allocate: self._allocate,
            S.AllocateConst: self._allocate_const,
            S.DeclBuffer: self._decl_buffer,
            S.For: self.loops.print_for,
            BlockRealize: lambda realize: print_block_realize(self, realize),
            Block: lambda block: print_block(self, block),
        }
        self._tail = True  # False while printing a statement that others follow in a SeqStmt
        # A statement printed with the rest of its block after it (`x: T.int32 = v`, a
        # declaration) hands that rest to `print`'s loop with `_continue`, in scopes that stay
        # open until the block ends: a chain of thousands of lets costs no stack (issue 25).
        self._rest: Any = None
        self._scopes: ExitStack | None = None

    def emit(self, text: str) -> None:
        """Emit one line at the current indentation."""
        self.ctx.lines.emit(text)

    def value(self, value: Any) -> str:
        """An annotation value (numbers, strings, lists, dicts, IR nodes)."""
        return annotation_value(value, self._annotation_node)

    def _annotation_node(self, node: Any) -> str:
        """An IR node inside an annotation; integer constants keep their type (`T.bool(True)`)."""
        if isinstance(node, IntImm):
            return self.ctx.marked(node, typed_int_literal(node.value, node.dtype))
        return self.expr.text(node)

    def print(self, stmt: Any) -> None:
        """Print `stmt`; if it is highlighted its first line is underlined."""
        outer_rest, outer_scopes = self._rest, self._scopes
        with ExitStack() as scopes:
            self._scopes = scopes
            try:
                while stmt is not None:
                    self._rest = None
                    self._print_one(stmt)
                    stmt = self._rest
            finally:
                self._rest, self._scopes = outer_rest, outer_scopes

    def _print_one(self, stmt: Any) -> None:
        if self.ctx.is_highlighted(stmt):
            self.ctx.lines.highlight_next_line()
        for klass in type(stmt).__mro__:
            if klass in self._handlers:
                self._handlers[klass](stmt)
                return
        self.emit(f"# unprintable node {type(stmt).__name__}")

    def _open_scope(self) -> None:
        """A naming scope that lasts until the block of statements being printed ends."""
        assert self._scopes is not None
        self._scopes.enter_context(self.ctx.names.scope())

    def _continue(self, stmt: Any) -> None:
        """Print `stmt` next, at the same indentation, in the scopes opened so far."""
        self._rest = stmt

    def declare_view(self, buffer: Buffer) -> None:
        """`X = T.Buffer(shape, dtype, data=...)` for a buffer used without a declaration."""
        arguments = buffer_arguments(self.expr, buffer, scope=False)
        data = self.expr.text(buffer.data)
        self.emit(f"{self.ctx.define_buffer(buffer, False)} = T.Buffer({arguments}, data={data})")

    def declare_views(self, data: Any) -> None:
        """Declare the undeclared buffers over `data`, which has just been defined."""
        for buffer in self.ctx.views.pop(id(data), ()):
            self.declare_view(buffer)

    def block_body(self, stmt: Any) -> None:
        """Print `stmt` one level deeper, in its own naming scope."""
        with self.ctx.lines.indented():
            self.nested(stmt)

    def nested(self, stmt: Any) -> None:
        """Print `stmt` as a whole block of statements (nothing follows it), in its own scope."""
        tail, self._tail = self._tail, True
        with self.ctx.names.scope():
            self.print(stmt)
        self._tail = tail

    def rest(self, stmt: Any) -> None:
        """Print the body of a rest-of-block statement at the same indentation."""
        self._open_scope()
        self._continue(stmt)

    def _seq(self, seq: S.SeqStmt) -> None:
        tail = self._tail
        for index, stmt in enumerate(seq.seq):
            self._tail = tail and index == len(seq.seq) - 1
            self.print(stmt)
        self._tail = tail

    def _store(self, store: S.BufferStore) -> None:
        name = self.ctx.buffer(store.buffer)
        value = self._stored_value(store)
        if store.predicate is not None:
            indices = ", ".join(self.expr.text(i) for i in store.indices)
            predicate = self.expr.text(store.predicate)
            self.emit(f"{name}.vstore([{indices}], {value}, predicate={predicate})")
            return
        self.emit(f"{name}[{self.expr.indices(store.indices)}] = {value}")

    def _stored_value(self, store: S.BufferStore) -> str:
        value = store.value
        # A stored `T.undef()` takes the buffer's dtype, so it needs no dtype argument.
        if isinstance(value, Call) and value.op.name == "tir.undef" and not value.args:
            return self.ctx.marked(value, "T.undef()")
        return self.expr.text(value)

    def _evaluate(self, stmt: S.Evaluate) -> None:
        if isinstance(stmt.value, Call):
            self.emit(self.expr.text(stmt.value))
        else:
            self.emit(f"T.evaluate({self.expr.text(stmt.value)})")

    def _let(self, stmt: S.LetStmt) -> None:
        value = self.expr.text(stmt.value)
        self._open_scope()
        name = self.ctx.define_var(stmt.var)
        if not self._tail:  # `x: T.int32 = v` would take in the statements that follow
            self.emit(f"with T.LetStmt({value}) as {name}:")
            self.block_body(stmt.body)
            return
        self.emit(f"{name}: {dtype_annotation(stmt.var.dtype)} = {value}")
        self.declare_views(stmt.var)
        self._continue(stmt.body)

    def _assert(self, stmt: S.AssertStmt) -> None:
        message = stmt.message
        text = quote(message.value) if isinstance(message, StringImm) else self.expr.text(message)
        self.emit(f"assert {self.expr.text(stmt.condition)}, {text}")
        self.rest(stmt.body)

    def _if(self, stmt: S.IfThenElse) -> None:
        self.emit(f"if {self.expr.text(stmt.condition)}:")
        self.block_body(stmt.then_case)
        if stmt.else_case is not None:
            self.emit("else:")
            self.block_body(stmt.else_case)

    def _while(self, stmt: S.While) -> None:
        self.emit(f"while {self.expr.text(stmt.condition)}:")
        self.block_body(stmt.body)

    def _attr(self, stmt: S.AttrStmt) -> None:
        if is_thread_launch(stmt):
            self._launch_thread(stmt)
            return
        # The parser makes a T.attr value an IR constant, so a plain `64` reads back the same.
        node, value = self.value(stmt.node), annotation_value(stmt.value, self.expr.text)
        call = f"T.attr({node}, {quote(stmt.attr_key)}, {value})"
        if self._tail:  # as TVM prints it: the body is the rest of the block
            self.emit(call)
            self.rest(stmt.body)
            return
        self.emit(f"with {call}:")
        self.block_body(stmt.body)

    def _launch_thread(self, stmt: S.AttrStmt) -> None:
        """`bx = T.launch_thread("blockIdx.x", 128)` over the rest of the block, or in its
        `with` form when statements follow it; a variable already launched prints by name."""
        thread, extent = stmt.node, self.expr.text(stmt.value)
        self._open_scope()
        if self.ctx.names.is_defined(thread.var):
            call = f"T.launch_thread({self.ctx.var(thread.var)}, {extent})"
            head = f"with {call}:" if not self._tail else call
        else:
            name = self.ctx.define_var(thread.var)
            call = f"T.launch_thread({quote(thread.thread_tag)}, {extent})"
            head = f"with {call} as {name}:" if not self._tail else f"{name} = {call}"
        self.emit(head)
        if self._tail:
            self._continue(stmt.body)
        else:
            self.block_body(stmt.body)

    def _allocate_keywords(self, stmt: S.Allocate | S.AllocateConst) -> str:
        keywords = ""
        condition = getattr(stmt, "condition", None)
        if condition is not None and not (isinstance(condition, IntImm) and condition.value == 1):
            keywords += f", condition={self.expr.text(condition)}"
        if stmt.annotations:
            keywords += f", annotations={self.value(stmt.annotations)}"
        return keywords

    def _allocate(self, stmt: S.Allocate) -> None:
        pointer = stmt.buffer_var.type_annotation
        assert pointer is not None  # Allocate checks its var is pointer-typed
        scope = pointer.storage_scope
        extents = "[" + ", ".join(self.expr.arg(e) for e in stmt.extents) + "]"
        call = f"T.allocate({extents}, {dtype_literal(stmt.dtype)}, {quote(scope)}"
        call += self._allocate_keywords(stmt) + ")"
        decl = stmt.body if isinstance(stmt.body, S.DeclBuffer) else None
        if self._tail and decl is not None and is_allocate_sugar(stmt, decl.buffer):
            self._declare_with(call, decl)
            return
        self._allocate_with(call, stmt)

    def _allocate_with(self, call: str, stmt: S.Allocate | S.AllocateConst) -> None:
        """`with T.allocate(...) as x:` around the body."""
        with self.ctx.names.scope():
            name = self.ctx.define_var(stmt.buffer_var)
            self.emit(f"with {call} as {name}:")
            with self.ctx.lines.indented():
                self.declare_views(stmt.buffer_var)
                self.nested(stmt.body)

    def _declare_with(self, call: str, decl: S.DeclBuffer) -> None:
        """`X = T.allocate(...)`: an allocation and its DeclBuffer on one line."""
        if self.ctx.is_highlighted(decl):
            self.ctx.lines.highlight_next_line()
        self._open_scope()
        name = self.ctx.define_buffer(decl.buffer)
        self.emit(f"{name} = {call}")
        self.declare_views(decl.buffer.data)
        self._continue(decl.body)

    def _allocate_const(self, stmt: S.AllocateConst) -> None:
        extents = "[" + ", ".join(self.expr.arg(e) for e in stmt.extents) + "]"
        if stmt.data is not None:
            data = "[" + ", ".join(python_number(v) for v in stmt.data.ravel()) + "]"
            index = ""
        else:
            data, index = "None", f", irmod_storage_idx={stmt.irmod_storage_idx}"
        call = f"T.allocate_const({data}, {dtype_literal(stmt.dtype)}, {extents}{index}"
        call += self._allocate_keywords(stmt) + ")"
        decl = stmt.body if isinstance(stmt.body, S.DeclBuffer) else None
        if decl is not None and is_allocate_sugar(stmt, decl.buffer):
            self._declare_with(call, decl)
            return
        self._allocate_with(call, stmt)

    def _decl_buffer(self, stmt: S.DeclBuffer) -> None:
        buffer = stmt.buffer
        data = self.expr.text(buffer.data)
        arguments = buffer_arguments(self.expr, buffer, scope=False)
        self._open_scope()
        name = self.ctx.define_buffer(buffer, implicit_data=False)
        self.emit(f"{name} = T.decl_buffer({arguments}, data={data})")
        self._continue(stmt.body)


def is_thread_launch(stmt: S.AttrStmt) -> bool:
    """A "thread_extent" attribute of a thread axis: printed as `T.launch_thread`."""
    node = stmt.node
    return (
        stmt.attr_key == "thread_extent"
        and isinstance(node, IterVar)
        and node.iter_type is IterVarType.THREAD_INDEX
    )


def relaunched_threads(body: Any) -> list[tuple[Any, str]]:
    """(variable, thread tag) of each thread variable launched more than once: the printer
    declares it with `T.env_thread` at the top so that every launch names the same one."""
    counts: dict[int, list[Any]] = {}
    for node in walk(body):
        if isinstance(node, S.AttrStmt) and is_thread_launch(node):
            counts.setdefault(id(node.node.var), []).append(node.node)
    return [(nodes[0].var, nodes[0].thread_tag) for nodes in counts.values() if len(nodes) > 1]


def is_allocate_sugar(stmt: S.Allocate | S.AllocateConst, buffer: Buffer) -> bool:
    """True if the allocation and the DeclBuffer after it print as one `X = T.allocate(...)`:
    a buffer over the allocated pointer, of its dtype and extents, with default layout."""
    if buffer.data is not stmt.buffer_var or buffer.dtype != stmt.dtype:
        return False
    if not same_expr(tuple(buffer.shape), tuple(stmt.extents)):
        return False
    layout = buffer.data_alignment == 64 and buffer.offset_factor == 1 and not buffer.strides
    return layout and has_default_offset(buffer) and not buffer.axis_separators
