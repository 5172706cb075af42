"""Block annotations holding lists, dicts, strings, floats and expressions."""
from tessel.script import tir as T


@T.prim_func
def annotated(A: T.Buffer((16, 16), "float32")):
    for i, j in T.grid(16, 16):
        with T.block("annotated"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.reads()
            T.writes(A[vi, vj])
            T.block_attr({"meta_schedule.tiling": [[1, 2], [3, 4]], "layout": {"A": "NCHW", "factor": 2}, "ratio": 0.25, "flag": True, "at": vi * 16})
            A[vi, vj] = T.float32(0)
