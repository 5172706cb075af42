"""Calls between the PrimFuncs of one module: `Evaluate(Call(int32, GlobalVar("kernel"), args))`.

The law (the interpreter and the C backend both keep it): a call passes one argument per callee
parameter. A buffer parameter, or a bare handle parameter, takes a pointer: a handle variable
(`A.data`, an allocation's data), `T.address_of(A[i])` or `T.tvm_access_ptr(...)`; the callee's
buffer starts there and is dense. A scalar parameter takes a value of its dtype (an integer
constant that fits is converted, as C converts it). The call is a statement whose value is the
callee's status, 0; a failure inside the callee fails the caller. A callee's symbolic
extents come from its scalar parameters: each is one, or an expression of them (the callee's
entry, not its internal function, checks an array's extent against such an expression).
Recursion is refused, and so are calls of functions the module does not hold.

`tir.noalias` on the callee promises its parameters do not overlap (its C pointers are
`restrict`); pointers into one arena at constant offsets whose regions overlap, one of them
written by the callee, are refused here, since that breaks the promise.
"""

from __future__ import annotations

from collections.abc import Iterator

from tessel.ir.expr import Call, GlobalVar, IntImm, PrimExpr, Var
from tessel.ir.functor import post_order
from tessel.ir.module import IRModule
from tessel.support.dtype import DataType, int32
from tessel.support.errors import UserError
from tessel.tir import builtin
from tessel.tir.analysis.written import written_data
from tessel.tir.buffer import Buffer, BufferLoad
from tessel.tir.function import PrimFunc
from tessel.tir.layout import row_major_strides
from tessel.tir.stmt import Evaluate

STATUS_DTYPE = int32  # what a module call evaluates to: the callee's status, 0 on success
_BYTE_TYPES = ("int8", "uint8")  # an arena's element type: any typed view may be cut from it


class ModuleCallError(UserError):
    """A call between module functions breaks the calling rules (see tessel.tir.module_calls)."""


def call_global(callee: GlobalVar | str, *args: PrimExpr) -> Call:
    """`Evaluate` this to call `callee`, a PrimFunc of the same module, on `args`."""
    gv = callee if isinstance(callee, GlobalVar) else GlobalVar(callee)
    return Call(STATUS_DTYPE, gv, tuple(args))


def is_module_call(node: object) -> bool:
    """True for a Call of a module function (its op is a GlobalVar)."""
    return isinstance(node, Call) and isinstance(node.op, GlobalVar)


def module_calls(func: PrimFunc) -> Iterator[Call]:
    """Every call of a module function in `func`'s body."""
    return (n for n in post_order(func.body) if is_module_call(n))  # type: ignore[misc]  # Calls


def is_pointer(arg: PrimExpr) -> bool:
    """A pointer argument: a handle variable, T.address_of(...) or T.tvm_access_ptr(...)."""
    if isinstance(arg, Var):
        return arg.dtype.is_handle
    return isinstance(arg, Call) and arg.op in (builtin.address_of_op, builtin.access_ptr_op)


def pointer_element(arg: PrimExpr) -> DataType | None:
    """The element type `arg` points to, when it is known."""
    if isinstance(arg, Var):
        return None if arg.type_annotation is None else arg.type_annotation.element_type
    if isinstance(arg, Call) and arg.op is builtin.address_of_op:
        return arg.args[0].buffer.dtype  # type: ignore[attr-defined]  # a BufferLoad
    if isinstance(arg, Call) and arg.op is builtin.access_ptr_op:
        return arg.args[0].dtype
    return None


def pointer_base(arg: PrimExpr) -> Var | None:
    """The data variable a pointer argument points into."""
    if isinstance(arg, Var):
        return arg
    if isinstance(arg, Call) and arg.op is builtin.address_of_op:
        return arg.args[0].buffer.data  # type: ignore[attr-defined]  # a BufferLoad
    if isinstance(arg, Call) and arg.op is builtin.access_ptr_op:
        base = arg.args[1]
        return base if isinstance(base, Var) else None
    return None


def pointer_byte_offset(arg: PrimExpr) -> int | None:
    """The constant byte offset of a pointer from its data variable's start (None: unknown)."""
    if isinstance(arg, Var):
        return 0
    if isinstance(arg, Call) and arg.op is builtin.access_ptr_op:
        offset = arg.args[2]
        itemsize = arg.args[0].dtype.itemsize
        return offset.value * itemsize if isinstance(offset, IntImm) else None
    if isinstance(arg, Call) and arg.op is builtin.address_of_op:
        load = arg.args[0]
        assert isinstance(load, BufferLoad)
        element = _element_offset(load.buffer, load.indices)
        return None if element is None else element * load.buffer.dtype.itemsize
    return None


def _element_offset(buffer: Buffer, indices: tuple[PrimExpr, ...]) -> int | None:
    shape = buffer.const_shape()
    values = [i.value for i in indices if isinstance(i, IntImm)]
    offset = buffer.elem_offset
    if shape is None or len(values) != len(indices) or not isinstance(offset, IntImm):
        return None
    if buffer.strides:
        strides = [s.value for s in buffer.strides if isinstance(s, IntImm)]
        if len(strides) != len(values):
            return None
    else:
        strides = list(row_major_strides(shape, 1))
    return offset.value + sum(i * s for i, s in zip(values, strides, strict=True))


def size_symbols(callee: PrimFunc) -> list[PrimExpr]:
    """Extents of the callee's buffers that its scalar parameters do not give (a shape
    variable, or an expression of others): a caller passing pointers cannot supply them. An
    expression of scalar parameters (`(n * s, 384)` with `n` and `s` parameters) is given."""
    scalars = {p for p in callee.params if p not in callee.buffer_map}
    found: list[PrimExpr] = []
    for buffer in callee.param_buffers():
        for extent in buffer.shape:
            if isinstance(extent, IntImm) or extent in found:
                continue
            if all(v in scalars for v in post_order(extent) if isinstance(v, Var)):
                continue
            found.append(extent)
    return found


def resolve(mod: IRModule, call: Call, caller: str) -> PrimFunc:
    """The PrimFunc `call` calls (by name), or a ModuleCallError naming the caller."""
    assert isinstance(call.op, GlobalVar)
    name = call.op.name_hint
    if name not in mod:
        raise ModuleCallError(
            f"`{caller}` calls `{name}`, which is not a function of this module "
            f"(it has {mod.names()})",
            rule="module-call.unknown-function",
            hint="calls of C functions outside the module are written T.call_extern",
        )
    callee = mod[name]
    if not isinstance(callee, PrimFunc):
        raise ModuleCallError(
            f"`{caller}` calls `{name}`, which is a {type(callee).__name__}, not a PrimFunc",
            rule="module-call.not-prim-func",
        )
    return callee


def check_module_calls(mod: IRModule) -> None:
    """Raise ModuleCallError for a call of a module function that breaks the calling rules."""
    graph: dict[str, list[str]] = {}
    written: dict[str, set[Var]] = {}  # by callee: a model's main calls one kernel many times
    for gv, func in mod.items():
        if not isinstance(func, PrimFunc):
            continue
        graph[gv.name_hint] = []
        statements, calls = set(), []  # one walk: this runs before lowering and in codegen
        for node in post_order(func.body):
            if isinstance(node, Evaluate):
                statements.add(id(node.value))
            elif is_module_call(node):
                calls.append(node)
        for call in calls:
            callee = resolve(mod, call, gv.name_hint)
            name = call.op.name_hint  # type: ignore[union-attr]  # a GlobalVar
            if name not in written:
                written[name] = written_data(callee)
            _check_call(call, callee, gv.name_hint, id(call) in statements, written[name])
            graph[gv.name_hint].append(call.op.name_hint)  # type: ignore[union-attr]  # a GlobalVar
    _check_no_recursion(graph)


def _check_call(
    call: Call, callee: PrimFunc, caller: str, is_statement: bool, written: set[Var]
) -> None:
    name = call.op.name_hint  # type: ignore[union-attr]  # a module call's op is a GlobalVar
    where = f"`{caller}` calls `{name}`"
    if not is_statement or call.dtype != STATUS_DTYPE:
        raise ModuleCallError(
            f"{where} inside an expression; a call of a module function is a statement "
            "(T.evaluate of an int32 status)",
            rule="module-call.position",
        )
    if len(call.args) != len(callee.params):
        names = ", ".join(p.name for p in callee.params)
        raise ModuleCallError(
            f"{where} with {len(call.args)} arguments, but it takes {len(callee.params)} ({names})",
            rule="module-call.arity",
        )
    for param, arg in zip(callee.params, call.args, strict=True):
        _check_argument(where, callee, param, arg)
    missing = size_symbols(callee)
    if missing:
        raise ModuleCallError(
            f"{where}, whose buffer shapes use {', '.join(f'`{v}`' for v in missing)}; a "
            "caller passes pointers, so a symbolic extent must be a scalar parameter or an "
            "expression of them",
            rule="module-call.size-symbol",
            hint="add the size as a scalar parameter (n: T.int32) and use it in the shape",
        )
    _check_no_overlap(where, callee, call.args, written)


def _check_argument(where: str, callee: PrimFunc, param: Var, arg: PrimExpr) -> None:
    buffer = callee.buffer_map.get(param)
    if buffer is None and not param.dtype.is_handle:
        if is_pointer(arg) or arg.dtype.is_handle:
            raise ModuleCallError(
                f"{where}: parameter `{param.name}` is a {param.dtype} scalar, but a buffer "
                f"pointer `{arg}` is passed",
                rule="module-call.argument-kind",
            )
        fits = isinstance(arg, IntImm) and param.dtype.is_integer and arg.dtype.is_integer
        fits = fits and param.dtype.min_value() <= arg.value <= param.dtype.max_value()
        if arg.dtype != param.dtype and not fits:
            raise ModuleCallError(
                f"{where}: parameter `{param.name}` is {param.dtype}, but `{arg}` is {arg.dtype}",
                rule="module-call.argument-dtype",
                hint=f"cast the argument: T.Cast('{param.dtype}', ...)",
            )
        return
    if not is_pointer(arg):
        what = "buffer" if buffer is not None else "handle"
        raise ModuleCallError(
            f"{where}: parameter `{param.name}` is a {what}, but the {arg.dtype} value `{arg}` "
            "is passed",
            rule="module-call.argument-kind",
            hint="pass a pointer: A.data, T.address_of(A[i]) or A.access_ptr(...)",
        )
    expected = buffer.dtype if buffer is not None else _handle_element(param)
    element = pointer_element(arg)
    if expected is None or element is None or element == expected or str(element) in _BYTE_TYPES:
        return
    raise ModuleCallError(
        f"{where}: parameter `{param.name}` holds {expected}, but `{arg}` points to {element}",
        rule="module-call.argument-dtype",
        hint="pass memory of the parameter's type, or a byte (uint8) arena",
    )


def _handle_element(param: Var) -> DataType | None:
    return None if param.type_annotation is None else param.type_annotation.element_type


def _check_no_overlap(
    where: str, callee: PrimFunc, args: tuple[PrimExpr, ...], written: set[Var]
) -> None:
    """Pointers into one memory at constant offsets must not overlap a written parameter."""
    if not bool(callee.attrs.get("tir.noalias", True)):
        return
    regions = []
    for param, arg in zip(callee.params, args, strict=True):
        buffer = callee.buffer_map.get(param)
        base, start = pointer_base(arg), pointer_byte_offset(arg)
        shape = None if buffer is None else buffer.const_shape()
        if base is None or start is None or shape is None:
            continue
        size = buffer.dtype.itemsize * _product(shape)
        regions.append((param, base, start, start + size, buffer.data in written))
    for k, (p, base, start, end, writes) in enumerate(regions):
        for q, other, other_start, other_end, other_writes in regions[k + 1 :]:
            overlap = base is other and start < other_end and other_start < end
            if overlap and (writes or other_writes) and end > start and other_end > other_start:
                raise ModuleCallError(
                    f"{where} with overlapping memory for `{p.name}` (bytes [{start}, {end})) "
                    f"and `{q.name}` (bytes [{other_start}, {other_end})) of `{base.name}`, "
                    "one of them written; its parameters are declared not to alias",
                    rule="module-call.overlap",
                    hint="plan the views at disjoint offsets, or set tir.noalias False",
                )


def _product(shape: tuple[int, ...]) -> int:
    total = 1
    for extent in shape:
        total *= extent
    return total


def _check_no_recursion(graph: dict[str, list[str]]) -> None:
    """Refuse a cycle in the call graph (the C backend and the interpreter need none)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for root in graph:
        stack: list[tuple[str, Iterator[str]]] = []
        if state.get(root):
            continue
        state[root] = 1
        stack.append((root, iter(graph[root])))
        while stack:
            name, pending = stack[-1]
            callee = next(pending, None)
            if callee is None:
                state[name] = 2
                stack.pop()
            elif state.get(callee) == 1:
                path = [n for n, _ in stack] + [callee]
                cycle = " -> ".join(path[path.index(callee) :])
                raise ModuleCallError(
                    f"recursive calls between module functions: {cycle}",
                    rule="module-call.recursion",
                    hint="module functions may call each other only without cycles",
                )
            elif not state.get(callee):
                state[callee] = 1
                stack.append((callee, iter(graph.get(callee, []))))


def called_names(mod: IRModule) -> set[str]:
    """The names of the module's functions that another function calls."""
    return {
        call.op.name_hint  # type: ignore[union-attr]  # a module call's op is a GlobalVar
        for func in mod.functions.values()
        if isinstance(func, PrimFunc)
        for call in module_calls(func)
    }
