"""MemoryPlan: static storage for a lowered `main` (a dataflow of call_lowered kernels).

Every tensor gets a `TensorSlot`: an input of main, a constant, an output of main (the caller's
memory), or an intermediate at a byte offset in one arena. Intermediates share the arena by
liveness: greedy best-fit over a free list, offsets aligned to 64 bytes. A kernel's outputs are
placed while its inputs are still live, so a kernel never writes over what it reads (kernels
are compiled with `restrict` pointers). A kernel that only reshapes an intermediate (LowerTE
marks it `reshape_only`) is not called: its output shares the input's bytes (`alias_of`); nor is
one that only concatenates (`concat_axis`) where its inputs can be written into their slices of
its output (memory_aliases.py).

Memory is planned per `Place` (issue 27): a device and a memory scope. Each intermediate lives
in the arena of the place its producer runs on (a kernel's device, with its planned memory
scope, as LowerTE(devices=True) records it; a `device_copy`'s destination), and liveness reuse
happens inside each arena. Constants are planned apart from the arenas (seed 001): a constant
gets a slot on each device whose kernels read it, which the executor fills once, at load. The
model's inputs and outputs are the caller's host memory. A module lowered without devices has
one place, the host, and one arena.

The plan is plain data in the order a single-entry ahead-of-time main runs it (docs/
architecture.md §8): parameters = inputs then outputs, one allocation per arena, and per step
either one kernel call whose arguments are slots (a parameter, a constant, or arena bytes at an
offset) or one `DeviceCopy` between two slots. `tessel.graph.executor` runs it from Python, and
tessel.graph.aot emits the TensorIR main from it. `memory_report` is what `tessel show
--memory` prints.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from tessel.graph.call_lowered import (
    concat_axis,
    is_call_lowered,
    is_device_copy,
    is_reshape_only,
    kernel_device,
)
from tessel.graph.expr import Call, Constant, Expr, Function, Tuple, TupleGetItem, Var
from tessel.graph.memory_aliases import shared_storage
from tessel.graph.memory_offsets import ALIGNMENT, Request, assign_offsets, live_bytes
from tessel.graph.traversal import post_order_exprs
from tessel.graph.ty import TensorType, TupleType, Type
from tessel.ir.module import IRModule
from tessel.ir.virtual_device import UNCONSTRAINED, VirtualDevice, device_type_name
from tessel.support.dtype import DataType
from tessel.transform.errors import LoweringError

_CPU = 1  # DLPack's device type code of the CPU


@dataclass(frozen=True, order=True)
class Place:
    """Where bytes live: a device (DLPack type code and id) and a memory scope ("" is the
    device's default arena)."""

    device_type: int = _CPU
    device_id: int = 0
    scope: str = ""

    @staticmethod
    def of(device: VirtualDevice | None) -> Place:
        """The place of a planned device (None, or any unconstrained field: the host's)."""
        if device is None:
            return HOST
        device_type = device.device_type if device.device_type != UNCONSTRAINED else _CPU
        return Place(device_type, max(device.virtual_device_id, 0), device.memory_scope)

    @property
    def device(self) -> Place:
        """The device alone (this place in its default scope)."""
        return Place(self.device_type, self.device_id)

    @property
    def is_host(self) -> bool:
        """Whether the memory is the host's (a CPU device: all of them share it)."""
        return self.device_type == _CPU

    def __str__(self) -> str:
        name = f"{device_type_name(self.device_type)}({self.device_id})"
        return f"{name} {self.scope}" if self.scope else name


HOST = Place()


@dataclass(frozen=True)
class TensorSlot:
    """Where one tensor of `main` lives. `kind` is "input" (main's parameter `index`),
    "constant" (constant `index`), "output" (main's flattened output `index`) or
    "intermediate" (arena bytes [offset, offset + nbytes), live from kernel `start` to `end`;
    `alias_of` names the slot whose bytes hold it, at `offset`: a reshape shares its input's
    bytes, an input of a concatenation written in place lives in its slice of the output).
    `place` is the device and memory scope that holds it: the arena's for an intermediate, the
    device a constant is uploaded to, the host for inputs and outputs."""

    id: int
    shape: tuple[int, ...]
    dtype: str
    kind: str
    index: int = -1
    offset: int = -1
    start: int = -1
    end: int = -1
    alias_of: int = -1
    place: Place = HOST

    @property
    def nbytes(self) -> int:
        return _nbytes(self.shape, self.dtype)

    @property
    def type_text(self) -> str:
        """Shape and dtype as messages and reports print them: `4x16 float32`."""
        return f"{'x'.join(map(str, self.shape)) or 'scalar'} {self.dtype}"


def _nbytes(shape: tuple[int, ...], dtype: str) -> int:
    return int(np.prod(shape, dtype=np.int64)) * np.dtype(DataType.of(dtype).numpy).itemsize


@dataclass(frozen=True)
class KernelCall:
    """One kernel call of main: the PrimFunc's name, its input and output slots (by id), and
    the device it runs on (every slot it touches must be that device's memory)."""

    kernel: str
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    place: Place = HOST


@dataclass(frozen=True)
class DeviceCopy:
    """One `device_copy` of main: the bytes of slot `source` (on `src`) into slot `target` (on
    `dst`), performed and counted by the executor."""

    source: int
    target: int
    src: Place
    dst: Place

    @property
    def inputs(self) -> tuple[int, ...]:
        return (self.source,)

    @property
    def outputs(self) -> tuple[int, ...]:
        return (self.target,)


Step = KernelCall | DeviceCopy


@dataclass(frozen=True)
class Arena:
    """The intermediates of one place: `nbytes` allocated (offsets by liveness), of which at most
    `live_bytes` are live at once (each tensor rounded up to the alignment). `nbytes` exceeds
    `live_bytes` only by what best-fit placement leaves unused between blocks."""

    place: Place
    nbytes: int
    live_bytes: int


@dataclass(frozen=True)
class MemoryPlan:
    """The storage of a lowered main: slots, steps (kernel calls and device copies) in order,
    the arenas, and the bytes of the constants (which live outside the arenas). `peak_bytes` is
    the host's default arena, the only one a module lowered without devices has."""

    tensors: tuple[TensorSlot, ...]
    calls: tuple[Step, ...]
    inputs: tuple[int, ...]  # slot per parameter of main
    outputs: tuple[int, ...]  # slot per field of main's (flattened) result
    output_type: Type  # main's result type: rebuilds tuples from `outputs`
    constants: tuple[np.ndarray, ...]
    peak_bytes: int
    constant_bytes: int
    alignment: int = ALIGNMENT
    # per constant, its Constant's name_hint ("" when unnamed): a weight's name in the model
    constant_names: tuple[str, ...] = ()
    arenas: tuple[Arena, ...] = ()

    @property
    def kernel_calls(self) -> tuple[KernelCall, ...]:
        """The kernel calls, in order (the steps that are not copies)."""
        return tuple(c for c in self.calls if isinstance(c, KernelCall))

    @property
    def copies(self) -> tuple[DeviceCopy, ...]:
        """The device copies one run performs, in order."""
        return tuple(c for c in self.calls if isinstance(c, DeviceCopy))

    def places(self) -> tuple[Place, ...]:
        """Every device and scope the plan puts bytes in: arenas, constants, kernels."""
        places = {t.place for t in self.tensors if t.kind in ("intermediate", "constant")}
        places.update(c.place for c in self.kernel_calls)
        return tuple(sorted(places | {HOST}))

    def constant_bytes_on(self, device: Place) -> int:
        """The bytes of the constants uploaded to `device` (each constant once per device)."""
        slots = [t for t in self.tensors if t.kind == "constant" and t.place.device == device]
        return sum(t.nbytes for t in slots)

    def weight_names(self) -> tuple[str, ...]:
        """The name of each constant in a compiled model: its Constant's name_hint (a weight's
        ONNX or parameter name), else `constant_<k>`; not yet unique nor a C identifier."""
        names = self.constant_names or ("",) * len(self.constants)
        return tuple(name or f"constant_{k}" for k, name in enumerate(names))

    def offsets(self) -> dict[int, int]:
        """Arena offset of every intermediate slot, by id."""
        return {t.id: t.offset for t in self.tensors if t.kind == "intermediate"}


# --- slots of a lowered main ---------------------------------------------------------------------


def plan_memory(mod: IRModule, alignment: int = ALIGNMENT) -> MemoryPlan:
    """The memory plan of `mod`'s lowered `main` (after LowerTE)."""
    main = mod["main"]
    builder = _SlotBuilder()
    for k, param in enumerate(main.params):
        if not isinstance(_type(param), TensorType):
            raise LoweringError(
                f"memory_plan: parameter `%{param.name_hint}` of main is not a tensor",
                span=param.span,
                rule="memory_plan.tensor-params",
                hint="pass the fields of a tuple as separate parameters",
            )
        builder.values[id(param)] = builder.leaves(_type(param), "input", k)
    for node in post_order_exprs(main.body):
        if id(node) not in builder.values:
            builder.visit(node)
    outputs = builder.mark_outputs(builder.values[id(main.body)])
    return builder.finish(main, outputs, alignment)


def _type(expr: Expr) -> Type:
    ty = expr.checked_type or getattr(expr, "type_annotation", None)
    if ty is None:
        raise LoweringError(
            "memory_plan needs a typed main",
            rule="memory_plan.untyped",
            hint="run InferType and LowerTE first",
        )
    return ty


class _SlotBuilder:
    """Slots and kernel calls while walking main; `values` maps expressions to their slot ids
    (a tuple of them for tuple values, flattened)."""

    def __init__(self) -> None:
        self.slots: list[dict[str, Any]] = []
        self.values: dict[int, tuple[int, ...]] = {}
        self.calls: list[KernelCall] = []
        self.constants: list[np.ndarray] = []
        self.constant_names: list[str] = []
        self.aliases: list[tuple[int, int, int]] = []  # (reshaped slot, its input, call index)
        self.concats: list[tuple[int, tuple[int, ...], int]] = []  # (output, inputs, call index)
        # A constant's first slot is placed by its first reader; other devices get their own.
        self.constant_slots: dict[tuple[int, Place], int] = {}

    def leaves(
        self, ty: Type, kind: str, index: int = -1, place: Place | None = HOST
    ) -> tuple[int, ...]:
        if isinstance(ty, TupleType):
            return tuple(i for f in ty.fields for i in self.leaves(f, kind, index, place))
        assert isinstance(ty, TensorType), ty
        self.slots.append(
            {
                "id": len(self.slots),
                "shape": ty.shape,
                "dtype": ty.dtype,
                "kind": kind,
                "index": index,
                "start": len(self.calls),
                "place": place,
            }
        )
        return (len(self.slots) - 1,)

    def _read_on(self, slot_id: int, place: Place) -> int:
        """The slot a step on `place` reads for `slot_id`: a constant's copy on that device
        (planned apart from the arenas, uploaded once), else the slot itself."""
        slot = self.slots[slot_id]
        if slot["kind"] != "constant":
            return slot_id
        device = place.device
        if slot["place"] is None:  # its first reader places it
            slot["place"] = device
            self.constant_slots[(slot["index"], device)] = slot_id
        key = (slot["index"], device)
        if key not in self.constant_slots:
            self.slots.append({**slot, "id": len(self.slots), "place": device})
            self.constant_slots[key] = len(self.slots) - 1
        return self.constant_slots[key]

    def visit(self, node: Expr) -> None:
        if isinstance(node, Constant):
            index = len(self.constants)
            self.values[id(node)] = self.leaves(node.tensor_type, "constant", index, None)
            self.constants.append(np.require(node.data, requirements="C"))
            self.constant_names.append(node.name_hint)
        elif isinstance(node, Tuple):
            self.values[id(node)] = tuple(i for f in node.fields for i in self.values[id(f)])
        elif isinstance(node, TupleGetItem):
            self.values[id(node)] = self._field(node)
        elif is_call_lowered(node):
            self._call(node)
        elif is_device_copy(node):
            self._copy(node)
        elif isinstance(node, Var):  # parameters have their slots already
            raise LoweringError(
                f"memory_plan runs a dataflow of call_lowered kernels; `main` reads "
                f"`%{node.name_hint}`, which is not a parameter (a let or a closure binds it)",
                span=node.span,
                rule="memory_plan.not-dataflow",
                hint="run ToGraphNormalForm (in the default graph pipeline) before LowerTE",
            )
        else:
            raise LoweringError(
                f"memory_plan runs a dataflow of call_lowered kernels; `main` holds a "
                f"{type(node).__name__}",
                span=node.span,
                rule="memory_plan.not-dataflow",
                hint="run LowerTE first; let, if and closures are not planned yet",
            )

    def _field(self, node: TupleGetItem) -> tuple[int, ...]:
        ty = _type(node.tuple_value)
        assert isinstance(ty, TupleType)
        sizes = [len(_flat_types(f)) for f in ty.fields]
        start = sum(sizes[: node.index])
        return self.values[id(node.tuple_value)][start : start + sizes[node.index]]

    def _call(self, call: Call) -> None:
        place = Place.of(kernel_device(call))
        inputs = tuple(self._read_on(i, place) for a in call.args for i in self.values[id(a)])
        for i in inputs:
            self.slots[i]["end"] = len(self.calls)
        outputs = self.leaves(_type(call), "intermediate", place=place)
        self.values[id(call)] = outputs
        if is_reshape_only(call) and len(inputs) == 1 and len(outputs) == 1:
            self.aliases.append((outputs[0], inputs[0], len(self.calls)))
        axis = concat_axis(call)
        if axis is not None and len(outputs) == 1:
            shape = self.slots[outputs[0]]["shape"]
            if all(int(n) == 1 for n in shape[:axis]):  # each input a contiguous slice
                self.concats.append((outputs[0], inputs, len(self.calls)))
        self.calls.append(KernelCall(call.op.name_hint, inputs, outputs, place))

    def _copy(self, call: Call) -> None:
        """A device_copy: one copy step per tensor of its (possibly tuple) value."""
        src = Place.of(call.attrs.get("src_virtual_device"))
        dst = Place.of(call.attrs.get("dst_virtual_device"))
        (value,) = call.args
        sources = tuple(self._read_on(i, src) for i in self.values[id(value)])
        targets = self.leaves(_type(call), "intermediate", place=dst)
        for source, target in zip(sources, targets, strict=True):
            self.slots[source]["end"] = len(self.calls)
            self.slots[target]["start"] = len(self.calls)
            self.calls.append(DeviceCopy(source, target, src, dst))
        self.values[id(call)] = targets

    def mark_outputs(self, result: tuple[int, ...]) -> tuple[int, ...]:
        """Main's results: kernel outputs become output slots (the caller's memory)."""
        for k, i in enumerate(result):
            slot = self.slots[i]
            if slot["kind"] == "intermediate":
                slot.update(kind="output", index=k)
            if slot["place"] is None:  # a constant result no kernel reads: the host's
                slot["place"] = HOST
        return result

    def finish(self, main: Function, outputs: tuple[int, ...], alignment: int) -> MemoryPlan:
        for slot in self.slots:
            if slot["kind"] == "intermediate":
                slot.setdefault("end", slot["start"])  # written, never read: live for its kernel
            if slot["place"] is None:  # a constant nothing reads
                slot["place"] = HOST
        tops, dropped = shared_storage(
            self.slots, self.aliases, self.concats, lambda s: _nbytes(s["shape"], s["dtype"])
        )
        by_place: dict[Place, list[dict[str, Any]]] = {}
        for s in self.slots:
            if s["kind"] == "intermediate" and s["id"] not in tops:
                by_place.setdefault(s["place"], []).append(s)
        arenas = []
        for place in sorted(by_place):
            slots = by_place[place]
            requests = [
                Request(_nbytes(s["shape"], s["dtype"]), s["start"], s["end"]) for s in slots
            ]
            offsets, nbytes = assign_offsets(requests, alignment)
            for slot, offset in zip(slots, offsets, strict=True):
                slot["offset"] = offset
            arenas.append(Arena(place, nbytes, live_bytes(requests, alignment)))
        peak = next((a.nbytes for a in arenas if a.place == HOST), 0)
        for slot_id, (top, offset) in tops.items():
            self.slots[slot_id].update(offset=self.slots[top]["offset"] + offset, alias_of=top)
        tensors = tuple(TensorSlot(**s) for s in self.slots)
        return MemoryPlan(
            tensors=tensors,
            calls=tuple(c for k, c in enumerate(self.calls) if k not in dropped),
            inputs=tuple(self.values[id(p)][0] for p in main.params),
            outputs=outputs,
            output_type=_type(main.body),
            constants=tuple(self.constants),
            peak_bytes=peak,
            constant_bytes=sum(int(c.nbytes) for c in self.constants),
            alignment=alignment,
            constant_names=tuple(self.constant_names),
            arenas=tuple(arenas),
        )


def _flat_types(ty: Type) -> list[TensorType]:
    if isinstance(ty, TupleType):
        return [t for f in ty.fields for t in _flat_types(f)]
    assert isinstance(ty, TensorType), ty
    return [ty]


__all__ = [
    "ALIGNMENT",
    "HOST",
    "Arena",
    "DeviceCopy",
    "KernelCall",
    "MemoryPlan",
    "Place",
    "Request",
    "Step",
    "TensorSlot",
    "assign_offsets",
    "live_bytes",
    "plan_memory",
]
