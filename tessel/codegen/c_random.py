"""The random-number runtime of the generated C: Philox4x32-10 (tessel/support/philox.py holds
the same in NumPy, bit for bit), emitted after the prelude into a file whose code calls it
(`tessel_random_` names): the computes of ONNX's random operators (tessel/topi/random.py).

Each element draws from block (index, call) of its stream's key, so kernels may run their
elements in any order and on any thread: no state is kept in C. The model's random state (a
nonce and the call's number) is an input of main, which the executor advances each call.
"""

from __future__ import annotations

USES_RANDOM = "tessel_random_"

_RUNTIME = r"""
/* The random-number runtime (tessel/codegen/c_random.py): Philox4x32-10. */
static inline void tessel_random_block(uint64_t key, uint64_t call, int64_t index,
                                       uint32_t out[4]) {
  uint32_t c0 = (uint32_t)(uint64_t)index, c1 = (uint32_t)((uint64_t)index >> 32);
  uint32_t c2 = (uint32_t)call, c3 = (uint32_t)(call >> 32);
  uint32_t k0 = (uint32_t)key, k1 = (uint32_t)(key >> 32);
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
    uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
    c1 = (uint32_t)p1;
    c3 = (uint32_t)p0;
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

/* A uniform double in [0, 1): 53 bits of words 0-1 (which 0) or 2-3 (which 1). */
static inline double tessel_random_uniform(uint64_t key, uint64_t call, int64_t index,
                                           int32_t which) {
  uint32_t words[4];
  tessel_random_block(key, call, index, words);
  uint64_t hi = words[2 * which], lo = words[2 * which + 1];
  return (double)((hi << 21) | (lo >> 11)) * (1.0 / 9007199254740992.0);
}

/* A standard normal double (Box-Muller from the block's two uniforms). */
static inline double tessel_random_normal(uint64_t key, uint64_t call, int64_t index) {
  double u1 = tessel_random_uniform(key, call, index, 0);
  double u2 = tessel_random_uniform(key, call, index, 1);
  return sqrt(-2.0 * log1p(-u1)) * cos(6.283185307179586 * u2);
}
"""

RANDOM_RUNTIME = _RUNTIME.strip()


def needs_random_runtime(code: str) -> bool:
    """Whether generated C `code` draws random numbers."""
    return USES_RANDOM in code


__all__ = ["RANDOM_RUNTIME", "needs_random_runtime"]
