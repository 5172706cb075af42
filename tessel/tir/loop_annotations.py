"""Declared keys of loop annotations that schedule primitives write and passes read."""

from __future__ import annotations

# On a `T.vectorized` loop: the number of iterations each vector operation covers (an int,
# 2 to 64). `Schedule.vectorize(loop, vector_length=N)` writes it; VectorizeLoop splits the loop
# into chunks of N with a predicated last chunk (the `vector_length` of TVM's SVE RFC 18).
VECTOR_LENGTH = "vector_length"
MAX_VECTOR_LENGTH = 64
