"""Assignments: buffer stores, `let` bindings, and names bound to values.

`x = e` binds depending on what `e` is: a declaration (see declarations.py), a fresh variable
(`T.int32()`), a buffer, an expression (a LetStmt over the rest of the block), or a Python value.
"""

from __future__ import annotations

import ast
import dataclasses
from typing import Any

from tessel.ir import builders
from tessel.ir.expr import PrimExpr, Var
from tessel.script.parser import intents, operators
from tessel.script.parser.declarations import DeclarationBinder, renamed_buffer
from tessel.script.parser.evaluator import (
    BUILD_ERRORS,
    error_message,
    index_lanes,
    value_for_store,
)
from tessel.script.parser.statements import Emitted, Rest
from tessel.script.parser.threads import ThreadParser
from tessel.tir.buffer import Buffer
from tessel.tir.stmt import BufferStore, LetStmt, Stmt


class AssignmentParser(DeclarationBinder, ThreadParser):
    """`=`, annotated assignment and augmented assignment."""

    def _stmt_Assign(self, node: ast.Assign) -> Emitted:  # noqa: N802  (ast class names)
        if len(node.targets) != 1:
            raise self.source.error(node, "chained assignment `a = b = ...` is not supported")
        target = node.targets[0]
        if isinstance(target, ast.Subscript):
            return self.store(target, self.eval_expr(node.value), node, node.value)
        value = self.eval_expr(node.value)
        if isinstance(target, ast.Name):
            return self.bind_value(target, value, node)
        if isinstance(target, ast.Tuple | ast.List):
            return self.bind_tuple(target, value, node)
        raise self.source.error(target, f"cannot assign to `{ast.unparse(target)}`")

    def _stmt_AnnAssign(self, node: ast.AnnAssign) -> Emitted:  # noqa: N802
        if node.value is None or not isinstance(node.target, ast.Name):
            raise self.source.error(node, "an annotated assignment needs a name and a value")
        annotation = self.eval_expr(node.annotation)
        if not isinstance(annotation, intents.DTypeFunction):
            raise self.source.error(node.annotation, "a let annotation must be a type like T.int32")
        value = self.eval_expr(node.value)
        if not isinstance(value, PrimExpr):
            value = builders.const(value, annotation.dtype)
        if value.dtype != annotation.dtype:
            name, declared = node.target.id, annotation.dtype
            raise self.source.error(
                node.value, f"`{name}` is declared {declared} but the value is {value.dtype}"
            )
        return self.bind_let(node.target, value, node)

    def _stmt_AugAssign(self, node: ast.AugAssign) -> Emitted:  # noqa: N802
        # `C[i] += x` is `C[i] = C[i] + x`; `n += 1` binds a new n
        current = self.eval_expr(node.target)
        value = operators.apply_binary(node.op, current, self.eval_expr(node.value))
        if isinstance(node.target, ast.Subscript):
            return self.store(node.target, value, node, node.value)
        if isinstance(node.target, ast.Name):
            return self.bind_value(node.target, value, node)
        raise self.source.error(node.target, f"cannot assign to `{ast.unparse(node.target)}`")

    def store(
        self, target: ast.Subscript, value: Any, node: ast.stmt, value_node: ast.expr
    ) -> Stmt:
        """`A[i, j] = value` (Python numbers become constants of A's dtype)."""
        buffer = self.eval_expr(target.value)
        if not isinstance(buffer, Buffer):
            what = ast.unparse(target.value)
            raise self.source.error(target.value, f"cannot store into `{what}`: not a buffer")
        index = self.eval_expr(target.slice)
        indices = index if isinstance(index, tuple) else (index,)
        if any(isinstance(i, slice) for i in indices):
            message = "a store needs one index per dimension, not a slice"
            raise self.source.error(target.slice, message)
        index_exprs = tuple(builders.convert(i) for i in indices)
        try:
            stored = value_for_store(buffer, value, index_lanes(index_exprs))
        except BUILD_ERRORS as err:
            raise self.source.error(value_node, error_message(err)) from err
        return BufferStore(buffer, stored, index_exprs, span=self.source.span(node))

    def bind_tuple(self, target: ast.Tuple | ast.List, value: Any, node: ast.stmt) -> Emitted:
        """`vi, vj = T.axis.remap("SS", [i, j])`, or unpacking a tuple of Python values."""
        if not all(isinstance(e, ast.Name) for e in target.elts):
            raise self.source.error(target, "only names can be unpacked into")
        meta = isinstance(value, intents.MetaVarIntent)  # `a, b = T.meta_var((x, y))`
        value = value.value if meta else value
        values = tuple(value) if isinstance(value, tuple | list) else None
        if values is None or len(values) != len(target.elts):
            count = "a non-sequence" if values is None else f"{len(values)} values"
            raise self.source.error(target, f"cannot unpack {count} into {len(target.elts)} names")
        for name_node, item in zip(target.elts, values, strict=True):
            if meta:
                self.scopes.bind(name_node.id, item)  # type: ignore[attr-defined]  # a Name
            else:
                # a Name here
                self.bind_unpacked(target, name_node, item, node)  # type: ignore[arg-type]
        return None

    def bind_unpacked(self, target: ast.expr, name: ast.Name, item: Any, node: ast.stmt) -> None:
        """One name of an unpacking: a declaration or a Python value, never a let."""
        if isinstance(item, PrimExpr) and not _is_fresh_var(self, item):
            message = "unpacking cannot bind expressions; assign each one"
            raise self.source.error(target, message)
        if self.bind_declaration(name, item, node) is False:
            self.bind_plain(name, item)

    def bind_value(self, target: ast.Name, value: Any, node: ast.stmt) -> Emitted:
        """Bind `target` to `value` as described in the module docstring."""
        self.check_not_buffer(target)
        if isinstance(value, tuple) and any(isinstance(v, intents.AxisIntent) for v in value):
            if len(value) != 1:
                raise self.source.error(
                    target, f"T.axis.remap makes {len(value)} iterators; unpack them into names"
                )
            value = value[0]
        if isinstance(value, intents.MetaVarIntent):
            self.scopes.bind(target.id, value.value)
            return None
        if isinstance(value, intents.EnvThreadIntent):
            self.bind_env_thread(target, value)
            return None
        if isinstance(value, intents.LaunchThreadIntent):
            return self.launch_statement(node, value, target)
        if isinstance(value, intents.LetStmtIntent):  # `x = T.LetStmt(value)`
            if value.var is not None:
                span = self.source.span(node)
                self.scopes.bind(target.id, value.var)
                return Rest(lambda body: LetStmt(value.var, value.value, body, span=span))
            return self.bind_let(target, value.value, node)
        bound = self.bind_declaration(target, value, node)
        if bound is not False:
            return bound  # type: ignore[return-value]  # a declaration's statement or None
        if isinstance(value, PrimExpr | int | float) and not _is_plain(self, value):
            return self.bind_let(target, builders.convert(value), node)
        self.bind_plain(target, value)
        return None

    def bind_plain(self, target: ast.Name, value: Any) -> None:
        """Bind a name to a value as it is (a fresh var or buffer gets the name)."""
        if isinstance(value, Buffer) and not self.scopes.is_defined(value.data):
            value = renamed_buffer(value, target.id)
        elif _is_fresh_var(self, value):
            value = dataclasses.replace(value, name=target.id)
        self.scopes.bind(target.id, value)

    def check_not_buffer(self, target: ast.Name) -> None:
        """Rebinding a buffer to a scalar is almost always a mistake."""
        found, current = self.scopes.lookup(target.id)
        if found and isinstance(current, Buffer) and self.scopes.is_script_name(target.id):
            raise self.source.error(
                target,
                f"cannot assign to buffer `{target.id}` as a scalar",
                f"write `{target.id}[...] = value` to store into it",
            )

    def bind_let(self, target: ast.Name, value: PrimExpr, node: ast.stmt) -> Rest:
        """`x = e`: a LetStmt binding a new variable over the rest of the block."""
        var = Var(target.id, value.dtype)
        self.scopes.bind(target.id, var)
        span = self.source.span(node)
        return Rest(lambda body: LetStmt(var, value, body, span=span))


def _is_fresh_var(parser: AssignmentParser, value: Any) -> bool:
    """A variable made by `T.int32()` / `T.var(...)` that no statement has bound yet."""
    return isinstance(value, Var) and not parser.scopes.is_defined(value)


def _is_plain(parser: AssignmentParser, value: Any) -> bool:
    return isinstance(value, bool) or _is_fresh_var(parser, value)
