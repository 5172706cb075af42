"""`for` statements: `T.grid`, `range`, `T.serial/parallel/vectorized/unroll/thread_binding`."""

from __future__ import annotations

import ast

from tessel.ir import builders
from tessel.ir.expr import Range, Var
from tessel.script.parser import intents
from tessel.script.parser.statements import Emitted, StatementParser
from tessel.tir.stmt import For, ForKind, Stmt


class LoopParser(StatementParser):
    """Loops; each loop variable's range is recorded for `T.axis.remap`."""

    def _stmt_For(self, node: ast.For) -> Emitted:  # noqa: N802  (ast class names)
        if node.orelse:
            raise self.source.error(node.orelse[0], "`for ... else` is not supported")
        loops = self.eval_expr(node.iter)
        if isinstance(loops, intents.LoopIntent):
            return self.parse_loop_nest(node, [self.loop_name(node.target)], [loops])
        if isinstance(loops, intents.GridIntent):
            names = self.grid_names(node.target, len(loops.extents))
            headers = [
                intents.LoopIntent(ForKind.SERIAL, builders.const(0, e.dtype), e)
                for e in loops.extents
            ]
            return self.parse_loop_nest(node, names, headers)
        raise self.source.error(
            node.iter,
            f"a for loop iterates over T.grid, range, T.serial, T.parallel, T.vectorized, "
            f"T.unroll or T.thread_binding, not `{ast.unparse(node.iter)}`",
        )

    def loop_name(self, target: ast.expr) -> str:
        """The one name a single loop binds."""
        if not isinstance(target, ast.Name):
            raise self.source.error(target, "a loop binds one name here (use T.grid for several)")
        return target.id

    def grid_names(self, target: ast.expr, count: int) -> list[str]:
        """The names a T.grid loop binds, one per extent."""
        if isinstance(target, ast.Name) and count == 1:
            return [target.id]
        elts = target.elts if isinstance(target, ast.Tuple | ast.List) else [target]
        if len(elts) != count or not all(isinstance(e, ast.Name) for e in elts):
            message = f"T.grid has {count} extents, so the loop must bind {count} names"
            raise self.source.error(target, message)
        return [e.id for e in elts]  # type: ignore[attr-defined]  # checked: ast.Name

    def parse_loop_nest(
        self, node: ast.For, names: list[str], headers: list[intents.LoopIntent]
    ) -> Stmt:
        """Nested For statements (outermost first) around the parsed body."""
        loop_vars = [Var(n, h.extent.dtype) for n, h in zip(names, headers, strict=True)]
        self.scopes.push()
        try:
            for var, header in zip(loop_vars, headers, strict=True):
                self.scopes.bind(var.name, var)
                self.function_frame().loop_ranges[id(var)] = Range(header.min, header.extent)
            body = self.parse_nested(node.body, "for")
        finally:
            self.scopes.pop()
        span = self.source.span(node)
        for var, header in reversed(list(zip(loop_vars, headers, strict=True))):
            body = For(
                var,
                header.min,
                header.extent,
                header.kind,
                body,
                header.thread,
                header.annotations or {},
                span=span,
            )
        return body
