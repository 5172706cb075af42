"""Buffer declarations (`T.Buffer`, `T.match_buffer`, `T.alloc_buffer`, ...) and regions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tessel.ir.expr import IntImm, PrimExpr
from tessel.script.printer.expr import ExprPrinter, end_of, is_one
from tessel.script.printer.literals import dtype_literal, quote
from tessel.tir.buffer import Buffer, BufferRegion


def shape_text(printer: ExprPrinter, shape: Sequence[Any]) -> str:
    """A shape tuple: `(128, 128)`, `(16,)`, `()`."""
    items = [printer.arg(e) for e in shape]
    if len(items) == 1:
        return f"({items[0]},)"
    return "(" + ", ".join(items) + ")"


def has_default_offset(buffer: Buffer) -> bool:
    """True if the element offset is the default int32 constant 0."""
    offset = buffer.elem_offset
    return isinstance(offset, IntImm) and offset.value == 0 and str(offset.dtype) == "int32"


def buffer_keywords(printer: ExprPrinter, buffer: Buffer, *, scope: bool = True) -> list[str]:
    """The keyword arguments for every buffer field that differs from its default."""
    keywords = []
    if buffer.strides:
        keywords.append(f"strides={shape_text(printer, buffer.strides)}")
    if not has_default_offset(buffer):
        keywords.append(f"elem_offset={printer.text(buffer.elem_offset)}")
    if scope and buffer.scope != "global":
        keywords.append(f"scope={quote(buffer.scope)}")
    if buffer.data_alignment != 64:
        keywords.append(f"align={buffer.data_alignment}")
    if buffer.offset_factor != 1:
        keywords.append(f"offset_factor={buffer.offset_factor}")
    if buffer.axis_separators:
        keywords.append(f"axis_separators=[{', '.join(map(str, buffer.axis_separators))}]")
    return keywords


def buffer_arguments(printer: ExprPrinter, buffer: Buffer, *, scope: bool = True) -> str:
    """`(shape), "dtype", keyword=value, ...` for a buffer declaration call."""
    parts = [shape_text(printer, buffer.shape), dtype_literal(buffer.dtype)]
    return ", ".join(parts + buffer_keywords(printer, buffer, scope=scope))


def is_inline_param_buffer(buffer: Buffer) -> bool:
    """True if the parameter prints as `A: T.Buffer((128, 128), "float32")`: constant shape,
    every other field at its default."""
    constant = all(isinstance(e, IntImm) for e in buffer.shape)
    defaults = not buffer.strides and buffer.scope == "global" and has_default_offset(buffer)
    layout = buffer.data_alignment == 64 and buffer.offset_factor == 1
    return constant and defaults and layout and not buffer.axis_separators


def range_text(printer: ExprPrinter, begin: PrimExpr, extent: PrimExpr) -> str:
    """One dimension of a region: the index for an extent-1 range, else `begin:end`."""
    if is_one(extent):
        return printer.text(begin)
    return f"{printer.text(begin)}:{printer.text(end_of(begin, extent))}"


def region_text(printer: ExprPrinter, region: BufferRegion) -> str:
    """A buffer region: `A[vi, 0:16]`; `A[()]` for a rank-0 buffer."""
    name = printer.ctx.buffer(region.buffer)
    if not region.region:
        return printer.ctx.marked(region, f"{name}[()]")
    dims = ", ".join(range_text(printer, r.min, r.extent) for r in region.region)
    return printer.ctx.marked(region, f"{name}[{dims}]")
