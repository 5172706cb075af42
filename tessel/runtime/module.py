"""A loaded shared object: each exported entry function as a checked Python callable.

A call returns None, or, for a function that returns a value (T.ret, `FunctionSignature.returns`),
that value as the interpreter gives it (a Python int or bool, a NumPy float scalar of its
width): the C function writes it through a pointer to a one-element array passed last.

A library built without linked parameters holds no constant data: the Module is handed the
module's constants when it loads, checks them against the library's `ConstantSpec`s, keeps them
alive, and passes their table to each function that reads them (TVM's RFC 22 on constants).
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from tessel.runtime.arguments import (
    BoundArguments,
    argument_types,
    array_dtype,
    bind_arguments,
    c_arguments,
)
from tessel.runtime.devices import DeviceMemory
from tessel.runtime.errors import BuildError, RuntimeCallError
from tessel.runtime.fastcall import FALLBACK, fast_caller
from tessel.support.abi import ConstantSpec, FunctionSignature

# The C prelude's tessel_workspace_alloc_t and tessel_workspace_free_t (codegen/c_prelude.py).
WORKSPACE_ALLOC = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t)
WORKSPACE_FREE = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_NOT_BUILT = object()


class Function:
    """One compiled function: `f(*args)` checks the arguments, calls C, and raises on failure."""

    def __init__(
        self,
        library: ctypes.CDLL,
        signature: FunctionSignature,
        constant_table: Any = None,
        strings: StringHeap | None = None,
    ) -> None:
        self.signature = signature
        self._extra = [constant_table] if signature.constants else []
        try:
            self._c_function = getattr(library, signature.c_symbol)
        except AttributeError as err:
            raise BuildError(
                f"the compiled library has no function `{signature.c_symbol}`",
                rule="build.missing-symbol",
            ) from err
        self._c_function.restype = ctypes.c_int32
        self._c_function.argtypes = argument_types(signature)
        self._last_error = library.tessel_get_last_error
        self._last_error.restype = ctypes.c_char_p
        self._fast: Any = _NOT_BUILT  # the fastcall of an unbound call, made at the first call
        # Every function of a library with string tensors empties the thread's string heap
        # first: the strings a call returns are read before the thread's next call.
        self.strings = strings

    @property
    def name(self) -> str:
        return self.signature.name

    def __call__(self, *args: Any) -> Any:
        if self.strings is not None:
            with self.strings.call(self.name):
                return self._checked_call(args)
        return self._checked_call(args)

    def _checked_call(self, args: tuple[Any, ...]) -> Any:
        # Checked in C where the arguments allow (as BoundFunction): the Python checks cost
        # 3.7 us a call, as much as a small kernel itself.
        fast = self._fast
        if fast is _NOT_BUILT:
            fast = self._fast = self._fast_caller(bind_arguments(self.signature, {}))
        if fast is not None:
            status = fast(*args)
            if status == 0:
                return None
            if status != FALLBACK:
                self._raise(status)
        return self._call(c_arguments(self.signature, args))

    def call_once(self, *args: Any) -> Any:
        """Call with the arguments checked in Python, without building the C caller that later
        calls use: for a function called once (LayoutRewrite's packing of a weight at compile
        time), where that build (a C extension, 0.45 s cold) would cost more than it saves."""
        if self.strings is not None:
            with self.strings.call(self.name):
                return self._call(c_arguments(self.signature, args))
        return self._call(c_arguments(self.signature, args))

    def bind(self, fixed: dict[int, Any]) -> BoundFunction:
        """This function with the arguments at the positions of `fixed` checked once and kept:
        call the result with the others, in order (a compiled model binds its weights, so a call
        checks only its inputs and outputs: two thirds of an MLP's latency at batch 1 went to
        checking weights)."""
        return BoundFunction(self, bind_arguments(self.signature, fixed))

    def _call(self, values: list[Any]) -> Any:
        returns = self.signature.returns
        if returns is None:
            status = self._c_function(*values, *self._extra)
            if status != 0:
                self._raise(status)
            return None
        returned = np.zeros(1, array_dtype(returns))  # a fresh one: calls may be concurrent
        status = self._c_function(*values, *self._extra, returned.ctypes.data)
        if status != 0:
            self._raise(status)
        value = returned[0]
        # As the interpreter gives them: integers and bools as Python's, floats as NumPy's
        # scalars of their width.
        return value.item() if returned.dtype.kind in "biu" else value

    def _raise(self, status: int) -> None:
        message = (self._last_error() or b"").decode("utf-8", "replace")
        raise RuntimeCallError(self.name, message)

    def _fast_caller(self, bound: BoundArguments) -> Any | None:
        """A C-side caller of this function with `bound`'s arguments (fastcall), or None."""
        extra = []
        for value in self._extra:
            if isinstance(value, ctypes.Array):
                extra.append(ctypes.addressof(value))
            elif isinstance(value, int):
                extra.append(value)
            else:
                return None
        address = ctypes.cast(self._c_function, ctypes.c_void_p).value
        if address is None:
            return None
        return fast_caller(
            address,
            self.signature,
            bound.values,
            bound.free,
            bound.spans,
            tuple(extra),
            bound.sizes,
        )

    def __repr__(self) -> str:
        params = ", ".join(p.name for p in self.signature.params)
        return f"<tessel compiled function {self.name}({params})>"


class BoundFunction:
    """A `Function` with some arguments bound (`Function.bind`): `f(*rest)` checks the rest,
    and that none of them overlaps a bound array it may not, then calls C. Where the arguments
    allow it (arrays of static shape), the checks and the call happen in C (fastcall)."""

    def __init__(self, function: Function, bound: BoundArguments) -> None:
        self.function, self.bound = function, bound
        # Made at the first call, not here: compiling a model binds its weights, and a compile
        # that is never called (an export, a candidate compiled in a worker only to fill the
        # caches) would otherwise build the fastcall extension (0.4-0.7 s on a cold cache).
        self._fast: Any = _NOT_BUILT

    def __call__(self, *args: Any) -> Any:
        strings = self.function.strings
        if strings is not None:
            with strings.call(self.function.name):
                return self._checked_call(args)
        return self._checked_call(args)

    def _checked_call(self, args: tuple[Any, ...]) -> Any:
        fast = self._fast
        if fast is _NOT_BUILT:
            fast = self._fast = self.function._fast_caller(self.bound)
        if fast is not None:  # checked and called in C; FALLBACK: the Python path says why
            status = fast(*args)
            if status == 0:
                return None
            if status != FALLBACK:
                self.function._raise(status)
        return self.function._call(c_arguments(self.function.signature, args, self.bound))

    def __repr__(self) -> str:
        params = ", ".join(self.function.signature.params[i].name for i in self.bound.free)
        return f"<tessel compiled function {self.function.name}({params}), others bound>"


class StringHeap:
    """The string runtime of a library (tessel/codegen/c_strings.py): a call of a function with
    string tensors starts with the calling thread's heap emptied, so a standalone kernel called
    in a loop reuses its memory; results are read back before the thread's next call. A call
    whose strings could not all be made fails instead of returning wrong strings."""

    def __init__(self, library: ctypes.CDLL) -> None:
        self._reset = library.tessel_strings_reset
        self._reset.restype = ctypes.c_int32
        self._status = library.tessel_strings_status
        self._status.restype = ctypes.c_int32

    @staticmethod
    def of(library: ctypes.CDLL) -> StringHeap | None:
        """The library's string heap (None if its code holds no string tensor)."""
        return StringHeap(library) if hasattr(library, "tessel_strings_reset") else None

    @contextmanager
    def call(self, name: str) -> Iterator[None]:
        """Around one call of `name`: the heap emptied before, its status checked after."""
        if self._reset() != 0:
            raise RuntimeCallError(name, "no memory for the string heap")
        yield
        if self._status() != 0:
            raise RuntimeCallError(
                name,
                "a string could not be made (out of memory, no C.UTF-8 locale, or a regular "
                "expression glibc does not compile)",
            )


class Module:
    """Compiled functions by name: `mod["name"](*args)`, or `mod(*args)` when there is one."""

    def __init__(
        self,
        library_path: str | Path,
        signatures: Sequence[FunctionSignature],
        source: str | None = None,
        *,
        constants: Sequence[Any] = (),
        constant_specs: Sequence[ConstantSpec] = (),
    ) -> None:
        self.library_path = Path(library_path)
        self.source = source  # the C text, kept for inspection and debugging
        try:
            self._library = ctypes.CDLL(str(self.library_path))
        except OSError as err:
            raise BuildError(f"cannot load {self.library_path}: {err}", rule="build.load") from err
        if any(sig.constants for sig in signatures) and not constant_specs:
            raise BuildError(
                "the library's functions read module constants, but no constant specs were given",
                rule="build.constants",
            )
        self._constants = _checked_constants(constants, constant_specs)  # kept alive here
        table = (ctypes.c_void_p * len(self._constants))(*(a.ctypes.data for a in self._constants))
        self._constant_table = table
        strings = StringHeap.of(self._library)  # the library's, shared by its functions
        self._functions = {
            sig.name: Function(self._library, sig, table, strings) for sig in signatures
        }

    def names(self) -> list[str]:
        """The names of the functions, in module order."""
        return list(self._functions)

    def __getitem__(self, name: str) -> Function:
        if name not in self._functions:
            raise KeyError(f"no function `{name}` in the module; it has {self.names()}")
        return self._functions[name]

    def __contains__(self, name: str) -> bool:
        return name in self._functions

    @property
    def device_memory(self) -> DeviceMemory | None:
        """The library's device runtime (uploads to a second device's memory, copy counts);
        None when its code uses no device (tessel/codegen/c_devices.py)."""
        if not hasattr(self._library, "tessel_device_copies"):
            return None
        return DeviceMemory(self._library)

    @contextmanager
    def workspace_allocator(
        self, alloc: Callable[[int, int], int | None], free: Callable[[int], None]
    ) -> Iterator[None]:
        """Route workspace allocations through `alloc(nbytes, alignment) -> address` (0 or None:
        out of memory, which the call reports as an error) and `free(address)` inside the block.

        The allocator belongs to the loaded library, which Modules built from the same source
        share, so it is set for a scope and the library's own comes back when the scope ends.
        """
        setter = self._library.tessel_set_workspace_allocator
        setter.restype = None
        setter.argtypes = [WORKSPACE_ALLOC, WORKSPACE_FREE]
        callbacks = (WORKSPACE_ALLOC(alloc), WORKSPACE_FREE(free))  # alive while set
        setter(*callbacks)
        try:
            yield
        finally:
            setter(WORKSPACE_ALLOC(), WORKSPACE_FREE())  # NULL: the default allocator
            del callbacks

    def __call__(self, *args: Any) -> Any:
        if len(self._functions) != 1:
            raise TypeError(
                f"the module has {len(self._functions)} functions {self.names()}; "
                'call one by name: mod["name"](...)'
            )
        return next(iter(self._functions.values()))(*args)


def _checked_constants(
    constants: Sequence[Any], specs: Sequence[ConstantSpec]
) -> tuple[np.ndarray, ...]:
    """Read-only, C-contiguous copies of `constants`, which must match `specs` one for one."""
    if len(constants) != len(specs):
        raise BuildError(
            f"the library takes {len(specs)} module constants, but {len(constants)} were given",
            rule="build.constants",
        )
    arrays = []
    for spec, value in zip(specs, constants, strict=True):
        array = np.array(value, copy=True, order="C")  # the caller may change theirs later
        if array.dtype != np.dtype(spec.dtype) or array.shape != tuple(spec.shape):
            raise BuildError(
                f"module constant {spec.index} should be {list(spec.shape)} of {spec.dtype}, "
                f"got {list(array.shape)} of {array.dtype}",
                rule="build.constants",
            )
        array.setflags(write=False)
        arrays.append(array)
    return tuple(arrays)
