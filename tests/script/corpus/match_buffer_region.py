"""T.match_buffer of a region inside a block, with explicit regions of slices."""
from tessel.script import tir as T


@T.prim_func
def tiles(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64, 64), "float32")):
    for io, jo in T.grid(4, 4):
        with T.block("tile"):
            vio, vjo = T.axis.remap("SS", [io, jo])
            T.reads(A[vio * 16:vio * 16 + 16, vjo * 16:vjo * 16 + 16])
            T.writes(B[vio * 16:vio * 16 + 16, vjo * 16:vjo * 16 + 16])
            A_tile = T.match_buffer(A[vio * 16:vio * 16 + 16, vjo * 16:vjo * 16 + 16], (16, 16), "float32", offset_factor=16)
            B_tile = T.match_buffer(B[vio * 16:vio * 16 + 16, vjo * 16:vjo * 16 + 16], (16, 16), "float32")
            for i, j in T.grid(16, 16):
                B_tile[i, j] = A_tile[i, j] * T.float32(2)
