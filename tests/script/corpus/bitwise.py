"""Bitwise operations and shifts on integers."""
from tessel.script import tir as T


@T.prim_func
def bits(A: T.Buffer((8,), "uint8"), B: T.Buffer((8,), "int32")):
    for i in range(8):
        A[i] = T.bitwise_and(A[i], T.uint8(15))
        B[i] = T.shift_left(B[i], 2) + T.bitwise_xor(B[i], 255) + T.shift_right(B[i], 1)
        B[i] = T.bitwise_or(B[i], 1) + T.bitwise_not(B[i])
