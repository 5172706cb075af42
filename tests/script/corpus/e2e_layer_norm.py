"""A layer-norm-like two-pass reduction (mean, then variance), then normalisation."""
from tessel.script import tir as T


@T.prim_func
def layer_norm(A: T.Buffer((4, 32), "float32"), B: T.Buffer((4, 32), "float32")):
    mean = T.alloc_buffer((4,), "float32")
    var = T.alloc_buffer((4,), "float32")
    for i, k in T.grid(4, 32):
        with T.block("mean"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                mean[vi] = T.float32(0)
            mean[vi] = mean[vi] + A[vi, vk] * T.float32(1.0 / 32)
    for i, k in T.grid(4, 32):
        with T.block("var"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                var[vi] = T.float32(0)
            var[vi] = var[vi] + (A[vi, vk] - mean[vi]) * (A[vi, vk] - mean[vi]) * T.float32(1.0 / 32)
    for i, j in T.grid(4, 32):
        with T.block("norm"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = (A[vi, vj] - mean[vi]) / T.sqrt(var[vi] + T.float32(1e-5))
