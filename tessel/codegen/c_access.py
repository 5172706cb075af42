"""Buffer accesses in C: the pointer an access goes through and the index it uses there.

A flat (1-D) buffer is its data pointer, cast when the view's type differs: `A[i]`.

A buffer of N physical axes (FlattenBuffer honouring axis separators) lives in chunks, each the
last physical axis, as Hexagon's discontiguous allocations do (codegen/c_alloc.py allocates
them); the outer axes, flattened row-major, pick the chunk: `A[i0][i1]`, `A[i0 * n1 + i1][i2]`.
Memory the function is handed (a parameter: a contiguous NumPy array) or holds as one flat
allocation is its own chunk table: chunk r starts r chunk extents past the data pointer, so the
caller's array needs no conversion. A vector access stays within one chunk: only the last
physical axis may vary across lanes.
"""

from __future__ import annotations

from collections.abc import Sequence

from tessel.codegen.c_names import NameScope
from tessel.codegen.c_types import c_type
from tessel.codegen.errors import CodegenError
from tessel.ir import builders
from tessel.ir.expr import IntImm, PrimExpr, Var
from tessel.support.dtype import int32, int64
from tessel.tir.buffer import Buffer

_INT32_MAX = int32.max_value()


class BufferAccess:
    """Pointers and indices of buffer accesses; `chunk_tables` names the N-d allocations."""

    names: NameScope
    # data variable of an N-d allocation realised as chunks -> the allocation's extents
    chunk_tables: dict[Var, tuple[PrimExpr, ...]]

    def expr(self, node: PrimExpr) -> str:
        raise NotImplementedError  # ExprPrinter prints expressions

    def buffer_pointer(self, buffer: Buffer) -> str:
        """The C pointer through which `buffer` is accessed (cast if the view's type differs)."""
        return _typed(self.names.name_of(buffer.data), buffer)

    def access_parts(self, buffer: Buffer, indices: Sequence[PrimExpr]) -> tuple[str, PrimExpr]:
        """(the C pointer to the chunk `buffer[indices]` lies in, the index within that chunk)."""
        table = self.chunk_tables.get(buffer.data)
        if table is not None and len(table) != len(indices):
            raise CodegenError(
                f"an access to `{buffer.name}` has {len(indices)} indices, but the memory of "
                f"`{buffer.data.name}` was allocated as chunks along {len(table)} physical axes",
                rule="codegen.chunk-rank",
                hint="every view of separated memory needs the same axis separators",
            )
        if len(indices) == 1:
            return self.buffer_pointer(buffer), indices[0]
        _check_physical(buffer, indices)
        outer, last = tuple(indices[:-1]), indices[-1]
        if table is None:  # contiguous memory: chunk r starts at r * (chunk extent)
            start = _row_major(outer, buffer.shape[:-1], _may_be_large(buffer.shape))
            start = start * buffer.shape[-1]
            return f"({self.buffer_pointer(buffer)} + {self.expr(start)})", last
        wide = len(outer) > 1 and _may_be_large(table[:-1])  # one index needs no arithmetic
        row = _row_major(outer, table[:-1], wide)
        return _typed(f"{self.names.name_of(buffer.data)}[{self.expr(row)}]", buffer), last


def _typed(pointer: str, buffer: Buffer) -> str:
    """`pointer` as a pointer to the buffer's element type (a view may reinterpret memory)."""
    annotation = buffer.data.type_annotation
    if annotation is not None and annotation.element_type == buffer.dtype:
        return pointer
    return f"(({c_type(buffer.dtype)}*){pointer})"


def _check_physical(buffer: Buffer, indices: Sequence[PrimExpr]) -> None:
    """An N-d access must be physical (each axis its own group, dense) and pick its chunk with
    scalar indices."""
    dense = not buffer.strides and builders.is_const_int(buffer.elem_offset, 0)
    if buffer.axis_separators != tuple(range(1, len(indices))) or not dense:
        raise CodegenError(
            f"access to `{buffer.name}` has {len(indices)} indices; the C backend needs flat "
            "(1-D) accesses, or one index per physical axis of a buffer with axis separators",
            rule="codegen.not-flattened",
            hint="lower the function with tessel.transform.lower (it runs FlattenBuffer)",
        )
    if any(index.dtype.is_vector for index in indices[:-1]):
        raise CodegenError(
            f"a vector access to `{buffer.name}` varies along an outer physical axis; only the "
            "last physical axis (within one chunk) may differ between lanes",
            rule="codegen.vector-across-chunks",
            hint="vectorize a loop over the innermost axis group only",
        )


def _may_be_large(extents: Sequence[PrimExpr]) -> bool:
    """True unless the extents are constants whose product fits int32."""
    total = 1
    for extent in extents:
        if not isinstance(extent, IntImm):
            return True
        total *= int(extent.value)
    return total > _INT32_MAX


def _row_major(
    indices: Sequence[PrimExpr], extents: Sequence[PrimExpr], wide: bool
) -> PrimExpr:
    """The row-major index of `indices` over `extents` (in int64 when `wide`)."""
    row: PrimExpr = builders.const(0, int64 if wide else int32)
    for index, extent in zip(indices, extents, strict=True):
        row = row * extent + index
    return row
