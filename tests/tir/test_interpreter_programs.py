"""Builders of the TensorIR programs the interpreter tests run (no tests here).

Programs are built with the node classes, not the parser, so these tests do not depend on it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tessel.ir import builders
from tessel.ir.expr import IntImm, PrimExpr, Range, Var
from tessel.support.dtype import DataType, handle, int32
from tessel.tir.block import Block, BlockRealize, IterVar, IterVarType, MatchBufferRegion
from tessel.tir.buffer import Buffer, decl_buffer
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import BufferStore, For, ForKind, SeqStmt, Stmt

SPATIAL, REDUCE = IterVarType.DATA_PAR, IterVarType.COMM_REDUCE


def const(value: Any, dtype: str | DataType | None = None) -> PrimExpr:
    """A constant of `dtype`."""
    return builders.const(value, dtype)


def loop(var: Var, extent: Any, body: Stmt, start: Any = 0, kind: ForKind = ForKind.SERIAL) -> For:
    """for var in range(start, start + extent)."""
    return For(var, builders.convert(start), builders.convert(extent), kind, body)


def grid(extents: Sequence[Any], make_body: Callable[..., Stmt], names: str = "ijklmnop") -> Stmt:
    """Nested serial loops over `extents`; make_body receives the loop variables."""
    loop_vars = [Var(names[k]) for k in range(len(extents))]
    body = make_body(*loop_vars)
    for var, extent in reversed(list(zip(loop_vars, extents, strict=True))):
        body = loop(var, extent, body)
    return body


def seq(*stmts: Stmt) -> Stmt:
    """Statements in order."""
    return SeqStmt.flatten(stmts)


def block(
    name: str,
    axes: Sequence[tuple[IterVarType, Any, PrimExpr]],
    make_body: Callable[..., Stmt],
    make_init: Callable[..., Stmt] | None = None,
    predicate: PrimExpr | None = None,
    alloc_buffers: Sequence[Buffer] = (),
    match_buffers: Callable[..., Sequence[MatchBufferRegion]] | None = None,
) -> BlockRealize:
    """A block realize: axes are (kind, extent or (min, extent), bound value); make_body and
    make_init receive the block iterators."""
    iter_vars = []
    for k, (kind, dom, _) in enumerate(axes):
        low, extent = dom if isinstance(dom, tuple) else (0, dom)
        iter_vars.append(IterVar(Range.from_min_extent(low, extent), Var(f"v{name}{k}"), kind))
    ivs = [iv.var for iv in iter_vars]
    body = Block(
        tuple(iter_vars),
        (),
        (),
        name,
        make_body(*ivs),
        None if make_init is None else make_init(*ivs),
        tuple(alloc_buffers),
        tuple(match_buffers(*ivs)) if match_buffers else (),
    )
    values = tuple(builders.convert(v) for _, _, v in axes)
    return BlockRealize(values, const(True) if predicate is None else predicate, body)


def root(body: Stmt, alloc_buffers: Sequence[Buffer] = ()) -> BlockRealize:
    """The opaque root block TVM wraps around a function body that holds blocks."""
    root_block = Block((), (), (), "root", body, None, tuple(alloc_buffers))
    return BlockRealize((), const(True), root_block)


def prim_func(params: Sequence[Buffer | Var], body: Stmt, name: str = "main") -> PrimFunc:
    """A PrimFunc; a Buffer parameter gets a handle parameter of the same name."""
    param_vars, buffer_map = [], {}
    for param in params:
        if isinstance(param, Buffer):
            var = Var(param.name, handle)
            buffer_map[var] = param
            param_vars.append(var)
        else:
            param_vars.append(param)
    return PrimFunc(tuple(param_vars), body, None, buffer_map, {"global_symbol": name})


def buffer(name: str, shape: Any, dtype: str = "float32", **kwargs: Any) -> Buffer:
    """A buffer with its own data variable."""
    return decl_buffer(shape, dtype, name, **kwargs)


def store(
    buf: Buffer, indices: Sequence[Any], value: Any, predicate: PrimExpr | None = None
) -> BufferStore:
    """buf[indices] = value (Python numbers become constants of the buffer's dtype)."""
    if not isinstance(value, PrimExpr):
        value = const(value, buf.dtype)
    return BufferStore(buf, value, tuple(builders.convert(i) for i in indices), predicate)


def matmul(n: int, dtype: str = "float32") -> PrimFunc:
    """C = A @ B over an n x n x n grid of blocks with init and a reduction iterator."""
    a, b, c = (buffer(x, (n, n), dtype) for x in "ABC")
    body = grid(
        (n, n, n),
        lambda i, j, k: block(
            "C",
            [(SPATIAL, n, i), (SPATIAL, n, j), (REDUCE, n, k)],
            lambda vi, vj, vk: store(c, (vi, vj), c[vi, vj] + a[vi, vk] * b[vk, vj]),
            lambda vi, vj, vk: store(c, (vi, vj), 0),
        ),
    )
    return prim_func([a, b, c], root(body))


def int32_const(value: int) -> IntImm:
    """An int32 constant."""
    return IntImm(int32, value)
