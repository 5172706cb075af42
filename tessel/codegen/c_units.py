"""A generated library as C translation units: one for a small module, several for a large one,
so that the C compiler builds them in parallel (tessel.runtime.compiler.compile_units).

gcc spends seconds on the C of a whole model in one process, while the kernels need nothing
of each other. A module whose kernels hold more than `UNIT_BYTES` of C is cut. The first unit
keeps the prelude with the library's state, the runtimes, the linked constants, every function
that uses them and every function that calls another (an AOT model's `main`, and the C API
appended after it, which calls `main`). The kernels that need only the prelude and the thread
pool go, whole with their parallel loop bodies, into units of about `UNIT_BYTES` each (largest
first, each to the unit holding least). A unit other than the first starts with
`UNIT_PRELUDE`, which declares the shared state instead of defining it. A function another
calls is then `TESSEL_INTERNAL` (hidden, not `static`) and every unit declares every such
function, so a call may cross units; the calls stay direct.

A small module (most tests, small models) stays one unit: its text is what it always was.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tessel.codegen.c_devices import DEVICE_RUNTIME, needs_device_runtime
from tessel.codegen.c_parallel import (
    PARALLEL_DECLARATION,
    PARALLEL_RUNTIME,
    needs_parallel_runtime,
    used_names,
)
from tessel.codegen.c_prelude import MASKED_LANES, PRELUDE, UNIT_PRELUDE, needs_masked_lanes
from tessel.codegen.c_random import RANDOM_RUNTIME, needs_random_runtime
from tessel.codegen.c_strings import STRING_RUNTIME, needs_string_runtime
from tessel.codegen.c_types import vector_typedefs

# C bytes of kernels per unit for one compiler process: gcc -O3 takes about half a second on
# this much, and a unit's fixed cost (the headers) is a twentieth of that. Several processes
# share smaller units out more evenly (unit_bytes_for), down to MIN_UNIT_BYTES.
UNIT_BYTES = 48_000
MIN_UNIT_BYTES = 16_000

# Runtimes only the first unit may hold: they keep state of their own.
_FIRST_UNIT_RUNTIMES = (
    (DEVICE_RUNTIME, needs_device_runtime),
    (RANDOM_RUNTIME, needs_random_runtime),
    (STRING_RUNTIME, needs_string_runtime),
)


@dataclass(frozen=True)
class FunctionC:
    """The C of one module function: its definition and its parallel loops' bodies."""

    definition: str  # the function, and the exported wrapper of an internal one
    outlined: tuple[str, ...]  # file-scope functions of its parallel loops
    internal: str | None  # the symbol of its internal function, when another function calls it

    @property
    def text(self) -> str:
        """Everything the function puts in its unit."""
        return "\n".join([*self.outlined, self.definition])


def unit_bytes_for(jobs: int) -> int:
    """The kernels' C bytes per unit when `jobs` compiler processes build them: the units go
    longest first to whichever process is free, so a unit per process leaves one waiting on
    the longest (MiniLM's C took 0.1-0.3 s less at two jobs with half the bytes, ResNet-50's
    0.05-0.25 s less; at one job, half the bytes cost ResNet-50 0.25-0.5 s of headers)."""
    return max(MIN_UNIT_BYTES, UNIT_BYTES // max(1, jobs))


def translation_units(
    functions: list[FunctionC], head: list[str], linked: tuple[str, ...], unit_bytes: int
) -> tuple[str, ...]:
    """The library's units; `head` is C the first unit holds before any function (the linked
    constants), `linked` the symbols it defines for them."""
    first_only = set(linked) | {f.internal for f in functions if f.internal is not None}
    movable = [i for i, f in enumerate(functions) if _movable(f, first_only)]
    size = {i: len(functions[i].text) for i in movable}
    kernel_bytes = sum(size.values())
    count = min(kernel_bytes // unit_bytes, len(movable)) if unit_bytes > 0 else 0
    if count == 0:
        return (_first_unit(functions, head, _prototypes(functions)),)
    functions = [_internal_made_shared(f) for f in functions]
    prototypes = _prototypes(functions)
    bins: list[list[int]] = [[] for _ in range(count)]
    sizes = [0] * count
    for i in sorted(movable, key=lambda i: (-size[i], i)):
        smallest = sizes.index(min(sizes))
        bins[smallest].append(i)
        sizes[smallest] += size[i]
    moved = {i for members in bins for i in members}
    first = [f for i, f in enumerate(functions) if i not in moved]
    others = [_other_unit([functions[i] for i in sorted(b)], prototypes) for b in bins if b]
    pool = any(needs_parallel_runtime(unit) for unit in others)  # it lives in the first
    return (_first_unit(first, head, prototypes, pool), *others)


def _movable(function: FunctionC, first_only: set[str]) -> bool:
    """True if the function needs nothing but the prelude and the thread pool: no runtime of
    the first unit, no linked constant and no other module function (`first_only`), so that
    the callers, `main` first, stay beside the C API that calls them."""
    text = function.text
    if any(needed(text) for _, needed in _FIRST_UNIT_RUNTIMES):
        return False
    return not (used_names(text) & (first_only - {function.internal}))


def _first_unit(
    functions: list[FunctionC], head: list[str], prototypes: list[str], pool: bool = False
) -> str:
    """The unit that defines the library's state: the prelude, the runtimes it uses (and the
    thread pool, if `pool`: another unit uses it), then the functions' loop bodies,
    prototypes and definitions."""
    parts = [*head]
    parts.extend(text for f in functions for text in f.outlined)  # they call no module function
    parts.extend(f"{prototype};" for prototype in prototypes)
    parts.extend(f.definition for f in functions)
    code = "\n".join(parts)
    used = [
        runtime
        for runtime, needed in _first_unit_runtimes()
        if needed(code) or (pool and runtime is PARALLEL_RUNTIME)
    ]
    # newlocale, uselocale and the *_l functions are POSIX 2008, outside ISO C11 (-std=c11)
    feature = ["#define _POSIX_C_SOURCE 200809L"] if STRING_RUNTIME in used else []
    typedefs = vector_typedefs(code)
    return "\n".join([*feature, PRELUDE, *used, *([typedefs] if typedefs else []), *parts])


def _first_unit_runtimes() -> list[tuple[str, Callable[[str], bool]]]:
    """Each runtime the first unit may hold, with the test of whether C text uses it."""
    return [
        (MASKED_LANES, needs_masked_lanes),
        (PARALLEL_RUNTIME, needs_parallel_runtime),
        *_FIRST_UNIT_RUNTIMES,
    ]


def _other_unit(functions: list[FunctionC], prototypes: list[str]) -> str:
    """A unit of kernels: the shared state and the pool declared, not defined."""
    parts = [text for f in functions for text in f.outlined]
    parts.extend(f"{prototype};" for prototype in prototypes)
    parts.extend(f.definition for f in functions)
    code = "\n".join(parts)
    declared = [UNIT_PRELUDE]
    typedefs = vector_typedefs(code)
    if typedefs:
        declared.append(typedefs)
    if needs_masked_lanes(code):
        declared.append(MASKED_LANES)
    if needs_parallel_runtime(code):
        declared.append(PARALLEL_DECLARATION)
    return "\n".join([*declared, *parts])


def _internal_made_shared(function: FunctionC) -> FunctionC:
    """The function with its internal function visible to the library's other units."""
    if function.internal is None:
        return function
    static = f"static int32_t {function.internal}("
    assert function.definition.startswith(static), function.definition[:80]
    shared = "TESSEL_INTERNAL" + function.definition[len("static") :]
    return FunctionC(shared, function.outlined, function.internal)


def _prototypes(functions: list[FunctionC]) -> list[str]:
    """The declarations of the internal functions, so that any function may call any other."""
    return [f.definition.split(" {", 1)[0] for f in functions if f.internal is not None]
