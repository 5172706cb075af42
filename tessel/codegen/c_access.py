"""Buffer accesses in C: the pointer an access goes through and the index it uses there.

A flat (1-D) buffer is its data pointer, cast when the view's type differs: `A[i]`.

A buffer of N physical axes (FlattenBuffer honouring axis separators) lives in chunks, each the
last physical axis, as Hexagon's discontiguous allocations do (codegen/c_alloc.py allocates
them); the outer axes, flattened row-major, pick the chunk: `A[i0][i1]`, `A[i0 * n1 + i1][i2]`.
Memory the function is handed (a parameter: a contiguous NumPy array) or holds as one flat
allocation is its own chunk table: chunk r starts r chunk extents past the data pointer, so the
caller's array needs no conversion. A vector access stays within one chunk: only the last
physical axis may vary across lanes; it is contiguous when its index advances by 1 a lane, and
a predicated one tests its mask (`all_lanes_test`, or the last lane's compare) to copy at once.
"""

from __future__ import annotations

from collections.abc import Sequence

from tessel.codegen.c_names import NameScope
from tessel.codegen.c_types import c_type
from tessel.codegen.errors import CodegenError
from tessel.ir import builders
from tessel.ir import expr as E
from tessel.ir.expr import IntImm, PrimExpr, Var
from tessel.support.dtype import int32, int64
from tessel.tir.analysis.vector_index import affine_lanes
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

    def vector_access(
        self, buffer: Buffer, indices: tuple[PrimExpr, ...], lanes: int
    ) -> tuple[str, str | None]:
        """For a vector access: (pointer to the first element, None) when it is contiguous,
        else (the pointer, the C of the vector of indices)."""
        pointer, index = self.access_parts(buffer, indices)  # the chunk's pointer, N-d or not
        c_type(index.dtype)  # an index without a C vector type is refused first, as written
        affine = affine_lanes(index)
        if affine is not None and builders.is_const_int(affine[1], 1):
            return f"({pointer} + {self.expr(affine[0])})", None
        if not index.dtype.is_vector:
            index = E.Broadcast(index, lanes)
        return pointer, self.expr(index)

    def last_lane_test(self, predicate: PrimExpr) -> str | None:
        """C of a scalar test that every lane of `predicate` is enabled, when each of its parts
        is `Ramp(b, s, n) < x` with s >= 0 (the predicates VectorizeLoop writes): the last
        lane's compare. None for other forms (test the mask itself, `all_lanes_test`)."""
        tests = []
        for part in builders.conjuncts(predicate):
            last = _last_lane_bound(part)
            if last is None:
                return None
            tests.append(self.expr(last))
        return " && ".join(tests) or "true"


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


def _row_major(indices: Sequence[PrimExpr], extents: Sequence[PrimExpr], wide: bool) -> PrimExpr:
    """The row-major index of `indices` over `extents` (in int64 when `wide`)."""
    row: PrimExpr = builders.const(0, int64 if wide else int32)
    for index, extent in zip(indices, extents, strict=True):
        row = row * extent + index
    return row


def _last_lane_bound(part: PrimExpr) -> PrimExpr | None:
    """For `Ramp(b, s, n) < Broadcast(x)` (or `<=`) with a constant s >= 0, the scalar test of
    its last lane, which holds exactly when every lane's does; None for other forms."""
    if not isinstance(part, E.LT | E.LE):
        return None
    ramp, bound = part.a, part.b
    if not (isinstance(ramp, E.Ramp) and isinstance(bound, E.Broadcast)):
        return None
    if not isinstance(ramp.stride, E.IntImm) or ramp.stride.value < 0:
        return None
    last = ramp.base + (ramp.lanes - 1) * ramp.stride.value
    return type(part)(last, bound.value)


def all_lanes_test(mask: str, lanes: int) -> str:
    """C that is true when every lane of the mask vector `mask` (bytes holding 0 or 1) is on,
    testing its bits by value, 8 lanes a compare. Not through a pointer to the mask: gcc 12 at
    -O3 misplaces the scope marks of a statement expression's mask whose address an inlined
    helper takes, and AddressSanitizer then reports its own store (fuzz seed 21, case 19027)."""
    if lanes <= 8:
        return f"((uint{8 * lanes}_t)({mask}) == 0x{'01' * lanes}ULL)"
    words = f"((tessel_uint64x{lanes // 8})({mask}))"
    return (
        "(" + " && ".join(f"{words}[{k}] == 0x0101010101010101ULL" for k in range(lanes // 8)) + ")"
    )


def masked_copy_helper(lanes: int, element_bytes: int) -> bool:
    """True if the prelude has a masked load and store for `lanes` elements of this size."""
    return element_bytes == 4 and lanes in (8, 16)
