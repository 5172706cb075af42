"""The fixed C text every generated file starts with: includes, error reporting, helpers.

Helpers cover what C spells differently from the IR: floor division and modulo (C's `/` and
`%` truncate), min/max (without evaluating operands twice), and math without a libm name.
Every helper name starts with `tessel_`, a prefix `c_identifier` never produces for user names.

Integer division by a divisor that may be zero (or -1, when the dividend may be the type's
minimum) goes through a checked helper. C leaves both undefined and x86 traps on them (SIGFPE
would kill the Python process), so a checked helper does not divide: it records why in the
entry function's `tessel_status` and returns 0. The generated code tests that status before any
store, allocation or call that depends on the value and returns the error (see c_stmt.py).

A library may be compiled from several translation units (c_units.py). Its state (the error
message, the workspace allocator, the exp floors) is then defined once, in the first, and
declared `extern` with hidden visibility in every unit, so all share it and no other library
sees it; a single-unit library has the same text, with the declarations before the definitions.
"""

from __future__ import annotations

ALIGNMENT = 64  # bytes, of every allocation the generated code makes (stack and workspace)

# Also in units of fixed support code (tessel.graph.c_api_loader), which need nothing else.
VISIBILITY = r"""
#define TESSEL_EXPORT __attribute__((visibility("default")))
/* Shared by the library's translation units, invisible outside it. */
#define TESSEL_INTERNAL __attribute__((visibility("hidden")))
"""
ERROR_MESSAGE_DECLARATION = r"""
/* The message of the last failed call in this thread (an assertion, an allocation). */
extern TESSEL_INTERNAL _Thread_local char tessel_error_message[1024];
"""

_INCLUDES = (
    r"""
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
"""
    + VISIBILITY
    + r"""
/* Vector math: a vectorized loop calling these gets glibc's libmvec versions (16 lanes at a time
   on AVX-512) instead of one scalar call per lane; the lane loops of vector exp and erf are
   most of softmax's and gelu's time otherwise. Declared only where libmvec has them. */
#if defined(_OPENMP) && defined(__x86_64__) && defined(__GLIBC__) && \
    (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 22))
#pragma omp declare simd notinbranch
float expf(float);
#pragma omp declare simd notinbranch
float logf(float);
#pragma omp declare simd notinbranch
double exp(double);
#pragma omp declare simd notinbranch
double log(double);
#if __GLIBC__ > 2 || __GLIBC_MINOR__ >= 35
#pragma omp declare simd notinbranch
float erff(float);
#pragma omp declare simd notinbranch
float tanhf(float);
#pragma omp declare simd notinbranch
double erf(double);
#pragma omp declare simd notinbranch
double tanh(double);
#endif
#endif
"""
)

# The library's state, declared in every translation unit and defined in the first
# (_SHARED_DEFINITIONS), with the inline functions the generated code reaches it through.
_SHARED_DECLARATIONS = r"""
/* Vector exp clamps its argument to these (just above the log of the smallest normal number):
   libmvec's exp is slow on every lane whose result is denormal or zero; the clamped lanes are
   then set to 0 (tessel.exp_flush_below, written by the pass ClampVectorExp; the values are
   tessel.tir.builtin.EXP_FLOORS). Variables, not constants, so that gcc cannot fold exp of the
   bound and drop the clamp (c_tessel_ops.py). */
extern TESSEL_INTERNAL float tessel_exp_floor_f32;
extern TESSEL_INTERNAL double tessel_exp_floor_f64;
""" + ERROR_MESSAGE_DECLARATION + r"""
static inline void tessel_set_error(const char* message) {
  strncpy(tessel_error_message, message, sizeof(tessel_error_message) - 1);
  tessel_error_message[sizeof(tessel_error_message) - 1] = '\0';
}

/* The workspace allocator (docs/architecture.md, section 6): every workspace allocation of
   the generated code goes through it, and the host may replace it (a pool, an arena, a failing
   one in tests) through tessel_set_workspace_allocator; NULL restores the default. A NULL
   result is out of memory, which the caller turns into an error naming the buffer. */
typedef void* (*tessel_workspace_alloc_t)(size_t nbytes, size_t alignment);
typedef void (*tessel_workspace_free_t)(void* pointer);
extern TESSEL_INTERNAL tessel_workspace_alloc_t tessel_workspace_alloc_fn;
extern TESSEL_INTERNAL tessel_workspace_free_t tessel_workspace_free_fn;

static inline void* tessel_workspace_alloc(size_t nbytes) {
  return tessel_workspace_alloc_fn(nbytes, @ALIGNMENT@);
}

static inline void tessel_workspace_free(void* pointer) {
  if (pointer != NULL) tessel_workspace_free_fn(pointer);
}

/* Statuses of checked divisions: 0 (fine), 1 (division by zero), 2 (overflow). Written
   atomically: inside a parallel loop, several threads may record a failure. */
static inline void tessel_fail_division(int32_t* status, int32_t why) {
  __atomic_store_n(status, why, __ATOMIC_RELAXED);
}

static inline bool tessel_division_ok(int32_t* status) {
  return __atomic_load_n(status, __ATOMIC_RELAXED) == 0;
}

/* Record the message of a failed division, naming where it happened. */
static inline void tessel_set_division_error(int32_t status, const char* where) {
  char message[512];
  const char* what = status == 2
      ? "integer division overflow (the type's minimum divided by -1)"
      : "integer division by zero";
  strncpy(message, what, sizeof(message) - 1);
  message[sizeof(message) - 1] = '\0';
  strncat(message, " in ", sizeof(message) - strlen(message) - 1);
  strncat(message, where, sizeof(message) - strlen(message) - 1);
  tessel_set_error(message);
}
"""

# What _SHARED_DECLARATIONS declares, defined: in the library's first translation unit only.
_SHARED_DEFINITIONS = r"""
TESSEL_INTERNAL float tessel_exp_floor_f32 = -87.0f;
TESSEL_INTERNAL double tessel_exp_floor_f64 = -708.0;

TESSEL_INTERNAL _Thread_local char tessel_error_message[1024];

TESSEL_EXPORT const char* tessel_get_last_error(void) { return tessel_error_message; }

/* The default allocator keeps a few freed blocks of up to 256 KiB per thread and hands them out
   again: a buffer allocated per row of a parallel loop (softmax's exponentials over a 384-long
   row) would otherwise cost an aligned_alloc and a free per row, a third of that kernel's time,
   and a fused chain of anchors allocates each of its intermediates (attention: nine) per row
   block, at most 256 KiB each (tessel.schedule.rules.anchor_chain).
   A block carries its usable size and its alignment in a header just below the pointer (the
   block starts `alignment` bytes earlier), so a free knows what it releases. A cached block is
   reused only for the same size, and never under AddressSanitizer, which must see every free
   and every byte past the end. */
#if defined(__SANITIZE_ADDRESS__)
#define TESSEL_WORKSPACE_CACHE_SLOTS 0
#else
#define TESSEL_WORKSPACE_CACHE_SLOTS 12
#endif
#define TESSEL_WORKSPACE_CACHE_BYTES ((size_t)1 << 18)

typedef struct { size_t nbytes; size_t alignment; } tessel_block_header;

static _Thread_local void* tessel_workspace_cache[TESSEL_WORKSPACE_CACHE_SLOTS + 1];

static inline tessel_block_header* tessel_header_of(void* pointer) {
  return (tessel_block_header*)((char*)pointer - sizeof(tessel_block_header));
}

static void* tessel_default_workspace_alloc(size_t nbytes, size_t alignment) {
  size_t usable = (nbytes / alignment + 1) * alignment;  /* never size 0 */
  if (alignment < sizeof(tessel_block_header)) alignment = sizeof(tessel_block_header);
  for (int slot = 0; slot < TESSEL_WORKSPACE_CACHE_SLOTS; ++slot) {
    void* cached = tessel_workspace_cache[slot];
    if (cached == NULL) continue;
    tessel_block_header* header = tessel_header_of(cached);
    if (header->nbytes == usable && header->alignment == alignment) {
      tessel_workspace_cache[slot] = NULL;
      return cached;
    }
  }
  char* block = (char*)aligned_alloc(alignment, alignment + usable);
  if (block == NULL) return NULL;
  tessel_block_header* header = tessel_header_of(block + alignment);
  header->nbytes = usable;
  header->alignment = alignment;
  return block + alignment;
}

static void tessel_default_workspace_free(void* pointer) {
  tessel_block_header* header = tessel_header_of(pointer);
  if (header->nbytes <= TESSEL_WORKSPACE_CACHE_BYTES) {
    for (int slot = 0; slot < TESSEL_WORKSPACE_CACHE_SLOTS; ++slot) {
      if (tessel_workspace_cache[slot] == NULL) {
        tessel_workspace_cache[slot] = pointer;
        return;
      }
    }
  }
  free((char*)pointer - header->alignment);
}

TESSEL_INTERNAL tessel_workspace_alloc_t tessel_workspace_alloc_fn =
    tessel_default_workspace_alloc;
TESSEL_INTERNAL tessel_workspace_free_t tessel_workspace_free_fn = tessel_default_workspace_free;

TESSEL_EXPORT void tessel_set_workspace_allocator(
    tessel_workspace_alloc_t alloc, tessel_workspace_free_t release) {
  tessel_workspace_alloc_fn = alloc != NULL ? alloc : tessel_default_workspace_alloc;
  tessel_workspace_free_fn = release != NULL ? release : tessel_default_workspace_free;
}
"""

_INT_HELPERS = r"""
#define TESSEL_INT_HELPERS(T, S) \
  static inline T tessel_floordiv_##S(T a, T b) { \
    T q = (T)(a / b); \
    return (T)((q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q); \
  } \
  static inline T tessel_floormod_##S(T a, T b) { \
    T r = (T)(a % b); \
    return (T)((r != 0 && ((r < 0) != (b < 0))) ? r + b : r); \
  } \
  static inline T tessel_min_##S(T a, T b) { return a < b ? a : b; } \
  static inline T tessel_max_##S(T a, T b) { return a > b ? a : b; }
TESSEL_INT_HELPERS(int8_t, i8)
TESSEL_INT_HELPERS(int16_t, i16)
TESSEL_INT_HELPERS(int32_t, i32)
TESSEL_INT_HELPERS(int64_t, i64)
/* Unsigned division already rounds down. */
#define TESSEL_UINT_HELPERS(T, S) \
  static inline T tessel_floordiv_##S(T a, T b) { return (T)(a / b); } \
  static inline T tessel_floormod_##S(T a, T b) { return (T)(a % b); } \
  static inline T tessel_min_##S(T a, T b) { return a < b ? a : b; } \
  static inline T tessel_max_##S(T a, T b) { return a > b ? a : b; }
TESSEL_UINT_HELPERS(uint8_t, u8)
TESSEL_UINT_HELPERS(uint16_t, u16)
TESSEL_UINT_HELPERS(uint32_t, u32)
TESSEL_UINT_HELPERS(uint64_t, u64)
/* Checked truncating and floor division/modulo (see the module docstring of c_prelude.py). */
#define TESSEL_CHECKED_DIVISION(T, S, MIN) \
  static inline bool tessel_bad_division_##S(T a, T b, int32_t* status) { \
    if (b == 0) { tessel_fail_division(status, 1); return true; } \
    if (b == -1 && a == MIN) { tessel_fail_division(status, 2); return true; } \
    return false; \
  } \
  static inline T tessel_checked_truncdiv_##S(T a, T b, int32_t* status) { \
    return tessel_bad_division_##S(a, b, status) ? (T)0 : (T)(a / b); \
  } \
  static inline T tessel_checked_truncmod_##S(T a, T b, int32_t* status) { \
    return tessel_bad_division_##S(a, b, status) ? (T)0 : (T)(a % b); \
  } \
  static inline T tessel_checked_floordiv_##S(T a, T b, int32_t* status) { \
    return tessel_bad_division_##S(a, b, status) ? (T)0 : tessel_floordiv_##S(a, b); \
  } \
  static inline T tessel_checked_floormod_##S(T a, T b, int32_t* status) { \
    return tessel_bad_division_##S(a, b, status) ? (T)0 : tessel_floormod_##S(a, b); \
  }
TESSEL_CHECKED_DIVISION(int8_t, i8, INT8_MIN)
TESSEL_CHECKED_DIVISION(int16_t, i16, INT16_MIN)
TESSEL_CHECKED_DIVISION(int32_t, i32, INT32_MIN)
TESSEL_CHECKED_DIVISION(int64_t, i64, INT64_MIN)
#define TESSEL_CHECKED_UDIVISION(T, S) \
  static inline T tessel_checked_truncdiv_##S(T a, T b, int32_t* status) { \
    if (b == 0) { tessel_fail_division(status, 1); return 0; } \
    return (T)(a / b); \
  } \
  static inline T tessel_checked_truncmod_##S(T a, T b, int32_t* status) { \
    if (b == 0) { tessel_fail_division(status, 1); return 0; } \
    return (T)(a % b); \
  } \
  static inline T tessel_checked_floordiv_##S(T a, T b, int32_t* status) { \
    return tessel_checked_truncdiv_##S(a, b, status); \
  } \
  static inline T tessel_checked_floormod_##S(T a, T b, int32_t* status) { \
    return tessel_checked_truncmod_##S(a, b, status); \
  }
TESSEL_CHECKED_UDIVISION(uint8_t, u8)
TESSEL_CHECKED_UDIVISION(uint16_t, u16)
TESSEL_CHECKED_UDIVISION(uint32_t, u32)
TESSEL_CHECKED_UDIVISION(uint64_t, u64)
static inline bool tessel_min_b(bool a, bool b) { return a && b; }
static inline bool tessel_max_b(bool a, bool b) { return a || b; }
"""

# Float min/max are NumPy's minimum/maximum (and the interpreter's): a NaN in either operand
# propagates, and of two equal operands (0.0 and -0.0) the second is the result.
_FLOAT_HELPERS = r"""
#define TESSEL_FLOAT_HELPERS(T, S, F) \
  static inline T tessel_floordiv_##S(T a, T b) { return floor##F(a / b); } \
  static inline T tessel_floormod_##S(T a, T b) { return a - floor##F(a / b) * b; } \
  static inline T tessel_min_##S(T a, T b) { return (isnan(a) || a < b) ? a : b; } \
  static inline T tessel_max_##S(T a, T b) { return (isnan(a) || a > b) ? a : b; } \
  static inline T tessel_sigmoid_##S(T x) { return (T)1 / ((T)1 + exp##F(-x)); } \
  static inline T tessel_rsqrt_##S(T x) { return (T)1 / sqrt##F(x); } \
  static inline T tessel_exp10_##S(T x) { return pow##F((T)10, x); }
TESSEL_FLOAT_HELPERS(float, f32, f)
TESSEL_FLOAT_HELPERS(double, f64, )
"""

# ONNX's BitCast (topi.reinterpret): the bits of a float read as the integer of its width, and
# back. memcpy is how C reinterprets without breaking strict aliasing; compilers make it a move.
_BITCAST_HELPERS = r"""
#define TESSEL_BITCAST(FROM, TO, NAME) \
  static inline TO tessel_bitcast_##NAME(FROM v) { TO r; memcpy(&r, &v, sizeof r); return r; }
TESSEL_BITCAST(float, int32_t, float32_int32)
TESSEL_BITCAST(float, uint32_t, float32_uint32)
TESSEL_BITCAST(int32_t, float, int32_float32)
TESSEL_BITCAST(uint32_t, float, uint32_float32)
TESSEL_BITCAST(double, int64_t, float64_int64)
TESSEL_BITCAST(double, uint64_t, float64_uint64)
TESSEL_BITCAST(int64_t, double, int64_float64)
TESSEL_BITCAST(uint64_t, double, uint64_float64)
#undef TESSEL_BITCAST
"""

# bfloat16 is held as its bits (a uint16_t: gcc 12 has no bfloat16 arithmetic type) and converted
# through float32, exactly as ml_dtypes (the interpreter's) converts: widening puts the bits in
# float32's upper half; narrowing rounds to nearest, ties to even, and a NaN becomes the quiet
# NaN of its sign. The tests are on the bits, not `f != f`, which -ffast-math would fold away.
_BFLOAT16_HELPERS = r"""
static inline float tessel_bf16_to_f32(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}
static inline uint16_t tessel_f32_to_bf16(float f) {
  uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return (uint16_t)(((bits >> 16) & 0x8000u) | 0x7fc0u);
  return (uint16_t)((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}
"""

# A mask's lanes are bytes holding 0 or 1 (whether all are on: c_access.all_lanes_test).
_VECTOR_HELPERS = r"""
/* A contiguous load or store of the enabled lanes of 4-byte elements (8 or 16 lanes): one
   masked instruction where the target has them (AVX-512, AVX2: disabled lanes never touch
   memory, they cannot fault), lane by lane elsewhere. Disabled lanes load 0. The tails of
   tiles that do not divide a loop (x = 7 of a depthwise convolution's 16 lanes) take this. */
#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif
static inline void tessel_masked_load4(void* dst, const void* src, const void* mask, int32_t lanes) {
  const char* m = (const char*)mask;
  for (int32_t l = 0; l < lanes; ++l) {
    int32_t word = 0;
    if (m[l]) memcpy(&word, (const char*)src + 4 * l, 4);
    memcpy((char*)dst + 4 * l, &word, 4);
  }
}
static inline void tessel_masked_store4(void* dst, const void* src, const void* mask, int32_t lanes) {
  const char* m = (const char*)mask;
  for (int32_t l = 0; l < lanes; ++l)
    if (m[l]) memcpy((char*)dst + 4 * l, (const char*)src + 4 * l, 4);
}
#if defined(__AVX512F__)
static inline __mmask16 tessel_mask16(const void* mask) {
  __m128i bytes;
  memcpy(&bytes, mask, 16);
  return _mm512_cmpneq_epi32_mask(_mm512_cvtepi8_epi32(bytes), _mm512_setzero_si512());
}
static inline void tessel_masked_load4x16(void* dst, const void* src, const void* mask) {
  __m512i v = _mm512_maskz_loadu_epi32(tessel_mask16(mask), src);
  memcpy(dst, &v, 64);
}
static inline void tessel_masked_store4x16(void* dst, const void* src, const void* mask) {
  __m512i v;
  memcpy(&v, src, 64);
  _mm512_mask_storeu_epi32(dst, tessel_mask16(mask), v);
}
#else
static inline void tessel_masked_load4x16(void* dst, const void* src, const void* mask) {
  tessel_masked_load4(dst, src, mask, 16);
}
static inline void tessel_masked_store4x16(void* dst, const void* src, const void* mask) {
  tessel_masked_store4(dst, src, mask, 16);
}
#endif
#if defined(__AVX2__)
static inline __m256i tessel_mask8(const void* mask) {
  int64_t bytes;
  memcpy(&bytes, mask, 8);
  return _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_cvtepi8_epi32(_mm_cvtsi64_si128(bytes)));
}
static inline void tessel_masked_load4x8(void* dst, const void* src, const void* mask) {
  __m256i v = _mm256_maskload_epi32((const int*)src, tessel_mask8(mask));
  memcpy(dst, &v, 32);
}
static inline void tessel_masked_store4x8(void* dst, const void* src, const void* mask) {
  __m256i v;
  memcpy(&v, src, 32);
  _mm256_maskstore_epi32((int*)dst, tessel_mask8(mask), v);
}
#else
static inline void tessel_masked_load4x8(void* dst, const void* src, const void* mask) {
  tessel_masked_load4(dst, src, mask, 8);
}
static inline void tessel_masked_store4x8(void* dst, const void* src, const void* mask) {
  tessel_masked_store4(dst, src, mask, 8);
}
#endif
"""

_HELPERS = _INT_HELPERS + _FLOAT_HELPERS + _BITCAST_HELPERS + _BFLOAT16_HELPERS
_DECLARATIONS = _SHARED_DECLARATIONS.replace("@ALIGNMENT@", str(ALIGNMENT))

# A library of one translation unit, or the first of several: everything, state defined.
PRELUDE = (_INCLUDES + _DECLARATIONS + _SHARED_DEFINITIONS + _HELPERS).lstrip()
# Every other translation unit of a library: the state declared only (c_units.py).
UNIT_PRELUDE = (_INCLUDES + _DECLARATIONS + _HELPERS).lstrip()
# Only in a unit that uses them: <immintrin.h> is most of the time gcc spends on a small file.
MASKED_LANES = _VECTOR_HELPERS


def needs_masked_lanes(code: str) -> bool:
    """True if the C text `code` loads or stores through a lane mask (MASKED_LANES)."""
    return "tessel_masked_" in code
