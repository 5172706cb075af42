"""How a generated C entry function is called: plain values shared by codegen and the runtime.

Codegen writes these descriptions and the runtime reads them; keeping them here, in plain values
(strings, ints, tuples), lets the two agree without importing each other (docs/architecture.md §1).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ParamSpec:
    """One parameter as the user wrote it: an array (`kind="buffer"`) or a scalar.

    `shape` entries are ints or the names of size symbols, bound from the first argument that has
    them; a scalar parameter that is also a size symbol (`n: T.int32` used in `T.Buffer((n,))`)
    has `symbol` set to that name. `written` says the function may store into the buffer;
    `restrict` that its C pointer is `restrict`-qualified, which the runtime upholds by refusing
    arguments that overlap one that is written.
    """

    name: str
    kind: str  # "buffer" or "scalar"
    dtype: str
    shape: tuple[int | str, ...] = ()
    symbol: str | None = None
    written: bool = False
    restrict: bool = False


@dataclass(frozen=True)
class FunctionSignature:
    """How to call one generated C function.

    The C arguments are, in order: one per parameter (a data pointer or a scalar), then one
    int64 per name in `size_args` (symbolic sizes bound from the arrays' shapes), then, when
    `constants` is set, the module's constant table (`const void* const*`, one data pointer per
    `ConstantSpec`, in order), then, when `returns` is set (a function ending in `T.ret`),
    a pointer to one value of that dtype, which the function writes before it returns 0. The
    C function returns 0, or nonzero after recording a message for `tessel_get_last_error`.
    """

    name: str
    c_symbol: str
    params: tuple[ParamSpec, ...]
    size_args: tuple[str, ...] = ()
    constants: bool = False
    returns: str | None = None  # the dtype of the value T.ret gives back, if any


@dataclass(frozen=True)
class ConstantSpec:
    """One module constant a build without linked parameters takes when it is loaded (RFC 22).

    The runtime checks the array it is handed against `dtype` and `shape`, keeps it alive, and
    passes its data pointer at position `index` of the constant table.
    """

    index: int
    dtype: str
    shape: tuple[int, ...]


@dataclass(frozen=True, eq=False)
class DataFile:
    """A binary file a generated C source includes with `.incbin "name"` (the constants of a
    build with linked parameters): the compiler driver writes `data` as `name` in the directory
    it compiles in, and hashes it into the cache key. `name` is a plain file name."""

    name: str
    data: bytes = field(repr=False)

    def __post_init__(self) -> None:
        assert self.name, "a data file needs a name"
        assert "/" not in self.name, self.name  # `.incbin "name"`
        assert '"' not in self.name, self.name
