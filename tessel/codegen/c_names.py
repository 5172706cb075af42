"""C names: identifiers the generated code relies on, and per-function scopes of variable names.

User names go through `c_identifier` (valid, no keywords) and then `unique_name` against the
names taken here, so a variable called `expf`, `int32_t` or `NAN` cannot shadow what the
generated code calls, and a function called `abs` cannot clash with the C library.
"""

from __future__ import annotations

from tessel.codegen.errors import CodegenError
from tessel.ir.expr import Var
from tessel.support.names import c_identifier, unique_name

_MATH_FUNCTIONS = """
acos asin atan atan2 cbrt ceil copysign cos cosh erf erfc exp exp2 expm1 fabs fdim floor fma
fmax fmin fmod frexp hypot ilogb ldexp lgamma llrint llround log log10 log1p log2 logb lrint
lround modf nan nearbyint nextafter pow remainder remquo rint round scalbn sin sinh sqrt tan
tanh tgamma trunc
""".split()

_LIBRARY_NAMES = """
abs labs llabs div ldiv lldiv exit _Exit abort atexit malloc calloc realloc free aligned_alloc
atoi atol atoll atof strtol strtoll strtoul strtoull strtod strtof rand srand qsort bsearch
getenv system memcpy memmove memset memcmp memchr strcpy strncpy strcat strncat strcmp strncmp
strlen strchr strrchr strstr strtok strerror errno
int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t size_t ptrdiff_t intptr_t
uintptr_t NULL NAN INFINITY HUGE_VAL isnan isinf isfinite signbit fpclassify isnormal
INT8_C INT16_C INT32_C INT64_C UINT8_C UINT16_C UINT32_C UINT64_C
TESSEL_EXPORT TESSEL_INT_HELPERS TESSEL_UINT_HELPERS TESSEL_FLOAT_HELPERS
""".split()

RESERVED_NAMES = frozenset(
    [*_LIBRARY_NAMES, *_MATH_FUNCTIONS, *(f"{name}f" for name in _MATH_FUNCTIONS)]
    + [f"{name}l" for name in _MATH_FUNCTIONS]
)


class NameScope:
    """Unique C names for the variables of one function; every binding gets a fresh name."""

    def __init__(self, taken: set[str]) -> None:
        self.taken = set(taken)
        self.names: dict[Var, str] = {}

    def bind(self, var: Var, hint: str | None = None) -> str:
        """A new C name for `var` (derived from `hint` or its own name), used from now on."""
        name = unique_name(c_identifier(hint or var.name), self.taken)
        self.names[var] = name
        return name

    def fresh(self, hint: str) -> str:
        """A new C name for a helper variable the generated code introduces."""
        return unique_name(c_identifier(hint), self.taken)

    def is_bound(self, var: Var) -> bool:
        """True if `var` already has a C name here."""
        return var in self.names

    def name_of(self, var: Var) -> str:
        """The C name bound to `var`; an error if the IR uses it where it is not defined."""
        if var not in self.names:
            raise CodegenError(
                f"variable `{var.name}` is used where it is not defined",
                rule="codegen.undefined-var",
                hint="every variable must be a parameter, a loop variable, a let, or a buffer",
            )
        return self.names[var]
