"""The ahead-of-time main (docs/architecture.md §8): a lowered graph `main` and its `MemoryPlan`
become one TensorIR PrimFunc `main` that allocates each arena once (one per device and memory
scope, from that device's allocator) and runs the plan's steps in order: every kernel call with
pointers to its parameters and into the arenas, every device copy through the device runtime.
With a second device, every pointer a kernel gets is checked at run time to be its device's
memory (issue 27: a missing copy is an error, not silent sharing).

The parameters of the TIR main are the model's inputs, then its weights (the plan's constants:
never embedded in C text) as one table of pointers, then its outputs (the distinct kernel
results main returns; results that are inputs or weights are copied by the caller). One table,
not a parameter per weight: a C call takes a bounded number of arguments (ctypes 1,024, the
runtime's fastcall 64), and large models (EfficientNet-B7, LLMs with per-layer norms) have
thousands of weights. Each call reads the pointers it needs from the table just before the
call, so no binding is as deep as the model (issue 25). With `link_params` the
weights are no parameters: each is an `AllocateConst` with its data in main, which the pipeline's
ExtractConstants moves into the module's "constants" and the C backend links into the library
as a binary blob (tessel.codegen.c_blob), so main takes only inputs and outputs. The module it
returns holds the kernels and main, so the TensorIR pipeline and the C backend build the whole
model as one library whose entry `main` runs it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tessel.graph.memory_plan import HOST, DeviceCopy, MemoryPlan, Place, Step, TensorSlot
from tessel.ir.expr import IntImm, PrimExpr, StringImm, Var
from tessel.ir.module import IRModule
from tessel.ir.node import with_changes
from tessel.ir.type import PointerType
from tessel.ir.virtual_device import device_type_name
from tessel.support.dtype import DataType, handle
from tessel.support.frozen_map import FrozenMap
from tessel.support.names import c_identifier, unique_name
from tessel.tir.buffer import Buffer, decl_buffer
from tessel.tir.builtin import address_of, call_extern
from tessel.tir.device_memory import DEVICE_ID, DEVICE_TYPE
from tessel.tir.function import PrimFunc
from tessel.tir.module_calls import call_global
from tessel.tir.stmt import (
    Allocate,
    AllocateConst,
    AssertStmt,
    DeclBuffer,
    Evaluate,
    LetStmt,
    SeqStmt,
    Stmt,
)
from tessel.transform.errors import LoweringError

ARENA_SCOPE = "global.workspace"  # always the runtime's workspace allocator, never the stack


@dataclass(frozen=True)
class AotParam:
    """One tensor the AOT main takes: `kind` is "input", "weight" or "output"; `slot` is the
    plan slot it holds; `index` the input, constant or output position it comes from. Weights
    are main's weight table in `of_kind("weight")` order, one entry per constant and device
    that reads it; `place` is the device whose memory holds it (the host's but for a weight
    uploaded to another device)."""

    name: str
    kind: str
    shape: tuple[int, ...]
    dtype: str
    slot: int
    index: int
    place: Place = HOST


@dataclass(frozen=True)
class AotModule:
    """The whole model as one TensorIR module (kernels + `main`) and the tensors main takes.

    main's parameters are the inputs, then `weight_table` (a `handle` buffer of one pointer
    per weight, in `of_kind("weight")` order; no parameter when there are no weights, as with
    link_params), then the outputs: `entry_names()`."""

    mod: IRModule
    params: tuple[AotParam, ...]
    linked: bool = False  # the weights are constants of main (link_params), not parameters
    weight_table: str = ""  # the name of main's weight-table parameter; "" when it has none

    def of_kind(self, kind: str) -> tuple[AotParam, ...]:
        """The tensors of `kind`, in order."""
        return tuple(p for p in self.params if p.kind == kind)

    def entry_names(self) -> tuple[str, ...]:
        """The names of main's parameters, in order."""
        table = (self.weight_table,) if self.weight_table else ()
        inputs, outputs = self.of_kind("input"), self.of_kind("output")
        return (*(p.name for p in inputs), *table, *(p.name for p in outputs))


def aot_module(
    lowered: IRModule,
    plan: MemoryPlan,
    weight_names: Sequence[str] = (),
    input_names: Sequence[str] = (),
    *,
    link_params: bool = False,
) -> AotModule:
    """The kernels of `lowered` with a TensorIR `main` running `plan`. `weight_names` names the
    plan's constants (default `constant_<k>`), `input_names` main's inputs (default its
    parameters' names); `link_params` makes the weights constants of main, not parameters."""
    runnable = {"cpu", "ext_dev"}
    foreign = sorted(
        {str(p.device) for p in plan.places() if device_type_name(p.device_type) not in runnable}
    )
    if foreign:
        raise LoweringError(
            f"the model is planned on {foreign}, which Tessel's runtime cannot run",
            rule="aot.device",
            hint="Tessel executes on the host CPU and the ext_dev stand-in (its own memory, "
            "the same C code): plan on VirtualDevice('cpu') and VirtualDevice('ext_dev')",
        )
    params = _params(lowered, plan, weight_names, input_names)
    if link_params:
        uploaded = [p.name for p in params if p.kind == "weight" and not p.place.is_host]
        if uploaded:
            raise LoweringError(
                f"link_params links weights into the host library, but {uploaded} are read "
                "on another device",
                rule="aot.linked-device-weights",
                hint="compile without link_params: the executor uploads them at load",
            )
        params = tuple(p for p in params if p.kind != "weight")
    table = ""
    if any(p.kind == "weight" for p in params):
        table = unique_name("weights", {p.name for p in params})
    builder = _MainBuilder(lowered, plan, params, weight_names if link_params else None, table)
    main = builder.build()
    kernels = {gv.name_hint: f for gv, f in lowered.items() if isinstance(f, PrimFunc)}
    if "main" in kernels:
        raise LoweringError(
            "the lowered module already has a PrimFunc `main`",
            rule="aot.main-taken",
            hint="rename the kernel",
        )
    # The graph module's attributes are nothing to TensorIR.
    mod = IRModule.from_dict({"main": main, **kernels})
    return AotModule(mod, params, link_params, table)


def _params(
    lowered: IRModule,
    plan: MemoryPlan,
    weight_names: Sequence[str],
    input_names: Sequence[str],
) -> tuple[AotParam, ...]:
    taken: set[str] = set()
    names = list(input_names) or [p.name_hint for p in lowered["main"].params]
    params = [
        _param(plan.tensors[s], unique_name(n, taken), "input", k)
        for k, (n, s) in enumerate(zip(names, plan.inputs, strict=True))
    ]
    # A constant read on several devices has a slot (a weight) on each, the host's first.
    constant_slots = sorted(
        (t for t in plan.tensors if t.kind == "constant"),
        key=lambda t: (t.index, not t.place.is_host, t.place),
    )
    for slot in constant_slots:
        k = slot.index
        base = weight_names[k] if k < len(weight_names) else f"constant_{k}"
        if not slot.place.is_host:
            base = f"{base}_{device_type_name(slot.place.device_type)}{slot.place.device_id}"
        params.append(_param(slot, unique_name(base, taken), "weight", k))
    outputs = [t for t in plan.tensors if t.kind == "output"]
    for t in sorted(outputs, key=lambda t: t.index):
        base = "output" if len(outputs) == 1 else f"output_{t.index}"
        params.append(_param(t, unique_name(base, taken), "output", t.index))
    return tuple(params)


def _param(slot: TensorSlot, name: str, kind: str, index: int) -> AotParam:
    return AotParam(name, kind, tuple(slot.shape), slot.dtype, slot.id, index, slot.place)


class _MainBuilder:
    """The TIR main of one plan: parameter buffers, arena views, the calls."""

    def __init__(
        self,
        lowered: IRModule,
        plan: MemoryPlan,
        params: tuple[AotParam, ...],
        linked_names: Sequence[str] | None = None,
        table_name: str = "",
    ) -> None:
        self.lowered, self.plan = lowered, plan
        weights = [p for p in params if p.kind == "weight"]
        self.weights = {p.slot: p for p in weights}  # read from the table
        self.table_position = {p.slot: k for k, p in enumerate(weights)}
        self.params = tuple(p for p in params if p.kind != "weight")
        self.buffers = {p.slot: decl_buffer(p.shape, p.dtype, p.name) for p in self.params}
        self.table = None
        if self.weights:
            self.table = decl_buffer((len(self.weights),), handle, table_name)
        self.arenas = {
            arena.place: arena_buffer(arena.place, arena.nbytes, len(plan.arenas) > 1)
            for arena in plan.arenas
            if arena.nbytes > 0
        }
        self.slots = {slot.id: slot for slot in plan.tensors}
        # With a second device, every pointer a step gets is checked to be its device's.
        self.checked = any(not place.is_host for place in plan.places())
        self.linked_names = linked_names  # None: the weights are parameters
        self.constants: dict[int, Buffer] = {}  # linked weights by constant index

    def build(self) -> PrimFunc:
        for slot in self.plan.tensors:
            if slot.kind == "constant" and self.linked_names is not None:
                self.buffers[slot.id] = self._constant_buffer(slot)
        # One flat sequence of calls, whatever the model's size: a nest per kernel or per
        # tensor would be as deep as the model in every TensorIR pass and in C generation.
        shared, private = self._constant_scopes()
        calls = [
            self._with_constants(self._step(c), private.get(k, []))
            for k, c in enumerate(self.plan.calls)
        ]
        body: Stmt = SeqStmt.flatten(calls) if calls else Evaluate(IntImm(DataType.of("int32"), 0))
        for buffer, allocation in reversed(self.arenas.values()):
            body = with_changes(allocation, body=DeclBuffer(buffer, body))
        body = self._with_constants(body, shared)
        attrs = FrozenMap({"global_symbol": "main", "tir.noalias": True})
        params, buffer_map = self._signature()
        return PrimFunc(params, body, None, buffer_map, attrs)

    def _signature(self) -> tuple[tuple[Var, ...], FrozenMap]:
        """main's parameters (inputs, the weight table, outputs) and their buffers."""
        buffers = [self.buffers[p.slot] for p in self.params if p.kind == "input"]
        if self.table is not None:
            buffers.append(self.table)
        buffers += [self.buffers[p.slot] for p in self.params if p.kind == "output"]
        params = tuple(Var(b.name, handle) for b in buffers)
        return params, FrozenMap(dict(zip(params, buffers, strict=True)))

    def _step(self, step: Step) -> Stmt:
        """One step of the plan: a kernel call or a device copy."""
        if isinstance(step, DeviceCopy):
            return self._copy(step)
        return self._call(step.kernel, step.inputs + step.outputs, step.place)

    def _call(self, kernel: str, slots: tuple[int, ...], place: Place) -> Stmt:
        """The call of `kernel` on `slots`, inside a binding of each weight it reads to its
        pointer in the table (a binding per call: one around the body would nest as deep as
        the model has weights); with a second device, after checking that every pointer is
        memory of the kernel's device."""
        gv = self.lowered.get_global_var(kernel)
        loaded: dict[int, Var] = {}
        args = [self._pointer(s, loaded) for s in slots]
        stmt: Stmt = Evaluate(call_global(gv, *args))
        if self.checked:
            checks = [
                self._check(place, arg, slot, f"`{kernel}` (on {place}) argument {k}")
                for k, (arg, slot) in enumerate(zip(args, slots, strict=True))
            ]
            stmt = SeqStmt.flatten([*checks, stmt])
        return self._with_weights(stmt, loaded)

    def _with_weights(self, stmt: Stmt, loaded: dict[int, Var]) -> Stmt:
        """`stmt` inside a binding of each weight it reads (`loaded`) to its table entry."""
        for slot_id, var in reversed(loaded.items()):
            assert self.table is not None
            stmt = LetStmt(var, self.table[self.table_position[slot_id]], stmt)
        return stmt

    def _check(self, place: Place, pointer: PrimExpr, slot_id: int, what: str) -> Stmt:
        """A run-time check that `pointer` (slot `slot_id`) is memory of `place`'s device."""
        slot = self.slots[slot_id]
        holds = call_extern(
            "bool", "tessel_dev_holds", *_device_args(place), pointer, _size(slot.nbytes)
        )
        message = (
            f"{what} ({_describe(slot)}) is not in the memory of {place.device}: a value "
            "crosses devices without a device_copy"
        )
        return _assert(holds, message)

    def _copy(self, copy: DeviceCopy) -> Stmt:
        """A device copy: both sides checked, the bytes copied, the copy counted (the device
        runtime, tessel/codegen/c_devices.py)."""
        loaded: dict[int, Var] = {}
        source = self._pointer(copy.source, loaded)
        target = self._pointer(copy.target, loaded)
        slot = self.slots[copy.source]
        copied = call_extern(
            "bool",
            "tessel_dev_copy",
            target,
            *_device_args(copy.dst),
            source,
            *_device_args(copy.src),
            _size(slot.nbytes),
        )
        message = (
            f"device_copy of {_describe(slot)} from {copy.src.device} to {copy.dst.device}: "
            "its source or destination is not that device's memory"
        )
        return self._with_weights(_assert(copied, message), loaded)

    def _constant_buffer(self, slot: TensorSlot) -> Buffer:
        """The buffer of a linked weight, named as bound (an AllocateConst defines its data)."""
        assert self.linked_names is not None
        names = self.linked_names
        base = names[slot.index] if slot.index < len(names) else f"constant_{slot.index}"
        taken = {p.name for p in self.params} | {b.name for b in self.constants.values()}
        buffer = decl_buffer(slot.shape or (1,), slot.dtype, unique_name(base, taken))
        self.constants[slot.index] = buffer
        return buffer

    def _constant_scopes(self) -> tuple[list[int], dict[int, list[int]]]:
        """The linked weights that only one call uses, by that call (declared around it), and
        the others (declared around the whole body)."""
        users: dict[int, set[int]] = {index: set() for index in self.constants}
        for k, call in enumerate(self.plan.calls):
            for slot_id in call.inputs:
                slot = self.slots[slot_id]
                if slot.kind == "constant" and slot.index in users:
                    users[slot.index].add(k)
        private: dict[int, list[int]] = {}
        shared = []
        for index, calls in users.items():
            if len(calls) == 1:
                private.setdefault(next(iter(calls)), []).append(index)
            else:
                shared.append(index)
        return shared, private

    def _with_constants(self, body: Stmt, indices: Sequence[int]) -> Stmt:
        """`body` inside an AllocateConst (with the weight's data) per linked weight in
        `indices`."""
        for index in reversed(indices):
            buffer = self.constants[index]
            data = self.plan.constants[index].reshape(buffer.const_shape())
            body = AllocateConst(
                buffer.data, buffer.dtype, buffer.shape, data, None, DeclBuffer(buffer, body)
            )
        return body

    def _pointer(self, slot_id: int, loaded: dict[int, Var]) -> PrimExpr:
        """A parameter's or linked weight's data, a weight's pointer (a variable `loaded` from
        the table), or the address of the slot's (64-byte aligned) offset in the byte arena
        (the callee's parameter types the memory)."""
        buffer = self.buffers.get(slot_id)
        if buffer is not None:
            return buffer.data
        weight = self.weights.get(slot_id)
        if weight is not None:
            element = PointerType(DataType.of(weight.dtype))
            return loaded.setdefault(slot_id, Var(weight.name, handle, element))
        slot = self.slots[slot_id]
        assert slot.kind == "intermediate", slot
        buffer, _ = self.arenas[slot.place]
        return address_of(buffer[slot.offset])


# The scopes an arena may be planned in, by whether its device is the host. The host's default
# arena is the runtime's workspace (never the stack); another device's memory is always its own
# allocator's, whatever "global" scope names it.
HOST_SCOPES = ("global", "global.workspace", "global.stack")
DEVICE_SCOPES = ("global", "global.workspace")


def arena_buffer(place: Place, nbytes: int, named: bool) -> tuple[Buffer, Allocate]:
    """The byte buffer of the arena of `place` and its allocation (whose body is to be set):
    in the place's memory scope, from its device's allocator."""
    scope = place.scope or ARENA_SCOPE
    allowed = HOST_SCOPES if place.is_host else DEVICE_SCOPES
    if scope not in allowed:
        raise LoweringError(
            f"no allocator for memory scope {place.scope!r} on {place.device}",
            rule="aot.memory-scope",
            hint=f"the C backend allocates {list(allowed)} there",
        )
    name = "arena"
    if named:  # one arena per device and scope: say which
        suffix = f"{device_type_name(place.device_type)}{place.device_id}"
        name = c_identifier(f"arena_{suffix}_{place.scope}" if place.scope else f"arena_{suffix}")
    data = Var(name, handle, PointerType(DataType.of("uint8"), scope))
    buffer = decl_buffer((max(nbytes, 1),), "uint8", name, data=data)
    annotations = {}
    if not place.is_host:
        annotations = {DEVICE_TYPE: place.device_type, DEVICE_ID: place.device_id}
    extents = (IntImm(DataType.of("int32"), nbytes),)
    true = IntImm(DataType.of("bool"), 1)
    placeholder = Evaluate(IntImm(DataType.of("int32"), 0))
    allocation = Allocate(
        data, DataType.of("uint8"), extents, true, placeholder, FrozenMap(annotations)
    )
    return buffer, allocation


def _device_args(place: Place) -> tuple[IntImm, IntImm]:
    int32 = DataType.of("int32")
    return IntImm(int32, place.device_type), IntImm(int32, place.device_id)


def _assert(condition: PrimExpr, message: str) -> Stmt:
    """A run-time check failing the call with `message` (the device runtime's checks)."""
    return AssertStmt(condition, StringImm(message), Evaluate(IntImm(DataType.of("int32"), 0)))


def _size(nbytes: int) -> IntImm:
    return IntImm(DataType.of("uint64"), nbytes)


def _describe(slot: TensorSlot) -> str:
    kinds = {"input": "input", "output": "output", "constant": "weight"}
    what = kinds.get(slot.kind, "intermediate")
    index = f" {slot.index}" if slot.kind in kinds else ""
    return f"the {what}{index} ({slot.type_text}, planned on {slot.place})"


__all__ = ["ARENA_SCOPE", "AotModule", "AotParam", "aot_module"]
