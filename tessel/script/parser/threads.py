"""GPU thread launches: `T.env_thread` declares a thread variable, `T.launch_thread` makes the
"thread_extent" AttrStmt whose node is the thread's IterVar (as TVM's IR builder does)."""

from __future__ import annotations

import ast

from tessel.ir import builders
from tessel.ir.expr import Range, Var
from tessel.script.parser import intents
from tessel.script.parser.statements import Emitted, Rest, StatementParser
from tessel.tir.block import IterVar, IterVarType
from tessel.tir.stmt import AttrStmt, Stmt


class ThreadParser(StatementParser):
    """Binds env_thread variables and builds thread launches."""

    def bind_env_thread(self, target: ast.Name, intent: intents.EnvThreadIntent) -> None:
        """`tx = T.env_thread("threadIdx.x")`: a variable of that thread axis, not launched."""
        var = Var(target.id, intent.dtype)
        self.function_frame().env_threads[id(var)] = intent.thread_tag
        self.scopes.bind(target.id, var)

    def launch_var(self, node: ast.AST, intent: intents.LaunchThreadIntent, name: str) -> Var:
        """The variable a launch binds: the env_thread variable, or a new one named `name`."""
        if isinstance(intent.thread, Var):
            if id(intent.thread) not in self.function_frame().env_threads:
                raise self.source.error(
                    node,
                    f"`{intent.thread.name}` is not a thread variable",
                    'declare it with `tx = T.env_thread("threadIdx.x")`, or pass the thread '
                    'tag: T.launch_thread("threadIdx.x", 64)',
                )
            return intent.thread
        var = Var(name, intent.extent.dtype)
        self.function_frame().env_threads[id(var)] = intent.thread
        return var

    def launch(self, intent: intents.LaunchThreadIntent, var: Var, node: ast.AST) -> Rest:
        """The "thread_extent" AttrStmt of launching `var`, around the body it is given."""
        tag = self.function_frame().env_threads[id(var)]
        extent = builders.cast(intent.extent, var.dtype)
        dom = Range(builders.const(0, var.dtype), extent)
        thread = IterVar(dom, var, IterVarType.THREAD_INDEX, tag)
        span = self.source.span(node)
        return Rest(lambda body: AttrStmt(thread, "thread_extent", extent, body, span=span))

    def header_statement(self, node: ast.Expr, value: object) -> Emitted:
        """A bare `T.launch_thread(tx, 64)` launches over the rest of the block."""
        if isinstance(value, intents.LaunchThreadIntent):
            return self.launch_statement(node, value, None)
        return super().header_statement(node, value)

    def launch_statement(
        self, node: ast.stmt, intent: intents.LaunchThreadIntent, target: ast.Name | None
    ) -> Emitted:
        """`T.launch_thread(tx, 64)` or `bx = T.launch_thread("blockIdx.x", 128)`: a launch
        over the rest of the block."""
        var = self.launch_var(node, intent, target.id if target else "thread")
        if target is not None:
            self.scopes.bind(target.id, var)
        return self.launch(intent, var, node)

    def launch_with(self, node: ast.With, intent: intents.LaunchThreadIntent) -> Stmt:
        """`with T.launch_thread(...) [as tx]:`: a launch over the with-body."""
        target = node.items[0].optional_vars
        if target is not None and not isinstance(target, ast.Name):
            raise self.source.error(target, "write `with T.launch_thread(...) as name:`")
        var = self.launch_var(node.items[0].context_expr, intent, target.id if target else "thread")
        self.scopes.push()
        try:
            self.scopes.bind(target.id if target is not None else var.name, var)
            body = self.parse_nested(node.body, "launch_thread")
        finally:
            self.scopes.pop()
        return self.launch(intent, var, node).wrap(body)
