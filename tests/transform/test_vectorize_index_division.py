"""VectorizeLoop of `ramp // c` and `ramp % c`: where no chunk's lanes cross a multiple of c,
the quotient is one scalar and the remainder a ramp, so the access stays a contiguous vector."""

from __future__ import annotations

import pytest

from tessel.ir import expr as E
from tessel.ir.functor import post_order
from tessel.schedule import Schedule
from tessel.script import tir as T
from tessel.testing import check_same_results
from tessel.tir.buffer import BufferLoad
from tessel.transform import lower


def _head_merge(heads: int, width: int, chunk: int):
    """B[i, j] = A[j // width, i, j % width] (attention's heads merged), j in chunks."""

    @T.prim_func
    def merge(
        A: T.Buffer((heads, 4, width), "float32"), B: T.Buffer((4, heads * width), "float32")
    ):
        for i, j in T.grid(4, heads * width):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vj // width, vi, vj % width]

    sch = Schedule(merge)
    _, j = sch.get_loops(sch.get_block("B"))
    sch.vectorize(j, vector_length=chunk)
    return merge, sch.mod


def _loads(mod) -> list[BufferLoad]:
    (func,) = mod.functions.values()
    return [n for n in post_order(func.body) if isinstance(n, BufferLoad) and n.dtype.is_vector]


def test_chunks_inside_a_head_read_one_contiguous_vector():
    before, after = _head_merge(heads=3, width=32, chunk=8)
    lowered = lower(after, verify=True)
    (load,) = _loads(lowered)
    assert isinstance(load.indices[0], E.Ramp)  # no division per lane: a plain vector load
    check_same_results(before, lowered)


@pytest.mark.parametrize(("width", "chunk"), [(6, 8), (12, 8), (8, 8), (16, 8), (5, 4), (24, 16)])
def test_any_width_and_chunk_give_the_scalar_results(width, chunk):
    before, after = _head_merge(heads=3, width=width, chunk=chunk)
    lowered = lower(after, verify=True)
    contiguous = all(isinstance(load.indices[0], E.Ramp) for load in _loads(lowered))
    assert contiguous == (width % chunk == 0)  # lanes cross a head exactly when chunk ∤ width
    check_same_results(before, lowered)
