"""Statement lists: sequencing, rest-of-block forms, and the simple statements (if, while, ...)."""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tessel.ir import builders
from tessel.ir.expr import IntImm, PrimExpr, StringImm
from tessel.script.errors import ParseError
from tessel.script.parser import intents
from tessel.script.parser.context import BlockFrame, BodyFrame, Frame, FunctionFrame, Scopes
from tessel.script.parser.evaluator import (
    BUG_ERRORS,
    BUILD_ERRORS,
    ExprEvaluator,
    error_message,
    too_deep,
)
from tessel.support.dtype import int32
from tessel.support.frozen_map import freeze
from tessel.tir import builtin
from tessel.tir.stmt import AssertStmt, AttrStmt, Evaluate, IfThenElse, SeqStmt, Stmt, While


@dataclass(frozen=True)
class Rest:
    """A statement that encloses the rest of its block (let, assert, allocate, decl_buffer)."""

    wrap: Callable[[Stmt], Stmt]


Emitted = Stmt | Rest | None

_UNSUPPORTED = {
    "Try": "`try` statements", "TryStar": "`try` statements", "ClassDef": "class definitions",
    "FunctionDef": "nested function definitions", "AsyncFunctionDef": "async functions",
    "Import": "`import` statements", "ImportFrom": "`import` statements",
    "Global": "`global` statements", "Nonlocal": "`nonlocal` statements",
    "Delete": "`del` statements", "Raise": "`raise` statements", "Match": "`match` statements",
    "AsyncFor": "`async for` loops", "AsyncWith": "`async with` statements",
    "Break": "`break`", "Continue": "`continue`",
}  # fmt: skip


def empty_body() -> Stmt:
    """The statement of an empty body (`T.evaluate(0)`, as TVM prints it)."""
    return Evaluate(IntImm(int32, 0))


class StatementParser(ExprEvaluator):
    """Parses statement lists; loops, blocks and assignments come from the other mixins."""

    scopes: Scopes
    frames: list[Frame]

    # ------------------------------------------------------------------ sequencing
    def parse_body(self, stmts: list[ast.stmt]) -> Stmt:
        """One statement for a list; rest-of-block forms enclose the statements after them."""
        result: list[Stmt] = []
        for index, node in enumerate(stmts):
            emitted = self.parse_stmt(node)
            if isinstance(emitted, Rest):
                result.append(emitted.wrap(self.parse_body(stmts[index + 1 :])))
                break
            if emitted is not None:
                result.append(emitted)
        return SeqStmt.flatten(result) if result else empty_body()

    def parse_nested(self, stmts: list[ast.stmt], kind: str) -> Stmt:
        """A body in its own scope (loop, branch, ...); block headers are not allowed in it."""
        self.scopes.push()
        self.frames.append(BodyFrame(kind))
        try:
            return self.parse_body(stmts)
        finally:
            self.frames.pop()
            self.scopes.pop()

    def parse_stmt(self, node: ast.stmt) -> Emitted:
        """Dispatch on the statement kind; node-building errors become ParseErrors here."""
        method = getattr(self, f"_stmt_{type(node).__name__}", None)
        if method is None:
            what = _UNSUPPORTED.get(type(node).__name__, f"`{type(node).__name__}` statements")
            raise self.source.error(node, f"{what} are not supported in TVMScript")
        try:
            return method(node)
        except ParseError:
            raise
        except BUILD_ERRORS as err:
            raise self.source.error(node, error_message(err), getattr(err, "hint", None)) from err
        except BUG_ERRORS as err:
            raise self.source.internal_error(node, err) from err
        except RecursionError as err:
            hint = "split the expression into several statements (e.g. with let bindings)"
            raise self.source.error(node, too_deep("this statement"), hint) from err

    # ------------------------------------------------------------------ frames
    def block_frame(self, node: ast.AST, what: str) -> BlockFrame:
        """The block whose body is being parsed, or a ParseError: `what` belongs in a block."""
        frame = self.frames[-1]
        if isinstance(frame, BlockFrame):
            return frame
        raise self.source.error(
            node,
            f"{what} is only allowed directly inside a block",
            "put it at the top of a `with T.block(...):` body",
        )

    def function_frame(self) -> FunctionFrame:
        """The frame of the function being parsed."""
        frame = self.frames[0]
        assert isinstance(frame, FunctionFrame)
        return frame

    def nearest_block(self) -> BlockFrame | None:
        """The innermost enclosing block (None at function level: the root block)."""
        for frame in reversed(self.frames):
            if isinstance(frame, BlockFrame):
                return frame
        return None

    # ------------------------------------------------------------------ simple statements
    def _stmt_Pass(self, node: ast.Pass) -> Emitted:  # noqa: N802  (ast class names)
        return None

    def _stmt_Expr(self, node: ast.Expr) -> Emitted:  # noqa: N802
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return None  # a docstring
        value = self.eval_expr(node.value)
        span = self.source.span(node)
        if isinstance(value, Stmt):
            return value
        if isinstance(value, PrimExpr):
            return Evaluate(value, span=span)
        if value is None:
            return None  # a Python helper called for its effect on nothing
        return self.header_statement(node, value)

    def header_statement(self, node: ast.Expr, value: Any) -> Emitted:
        """`T.reads(...)`, `T.writes(...)`, `T.where(...)`, `T.block_attr`, `T.func_attr`."""
        call = ast.unparse(node.value).split("(")[0]
        if isinstance(value, intents.RegionsIntent):
            frame = self.block_frame(node, call)
            setattr(frame, value.kind, value.regions)
        elif isinstance(value, intents.WhereIntent):
            self.block_frame(node, call).predicate = value.condition
        elif isinstance(value, intents.AttrsIntent) and value.target == "block":
            self.block_frame(node, call).annotations.update(value.attrs)
        elif isinstance(value, intents.AttrIntent):
            return self.attr_over_rest(node, value)
        elif isinstance(value, intents.AttrsIntent) and value.target == "func":
            if len(self.frames) != 1:
                raise self.source.error(node, f"{call} is only allowed at the top of the function")
            self.function_frame().attrs.update(value.attrs)
        else:
            raise self.source.error(
                node,
                f"`{ast.unparse(node.value)}` does nothing as a statement",
                "assign it to a name, or use it in a for / with statement",
            )
        return None

    def attr_over_rest(self, node: ast.Expr, intent: intents.AttrIntent) -> Rest:
        """A bare `T.attr(node, "key", value)`: an AttrStmt over the rest of the block, as TVM
        prints an attribute whose body ends its block."""
        span = self.source.span(node)
        value = freeze(intent.value)
        return Rest(lambda body: AttrStmt(intent.node, intent.key, value, body, span=span))

    def eval_condition(self, node: ast.expr, what: str) -> PrimExpr:
        """A scalar bool condition, or a ParseError at `node`."""
        condition = builders.convert(self.eval_expr(node))
        if not condition.dtype.is_bool or condition.dtype.is_vector:
            raise self.source.error(
                node,
                f"{what} needs a scalar bool condition, got {condition.dtype}",
                "compare explicitly, e.g. `i != 0`",
            )
        return condition

    def _stmt_If(self, node: ast.If) -> Emitted:  # noqa: N802
        condition = self.eval_expr(node.test)
        if not isinstance(condition, PrimExpr):  # a Python condition is decided while parsing
            return self.parse_nested(node.body if condition else node.orelse, "if")
        condition = self.eval_condition(node.test, "if")
        then_case = self.parse_nested(node.body, "if")
        else_case = self.parse_nested(node.orelse, "else") if node.orelse else None
        return IfThenElse(condition, then_case, else_case, span=self.source.span(node))

    def _stmt_While(self, node: ast.While) -> Emitted:  # noqa: N802
        if node.orelse:
            raise self.source.error(node.orelse[0], "`while ... else` is not supported")
        condition = self.eval_condition(node.test, "while")
        body = self.parse_nested(node.body, "while")
        return While(condition, body, span=self.source.span(node))

    def _stmt_Return(self, node: ast.Return) -> Emitted:  # noqa: N802
        # TVM's newer spelling of `T.ret(value)` in a function with a scalar return type
        ret_type = self.function_frame().ret_type
        if node.value is None or ret_type is None:
            raise self.source.error(
                node,
                "`return` without a value, or in a function without a return type, is not "
                "supported in TVMScript",
                "e.g. `def f(a: T.int32) -> T.int32:` ... `return a + 1`; otherwise write the "
                "results into a buffer",
            )
        value = self.eval_expr(node.value)
        if isinstance(value, int | float) and not isinstance(value, bool):
            value = builders.const(value, ret_type)
        value = builders.convert(value)
        if value.dtype != ret_type:
            raise self.source.error(
                node.value,
                f"the function returns {ret_type}, but this value is {value.dtype}",
                f'cast it: T.Cast("{ret_type}", ...)',
            )
        return Evaluate(builtin.ret(value), span=self.source.span(node))

    def _stmt_Assert(self, node: ast.Assert) -> Emitted:  # noqa: N802
        condition = self.eval_condition(node.test, "assert")
        message = "" if node.msg is None else self.eval_expr(node.msg)
        if isinstance(message, str):
            message = StringImm(message)
        if not isinstance(message, StringImm):
            assert node.msg is not None  # an absent message is the empty string
            raise self.source.error(
                node.msg,
                f"an assert message must be a string, got `{ast.unparse(node.msg)}`",
                'e.g. `assert n > 0, "n must be positive"`',
            )
        span = self.source.span(node)
        return Rest(lambda body: AssertStmt(condition, message, body, span=span))
