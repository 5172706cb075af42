"""The C `main` of a model compiled once for symbolic shapes (docs/dynamic_shapes.md): one
TensorIR PrimFunc that runs every kernel in order, its intermediates in one byte arena sized
at each call from the symbols' sizes.

main takes the model's inputs, its weights as one table of pointers (as the static AOT main,
tessel/graph/aot.py), its outputs, then the shape symbols as int64 scalars; each symbol's
bounds and each array's extents are checked at its entry (the C backend), each kernel is a
module call (tessel.tir.module_calls) passing pointers and the symbols.

The memory plan (`plan_symbolic_memory`) works as the static one by liveness, with sizes that
are expressions: a result takes the slot of a dead one whose size is proved equal (the many
(batch * seq, 384) activations of an encoder share a few slots), else a new slot. The slots lie
one after another, each 64-byte aligned, so offsets and the arena's size are expressions of the
symbols, evaluated at each call. A model main cannot express this way (a result that is an input
or a weight, a value returned twice) keeps the Python loop: `symbolic_main` returns None.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tessel.arith.dims import dim_expr, dim_product, simplify_dim
from tessel.graph.expr import Call, Constant, Expr, Tuple, TupleGetItem, Var
from tessel.graph.ty import TensorType
from tessel.ir.expr import IntImm, PrimExpr
from tessel.ir.expr import Var as PrimVar
from tessel.ir.module import IRModule
from tessel.ir.structural import structural_equal, structural_hash
from tessel.ir.type import PointerType
from tessel.support.dtype import DataType, handle
from tessel.support.frozen_map import FrozenMap
from tessel.support.names import c_identifier, unique_name
from tessel.tir.buffer import Buffer, decl_buffer
from tessel.tir.builtin import address_of
from tessel.tir.function import PrimFunc
from tessel.tir.module_calls import call_global
from tessel.tir.stmt import Allocate, DeclBuffer, Evaluate, LetStmt, SeqStmt, Stmt

ALIGNMENT = 64  # bytes; every slot of the arena starts on such a boundary
ARENA_SCOPE = "global.workspace"  # sized at run time: the runtime's workspace allocator


@dataclass(frozen=True)
class KernelCall:
    """One kernel call of the model: its kernel, its arguments' values (`Value`s) and its
    results' types, and the symbols it takes as scalars."""

    kernel: str
    args: tuple[Value, ...]
    results: tuple[TensorType, ...]
    sizes: tuple[PrimExpr, ...]


@dataclass(frozen=True)
class Value:
    """A tensor main reads: an input (`index` among the inputs), a weight (among the weights)
    or a kernel's result (`index`: the call, `result`: which of its results)."""

    kind: str  # "input", "weight" or "result"
    index: int
    result: int = 0


@dataclass(frozen=True)
class SymbolicPlan:
    """Where each intermediate result lives: its slot's byte offset in the arena (expressions
    of the symbols), and the arena's size."""

    offsets: dict[tuple[int, int], PrimExpr]
    nbytes: PrimExpr
    slots: int


def plan_symbolic_memory(
    calls: Sequence[KernelCall], returned: set[tuple[int, int]]
) -> SymbolicPlan:
    """The arena plan of `calls`' results that are not `returned` (main's outputs): by
    liveness, a dead slot of the same size (the same simplified expression) taken again."""
    last_use = _last_uses(calls)
    sizes: dict[tuple[object, str], PrimExpr] = {}  # by shape and dtype: computed once each
    slot_sizes: list[PrimExpr] = []
    free: list[int] = []
    holder: dict[tuple[int, int], int] = {}
    slot_of: dict[tuple[int, int], int] = {}
    for position, call in enumerate(calls):
        for key, slot in list(holder.items()):  # dead before this call: their slots free
            if last_use[key] < position:
                free.append(slot)
                del holder[key]
        for count, ty in enumerate(call.results):
            key = (position, count)
            if key in returned:
                continue
            shape_key = (
                tuple(d if isinstance(d, int) else structural_hash(d) for d in ty.shape),
                ty.dtype,
            )
            size = sizes.get(shape_key)
            if size is None:
                size = sizes[shape_key] = _aligned_bytes(ty)
            slot = next((s for s in free if _same_size(slot_sizes[s], size)), None)
            if slot is None:
                slot = len(slot_sizes)
                slot_sizes.append(size)
            else:
                free.remove(slot)
            holder[key] = slot_of[key] = slot
    starts: list[PrimExpr] = []
    total: PrimExpr = IntImm(DataType.of("int64"), 0)
    for size in slot_sizes:
        starts.append(total)
        total = _simplified(total + size)
    offsets = {key: starts[slot] for key, slot in slot_of.items()}
    return SymbolicPlan(offsets, total, len(slot_sizes))


def _last_uses(calls: Sequence[KernelCall]) -> dict[tuple[int, int], int]:
    """The call that reads each result last (its own call for a result nobody reads)."""
    last_use: dict[tuple[int, int], int] = {}
    for position, call in enumerate(calls):
        for count in range(len(call.results)):
            last_use.setdefault((position, count), position)
        for arg in call.args:
            if arg.kind == "result":
                last_use[(arg.index, arg.result)] = position
    return last_use


def _same_size(a: PrimExpr, b: PrimExpr) -> bool:
    """Whether two sizes are the same simplified expression (what shapes of equal element
    counts give): a proof per pair (dims_equal) took 0.4 s of MiniLM's compile."""
    return a is b or structural_equal(a, b, map_free_vars=False)


def _aligned_bytes(ty: TensorType) -> PrimExpr:
    """The bytes of a tensor of `ty`, rounded up to ALIGNMENT, as an int64 expression."""
    count = dim_expr(dim_product(ty.shape))
    nbytes = _simplified(count * DataType.of(ty.dtype).itemsize)
    return _simplified((nbytes + (ALIGNMENT - 1)) // ALIGNMENT * ALIGNMENT)


def _simplified(expr: PrimExpr) -> PrimExpr:
    result = simplify_dim(expr)
    return result if isinstance(result, PrimExpr) else IntImm(DataType.of("int64"), result)


def model_calls(
    body: Expr, inputs: Sequence[Var], order: Sequence[Expr], steps: dict[int, KernelCall]
) -> tuple[list[KernelCall], list[Value], list[Constant]] | None:
    """The kernel calls of a model's main in order with their arguments as `Value`s, main's
    results, and its weights; None where main is not calls of kernels on inputs, weights and
    results, returning distinct results."""
    position = {id(v): Value("input", k) for k, v in enumerate(inputs)}
    weights: list[Constant] = []
    calls: list[KernelCall] = []
    for node in order:
        if isinstance(node, Constant):
            position[id(node)] = Value("weight", len(weights))
            weights.append(node)
        elif isinstance(node, Call) and id(node) in steps:
            step = steps[id(node)]
            args = [position.get(id(a)) or _item(a, position) for a in node.args]
            if any(a is None for a in args):
                return None
            index = len(calls)
            calls.append(KernelCall(step.kernel, tuple(args), step.results, step.sizes))
            position[id(node)] = Value("result", index)
    results = _results(body, position, calls)
    if results is None:
        return None
    return calls, results, weights


def _item(arg: Expr, position: dict[int, Value]) -> Value | None:
    """The value a TupleGetItem of a kernel call's results reads."""
    if isinstance(arg, TupleGetItem):
        value = position.get(id(arg.tuple_value))
        if value is not None and value.kind == "result":
            return Value("result", value.index, arg.index)
    return None


def _results(body: Expr, position: dict[int, Value], calls: list[KernelCall]) -> list[Value] | None:
    """main's results as values: each a kernel's result, each returned once."""
    value = position.get(id(body))
    if value is not None and value.kind == "result" and len(calls[value.index].results) > 1:
        fields: list[Value | None] = [
            Value("result", value.index, k) for k in range(len(calls[value.index].results))
        ]
    else:
        items = list(body.fields) if isinstance(body, Tuple) else [body]
        fields = []
        for item in items:
            found = position.get(id(item)) if not isinstance(item, TupleGetItem) else None
            if found is not None and found.kind == "result" and len(calls[found.index].results) > 1:
                return None  # a kernel's results as one field: a nested tuple
            fields.append(found or _item(item, position))
    if any(v is None or v.kind != "result" for v in fields):
        return None  # an input or a weight returned: the Python loop copies it
    values = [v for v in fields if v is not None]
    return values if len(set(values)) == len(values) else None


def symbolic_main(
    kernels: IRModule,
    inputs: Sequence[Var],
    calls: Sequence[KernelCall],
    results: Sequence[Value],
    weights: Sequence[Constant],
    symbols: Sequence[PrimVar],
) -> PrimFunc:
    """main over `calls`: parameters the inputs, the weight table (when there are weights), the
    outputs, then `symbols`."""
    taken: set[str] = set()
    input_buffers = [
        _buffer(p.type_annotation, unique_name(c_identifier(p.name_hint), taken))  # type: ignore[arg-type]
        for p in inputs
    ]
    output_buffers = [
        _buffer(
            calls[v.index].results[v.result],
            unique_name("output" if len(results) == 1 else f"output_{k}", taken),
        )
        for k, v in enumerate(results)
    ]
    table = decl_buffer((len(weights),), handle, unique_name("weights", taken)) if weights else None
    returned = {
        (v.index, v.result): buffer for v, buffer in zip(results, output_buffers, strict=True)
    }
    plan = plan_symbolic_memory(calls, set(returned))
    arena_data = PrimVar("arena", handle, PointerType(DataType.of("uint8"), ARENA_SCOPE))
    arena = decl_buffer((plan.nbytes,), "uint8", "arena", data=arena_data)

    def pointer(value: Value, loaded: dict[int, PrimVar]) -> PrimExpr:
        if value.kind == "input":
            return input_buffers[value.index].data
        if value.kind == "weight":
            weight = weights[value.index]
            element = PointerType(DataType.of(weight.tensor_type.dtype))
            return loaded.setdefault(value.index, PrimVar(f"weight_{value.index}", handle, element))
        key = (value.index, value.result)
        if key in returned:
            return returned[key].data
        return address_of(arena[plan.offsets[key]])

    statements: list[Stmt] = []
    for position, call in enumerate(calls):
        loaded: dict[int, PrimVar] = {}
        args = [pointer(a, loaded) for a in call.args]
        args += [pointer(Value("result", position, k), loaded) for k in range(len(call.results))]
        stmt: Stmt = Evaluate(call_global(kernels.get_global_var(call.kernel), *args, *call.sizes))
        for index, var in reversed(loaded.items()):
            assert table is not None
            stmt = LetStmt(var, table[index], stmt)
        statements.append(stmt)
    body: Stmt = SeqStmt.flatten(statements)
    if plan.slots:
        true = IntImm(DataType.of("bool"), 1)
        body = Allocate(arena_data, arena.dtype, (plan.nbytes,), true, DeclBuffer(arena, body))
    buffers = [*input_buffers, *([table] if table is not None else []), *output_buffers]
    params = [PrimVar(b.name, handle) for b in buffers]
    attrs = FrozenMap({"global_symbol": "main", "tir.noalias": True})
    return PrimFunc(
        (*params, *symbols), body, None, FrozenMap(dict(zip(params, buffers, strict=True))), attrs
    )


def _buffer(ty: TensorType, name: str) -> Buffer:
    return decl_buffer(tuple(ty.shape), ty.dtype, name)


__all__ = [
    "KernelCall",
    "SymbolicPlan",
    "Value",
    "model_calls",
    "plan_symbolic_memory",
    "symbolic_main",
]
