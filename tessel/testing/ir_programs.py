"""Small TensorIR programs built with the Python API, for tests that must not depend on the
parser."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tessel.ir import builders
from tessel.ir.expr import PrimExpr, Range, Var
from tessel.support.dtype import bool_
from tessel.tir.block import Block, BlockRealize, IterVar, IterVarType
from tessel.tir.buffer import Buffer, decl_buffer
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import BufferStore, For, ForKind, SeqStmt, Stmt

TRUE = builders.const(True, bool_)
KINDS = {"S": IterVarType.DATA_PAR, "R": IterVarType.COMM_REDUCE}


def prim_func(name: str, params: Sequence[Buffer | Var], body: Stmt, **attrs: Any) -> PrimFunc:
    """A PrimFunc whose buffer parameters get handle vars named like the buffers."""
    handles, buffer_map = [], {}
    for param in params:
        if isinstance(param, Buffer):
            handle = Var(param.name, "handle")
            buffer_map[handle] = param
            handles.append(handle)
        else:
            handles.append(param)
    return PrimFunc(
        tuple(handles), body, buffer_map=buffer_map, attrs={"global_symbol": name, **attrs}
    )


def loops(
    extents: Sequence[Any], make_body: Any, kind: ForKind = ForKind.SERIAL, names: str = "ijklmn"
) -> Stmt:
    """Nested loops over `extents`; `make_body(*loop_vars)` builds the innermost body."""
    loop_vars = [Var(names[d]) for d in range(len(extents))]
    body = make_body(*loop_vars)
    for var, extent in reversed(list(zip(loop_vars, extents, strict=True))):
        body = For(var, builders.const(0, var.dtype), builders.convert(extent), kind, body)
    return body


def block(
    name: str,
    axes: str,
    values: Sequence[PrimExpr],
    extents: Sequence[Any],
    make_body: Any,
    *,
    init: Any = None,
    predicate: PrimExpr = TRUE,
    alloc_buffers: Sequence[Buffer] = (),
    match_buffers: Any = None,
) -> BlockRealize:
    """A BlockRealize binding fresh block iterators (kinds from `axes`, e.g. "SSR") to `values`;
    `make_body(*block_vars)`, `init(*block_vars)` and `match_buffers(*block_vars)` build the
    body, the init and the MatchBufferRegions."""
    block_vars = [Var(f"v{name}{d}") for d in range(len(axes))]
    iter_vars = tuple(
        IterVar(Range.from_min_extent(0, builders.convert(extent)), var, KINDS[kind])
        for kind, var, extent in zip(axes, block_vars, extents, strict=True)
    )
    new_block = Block(
        iter_vars,
        (),
        (),
        name,
        make_body(*block_vars),
        None if init is None else init(*block_vars),
        tuple(alloc_buffers),
        () if match_buffers is None else tuple(match_buffers(*block_vars)),
    )
    return BlockRealize(tuple(values), predicate, new_block)


def root(body: Stmt, alloc_buffers: Sequence[Buffer] = ()) -> BlockRealize:
    """The opaque root block that a function with blocks has."""
    return BlockRealize((), TRUE, Block((), (), (), "root", body, None, tuple(alloc_buffers)))


def store(buffer: Buffer, indices: Sequence[Any], value: Any) -> BufferStore:
    """buffer[indices] = value, with Python numbers converted to the buffer's dtype."""
    value = value if isinstance(value, PrimExpr) else builders.const(value, buffer.dtype)
    return BufferStore(buffer, value, tuple(builders.convert(i) for i in indices))


def matmul(n: int = 127, dtype: str = "float32", name: str = "matmul") -> PrimFunc:
    """C[i, j] = sum_k A[i, k] * B[k, j] with a reduction block and an init."""
    a, b, c = (decl_buffer((n, n), dtype, x) for x in "ABC")

    def body(i: Var, j: Var, k: Var) -> Stmt:
        return block(
            "C",
            "SSR",
            (i, j, k),
            (n, n, n),
            lambda vi, vj, vk: store(c, (vi, vj), c[vi, vj] + a[vi, vk] * b[vk, vj]),
            init=lambda vi, vj, vk: store(c, (vi, vj), 0),
        )

    return prim_func(name, (a, b, c), root(loops((n, n, n), body)))


def seq(*stmts: Stmt) -> Stmt:
    """A SeqStmt of the given statements."""
    return SeqStmt.flatten(stmts)
