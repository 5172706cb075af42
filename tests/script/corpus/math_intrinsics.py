"""Math intrinsics: unary, binary and float tests."""
from tessel.script import tir as T


@T.prim_func
def math(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32"), M: T.Buffer((8,), "bool")):
    for i in range(8):
        B[i] = T.exp(A[i]) + T.log(T.fabs(A[i]) + T.float32(1)) + T.sqrt(T.fabs(A[i])) + T.tanh(A[i])
        B[i] = B[i] + T.erf(A[i]) * T.sigmoid(A[i]) - T.pow(A[i], T.float32(2)) + T.floor(A[i]) + T.ceil(A[i]) + T.round(A[i])
        M[i] = T.isnan(A[i]) or T.isinf(B[i])
