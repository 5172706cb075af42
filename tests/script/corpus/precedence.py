"""Operator precedence: parentheses only where Python needs them, negative constants."""
from tessel.script import tir as T


@T.prim_func
def precedence(A: T.Buffer((64,), "int32"), a: T.int32, b: T.int32, c: T.int32):
    A[0] = (a + b) * c
    A[1] = a - (b - c)
    A[2] = a - b - c
    A[3] = a + (b + c)
    A[4] = a - -3
    A[5] = -3 * a
    A[6] = a * -1 + (0 - b)
    A[7] = (a - b) // (c + 1) % 7
    A[8] = a // (b // c)
    A[9] = T.truncdiv(a, b) + T.truncmod(a - 1, b)
    A[10] = T.min(a, b) - T.max(a, -b)
    A[11] = T.Select((a < b) == (b < c), 1, 0)
    A[12] = T.Select(not (a < b and b < c) or a == c, 1, 0)
    A[13] = T.Select((a < b or b < c) and a != c, 1, 0)
    A[14] = T.Select(not a < b, 1, 0)
    A[15] = a * (b * c)
    A[16] = T.floordiv(a, 2) + T.floormod(a, 3)
