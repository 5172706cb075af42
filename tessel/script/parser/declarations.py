"""Names bound to declarations: block iterators and buffers (`x = T.axis.*`, `T.alloc_buffer`,
`T.match_buffer`, `T.decl_buffer`, `T.allocate`, `T.allocate_const`)."""

from __future__ import annotations

import ast
import dataclasses
from typing import Any

from tessel.ir import builders
from tessel.ir.expr import Range, Var
from tessel.ir.type import PointerType
from tessel.script.parser import intents
from tessel.script.parser.statements import Emitted, Rest, StatementParser, empty_body
from tessel.support.dtype import DataType, handle
from tessel.tir.block import IterVar, MatchBufferRegion
from tessel.tir.buffer import Buffer, BufferLoad, BufferRegion
from tessel.tir.stmt import Allocate, AllocateConst, DeclBuffer


def renamed_buffer(buffer: Buffer, name: str, fresh_data: bool = True) -> Buffer:
    """`buffer` named `name`; with a data variable of that name unless it shares given data."""
    data = Var(name, handle, buffer.data.type_annotation) if fresh_data else buffer.data
    return dataclasses.replace(buffer, name=name, data=data)


def pointer_var(name: str, dtype: DataType, scope: str) -> Var:
    """The data variable of raw memory (`with T.allocate(...) as x_data:`)."""
    return Var(name, handle, PointerType(dtype, scope))


class DeclarationBinder(StatementParser):
    """`bind_declaration(target, value, node)` for the intents that declare something."""

    def bind_declaration(self, target: ast.Name, value: Any, node: ast.stmt) -> Emitted | bool:
        """Bind a declaration; False if `value` is not one (the caller binds it otherwise)."""
        binders = {
            intents.AxisIntent: self.bind_axis,
            intents.AllocBufferIntent: self.bind_alloc_buffer,
            intents.MatchBufferIntent: self.bind_match_buffer,
            intents.DeclBufferIntent: self.bind_decl_buffer,
            intents.AllocateIntent: self.bind_allocate,
            intents.AllocateConstIntent: self.bind_allocate_const,
        }
        binder = binders.get(type(value))
        if binder is None:
            return False
        return binder(target, value, node)

    def bind_axis(self, target: ast.Name, axis: intents.AxisIntent, node: ast.stmt) -> Emitted:
        """A block iterator; `T.axis.remap` takes its domain from the bound loop."""
        frame = self.block_frame(_value_of(node), "T.axis")
        dom = axis.dom or self.function_frame().loop_ranges.get(id(axis.binding))
        if dom is None:
            message = f"T.axis.remap binds loop variables only; `{axis.binding}` is not one"
            raise self.source.error(_value_of(node), message)
        var = Var(target.id, axis.dtype)
        dom = Range(builders.cast(dom.min, axis.dtype), builders.cast(dom.extent, axis.dtype))
        frame.iter_vars.append(IterVar(dom, var, axis.kind, span=self.source.span(target)))
        frame.iter_values.append(builders.cast(axis.binding, axis.dtype))
        self.scopes.bind(target.id, var)
        return None

    def bind_alloc_buffer(
        self, target: ast.Name, intent: intents.AllocBufferIntent, node: ast.stmt
    ) -> Emitted:
        """A buffer of the nearest enclosing block (the root block at function level)."""
        buffer = intent.spec.build(target.id)
        block = self.nearest_block()
        allocs = self.function_frame().root_alloc_buffers if block is None else block.alloc_buffers
        allocs.append(buffer)
        self.scopes.bind(target.id, buffer)
        return None

    def bind_match_buffer(
        self, target: ast.Name, intent: intents.MatchBufferIntent, node: ast.stmt
    ) -> Emitted:
        """A parameter's buffer (`buffer_map`), or a block's view of a region."""
        buffer = intent.spec.build(target.id)
        source = intent.source
        if isinstance(source, Var):
            self.match_param(node, source, buffer)
        elif isinstance(source, BufferRegion | BufferLoad | Buffer):
            frame = self.block_frame(_value_of(node), "T.match_buffer of a region")
            frame.match_buffers.append(MatchBufferRegion(buffer, intents.region_of(source, 0)))
        else:
            raise self.source.error(
                _value_of(node), "T.match_buffer needs a handle parameter or a buffer region"
            )
        self.scopes.bind(target.id, buffer)
        return None

    def match_param(self, node: ast.stmt, param: Var, buffer: Buffer) -> None:
        """Record `buffer` as the buffer behind the handle parameter `param`."""
        frame, at = self.function_frame(), _value_of(node)
        if param not in frame.params or not param.dtype.is_handle:
            raise self.source.error(at, f"T.match_buffer: `{param.name}` is not a handle parameter")
        if param in frame.buffer_map:
            message = f"T.match_buffer: parameter `{param.name}` is already matched"
            raise self.source.error(at, message)
        if len(self.frames) != 1:
            message = "T.match_buffer of a parameter belongs at the top of the function"
            raise self.source.error(at, message)
        frame.buffer_map[param] = buffer

    def bind_decl_buffer(
        self, target: ast.Name, intent: intents.DeclBufferIntent, node: ast.stmt
    ) -> Emitted:
        """DeclBuffer over the rest of the block (plus an Allocate when no data is given)."""
        buffer = intent.spec.build(target.id)
        self.scopes.bind(target.id, buffer)
        span = self.source.span(node)
        if intent.spec.data is not None:
            return Rest(lambda body: DeclBuffer(buffer, body, span=span))
        true = builders.const(True)
        return Rest(
            lambda body: Allocate(
                buffer.data, buffer.dtype, buffer.shape, true, DeclBuffer(buffer, body), span=span
            )
        )

    def bind_allocate(
        self, target: ast.Name, intent: intents.AllocateIntent, node: ast.stmt
    ) -> Emitted:
        """`x = T.allocate(...)`: Allocate + DeclBuffer over the rest (TVM's RFC 70)."""
        buffer = intents.BufferSpec(intent.extents, intent.dtype, intent.scope).build(target.id)
        self.scopes.bind(target.id, buffer)
        span = self.source.span(node)
        return Rest(
            lambda body: Allocate(
                buffer.data,
                intent.dtype,
                intent.extents,
                intent.condition,
                DeclBuffer(buffer, body),
                intent.annotations,
                span=span,
            )
        )

    def bind_allocate_const(
        self, target: ast.Name, intent: intents.AllocateConstIntent, node: ast.stmt
    ) -> Emitted:
        """AllocateConst + DeclBuffer over the rest (TVM's RFC 22)."""
        buffer = intents.BufferSpec(intent.extents, intent.dtype).build(target.id)
        self.scopes.bind(target.id, buffer)
        span = self.source.span(node)

        def build(body: Any) -> AllocateConst:
            """The AllocateConst around `body`."""
            return AllocateConst(
                buffer.data,
                intent.dtype,
                intent.extents,
                intent.data,
                intent.irmod_storage_idx,
                DeclBuffer(buffer, body),
                intent.annotations,
                span=span,
            )

        build(empty_body())  # validate now, so errors point at this statement
        return Rest(build)


def _value_of(node: ast.stmt) -> ast.AST:
    """The right-hand side of an assignment (where declaration errors point)."""
    return getattr(node, "value", None) or node
