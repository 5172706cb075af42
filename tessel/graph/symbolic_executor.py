"""The executor of a model compiled once for symbolic shapes (docs/dynamic_shapes.md), each
kernel compiled for every size its symbols take. A call binds the symbols from the inputs'
shapes (checked against the declared shapes and the symbols' bounds), then runs the model's C
main (symbolic_main.py: an arena sized at that call) with outputs allocated at its sizes, or,
with executor "python" or for a main that one cannot express, a Python program of kernel
calls that places each result in a buffer of the model's pool (BufferPool) and passes each
kernel the symbols (primitive.py's size parameters)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from math import prod
from typing import Any

import numpy as np

from tessel.arith.dims import dim_function, shape_symbols
from tessel.driver import build
from tessel.graph.evaluate import check_symbolic_shapes
from tessel.graph.expr import Call, Constant, Expr, Function, Tuple, TupleGetItem, Var
from tessel.graph.passes.host_interface import uses_devices
from tessel.graph.passes.inline_functions import needs_inlining
from tessel.graph.passes.layout_rewrite import LayoutRewrite
from tessel.graph.passes.lower_te import LowerTE
from tessel.graph.primitive import size_params
from tessel.graph.symbolic_main import KernelCall, model_calls, symbolic_main
from tessel.graph.traversal import post_order_exprs
from tessel.graph.ty import TensorType, TupleType, Type
from tessel.ir.expr import GlobalVar
from tessel.ir.module import IRModule
from tessel.ir.target import Target
from tessel.ir.transform import Pass, PassContext
from tessel.runtime.threads import current_threads, set_threads
from tessel.support.dtype import DataType
from tessel.support.errors import InternalError, UserError
from tessel.support.frozen_map import FrozenMap
from tessel.support.progress import Progress
from tessel.tir.function import PrimFunc


@dataclass(frozen=True)
class _Step:
    """One kernel call: the kernel, where its arguments come from, the types of its results
    and the symbols it takes as scalars."""

    kernel: str
    args: tuple[Expr, ...]
    results: tuple[TensorType, ...]
    sizes: tuple[Any, ...]
    # each result's shape and the scalar sizes, as functions of the symbols' sizes
    shapes: tuple[tuple[Callable[[dict[Any, int]], int], ...], ...]
    dtypes: tuple[np.dtype, ...]
    scalars: tuple[Callable[[dict[Any, int]], int], ...]
    # (call, result index) of the buffers whose last reader this call is, back to the pool once
    # it has run: the call by its id, then (_compile_program) by its slot
    frees: tuple[tuple[int, int], ...] = ()
    returned: bool = False  # its results reach the caller: not pooled buffers
    function: Any = None  # the compiled kernel
    slot: int = 0  # where its value goes in a call's values, and where each argument's is
    arg_slots: tuple[int, ...] = ()


class BufferPool:
    """Buffers reused by a model's kernel results, within a call (a buffer whose last reader has
    run takes the next result that fits) and across calls (a call at the sizes of the last one
    allocates nothing). What a call's results need and the pool does not hold is allocated; a
    call keeps only the buffers it took, so the pool holds one call's working set. Each buffer
    starts on a 64-byte boundary, as the static arena's tensors do."""

    ALIGNMENT = 64

    def __init__(self) -> None:
        self.free: dict[int, list[np.ndarray]] = {}  # uint8 buffers by their size in bytes
        self.taken: list[np.ndarray] = []

    def buffers(self) -> list[np.ndarray]:
        """The free buffers."""
        return [buffer for group in self.free.values() for buffer in group]

    def take(self, shape: tuple[int, ...], dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
        """An array of `shape` and `dtype` in a pooled buffer, and that buffer (to `give`):
        one of exactly its size, else the smallest that fits, else a new one."""
        nbytes = prod(shape) * dtype.itemsize
        size = max(nbytes, 1)
        group = self.free.get(size)
        if not group:
            fits = [capacity for capacity, group in self.free.items() if capacity > size and group]
            group = self.free[min(fits)] if fits else None
        if group:
            buffer = group.pop()
        else:
            raw = np.empty(size + self.ALIGNMENT, np.uint8)
            start = -raw.ctypes.data % self.ALIGNMENT
            buffer = raw[start : start + size]
        self.taken.append(buffer)
        return buffer[:nbytes].view(dtype).reshape(shape), buffer

    def give(self, buffer: np.ndarray) -> None:
        """`buffer` free for the next result."""
        self.free.setdefault(buffer.nbytes, []).append(buffer)

    def end_call(self) -> None:
        """Keep the buffers this call took; drop those it did not need."""
        kept = {id(buffer): buffer for buffer in self.taken}  # one taken again is kept once
        self.free, self.taken = {}, []
        for buffer in kept.values():
            self.give(buffer)


class SymbolicModel:
    """A model compiled once for symbolic shapes: `model(*inputs)` runs it at the inputs' sizes,
    its kernels on `threads` threads (None: OpenMP's setting is left alone). A size outside a
    symbol's bounds, or two sizes for one symbol, is a ValueError naming the input and the
    axis."""

    def __init__(
        self,
        lowered: IRModule,
        library: Any,
        threads: int | None = None,
        entry: MainEntry | None = None,
    ) -> None:
        self.lowered, self.library, self.threads = lowered, library, threads
        self._entry = entry
        self._main = None if entry is None else entry.bind(library["main"])
        main = lowered["main"]
        assert isinstance(main, Function)
        self.params: tuple[Var, ...] = main.params
        self._body = main.body
        self._pool = BufferPool()
        self._pool_lock = threading.Lock()
        if self._main is None:  # the Python program runs the kernels
            order, self._steps = kernel_steps(lowered)
            self._plan_buffers()
            self._compile_program(order)

    def _compile_program(self, order: tuple[Expr, ...]) -> None:
        """What a call runs: each value a slot of a list (the inputs' and constants' filled
        before), each node an instruction reading slots, so that a call does no lookups."""
        slots = {id(node): k for k, node in enumerate(order)}
        self._slots = len(order)
        self._template: list[Any] = [None] * len(order)
        for node in order:
            if isinstance(node, Constant):
                self._template[slots[id(node)]] = node.data
        self._input_slots = tuple(slots.get(id(p), -1) for p in self.params)
        self._result_slot = slots[id(self._body)]
        program: list[tuple[Any, ...]] = []
        for node in order:
            if isinstance(node, Call) and id(node) in self._steps:
                step = self._steps[id(node)]
                step = replace(
                    step,
                    function=self.library[step.kernel],
                    slot=slots[id(node)],
                    arg_slots=tuple(slots[id(a)] for a in step.args),
                    frees=tuple((slots[call_id], count) for call_id, count in step.frees),
                )
                self._steps[id(node)] = step
                program.append((_CALL, step))
            elif isinstance(node, Tuple):
                program.append((_TUPLE, slots[id(node)], tuple(slots[id(f)] for f in node.fields)))
            elif isinstance(node, TupleGetItem):
                program.append((_ITEM, slots[id(node)], slots[id(node.tuple_value)], node.index))
            elif not isinstance(node, Var | Constant | GlobalVar):
                raise InternalError(f"the symbolic executor cannot run a {type(node).__name__}")
        self._program = tuple(program)

    @property
    def pooled_bytes(self) -> int:
        """The bytes the buffer pool holds between calls: the last call's working set."""
        return sum(buffer.nbytes for buffer in self._pool.buffers())

    @property
    def executor(self) -> str:
        """How the model runs: "aot" (one C `main` over a call-time arena, symbolic_main.py),
        or "python" (a Python loop of kernel calls over the buffer pool) for a main that one
        cannot express."""
        return "python" if self._main is None else "aot"

    def _plan_buffers(self) -> None:
        """Each call's `frees` (the results it reads last) and `returned` flag, from the order
        the calls run in."""
        last_reader: dict[tuple[int, int], int] = {}
        order = list(self._steps)
        for position, call_id in enumerate(order):
            step = self._steps[call_id]
            for count in range(len(step.results)):
                last_reader.setdefault((call_id, count), position)  # unread: freed at once
            for arg in step.args:
                for source in _sources(arg):
                    if source[0] in self._steps:
                        last_reader[source] = position
        returned = {source[0] for source in _sources(self._body)}
        frees: dict[int, list[tuple[int, int]]] = {}
        for source, position in last_reader.items():
            if source[0] not in returned:
                frees.setdefault(order[position], []).append(source)
        for call_id, step in self._steps.items():
            self._steps[call_id] = replace(
                step, frees=tuple(frees.get(call_id, ())), returned=call_id in returned
            )

    def __call__(self, *inputs: Any) -> Any:
        if len(inputs) != len(self.params):
            raise UserError(
                f"the model takes {len(self.params)} inputs "
                f"({', '.join(p.name_hint for p in self.params)}), got {len(inputs)}",
                rule="executor.input-count",
            )
        arrays = [
            np.ascontiguousarray(x, dtype=DataType.of(p.type_annotation.dtype).numpy)
            for p, x in zip(self.params, inputs, strict=True)
        ]
        sizes = check_symbolic_shapes(self.params, arrays)
        if self._main is not None:
            return self._with_threads(lambda: self._run_main(arrays, sizes))
        values = list(self._template)
        for slot, array in zip(self._input_slots, arrays, strict=True):
            if slot >= 0:  # an input main does not read has no slot
                values[slot] = array
        return self._with_threads(lambda: self._run_all(values, sizes))

    def _with_threads(self, run: Callable[[], Any]) -> Any:
        if self.threads is None:
            return run()
        before = current_threads()  # this call's kernels on `threads`, as CompiledModel's
        set_threads(self.threads)
        try:
            return run()
        finally:
            set_threads(before)

    def _run_main(self, arrays: list[np.ndarray], sizes: dict[Any, int]) -> Any:
        assert self._entry is not None
        assert self._main is not None
        outputs = [
            np.empty(tuple(dim(sizes) for dim in dims), dtype)
            for dims, dtype in self._entry.outputs
        ]
        self._main(*arrays, *outputs, *[sizes[symbol] for symbol in self._entry.symbols])
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def _run_all(self, values: list[Any], sizes: dict[Any, int]) -> Any:
        with self._pool_lock:  # a call running beside this one gets a pool of its own
            pool, self._pool = self._pool, BufferPool()
        buffers: dict[tuple[int, int], np.ndarray] = {}
        for instruction in self._program:
            kind = instruction[0]
            if kind is _CALL:
                self._run(instruction[1], values, sizes, pool, buffers)
            elif kind is _TUPLE:
                values[instruction[1]] = tuple(values[k] for k in instruction[2])
            else:
                values[instruction[1]] = values[instruction[2]][instruction[3]]
        pool.end_call()
        with self._pool_lock:
            self._pool = pool
        return values[self._result_slot]

    def _run(
        self,
        step: _Step,
        values: list[Any],
        sizes: dict[Any, int],
        pool: BufferPool,
        buffers: dict[tuple[int, int], np.ndarray],
    ) -> None:
        outputs = []
        for count, (dims, dtype) in enumerate(zip(step.shapes, step.dtypes, strict=True)):
            shape = tuple([dim(sizes) for dim in dims])
            if step.returned:
                outputs.append(np.empty(shape, dtype))
                continue
            array, buffers[(step.slot, count)] = pool.take(shape, dtype)
            outputs.append(array)
        step.function(
            *[values[k] for k in step.arg_slots], *outputs, *[size(sizes) for size in step.scalars]
        )
        for source in step.frees:
            pool.give(buffers.pop(source))
        values[step.slot] = outputs[0] if len(outputs) == 1 else tuple(outputs)


# The instructions of a call's program: a kernel call, a tuple made, a tuple's field read.
_CALL, _TUPLE, _ITEM = "call", "tuple", "item"


def kernel_steps(lowered: IRModule) -> tuple[tuple[Expr, ...], dict[int, _Step]]:
    """The nodes of the lowered main in the order a call runs them, and each kernel call's
    step by the call's id."""
    main = lowered["main"]
    assert isinstance(main, Function)
    order = tuple(post_order_exprs(main.body))
    steps = {
        id(node): _kernel_step(lowered, node)
        for node in order
        if isinstance(node, Call) and isinstance(node.op, GlobalVar)
    }
    return order, steps


def _kernel_step(lowered: IRModule, call: Call) -> _Step:
    func = lowered[call.op]
    if not isinstance(func, PrimFunc):
        raise InternalError(f"main calls @{call.op.name_hint}, which is not a kernel")
    results = _tensors(call.checked_type)
    tensors = [_type_of(a) for a in call.args] + list(results)
    sizes = tuple(size_params([t.shape for t in tensors]))
    scalars = [p for p in func.params if p not in func.buffer_map]
    if len(scalars) != len(sizes):
        raise InternalError(
            f"@{call.op.name_hint} takes {len(scalars)} sizes, its call gives {len(sizes)}"
        )
    return _Step(
        call.op.name_hint,
        tuple(call.args),
        results,
        sizes,
        shapes=tuple(tuple(dim_function(d) for d in ty.shape) for ty in results),
        dtypes=tuple(np.dtype(DataType.of(ty.dtype).numpy) for ty in results),
        scalars=tuple(dim_function(s) for s in sizes),
    )


@dataclass(frozen=True)
class MainEntry:
    """How to call a symbolic model's C main: its weights (main's table, in order), its
    outputs' shapes (functions of the symbols' sizes) and dtypes, and the symbols it takes."""

    weights: tuple[np.ndarray, ...]
    outputs: tuple[tuple[tuple[Callable[[dict[Any, int]], int], ...], np.dtype], ...]
    symbols: tuple[Any, ...]
    table_position: int  # main's parameter that is the weight table; -1 without weights

    def bind(self, main: Any) -> Any:
        """`main` with its weight table bound: called with the inputs, outputs and sizes."""
        if self.table_position < 0:
            return main
        table = np.array([w.ctypes.data for w in self.weights], np.uintp)
        return main.bind({self.table_position: table})


def _main_entry(
    lowered: IRModule, order: tuple[Expr, ...], steps: dict[int, _Step], kernels: IRModule
) -> tuple[PrimFunc, MainEntry] | None:
    """The C main of a symbolic model and how to call it, or None for a main it cannot
    express (symbolic_main.py)."""
    main = lowered["main"]
    assert isinstance(main, Function)
    calls = {
        call_id: KernelCall(step.kernel, (), step.results, step.sizes)
        for call_id, step in steps.items()
    }
    found = model_calls(main.body, main.params, order, calls)
    if found is None:
        return None
    model, results, weights = found
    symbols = tuple(shape_symbols([p.type_annotation.shape for p in main.params]))
    func = symbolic_main(kernels, main.params, model, results, weights, symbols)
    output_types = [model[v.index].results[v.result] for v in results]
    entry = MainEntry(
        weights=tuple(np.ascontiguousarray(w.data) for w in weights),
        outputs=tuple(
            (
                tuple(dim_function(d) for d in ty.shape),
                np.dtype(DataType.of(ty.dtype).numpy),
            )
            for ty in output_types
        ),
        symbols=symbols,
        table_position=len(main.params) if weights else -1,
    )
    return func, entry


def _sources(expr: Expr) -> list[tuple[int, int]]:
    """The (call id, result index) of the kernel results `expr` is made of."""
    if isinstance(expr, Tuple):
        return [source for field in expr.fields for source in _sources(field)]
    if isinstance(expr, TupleGetItem) and isinstance(expr.tuple_value, Call):
        return [(id(expr.tuple_value), expr.index)]
    if isinstance(expr, TupleGetItem):
        return _sources(expr.tuple_value)
    if isinstance(expr, Call):
        count = len(_tensors(expr.checked_type))
        return [(id(expr), k) for k in range(count)]
    return []


def _tensors(ty: Type | None) -> tuple[TensorType, ...]:
    if isinstance(ty, TensorType):
        return (ty,)
    if isinstance(ty, TupleType):
        return tuple(t for f in ty.fields for t in _tensors(f))
    raise InternalError(f"a kernel call of type {ty}")


def _type_of(arg: Expr) -> TensorType:
    if isinstance(arg, Var):
        ty = arg.type_annotation
    elif isinstance(arg, Constant):
        ty = arg.tensor_type
    else:
        ty = arg.checked_type
    if not isinstance(ty, TensorType):
        raise InternalError(f"a kernel argument of type {ty}")
    return ty


def symbolic_params(main: Function) -> list[Var]:
    """The parameters of `main` whose tensor types have symbolic dimensions."""
    return [
        p
        for p in main.params
        if isinstance(p.type_annotation, TensorType) and not p.type_annotation.is_static
    ]


def compile_symbolic(
    mod: IRModule,
    target: Target,
    passes: Sequence[Pass],
    ctx: PassContext,
    progress: Progress,
    threads: int | None,
    jobs: int,
    executor: str = "aot",
) -> SymbolicModel:
    """A model of symbolic input shapes compiled once (tessel.graph.compile's path for them):
    the graph passes, LowerTE, LayoutRewrite, and its kernels built for every size of their
    symbols, with a C main running them (executor "aot", where symbolic_main.py can express
    the model) or a Python loop ("python")."""
    if uses_devices(mod) or needs_inlining(mod):
        raise UserError(
            "a model of symbolic shapes compiles for the host, as one graph function",
            rule="compile.symbolic-shape",
            hint="give each symbol a size (from_onnx's `dims`, `--dim batch=1`)",
        )
    progress.stage("graph passes", total=len(passes))
    for pass_ in passes:
        mod = pass_(mod, ctx)
        progress.advance()
    lowered = LowerTE(target=target, progress=progress, jobs=jobs)(mod, ctx)
    lowered = LayoutRewrite(target, jobs)(lowered, ctx)
    kernels = IRModule(FrozenMap({gv: f for gv, f in lowered.items() if isinstance(f, PrimFunc)}))
    found = _main_entry(lowered, *kernel_steps(lowered), kernels) if executor == "aot" else None
    if found is None:
        library = build(kernels, target, progress=progress, jobs=jobs)
        return SymbolicModel(lowered, library, threads=threads)
    main, entry = found
    module = IRModule.from_dict({"main": main, **{gv.name_hint: f for gv, f in kernels.items()}})
    library = build(module, target, progress=progress, jobs=jobs)
    return SymbolicModel(lowered, library, threads=threads, entry=entry)


__all__ = ["BufferPool", "SymbolicModel", "compile_symbolic", "symbolic_params"]
