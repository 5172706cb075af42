"""`with` statements: blocks (and their `T.init`), `T.attr`, and `with T.allocate(...) as p`."""

from __future__ import annotations

import ast

from tessel.ir import builders
from tessel.ir.expr import Var
from tessel.script.parser import intents
from tessel.script.parser.context import BlockFrame
from tessel.script.parser.declarations import pointer_var
from tessel.script.parser.statements import Emitted
from tessel.script.parser.threads import ThreadParser
from tessel.support.frozen_map import freeze
from tessel.tir.analysis.access_region import infer_access_regions
from tessel.tir.block import Block, BlockRealize
from tessel.tir.stmt import Allocate, AttrStmt, LetStmt, Stmt


class BlockParser(ThreadParser):
    """`with` statements; a block's header statements fill its BlockFrame."""

    def _stmt_With(self, node: ast.With) -> Emitted:  # noqa: N802  (ast class names)
        if len(node.items) != 1:
            raise self.source.error(node, "a with statement takes one item here")
        item = node.items[0]
        context = self.eval_expr(item.context_expr)
        with_as = (
            intents.AllocateIntent,
            intents.LetStmtIntent,
            intents.LaunchThreadIntent,
        )
        if item.optional_vars is not None and not isinstance(context, with_as):
            raise self.source.error(
                item.optional_vars,
                "`as` is only used with T.allocate, T.LetStmt and T.launch_thread",
            )
        if isinstance(context, intents.BlockIntent):
            return self.parse_block(node, context.name)
        if isinstance(context, intents.InitIntent):
            return self.parse_init(node, item.context_expr)
        if isinstance(context, intents.AttrIntent):
            body = self.parse_nested(node.body, "attr")
            return AttrStmt(
                context.node, context.key, freeze(context.value), body, span=self.source.span(node)
            )
        if isinstance(context, intents.AllocateIntent):
            return self.parse_raw_allocate(node, item, context)
        if isinstance(context, intents.LetStmtIntent):
            return self.parse_let_with(node, item, context)
        if isinstance(context, intents.LaunchThreadIntent):
            return self.launch_with(node, context)
        raise self.source.error(
            item.context_expr,
            f"`with {ast.unparse(item.context_expr)}` is not a block, T.init, T.attr or T.allocate",
        )

    def parse_raw_allocate(
        self, node: ast.With, item: ast.withitem, intent: intents.AllocateIntent
    ) -> Stmt:
        """`with T.allocate(...) as x_data:`: raw memory; x_data is the pointer variable."""
        if not isinstance(item.optional_vars, ast.Name):
            raise self.source.error(node, "write `with T.allocate(...) as name:`")
        data = pointer_var(item.optional_vars.id, intent.dtype, intent.scope)
        self.scopes.push()
        try:
            self.scopes.bind(data.name, data)
            body = self.parse_nested(node.body, "allocate")
        finally:
            self.scopes.pop()
        return Allocate(
            data,
            intent.dtype,
            intent.extents,
            intent.condition,
            body,
            intent.annotations,
            span=self.source.span(node),
        )

    def parse_let_with(
        self, node: ast.With, item: ast.withitem, intent: intents.LetStmtIntent
    ) -> Stmt:
        """`with T.LetStmt(value) as x:` or `with T.LetStmt(value, var=x):` (also the older
        `with T.let(x, value):`): a LetStmt over the with-body."""
        target = item.optional_vars
        if target is not None and not isinstance(target, ast.Name):
            raise self.source.error(target, "write `with T.LetStmt(value) as name:`")
        if (target is None) == (intent.var is None):
            message = "T.LetStmt binds either the `as` name or var=, exactly one of them"
            raise self.source.error(item.context_expr, message)
        var = intent.var if target is None else Var(target.id, intent.value.dtype)
        self.scopes.push()
        try:
            self.scopes.bind(target.id if target is not None else var.name, var)
            body = self.parse_nested(node.body, "let")
        finally:
            self.scopes.pop()
        return LetStmt(var, intent.value, body, span=self.source.span(node))

    def parse_init(self, node: ast.With, call: ast.expr) -> Emitted:
        """`with T.init():` fills the enclosing block's init statement."""
        frame = self.block_frame(call, "T.init()")
        if frame.init is not None:
            raise self.source.error(call, "a block has at most one T.init()")
        frame.init = self.parse_nested(node.body, "init")
        return None

    def parse_block(self, node: ast.With, name: str) -> Stmt:
        """A BlockRealize of the block; omitted reads/writes are inferred from the body."""
        frame = BlockFrame(name)
        is_root = name == "root" and len(self.frames) == 1
        self.function_frame().has_blocks = True
        self.scopes.push()
        self.frames.append(frame)
        try:
            body = self.parse_body(node.body)
        finally:
            self.frames.pop()
            self.scopes.pop()
        span = self.source.span(node)
        block = Block(
            tuple(frame.iter_vars),
            frame.reads or (),
            frame.writes or (),
            name,
            body,
            frame.init,
            tuple(frame.alloc_buffers),
            tuple(frame.match_buffers),
            frame.annotations,
            span=span,
        )
        if not is_root and (frame.reads is None or frame.writes is None):
            block = self.with_inferred_regions(block, frame)
        predicate = builders.const(True) if frame.predicate is None else frame.predicate
        return BlockRealize(tuple(frame.iter_values), predicate, block, span=span)

    def with_inferred_regions(self, block: Block, frame: BlockFrame) -> Block:
        """Fill in the T.reads / T.writes the script left out (TVM infers them the same way)."""
        reads, writes = infer_access_regions(block)
        return Block(
            block.iter_vars,
            reads if frame.reads is None else frame.reads,
            writes if frame.writes is None else frame.writes,
            block.name_hint,
            block.body,
            block.init,
            block.alloc_buffers,
            block.match_buffers,
            block.annotations,
            span=block.span,
        )
