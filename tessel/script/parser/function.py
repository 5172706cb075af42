"""A `@T.prim_func` def to a PrimFunc: parameters, body, the implicit root block, attributes."""

from __future__ import annotations

import ast
from typing import Any

from tessel.ir import builders
from tessel.ir.expr import Var
from tessel.script.parser import intents
from tessel.script.parser.assignments import AssignmentParser
from tessel.script.parser.blocks import BlockParser
from tessel.script.parser.context import Frame, FunctionFrame, Scopes
from tessel.script.parser.declarations import renamed_buffer
from tessel.script.parser.loops import LoopParser
from tessel.script.parser.source import ScriptSource
from tessel.support.dtype import DataType, handle
from tessel.tir.block import Block, BlockRealize
from tessel.tir.buffer import Buffer
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import Stmt


class FunctionParser(AssignmentParser, LoopParser, BlockParser):
    """Parses one function definition; a fresh instance per function."""

    def __init__(self, source: ScriptSource, namespace: dict[str, Any]) -> None:
        self.source = source
        self.scopes = Scopes(namespace)
        self.frames: list[Frame] = [FunctionFrame()]

    def parse_prim_func(self, node: ast.FunctionDef, private: bool) -> PrimFunc:
        """The PrimFunc of `node` (global_symbol = its name unless private)."""
        frame = self.function_frame()
        self.check_signature(node.args)
        for arg in node.args.args:
            self.parse_param(arg, frame)
        ret_type = frame.ret_type = self.parse_return(node.returns)
        body = self.wrap_root(self.parse_body(node.body), frame)
        if private and "global_symbol" in frame.attrs:
            raise self.source.error(
                node,
                f"`{node.name}` is private (@T.prim_func(private=True)) but its T.func_attr "
                "sets a global_symbol",
                "drop private=True to export it under that symbol, or drop the global_symbol",
            )
        attrs: dict[str, Any] = {} if private else {"global_symbol": node.name}
        attrs.update(frame.attrs)
        return PrimFunc(
            tuple(frame.params),
            body,
            ret_type,
            frame.buffer_map,
            attrs,
            span=self.source.span(node),
        )

    def check_signature(self, args: ast.arguments) -> None:
        """Parameters are plain annotated names, each named once."""
        extras = [args.vararg, args.kwarg, *args.posonlyargs, *args.kwonlyargs, *args.defaults]
        extra = next((e for e in extras if e is not None), None)
        if extra is not None:
            message = "prim_func parameters are annotated names (no defaults, *, **, /)"
            raise self.source.error(extra, message)
        seen: set[str] = set()
        for arg in args.args:
            if arg.arg in seen:
                raise self.source.error(arg, f"duplicate parameter `{arg.arg}`")
            seen.add(arg.arg)

    def parse_param(self, arg: ast.arg, frame: FunctionFrame) -> None:
        """A buffer (`A: T.Buffer(...)`), a handle (`a: T.handle`) or a scalar (`n: T.int32`)."""
        if arg.annotation is None:
            raise self.source.error(
                arg,
                f"parameter `{arg.arg}` needs a type annotation",
                'e.g. `A: T.Buffer((16,), "float32")` or `n: T.int32`',
            )
        annotation = self.eval_expr(arg.annotation)
        if isinstance(annotation, Buffer):
            param = Var(arg.arg, handle)
            buffer = renamed_buffer(annotation, arg.arg)
            frame.buffer_map[param] = buffer
            self.scopes.bind(arg.arg, buffer)
        elif isinstance(annotation, intents.DTypeFunction):
            param = Var(arg.arg, annotation.dtype)
            self.scopes.bind(arg.arg, param)
        elif isinstance(annotation, Var) and annotation.dtype.is_handle:  # T.handle("float32")
            param = Var(arg.arg, handle, annotation.type_annotation)
            self.scopes.bind(arg.arg, param)
        else:
            raise self.source.error(
                arg.annotation,
                f"parameter `{arg.arg}` has an unsupported annotation "
                f"`{ast.unparse(arg.annotation)}`",
                "use T.Buffer(shape, dtype), T.handle or a type like T.int32",
            )
        frame.params.append(param)

    def parse_return(self, returns: ast.expr | None) -> DataType | None:
        """The return type: None (`-> None` or nothing) or a scalar type."""
        if returns is None:
            return None
        annotation = self.eval_expr(returns)
        if annotation is None:
            return None
        if isinstance(annotation, intents.DTypeFunction):
            return annotation.dtype
        raise self.source.error(returns, "a prim_func returns None or a type like T.int32")

    def wrap_root(self, body: Stmt, frame: FunctionFrame) -> Stmt:
        """Wrap a body with blocks in the opaque "root" block as TVM does (unless explicit)."""
        if not (frame.has_blocks or frame.root_alloc_buffers):
            return body
        if _is_root(body) and not frame.root_alloc_buffers:
            return body
        root = Block((), (), (), "root", body, alloc_buffers=tuple(frame.root_alloc_buffers))
        return BlockRealize((), builders.const(True), root)


def _is_root(body: Stmt) -> bool:
    return (
        isinstance(body, BlockRealize)
        and body.block.name_hint == "root"
        and not body.block.iter_vars
    )
