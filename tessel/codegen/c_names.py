"""C names: identifiers the generated code relies on, and per-function scopes of variable names.

User names go through `c_identifier` (valid, no keywords) and then `unique_name` against the
names taken here, so a variable called `expf`, `int32_t` or `NAN` cannot shadow what the
generated code calls, one called `INT32_MAX` or `EXIT_FAILURE` is not replaced by the
preprocessor, and a function called `abs` cannot clash with the C library.
"""

from __future__ import annotations

from tessel.codegen.errors import CodegenError
from tessel.ir.expr import Var
from tessel.support.errors import InternalError
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
TESSEL_EXPORT TESSEL_INTERNAL TESSEL_INT_HELPERS TESSEL_UINT_HELPERS TESSEL_FLOAT_HELPERS
TESSEL_CHECKED_DIVISION TESSEL_CHECKED_UDIVISION
TESSEL_WORKSPACE_CACHE_SLOTS TESSEL_WORKSPACE_CACHE_BYTES
""".split()

# Object-like macros of the headers the prelude includes (math.h, stdbool.h, stddef.h, stdint.h,
# stdlib.h, string.h), in C11 and in GNU mode (glibc adds the M_* constants, the wait-status
# macros of stdlib.h and endian.h), plus the compiler's predefined `linux` and `unix`. A user
# variable spelled like one would be replaced by the preprocessor (`int32_t INT32_MAX = 0;`
# becomes `int32_t 2147483647 = 0;`). tests/codegen/test_c_names.py checks this list against
# what the system compiler defines. Names starting with `_` and a capital (or `__`) never reach
# C unchanged: `c_identifier` prefixes them.
_HEADER_MACROS = """
EXIT_FAILURE EXIT_SUCCESS RAND_MAX MB_CUR_MAX NULL offsetof bool true false
FP_FAST_FMA FP_FAST_FMAF FP_FAST_FMAL FP_ILOGB0 FP_ILOGBNAN FP_INFINITE FP_NAN FP_NORMAL
FP_SUBNORMAL FP_ZERO FP_INT_UPWARD FP_INT_DOWNWARD FP_INT_TOWARDZERO FP_INT_TONEARESTFROMZERO
FP_INT_TONEAREST FP_LLOGB0 FP_LLOGBNAN HUGE_VAL HUGE_VALF HUGE_VALL INFINITY NAN SNAN SNANF
SNANL MATH_ERRNO MATH_ERREXCEPT math_errhandling MAXFLOAT HUGE
DOMAIN SING OVERFLOW UNDERFLOW TLOSS PLOSS X_TLOSS
fpclassify isfinite isgreater isgreaterequal isinf isless islessequal islessgreater isnan
isnormal isunordered signbit issignaling issubnormal iszero iscanonical
M_E M_LOG2E M_LOG10E M_LN2 M_LN10 M_PI M_PI_2 M_PI_4 M_1_PI M_2_PI M_2_SQRTPI M_SQRT2 M_SQRT1_2
M_El M_LOG2El M_LOG10El M_LN2l M_LN10l M_PIl M_PI_2l M_PI_4l M_1_PIl M_2_PIl M_2_SQRTPIl
M_SQRT2l M_SQRT1_2l
INT8_MIN INT16_MIN INT32_MIN INT64_MIN INT8_MAX INT16_MAX INT32_MAX INT64_MAX
UINT8_MAX UINT16_MAX UINT32_MAX UINT64_MAX
INT_LEAST8_MIN INT_LEAST16_MIN INT_LEAST32_MIN INT_LEAST64_MIN
INT_LEAST8_MAX INT_LEAST16_MAX INT_LEAST32_MAX INT_LEAST64_MAX
UINT_LEAST8_MAX UINT_LEAST16_MAX UINT_LEAST32_MAX UINT_LEAST64_MAX
INT_FAST8_MIN INT_FAST16_MIN INT_FAST32_MIN INT_FAST64_MIN
INT_FAST8_MAX INT_FAST16_MAX INT_FAST32_MAX INT_FAST64_MAX
UINT_FAST8_MAX UINT_FAST16_MAX UINT_FAST32_MAX UINT_FAST64_MAX
INTPTR_MIN INTPTR_MAX UINTPTR_MAX INTMAX_MIN INTMAX_MAX UINTMAX_MAX INTMAX_C UINTMAX_C
PTRDIFF_MIN PTRDIFF_MAX SIG_ATOMIC_MIN SIG_ATOMIC_MAX SIZE_MAX WCHAR_MIN WCHAR_MAX
WINT_MIN WINT_MAX INT8_WIDTH INT16_WIDTH INT32_WIDTH INT64_WIDTH UINT8_WIDTH UINT16_WIDTH
UINT32_WIDTH UINT64_WIDTH INTPTR_WIDTH UINTPTR_WIDTH INTMAX_WIDTH UINTMAX_WIDTH PTRDIFF_WIDTH
SIZE_WIDTH WCHAR_WIDTH WINT_WIDTH SIG_ATOMIC_WIDTH
INT_LEAST8_WIDTH INT_LEAST16_WIDTH INT_LEAST32_WIDTH INT_LEAST64_WIDTH
UINT_LEAST8_WIDTH UINT_LEAST16_WIDTH UINT_LEAST32_WIDTH UINT_LEAST64_WIDTH
INT_FAST8_WIDTH INT_FAST16_WIDTH INT_FAST32_WIDTH INT_FAST64_WIDTH
UINT_FAST8_WIDTH UINT_FAST16_WIDTH UINT_FAST32_WIDTH UINT_FAST64_WIDTH
WEXITSTATUS WTERMSIG WSTOPSIG WIFEXITED WIFSIGNALED WIFSTOPPED WIFCONTINUED WCOREDUMP
WNOHANG WUNTRACED WCONTINUED WEXITED WSTOPPED WNOWAIT
FD_SETSIZE FD_SET FD_CLR FD_ISSET FD_ZERO NFDBITS alloca
LITTLE_ENDIAN BIG_ENDIAN PDP_ENDIAN BYTE_ORDER
htobe16 htole16 be16toh le16toh htobe32 htole32 be32toh le32toh htobe64 htole64 be64toh le64toh
linux unix i386
""".split()

# Names the same headers declare at file scope in C11 and GNU mode, beyond the ones above:
# typedefs (`float_t`, `double_t` of math.h, `div_t`, `int_least8_t`, glibc's sys/types.h in
# GNU mode), functions and variables (`random`, `signgam`), and a few struct tags. A function
# spelled like one would clash with the header's declaration (`int32_t float_t(...)` does not
# compile). tests/codegen/test_c_names_regressions.py checks this list against the headers.
_HEADER_DECLARATIONS = """
a64l acosh acoshf acoshl arc4random arc4random_buf arc4random_uniform asinh asinhf asinhl
at_quick_exit atanh atanhf atanhl bcmp bcopy blkcnt_t blksize_t bzero caddr_t clearenv clock_t
clockid_t daddr_t dev_t div_t double_t drand48 drand48_data drand48_r drem dremf dreml ecvt ecvt_r
erand48 erand48_r explicit_bzero fcvt fcvt_r fd_mask fd_set ffs ffsl ffsll finite finitef finitel
float_t fsblkcnt_t fsfilcnt_t fsid_t gamma gammaf gammal gcvt getloadavg getsubopt gid_t id_t index
initstate initstate_r ino_t int_fast16_t int_fast32_t int_fast64_t int_fast8_t int_least16_t
int_least32_t int_least64_t int_least8_t intmax_t isinff isinfl isnanf isnanl j0 j0f j0l j1 j1f j1l
jn jnf jnl jrand48 jrand48_r key_t l64a lcong48 lcong48_r ldiv_t lgamma_r lgammaf_r lgammal_r
lldiv_t locale_t loff_t lrand48 lrand48_r max_align_t mblen mbstowcs mbtowc memccpy mkdtemp mkstemp
mkstemps mktemp mode_t mrand48 mrand48_r nexttoward nexttowardf nexttowardl nlink_t nrand48
nrand48_r off_t on_exit pid_t posix_memalign pselect pthread_attr_t pthread_barrier_t
pthread_barrierattr_t pthread_cond_t pthread_condattr_t pthread_key_t pthread_mutex_t
pthread_mutexattr_t pthread_once_t pthread_rwlock_t pthread_rwlockattr_t pthread_spinlock_t
pthread_t putenv qecvt qecvt_r qfcvt qfcvt_r qgcvt quad_t quick_exit rand_r random random_data
random_r reallocarray realpath register_t rindex rpmatch scalb scalbf scalbl scalbln scalblnf
scalblnl seed48 seed48_r select setenv setstate setstate_r signgam significand significandf
significandl sigset_t srand48 srand48_r srandom srandom_r ssize_t stpcpy stpncpy strcasecmp
strcasecmp_l strcoll strcoll_l strcspn strdup strerror_l strerror_r strncasecmp strncasecmp_l
strndup strnlen strpbrk strsep strsignal strspn strtok_r strtold strtoq strtouq strxfrm strxfrm_l
suseconds_t time_t timer_t timespec timeval u_char u_int u_int16_t u_int32_t u_int64_t u_int8_t
u_long u_quad_t u_short uid_t uint uint_fast16_t uint_fast32_t uint_fast64_t uint_fast8_t
uint_least16_t uint_least32_t uint_least64_t uint_least8_t uintmax_t ulong unsetenv ushort valloc
wchar_t wcstombs wctomb y0 y0f y0l y1 y1f y1l yn ynf ynl
""".split()

RESERVED_NAMES = frozenset(
    [*_LIBRARY_NAMES, *_HEADER_MACROS, *_HEADER_DECLARATIONS, *_MATH_FUNCTIONS]
    + [f"{name}f" for name in _MATH_FUNCTIONS]
    + [f"{name}l" for name in _MATH_FUNCTIONS]
)


class NameScope:
    """Unique C names for the variables of one function; every binding gets a fresh name."""

    def __init__(self, taken: set[str]) -> None:
        self.taken = set(taken)
        self.names: dict[Var, str] = {}
        # The C declarator of each local and parameter declared so far, `{}` standing for the
        # name (`float* restrict {}`, `float (*{})[8]`): what an outlined parallel loop body
        # (c_parallel.py) declares to receive the ones it uses.
        self.declared: dict[str, str] = {}
        self._outer = frozenset(taken)

    def declare(self, name: str, declarator: str) -> str:
        """Record that the local or parameter `name` has the C type `declarator` (with `{}`
        where the name goes, an array as a pointer to its element); returns `name`."""
        self.declared[name] = declarator
        return name

    def local_names(self) -> set[str]:
        """The names this function has bound so far (not the module's shared ones)."""
        return self.taken - self._outer

    def bind(self, var: Var, hint: str | None = None) -> str:
        """A new C name for `var` (derived from `hint` or its own name), used from now on."""
        name = unique_name(c_identifier(hint or var.name), self.taken)
        self.names[var] = name
        return name

    def alias(self, var: Var, name: str) -> None:
        """Let `var` use `name`, a C name already bound here (a handle parameter and its
        buffer's data pointer are one C parameter)."""
        if name not in self.names.values():
            raise InternalError(f"codegen aliased `{var.name}` to `{name}`, which is not bound")
        self.names[var] = name

    def element_of(self, var: Var, text: str) -> None:
        """Let `var` stand for `text`: one lane of a vector (`tessel_p0[tessel_l]`) in the
        per-lane loops that vector code generation writes, or a variable of the prelude."""
        self.names[var] = text

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
