"""A runnable model: `tessel.graph.compile(mod, params)` types, simplifies, folds and fuses,
lowers and plans a graph module, builds it as one C module, and returns a `CompiledModel`.

Two executors run the same `MemoryPlan`. "aot" (the default, docs/architecture.md §8): one TIR
`main` (tessel.graph.aot) allocates the arena and calls the kernels, and the model is one C
entry called with inputs, a table of the weights and outputs; with `Target(link_params=True)`
the weights are linked into the library (a binary blob, tessel.codegen.c_blob) and the entry
takes only inputs and outputs. "python" (for debugging: each kernel is a separate checked
call): a Python loop of kernel calls on views of one NumPy arena.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from tessel.codegen import CSource
from tessel.driver import build
from tessel.graph.aot import AotModule, aot_module
from tessel.graph.c_api import ApiModel, ApiTensor, api_model, c_api_source
from tessel.graph.c_api_loader import LOADER_UNIT
from tessel.graph.export import export_model
from tessel.graph.expr import OUTPUT_NAMES, Constant, Expr, Function, Var
from tessel.graph.memory_plan import DeviceCopy, MemoryPlan, TensorSlot, plan_memory
from tessel.graph.model_weights import aligned_bytes, weight_table
from tessel.graph.op.random import RANDOM_STATE, STATE_TYPE
from tessel.graph.passes.host_interface import PlaceForExecution, host_device, uses_devices
from tessel.graph.passes.inline_functions import InlineFunctions, needs_inlining
from tessel.graph.passes.layout_rewrite import LayoutRewrite
from tessel.graph.passes.lower_te import LowerTE
from tessel.graph.passes.pipeline import default_pipeline
from tessel.graph.passes.plan_devices import PlanDevices
from tessel.graph.random_state import RandomState
from tessel.graph.symbolic_executor import SymbolicModel, compile_symbolic, symbolic_params
from tessel.graph.traversal import post_order_exprs
from tessel.graph.ty import TensorType, TupleType, Type
from tessel.ir.module import IRModule
from tessel.ir.node import with_changes
from tessel.ir.target import Target
from tessel.ir.transform import Pass, PassContext
from tessel.runtime import Module
from tessel.runtime.devices import CopyCount
from tessel.runtime.strings import is_string_array, read_strings, to_records
from tessel.runtime.threads import current_threads, set_threads
from tessel.schedule.rules.default import host_target
from tessel.support.dtype import DataType
from tessel.support.errors import UserError
from tessel.support.frozen_map import FrozenMap
from tessel.support.progress import NO_PROGRESS, Progress
from tessel.support.worker_processes import compile_jobs
from tessel.tir.function import PrimFunc


class ModelInputError(UserError, ValueError):
    """An input of a compiled model has the wrong shape, dtype or kind (a ValueError too)."""


def default_passes(target: Target | None = None, jobs: int | None = None) -> tuple[Pass, ...]:
    """The graph passes `compile` runs before LowerTE for `target` (this machine when None;
    tessel.graph.passes.pipeline), compiling in up to `jobs` processes where one compiles."""
    return tuple(default_pipeline(target, jobs))


def compile(  # noqa: A001 - tessel.graph.compile, as relay.build: the name users look for
    mod: IRModule,
    params: Mapping[str, Any] | str | Path | None = None,
    target: Target | str = "c",
    *,
    passes: Sequence[Pass] | None = None,
    ctx: PassContext | None = None,
    executor: str = "aot",
    progress: Progress = NO_PROGRESS,
    threads: int | None = None,
    jobs: int | None = None,
) -> CompiledModel | SymbolicModel:
    """Compile `mod`'s `main` into a runnable model; `params` binds parameters by name
    (weights, as Constants): a mapping of arrays, or the path of a safetensors file (what
    `export` writes); the others stay inputs of the model, in order. `executor` is "aot" (one C
    entry runs the model) or "python" (a Python loop of kernel calls). With the aot executor,
    `Target(link_params=True)` links the bound weights into the library instead of passing them
    at each call (the Python executor always hands its kernels the weights). A `target` given
    by kind name ("c") compiles for this machine (`Target.detect()`: its vector width and
    registers size the schedules) with multiply-adds fused (`Target.fp_contract`); a `Target`
    is taken as it is (`Target.detect(link_params=True)`: this machine, weights linked).
    `progress` hears of each stage (graph passes, kernels scheduled, lowering, C compilation)
    and of the items done within it (tessel.support.progress); the caller ends it. `threads`
    is how many threads the model's kernels run on (`CompiledModel.threads`, settable; None:
    OpenMP's default, the cores this process may use). `jobs` is how many processes the
    compile itself uses to schedule and lower distinct kernels (None: the cores this process
    may use; 1: none but this one). A `main` whose inputs have symbolic shapes
    (docs/dynamic_shapes.md) compiles once into a SymbolicModel, whose kernels serve every
    size: run by a C main over an arena sized at each call ("aot"), or by a Python loop over a
    buffer pool ("python", also where the C main cannot express the model)."""
    _check_threads(threads)
    _check_executor(executor)
    jobs = compile_jobs(jobs)
    ctx = ctx or PassContext()
    target = _model_target(target)
    if isinstance(params, str | Path):
        params = load_params(params)
    mod = bind_params(mod, params or {})
    passes = default_passes(target, jobs) if passes is None else passes
    if symbolic_params(mod["main"]):
        return compile_symbolic(mod, target, passes, ctx, progress, threads, jobs, executor)
    devices = uses_devices(mod)
    if needs_inlining(mod):  # closures, global functions, `if`: first-order for the executor
        passes = (InlineFunctions(), *passes)
    if devices:
        # Devices are planned first, on the program as written (function values by higher-order
        # unification; on_device consumed, copies placed, the model's interface on the host),
        # and planned again after the passes so every call's device is in the module LowerTE
        # reads (a pass that moved a value across devices is a conflict there).
        host = host_device(target)
        passes = (PlaceForExecution(host), *passes, PlanDevices(default_device=host))
    progress.stage("graph passes", total=len(passes))
    for pass_ in passes:
        mod = pass_(mod, ctx)
        progress.advance()
    lowered = LowerTE(target=target, progress=progress, devices=devices, jobs=jobs)(mod, ctx)
    progress.stage("planning memory")
    lowered = LayoutRewrite(target, jobs)(lowered, ctx)
    plan = plan_memory(lowered)
    if executor == "python":
        return _python_model(lowered, plan, target, progress, threads, jobs)
    # Weights are named by their Constants' name_hints: a parameter's or an ONNX initializer's
    # name, `<name>_folded` / `<name>_packed` after the passes that computed them from it.
    aot = aot_module(lowered, plan, plan.weight_names(), link_params=target.link_params)
    outputs = [ApiTensor(o.name, o.shape, o.dtype) for o in _output_specs(lowered, plan)]
    api = functools.partial(_c_api, api_model(aot, plan, outputs))  # compiled into the library
    library = build(
        aot.mod,
        target,
        progress=progress,
        extra_source=api,
        support_units=(LOADER_UNIT,),
        jobs=jobs,
    )
    return CompiledModel(lowered, plan, library, aot, threads=threads)


def _python_model(
    lowered: IRModule,
    plan: MemoryPlan,
    target: Target,
    progress: Progress,
    threads: int | None,
    jobs: int,
) -> CompiledModel:
    """The model run by a Python loop of kernel calls on one host arena."""
    if any(t.dtype == "string" for t in plan.tensors):
        raise UserError(
            "the python executor calls each kernel on its own, and a kernel's string "
            "results live only until the next call (the string heap, "
            "tessel/codegen/c_strings.py)",
            rule="executor.python-strings",
            hint="use executor='aot'",
        )
    if len(plan.places()) > 1:
        raise UserError(
            f"the python executor runs one arena on the host, and this model is planned on "
            f"{[str(p) for p in plan.places()]}",
            rule="executor.python-devices",
            hint="use executor='aot'",
        )
    kernels = {gv: f for gv, f in lowered.items() if isinstance(f, PrimFunc)}
    library = build(IRModule(FrozenMap(kernels)), target, progress=progress, jobs=jobs)
    return CompiledModel(lowered, plan, library, threads=threads)


def _check_executor(executor: str) -> None:
    if executor not in EXECUTORS:
        raise UserError(
            f"unknown executor {executor!r}; choose one of {list(EXECUTORS)}",
            rule="executor.unknown",
        )


def _model_target(target: Target | str) -> Target:
    """A kind name asks for the defaults: for a model, this machine (whose -march=native the C
    compiler builds for: AVX-512's row vectors took MiniLM's softmax and gelu 15% faster than
    32-byte ones) with multiply-adds fused (Target.fp_contract)."""
    if isinstance(target, str):
        return replace(host_target(), kind=target, fp_contract=True)
    return target


def _check_threads(count: Any) -> int | None:
    """`count` when it is a thread count or None, else a UserError."""
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
        raise UserError(
            f"threads must be a positive integer or None, got {count!r}", rule="executor.threads"
        )
    return count


def _c_api(api: ApiModel, c_source: CSource) -> str:
    """The C API (tessel.graph.c_api) of the model whose generated C is `c_source`."""
    (main,) = [e for e in c_source.entries if e.name == "main"]
    return c_api_source(api, main)


EXECUTORS = ("aot", "python")


def load_params(path: str | Path) -> dict[str, np.ndarray]:
    """Weights by name from a safetensors file."""
    from safetensors import SafetensorError
    from safetensors.numpy import load_file

    try:
        return dict(load_file(str(path)))
    except (OSError, SafetensorError) as err:
        raise UserError(
            f"cannot read the parameters in {path}: {err}", rule="executor.params"
        ) from err


def bind_params(mod: IRModule, params: Mapping[str, Any]) -> IRModule:
    """`mod` with the parameters of main named in `params` replaced by Constants, each named
    after its parameter (its name_hint: the weight's name in a compiled model)."""
    if not params:
        return mod
    main = mod["main"]
    names = {p.name_hint: p for p in main.params}
    unknown = sorted(set(params) - set(names))
    if unknown:
        raise UserError(
            f"`params` names no parameter of main: {unknown}; it has {sorted(names)}",
            rule="executor.unknown-param",
        )
    bound = {names[n]: _constant(names[n], v) for n, v in params.items()}
    body = _substitute(main.body, bound)
    func = Function(
        tuple(p for p in main.params if p not in bound), body, main.ret_type, main.attrs
    )
    return mod.with_function("main", func)


def _output_specs(lowered: IRModule, plan: MemoryPlan) -> tuple[_Input, ...]:
    """main's flattened results, named as the frontend named them (`OUTPUT_NAMES`: ONNX's
    output names), else `output` or `output_<k>`."""
    slots = [plan.tensors[s] for s in plan.outputs]
    names = tuple(lowered["main"].attrs.get(OUTPUT_NAMES, ()))
    if len(names) != len(slots) or not all(isinstance(n, str) for n in names):
        names = tuple(f"output_{k}" for k in range(len(slots)))
        names = ("output",) if len(slots) == 1 else names
    return tuple(_Input(n, tuple(t.shape), t.dtype) for n, t in zip(names, slots, strict=True))


def _constant(param: Var, value: Any) -> Constant:
    array = np.asarray(value)
    ty = param.type_annotation
    if isinstance(ty, TensorType):
        _check_array(f"%{param.name_hint}", array, ty.shape, ty.dtype, cast=True)
        array = array.astype(DataType.of(ty.dtype).value_numpy, copy=False)
    return Constant(array, name_hint=param.name_hint)


def _substitute(root: Expr, bound: dict[Var, Constant]) -> Expr:
    """`root` with the variables of `bound` replaced; a shared sub-expression is rebuilt once."""
    new: dict[int, Any] = {}
    for node in post_order_exprs(root):
        if isinstance(node, Var):
            new[id(node)] = bound.get(node, node)
            continue
        changes = {}
        for name in _CHILD_FIELDS:
            value = getattr(node, name, None)
            rebuilt = _rebuilt(value, new)
            if rebuilt is not value:
                changes[name] = rebuilt
        new[id(node)] = with_changes(node, **changes) if changes else node
    return new[id(root)]


_CHILD_FIELDS = ("op", "args", "fields", "tuple_value", "value", "body", "cond", "true_branch",
                 "false_branch")  # fmt: skip


def _rebuilt(value: Any, new: dict[int, Any]) -> Any:
    if isinstance(value, tuple):
        items = tuple(new.get(id(v), v) for v in value)
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    return new.get(id(value), value)


def _check_array(
    name: str, array: np.ndarray, shape: tuple[int, ...], dtype: str, cast: bool = False
) -> None:
    if array.shape != tuple(shape):
        raise ModelInputError(
            f"input `{name}`: expected shape {tuple(shape)}, got {array.shape}",
            rule="executor.input-shape",
        )
    if dtype == "string":
        if not is_string_array(array):
            raise ModelInputError(
                f"input `{name}`: expected an array of strings (str or bytes), got {array.dtype}",
                rule="executor.input-dtype",
            )
        return
    want = _numpy_dtype(dtype)
    if array.dtype != want and not (cast and np.can_cast(array.dtype, want, "same_kind")):
        raise ModelInputError(
            f"input `{name}`: expected dtype {want}, got {array.dtype}",
            rule="executor.input-dtype",
            hint=f"convert it first, e.g. x.astype('{want}')",
        )


@dataclass(frozen=True)
class _Input:
    name: str
    shape: tuple[int, ...]
    dtype: str


_RANDOM_INPUT = _Input(RANDOM_STATE, STATE_TYPE.shape, STATE_TYPE.dtype)


class CompiledModel:
    """`main` compiled: call it with one array per remaining parameter of main (NumPy arrays or
    `__dlpack__` tensors, positional or by name); returns NumPy arrays (a tuple for tuples).
    `aot` is the whole-model TensorIR module (None for the Python executor). The AOT main
    allocates its arena per call; the Python executor keeps one per model, so calls from several
    threads at once must then use separate models."""

    def __init__(
        self,
        lowered: IRModule,
        plan: MemoryPlan,
        library: Module,
        aot: AotModule | None = None,
        threads: int | None = None,
    ) -> None:
        self.lowered, self.plan, self.library, self.aot = lowered, plan, library, aot
        self.threads = threads
        main = lowered["main"]
        # The random state (tessel/graph/op/random.py) is main's parameter but not an input
        # the caller gives: each call takes the next one (`seed_random`).
        names = [p.name_hint for p in main.params]
        self._random_at = names.index(RANDOM_STATE) if RANDOM_STATE in names else None
        self.inputs = tuple(
            _Input(p.name_hint, p.checked_type.shape, p.checked_type.dtype)
            for k, p in enumerate(main.params)
            if k != self._random_at
        )
        self._random = RandomState()
        self.outputs = _output_specs(lowered, plan)  # the flattened results, named
        self._strings = any(t.dtype == "string" for t in plan.tensors)
        # What every call allocates, and the weights it returns as results, worked out once.
        self._fresh = tuple(
            (t.id, t.shape, DataType.of(t.dtype).numpy) for t in plan.tensors if t.kind == "output"
        )
        self._constant_results = {
            i: plan.constants[plan.tensors[i].index]
            for i in plan.outputs
            if plan.tensors[i].kind == "constant"
        }
        if aot is not None:
            # main takes the weights as one table of their addresses (tessel.graph.aot), bound
            # once here while `weights` keeps the arrays alive: a call checks only its inputs
            # and outputs, and passes them and the table, however many weights there are.
            self.weights, self._weight_table = weight_table(self, library, aot, plan)
            bound = {}
            if aot.weight_table:
                bound[aot.entry_names().index(aot.weight_table)] = self._weight_table
            self._main = library["main"].bind(bound)
            self._output_slots = tuple(p.slot for p in aot.of_kind("output"))
            # The usual model returns each of its fresh outputs once, in main's order: a call
            # then allocates them, calls main and returns them, with no slot bookkeeping.
            fresh = {slot: (shape, dtype) for slot, shape, dtype in self._fresh}
            simple = (
                list(plan.outputs) == list(self._output_slots)
                and len(set(plan.outputs)) == len(plan.outputs)
                and all(slot in fresh for slot in plan.outputs)
            )
            self._simple_outputs = tuple(fresh[s] for s in plan.outputs) if simple else None
            return
        self._simple_outputs = None
        self._arena = aligned_bytes(plan.peak_bytes, plan.alignment)
        self._fixed = {
            t.id: self._fixed_array(t)
            for t in plan.tensors
            if t.kind in ("constant", "intermediate")
        }
        # A copy within the host's one memory (the only kind this executor sees) is np.copyto.
        self._kernels = [
            (_copy_step if isinstance(c, DeviceCopy) else library[c.kernel], c.inputs + c.outputs)
            for c in plan.calls
        ]

    @property
    def device_copies(self) -> int:
        """The `device_copy` steps one call performs (the planned graph's copies, per tensor)."""
        return len(self.plan.copies)

    def copies_made(self) -> CopyCount:
        """The device copies this model's library has made in all calls so far, and bytes
        (models of the same generated code share one library, and so one count)."""
        memory = self.library.device_memory
        return memory.copies() if memory is not None else CopyCount(0, 0)

    @property
    def executor(self) -> str:
        """ "aot" or "python"."""
        return "python" if self.aot is None else "aot"

    def _fixed_array(self, slot: TensorSlot) -> np.ndarray:
        if slot.kind == "constant":
            return self.plan.constants[slot.index]
        view = self._arena[slot.offset : slot.offset + slot.nbytes]
        return view.view(DataType.of(slot.dtype).numpy).reshape(slot.shape)

    @property
    def threads(self) -> int | None:
        """The threads each call runs its kernels on (None: OpenMP's setting is left alone)."""
        return self._threads

    @threads.setter
    def threads(self, count: int | None) -> None:
        self._threads = _check_threads(count)

    def seed_random(self, nonce: int) -> None:
        """Start the model's random draws afresh from `nonce` (a model loads with a random
        one): two models seeded alike draw alike, call for call. Operators with a `seed` of
        their own draw the same sequence from any nonce."""
        self._random.seed(nonce)

    def __call__(self, *args: Any, **named: Any) -> Any:
        given_state = named.pop(RANDOM_STATE, None)
        inputs = self._arguments(args, named)
        if self._random_at is not None:
            state = self._random.next() if given_state is None else given_state
            inputs.insert(self._random_at, _as_input(_RANDOM_INPUT, state))
        elif given_state is not None:
            raise ModelInputError(
                f"the model draws no random numbers; `{RANDOM_STATE}` is not an input",
                rule="executor.input-name",
            )
        if self._strings:
            inputs = [to_records(a) if is_string_array(a) else a for a in inputs]
        if self._threads is None:
            result = self._run(inputs)
        else:
            # The calling thread's team for this call's kernels only: other models keep theirs.
            before = current_threads()
            set_threads(self._threads)
            try:
                result = self._run(inputs)
            finally:
                set_threads(before)
        # String results point into this thread's string heap: read them before the next call.
        return read_strings(result) if self._strings else result

    def _run(self, inputs: list[np.ndarray]) -> Any:
        simple = self._simple_outputs
        if simple is not None:
            outputs = [np.empty(shape, dtype) for shape, dtype in simple]
            # An input passed read-only is copied: main's signature says it may write it.
            self._main(*[a if a.flags.writeable else a.copy() for a in inputs], *outputs)
            return _regroup(self.plan.output_type, iter(outputs))
        arrays = {slot: np.empty(shape, dtype) for slot, shape, dtype in self._fresh}
        if self.aot is not None:
            self._run_aot(inputs, arrays)
        else:
            self._run_python(inputs, arrays)
        return self._results(arrays)

    def _run_aot(self, inputs: list[np.ndarray], arrays: dict[int, np.ndarray]) -> None:
        assert self.aot is not None
        # An input passed read-only is copied: main's signature says it may write it (above).
        inputs = [a if a.flags.writeable else a.copy() for a in inputs]
        self._main(*inputs, *(arrays[slot] for slot in self._output_slots))
        arrays.update(zip(self.plan.inputs, inputs, strict=True))
        arrays.update(self._constant_results)  # weights returned as results: `_results` copies

    def _run_python(self, inputs: list[np.ndarray], arrays: dict[int, np.ndarray]) -> None:
        arrays.update(self._fixed)
        for slot_id, value in zip(self.plan.inputs, inputs, strict=True):
            arrays[slot_id] = value
        for kernel, slots in self._kernels:
            kernel(*(arrays[i] for i in slots))

    def export(self, directory: str | Path) -> Path:
        """Write the model for use without Python: `model.so`, `model.h`, `params.safetensors`
        and `params.bin` (tessel.graph.export; no params files when the weights are linked into
        the library, link_params); returns the directory."""
        return export_model(self, directory)

    def _arguments(self, args: tuple[Any, ...], named: dict[str, Any]) -> list[np.ndarray]:
        if not named and len(args) == len(self.inputs):  # positional: no names to match
            return [_as_input(spec, value) for spec, value in zip(self.inputs, args, strict=True)]
        every_by_name = not args and len(named) == len(self.inputs)
        if every_by_name and all(spec.name in named for spec in self.inputs):
            return [_as_input(spec, named[spec.name]) for spec in self.inputs]
        by_name = {i.name for i in self.inputs}
        unknown = sorted(set(named) - by_name)
        if unknown:
            names = [i.name for i in self.inputs]
            raise ModelInputError(
                f"no input named {unknown}; the inputs are {names}", rule="executor.input-name"
            )
        positional = iter(args)
        values = []
        for spec in self.inputs:
            value = named[spec.name] if spec.name in named else next(positional, _MISSING)
            if value is _MISSING:
                raise ModelInputError(
                    f"no value for input `{spec.name}`", rule="executor.input-missing"
                )
            values.append(_as_input(spec, value))
        extra = len(list(positional))
        if extra:
            raise ModelInputError(
                f"{extra} argument(s) more than the model's {len(self.inputs)} inputs",
                rule="executor.input-count",
            )
        return values

    def _results(self, arrays: dict[int, np.ndarray]) -> Any:
        seen: set[int] = set()
        flat = []
        for slot_id in self.plan.outputs:
            slot = self.plan.tensors[slot_id]
            fresh = slot.kind == "output" and slot_id not in seen
            flat.append(arrays[slot_id] if fresh else np.array(arrays[slot_id], copy=True))
            seen.add(slot_id)
        return _regroup(self.plan.output_type, iter(flat))


_MISSING = object()


def _as_input(spec: _Input, value: Any) -> np.ndarray:
    if type(value) is np.ndarray:  # the usual case, checked first: a call's overhead counts
        array = value
    elif isinstance(value, np.ndarray | np.generic):
        array = np.asarray(value)
    elif hasattr(value, "__dlpack__"):
        array = np.from_dlpack(value)
    else:
        raise ModelInputError(
            f"input `{spec.name}`: expected a NumPy array or a __dlpack__ tensor, got "
            f"{type(value).__name__}",
            rule="executor.input-kind",
        )
    _check_array(spec.name, array, spec.shape, spec.dtype)
    # A 0-d array is always C-contiguous (ascontiguousarray would make it 1-d).
    return array if array.flags.c_contiguous else np.ascontiguousarray(array)


@functools.cache
def _numpy_dtype(name: str) -> np.dtype:
    return np.dtype(DataType.of(name).numpy)


def _copy_step(source: np.ndarray, target: np.ndarray) -> None:
    np.copyto(target, source)


def _regroup(ty: Type, flat: Any) -> Any:
    if isinstance(ty, TupleType):
        return tuple(_regroup(f, flat) for f in ty.fields)
    return next(flat)


__all__ = ["CompiledModel", "ModelInputError", "bind_params", "compile", "default_passes"]
