"""Lowered IRModule -> C source (one translation unit, or several for a large module:
c_units.py), plus a plain signature for each entry function.

Every entry function returns `int32_t`: 0 on success, -1 after recording a message that
`tessel_get_last_error()` returns. Buffer parameters arrive as data pointers (the runtime checks
shapes, dtypes and contiguity before calling); symbolic sizes arrive as trailing int64 values.

Module constants (the IRModule attribute "constants", RFC 22): with `Target.link_params` each
is embedded once, in a binary blob the C file includes with `.incbin` (c_blob.py, never as C
text: `CSource.data_files` holds the blob the compiler driver writes next to the C file), and
every AllocateConst referring to it points at its symbol. Without, the C file holds no constant
data: a function that uses constants takes the module's constant table as its last argument,
which the runtime Module fills from the arrays it is handed at load (`CSource.constants` says
which). Passing the table, rather than storing it in the library, keeps two Modules loaded from
one cached library independent.

A function another function of the module calls is also a static internal function (hidden
instead, when the library has several units), which its exported entry wraps and its callers
call directly (c_calls.py); a caller passes its own table.

A function that returns a value (`-> T.int32` and `T.ret(v)`, tessel.tir.builtin.ret) keeps
the status as its C return value and takes one more argument, last: a pointer its `T.ret`
writes the value through before returning 0 (`FunctionSignature.returns`); the runtime passes
a one-element array and gives its element back to the Python caller. A `T.ret` anywhere
(inside loops and branches) is a C `return` after freeing the live heap allocations; leaving
the body without one is an error at run time, since there would be no value to give back.
Such a function may not be called by another module function (whose call has no value).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tessel.arith.dims import ShapeSymbol, dim_text
from tessel.codegen.c_blob import linked_constants
from tessel.codegen.c_calls import (
    CalleeC,
    has_bare_handle,
    internal_functions,
    needs_constant_table,
    param_c_type,
    wrapper_text,
)
from tessel.codegen.c_expr import STATUS
from tessel.codegen.c_gpu_intrinsics import refuse_gpu_intrinsics
from tessel.codegen.c_names import RESERVED_NAMES, NameScope
from tessel.codegen.c_stmt import StmtPrinter
from tessel.codegen.c_types import c_type
from tessel.codegen.c_units import UNIT_BYTES, FunctionC, translation_units
from tessel.codegen.errors import CodegenError
from tessel.ir.expr import Call, IntImm, PrimExpr, Var
from tessel.ir.functor import post_order
from tessel.ir.module import IRModule
from tessel.ir.target import Target
from tessel.support.abi import ConstantSpec, DataFile, FunctionSignature, ParamSpec
from tessel.support.names import c_identifier, c_string_literal, unique_name
from tessel.tir import builtin
from tessel.tir.analysis.written import written_data
from tessel.tir.buffer import Buffer
from tessel.tir.function import PrimFunc
from tessel.tir.layout import row_major_strides
from tessel.tir.module_calls import ModuleCallError, check_module_calls
from tessel.tir.stmt import AllocateConst, Evaluate, SeqStmt, Stmt

# Between the units in `CSource.source`.
UNIT_SEPARATOR = "\n/* ---- the next translation unit of this library ---- */\n"


@dataclass(frozen=True)
class CSource:
    """Generated C text and how to call each of its entry functions."""

    units: tuple[str, ...]  # translation units, compiled into one library; the first defines
    # the library's state and holds every function that is not a self-contained kernel
    entries: tuple[FunctionSignature, ...]
    constants: tuple[ConstantSpec, ...] = ()  # what the runtime must be handed at load
    data_files: tuple[DataFile, ...] = ()  # what the compiler must find (the linked blob)

    @property
    def source(self) -> str:
        """The units' text, one after the other (to read; compile `units`)."""
        return UNIT_SEPARATOR.join(self.units)


def generate(mod: IRModule, target: Target | str = "c", *, unit_bytes: int = UNIT_BYTES) -> CSource:
    """C source for every PrimFunc of a lowered module (run `tessel.transform.lower` first),
    cut into translation units of about `unit_bytes` of kernels each (c_units.py; 0: one)."""
    target = Target.of(target)
    for gv, func in mod.items():
        if not isinstance(func, PrimFunc):
            raise CodegenError(f"`{gv.name_hint}` is not a PrimFunc", rule="codegen.not-prim-func")
    _check_calls(mod)
    refuse_gpu_intrinsics(mod)
    taken = set(RESERVED_NAMES)
    symbols = {name: unique_name(c_identifier(name), taken) for name in mod.names()}
    constants = tuple(np.asarray(c) for c in mod.attrs.get("constants", ()))
    head, entries = [], []
    linked: tuple[str, ...] = ()
    data_files: tuple[DataFile, ...] = ()
    if target.link_params and constants:
        linked = tuple(unique_name(f"tessel_constant_{i}", taken) for i in range(len(constants)))
        text, blob = linked_constants(linked, constants)
        head.append(text)
        data_files = (blob,)
    tables = set() if target.link_params else needs_constant_table(mod, _uses_module_constants)
    callees = internal_functions(mod, symbols, taken, tables)
    functions = []
    for gv, func in mod.items():
        name = gv.name_hint
        writer = _FunctionWriter(func, name, symbols[name], taken)
        text, entry = writer.write(
            target, constants, linked, name in tables, callees, callees.get(name)
        )
        internal = callees[name].symbol if name in callees else None
        functions.append(FunctionC(text, tuple(writer.outlined), internal))
        if entry is not None:
            entries.append(entry)
    units = translation_units(functions, head, linked, unit_bytes)
    specs: tuple[ConstantSpec, ...] = ()
    if any(entry.constants for entry in entries):
        specs = tuple(
            ConstantSpec(i, str(a.dtype), tuple(int(n) for n in a.shape))
            for i, a in enumerate(constants)
        )
    return CSource(units, tuple(entries), specs, data_files)


def _check_calls(mod: IRModule) -> None:
    """Calls between the module's functions must keep the rules (tir/module_calls.py)."""
    try:
        check_module_calls(mod)
    except ModuleCallError as err:
        raise CodegenError(err.message, rule=err.rule, hint=err.hint) from err


class _FunctionWriter:
    """The C definition and signature of one PrimFunc."""

    def __init__(self, func: PrimFunc, name: str, symbol: str, taken: set[str]) -> None:
        self.func, self.name, self.symbol = func, name, symbol
        self.module_taken = taken  # file-scope names, shared by the module's functions
        self.names = NameScope(taken)
        self.outlined: list[str] = []  # the file-scope functions of its parallel loops
        self.c_params: list[str] = []
        self.size_symbols: dict[Var, str] = {}  # shape variable -> its name in the signature
        self.size_args: list[tuple[Var, str]] = []  # shape variables passed as trailing int64s
        # Parameter extents that are expressions (`n * 2`, a reshape of a symbolic shape): the
        # array's extent comes in as a size of its own, checked against the expression at entry.
        self.extent_checks: list[tuple[Var, PrimExpr, str, int]] = []
        self.symbol_names: set[str] = set()
        # `tir.noalias` (default True) promises distinct buffers, so their pointers are
        # `restrict`; the runtime keeps the promise by refusing overlapping written arguments.
        self.noalias = bool(func.attrs.get("tir.noalias", True))
        self.written = written_data(func)
        self.internal: CalleeC | None = None  # set by write for a function others call

    def write(
        self,
        target: Target,
        constants: tuple[np.ndarray, ...],
        linked: tuple[str, ...],
        table_needed: bool,
        callees: dict[str, CalleeC],
        internal: CalleeC | None,
    ) -> tuple[str, FunctionSignature | None]:
        """The function's C text and its entry signature (None: no entry, internal only)."""
        shape_vars = {
            extent
            for buffer in self.func.buffer_map.values()
            for extent in buffer.shape
            if isinstance(extent, Var)
        }
        for var in self.func.params:
            # A scalar parameter used as a buffer extent (`n: T.int32` in `T.Buffer((n,))`) is
            # also a size symbol, which the runtime checks the arrays' shapes against.
            if var not in self.func.buffer_map and var in shape_vars and var.dtype.is_integer:
                self.size_symbols[var] = unique_name(var.name, self.symbol_names)
        self.internal = internal
        params = tuple(self._param(p) for p in self.func.params)
        table = self._constant_table() if table_needed else None
        returned = self._returned_pointer()
        printer = StmtPrinter(
            self.names,
            target,
            constants,
            linked=linked,
            table=table,
            callees=callees,
            returned=returned,
            function_symbol=self.symbol,
            fresh_global=self._fresh_global,
        )
        # A function others call takes its scalars by value: an extent it computes from them
        # is checked by its entry only (a caller passes pointers, not extents; module_calls.py).
        deferred = self._entry_checked() if internal is not None else []
        internal_sizes = [(v, a) for v, a in self.size_args if v not in {d for d, _ in deferred}]
        for var, arg_name in internal_sizes:
            cast = f"({c_type(var.dtype)}){arg_name}"
            name = self.names.declare(self.names.name_of(var), f"{c_type(var.dtype)} {{}}")
            printer.emit(f"{c_type(var.dtype)} {name} = {cast};")
        entry_checks = [
            self._extent_check_text(printer, check, arg)
            for check in self.extent_checks
            for dim, arg in deferred
            if check[0] is dim
        ]
        self._emit_extent_checks(printer, skip={d for d, _ in deferred})
        self._emit_bounds_checks(printer)
        printer.stmt(self.func.body)
        if returned is not None and not _ends_in_ret(self.func.body):  # no value to give back
            message = f"`{self.name}` ended without returning a value (T.ret)"
            printer.emit(f"tessel_set_error({c_string_literal(message)});")
            printer.emit("return -1;")
        else:
            printer.emit("return 0;")
        self.outlined = printer.outlined
        if printer.checked_divisions:  # their status (c_prelude.py), first in the function
            printer.lines.insert(0, f"  int32_t {STATUS} = 0;")
        size_params = [f"int64_t {arg}" for _, arg in self.size_args]
        trailing = []
        if table is not None:
            trailing.append(f"const void* const* {table}")
        if returned is not None:
            trailing.append(f"{c_type(self.func.ret_type)}* {returned}")
        c_params = ", ".join(self.c_params + size_params + trailing) or "void"
        entry_header = f"TESSEL_EXPORT int32_t {self.symbol}({c_params})"
        sizes = tuple(self.size_symbols[var] for var, _ in self.size_args)
        returns = None if returned is None else str(self.func.ret_type)
        signature = FunctionSignature(
            self.name, self.symbol, params, sizes, table is not None, returns
        )
        if internal is None:
            return "\n".join([f"{entry_header} {{", *printer.lines, "}", ""]), signature
        internal_params = self.c_params + [f"int64_t {a}" for _, a in internal_sizes] + trailing
        header = f"static int32_t {internal.symbol}({', '.join(internal_params) or 'void'})"
        text = "\n".join([f"{header} {{", *printer.lines, "}", ""])
        if has_bare_handle(self.func):
            return text, None
        names = [c.rsplit(" ", 1)[1] for c in internal_params]
        return text + "\n" + wrapper_text(entry_header, internal, names, entry_checks), signature

    def _entry_checked(self) -> list[tuple[Var, str]]:
        """The size arguments of extents that are expressions of the function's scalar
        parameters alone (`(n * s, 384)` with `n` and `s` parameters): (dim, argument name)."""
        scalars = {p for p in self.func.params if p not in self.func.buffer_map}
        by_dim = dict(self.size_args)
        return [
            (dim, by_dim[dim])
            for dim, extent, _, _ in self.extent_checks
            if all(v in scalars for v in post_order(extent) if isinstance(v, Var))
        ]

    def _extent_check_text(
        self, printer: StmtPrinter, check: tuple[Var, PrimExpr, str, int], arg: str
    ) -> str:
        """The entry's check of one extent given as a size argument, as C text."""
        _, extent, buffer, axis = check
        message = f"`{self.name}`: axis {axis} of `{buffer}` must be {_extent_text(extent)}"
        return (
            f"  if ({arg} != (int64_t)({printer.expr(extent)})) {{\n"
            f"    tessel_set_error({c_string_literal(message)});\n"
            "    return -1;\n"
            "  }"
        )

    def _emit_bounds_checks(self, printer: StmtPrinter) -> None:
        """At entry: each shape symbol the kernel takes lies in its bounds (a model's `seq` in
        1..512), which its code may rely on (c_expr.py divides by a tile count of a symbol
        without a check); else the call fails naming the symbol."""
        symbols = [v for v in self.size_symbols if isinstance(v, ShapeSymbol)]
        symbols += [
            p for p in self.func.params if isinstance(p, ShapeSymbol) and p not in symbols
        ]
        for var in symbols:
            tests = [f"{printer.expr(var)} < {var.lower}"] if var.lower > 0 else []
            if var.upper is not None:
                tests.append(f"{printer.expr(var)} > {var.upper}")
            if tests:
                message = f"`{self.name}`: `{var.name}` takes sizes {var.bounds_text}"
                printer.emit_failure_if(
                    " || ".join(tests), f"tessel_set_error({c_string_literal(message)});"
                )

    def _emit_extent_checks(self, printer: StmtPrinter, skip: set[Var] | None = None) -> None:
        """At entry: each array extent given for an expression equals it (TVM's argument
        binder asserts the same), else the call fails naming the buffer and the axis; those
        of `skip` are checked by the entry wrapper."""
        defined = set(self.size_symbols) | {p for p in self.func.params if p.dtype.is_integer}
        for dim, extent, buffer, axis in self.extent_checks:
            if skip and dim in skip:
                continue
            missing = [
                v.name for v in post_order(extent) if isinstance(v, Var) and v not in defined
            ]
            if missing:
                raise CodegenError(
                    f"parameter buffer `{buffer}` has the extent `{_extent_text(extent)}`, whose "
                    f"variable `{missing[0]}` no parameter defines",
                    rule="codegen.param-extent",
                    hint="pass the variable as a scalar parameter, or as a plain extent",
                )
            message = f"`{self.name}`: axis {axis} of `{buffer}` must be {_extent_text(extent)}"
            printer.emit_failure_if(
                f"{printer.expr(dim)} != (int64_t)({printer.expr(extent)})",
                f"tessel_set_error({c_string_literal(message)});",
            )

    def _constant_table(self) -> str:
        """The name of the constant table parameter, declared for parallel loop bodies that
        read it (c_parallel.py)."""
        return self.names.declare(self.names.fresh("constants"), "const void* const* {}")

    def _fresh_global(self, hint: str) -> str:
        """A file-scope name (an outlined loop's function, c_parallel.py), free in the file and
        in this function, whose locals would shadow it."""
        name = unique_name(c_identifier(hint), self.module_taken | self.names.taken)
        self.module_taken.add(name)
        self.names.taken.add(name)
        return name

    def _returned_pointer(self) -> str | None:
        """The name of the pointer T.ret writes through, or None for a function without a
        return type; refused for a function others call."""
        ret_type = self.func.ret_type
        if ret_type is None:
            return None
        if self.internal is not None:
            raise CodegenError(
                f"`{self.name}` returns a value (T.ret) and is called by another function of "
                "the module, whose call has no value",
                rule="codegen.ret",
                hint="write the result into a buffer the caller passes",
            )
        if ret_type.is_handle or ret_type.is_vector:
            raise CodegenError(
                f"`{self.name}` returns a {ret_type}; the C backend returns scalar numbers and "
                "bools only",
                rule="codegen.ret",
            )
        c_type(ret_type)  # rejects types C has no spelling for
        return self.names.fresh("returned")

    def _param(self, param: Var) -> ParamSpec:
        buffer = self.func.buffer_map.get(param)
        if buffer is None:
            return self._scalar_param(param)
        _check_param_layout(buffer)
        restrict = " restrict" if self.noalias else ""
        pointer = self.names.bind(buffer.data, hint=buffer.name)
        self.names.alias(param, pointer)  # the handle parameter is the same pointer
        self._c_param(f"{c_type(buffer.dtype)}*{restrict}", pointer)
        shape = tuple(
            self._extent(buffer, axis, extent) for axis, extent in enumerate(buffer.shape)
        )
        written = buffer.data in self.written
        return ParamSpec(
            param.name, "buffer", str(buffer.dtype), shape, written=written, restrict=self.noalias
        )

    def _scalar_param(self, param: Var) -> ParamSpec:
        if param.dtype.is_handle and self.internal is not None:  # T.handle: only for calls
            c_param = param_c_type(self.func, param, self.noalias)
            self._c_param(c_param, self.names.bind(param))
            return ParamSpec(param.name, "handle", "handle")
        if param.dtype.is_handle:
            raise CodegenError(
                f"parameter `{param.name}` is a handle without a buffer; declare it with "
                "T.Buffer or T.match_buffer (a handle parameter is allowed only in a function "
                "another module function calls)",
                rule="codegen.bare-handle",
            )
        self._c_param(c_type(param.dtype), self.names.bind(param))
        symbol = self.size_symbols.get(param)
        return ParamSpec(param.name, "scalar", str(param.dtype), symbol=symbol)

    def _c_param(self, c_param_type: str, name: str) -> None:
        self.c_params.append(f"{c_param_type} {name}")
        self.names.declare(name, f"{c_param_type} {{}}")

    def _extent(self, buffer: Buffer, axis: int, extent: object) -> int | str:
        if isinstance(extent, IntImm):
            return int(extent.value)
        if isinstance(extent, PrimExpr) and not isinstance(extent, Var):
            dim = Var(f"{buffer.name}_dim{axis}", extent.dtype)
            self.extent_checks.append((dim, extent, buffer.name, axis))
            extent = dim
        if not isinstance(extent, Var):
            raise CodegenError(
                f"parameter buffer `{buffer.name}` has the extent `{extent}`; the C backend "
                "takes integer extents",
                rule="codegen.param-extent",
            )
        if extent not in self.size_symbols:
            self.size_symbols[extent] = unique_name(extent.name, self.symbol_names)
            self.names.bind(extent)
            self.size_args.append((extent, self.names.fresh(f"{extent.name}_size")))
        return self.size_symbols[extent]


def _extent_text(extent: PrimExpr) -> str:
    """An extent as messages write it: `n * 2`, `max(min(n, 40) - 3, 0)`."""
    try:
        return dim_text(extent)
    except TypeError:  # an operator the dimension text does not write
        return str(extent)


def _ends_in_ret(body: Stmt) -> bool:
    """True if the last statement of `body` is a T.ret, so control never falls off its end."""
    while isinstance(body, SeqStmt) and body.seq:
        body = body.seq[-1]
    value = body.value if isinstance(body, Evaluate) else None
    return isinstance(value, Call) and value.op is builtin.ret_op


def _uses_module_constants(func: PrimFunc) -> bool:
    """True if an AllocateConst of `func` refers to the module's "constants"."""
    return any(
        isinstance(node, AllocateConst) and node.irmod_storage_idx is not None
        for node in post_order(func.body)
    )


def _check_param_layout(buffer: Buffer) -> None:
    """Parameters are dense C-contiguous arrays (the runtime rejects anything else)."""
    shape = buffer.const_shape()
    strides = [s.value for s in buffer.strides if isinstance(s, IntImm)]
    dense = not buffer.strides
    if buffer.strides and shape is not None and len(strides) == len(shape):
        dense = tuple(strides) == row_major_strides(shape, 1)
    offset_zero = isinstance(buffer.elem_offset, IntImm) and buffer.elem_offset.value == 0
    if not (dense and offset_zero):
        raise CodegenError(
            f"parameter buffer `{buffer.name}` has explicit strides or an element offset; "
            "the C backend takes dense, C-contiguous parameters only",
            rule="codegen.param-layout",
        )
