"""The fixed C text every generated file starts with: includes, error reporting, helpers.

Helpers cover what C spells differently from the IR: floor division and modulo (C's `/` and
`%` truncate), min/max (without evaluating operands twice), and math without a libm name.
Every helper name starts with `tessel_`, a prefix `c_identifier` never produces for user names.
"""

from __future__ import annotations

_HEADER = r"""
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define TESSEL_EXPORT __attribute__((visibility("default")))

static _Thread_local char tessel_error_message[1024];

/* The message of the last failed call in this thread (an assertion, an allocation). */
TESSEL_EXPORT const char* tessel_get_last_error(void) { return tessel_error_message; }

static inline void tessel_set_error(const char* message) {
  strncpy(tessel_error_message, message, sizeof(tessel_error_message) - 1);
  tessel_error_message[sizeof(tessel_error_message) - 1] = '\0';
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
static inline bool tessel_min_b(bool a, bool b) { return a && b; }
static inline bool tessel_max_b(bool a, bool b) { return a || b; }
"""

# Float min/max propagate NaN, as NumPy's minimum/maximum (and the interpreter) do.
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

PRELUDE = (_HEADER + _INT_HELPERS + _FLOAT_HELPERS).lstrip()
