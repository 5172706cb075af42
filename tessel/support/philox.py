"""Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11): the
counter-based generator behind ONNX's random operators in Tessel, in NumPy. The C runtime
(tessel/codegen/c_random.py) computes the same words bit for bit, so a compiled model and the
evaluator draw the same uniform numbers.

A stream is a 64-bit key; element `index` of call `call` is the block counter (index, call),
whose four 32-bit words give two uniform float64s in [0, 1) of 53 bits each (words 0-1, 2-3).
"""

from __future__ import annotations

import numpy as np

_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_W0, _W1 = np.uint32(0x9E3779B9), np.uint32(0xBB67AE85)
_LOW = np.uint64(0xFFFFFFFF)
ROUNDS = 10


def mix_key(seed: int, stream: int) -> int:
    """A stream's key from a seed and the stream's number (splitmix64 of both): distinct
    streams of one seed are unrelated."""
    z = (seed * 0x9E3779B97F4A7C15 + stream + 1) & 0xFFFFFFFFFFFFFFFF
    for shift, mult in ((30, 0xBF58476D1CE4E5B9), (27, 0x94D049BB133111EB)):
        z = ((z ^ (z >> shift)) * mult) & 0xFFFFFFFFFFFFFFFF
    return z ^ (z >> 31)


def philox(key: int, call: int, index: np.ndarray) -> tuple[np.ndarray, ...]:
    """The four uint32 words of block (index, call) of stream `key`, for each index."""
    index = np.asarray(index, dtype=np.uint64)
    c0 = (index & _LOW).astype(np.uint32)
    c1 = (index >> np.uint64(32)).astype(np.uint32)
    c2 = np.full_like(c0, np.uint32(call & 0xFFFFFFFF))
    c3 = np.full_like(c0, np.uint32((call >> 32) & 0xFFFFFFFF))
    k0, k1 = np.uint32(key & 0xFFFFFFFF), np.uint32((key >> 32) & 0xFFFFFFFF)
    with np.errstate(over="ignore"):
        for _ in range(ROUNDS):
            p0 = _M0 * c0.astype(np.uint64)
            p1 = _M1 * c2.astype(np.uint64)
            hi0, lo0 = (p0 >> np.uint64(32)).astype(np.uint32), (p0 & _LOW).astype(np.uint32)
            hi1, lo1 = (p1 >> np.uint64(32)).astype(np.uint32), (p1 & _LOW).astype(np.uint32)
            c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
            k0, k1 = k0 + _W0, k1 + _W1
    return c0, c1, c2, c3


def uniform(key: int, call: int, index: np.ndarray, which: int = 0) -> np.ndarray:
    """Uniform float64s in [0, 1): 53 bits from words 0-1 (`which` 0) or 2-3 (`which` 1)."""
    words = philox(key, call, index)
    hi, lo = words[2 * which].astype(np.uint64), words[2 * which + 1].astype(np.uint64)
    bits = (hi << np.uint64(21)) | (lo >> np.uint64(11))
    return bits.astype(np.float64) * (1.0 / 9007199254740992.0)


def normal(key: int, call: int, index: np.ndarray) -> np.ndarray:
    """Standard normal float64s by Box-Muller from the block's two uniforms."""
    u1, u2 = uniform(key, call, index, 0), uniform(key, call, index, 1)
    return np.sqrt(-2.0 * np.log1p(-u1)) * np.cos(2.0 * np.pi * u2)
