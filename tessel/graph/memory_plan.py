"""MemoryPlan: static storage for a lowered `main` (a dataflow of call_lowered kernels).

Every tensor gets a `TensorSlot`: an input of main, a constant, an output of main (the caller's
memory), or an intermediate at a byte offset in one arena. Intermediates share the arena by
liveness: greedy best-fit over a free list, offsets aligned to 64 bytes. A kernel's outputs are
placed while its inputs are still live, so a kernel never writes over what it reads (kernels
are compiled with `restrict` pointers). A kernel that only reshapes an intermediate (LowerTE
marks it `reshape_only`) is not called: its output shares the input's bytes (`alias_of`).

The plan is plain data in the order a single-entry ahead-of-time main would run it
(docs/architecture.md §8): parameters = inputs then outputs, one arena allocation of
`peak_bytes`, and per kernel one call whose arguments are slots (a parameter, a constant, or
arena bytes at an offset). `tessel.graph.executor` runs it from Python; the TIR main will be
emitted from it.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tessel.graph.call_lowered import is_call_lowered, is_reshape_only
from tessel.graph.expr import Call, Constant, Expr, Function, Tuple, TupleGetItem, Var
from tessel.graph.traversal import post_order_exprs
from tessel.graph.ty import TensorType, TupleType, Type
from tessel.ir.module import IRModule
from tessel.support.dtype import DataType
from tessel.transform.errors import LoweringError

ALIGNMENT = 64


@dataclass(frozen=True)
class TensorSlot:
    """Where one tensor of `main` lives. `kind` is "input" (main's parameter `index`),
    "constant" (constant `index`), "output" (main's flattened output `index`) or
    "intermediate" (arena bytes [offset, offset + nbytes), live from kernel `start` to `end`;
    `alias_of` names the slot whose bytes it shares when it is a reshape of that one, which no
    kernel writes)."""

    id: int
    shape: tuple[int, ...]
    dtype: str
    kind: str
    index: int = -1
    offset: int = -1
    start: int = -1
    end: int = -1
    alias_of: int = -1

    @property
    def nbytes(self) -> int:
        return _nbytes(self.shape, self.dtype)


def _nbytes(shape: tuple[int, ...], dtype: str) -> int:
    return int(np.prod(shape, dtype=np.int64)) * np.dtype(DataType.of(dtype).numpy).itemsize


@dataclass(frozen=True)
class KernelCall:
    """One kernel call of main: the PrimFunc's name, its input and output slots (by id)."""

    kernel: str
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


@dataclass(frozen=True)
class MemoryPlan:
    """The storage of a lowered main: slots, kernel calls in order, the arena's peak size and
    the bytes of the constants (which live outside the arena)."""

    tensors: tuple[TensorSlot, ...]
    calls: tuple[KernelCall, ...]
    inputs: tuple[int, ...]  # slot per parameter of main
    outputs: tuple[int, ...]  # slot per field of main's (flattened) result
    output_type: Type  # main's result type: rebuilds tuples from `outputs`
    constants: tuple[np.ndarray, ...]
    peak_bytes: int
    constant_bytes: int
    alignment: int = ALIGNMENT
    # per constant, its Constant's name_hint ("" when unnamed): a weight's name in the model
    constant_names: tuple[str, ...] = ()

    def weight_names(self) -> tuple[str, ...]:
        """The name of each constant in a compiled model: its Constant's name_hint (a weight's
        ONNX or parameter name), else `constant_<k>`; not yet unique nor a C identifier."""
        names = self.constant_names or ("",) * len(self.constants)
        return tuple(name or f"constant_{k}" for k, name in enumerate(names))

    def offsets(self) -> dict[int, int]:
        """Arena offset of every intermediate slot, by id."""
        return {t.id: t.offset for t in self.tensors if t.kind == "intermediate"}


# --- offsets from live ranges ------------------------------------------------------------------


@dataclass(frozen=True)
class Request:
    """A block of `nbytes` live from step `start` to step `end` (both included)."""

    nbytes: int
    start: int
    end: int


def assign_offsets(
    requests: Sequence[Request], alignment: int = ALIGNMENT
) -> tuple[list[int], int]:
    """Offsets for `requests` such that blocks live at one step never overlap; greedy best-fit
    in order of `start` (blocks ending at a step are freed after the step's blocks are placed).
    Returns (offsets, peak bytes)."""
    order = sorted(range(len(requests)), key=lambda k: (requests[k].start, k))
    ends = sorted(range(len(requests)), key=lambda k: requests[k].end)
    arena = _FreeList()
    offsets = [0] * len(requests)
    freed = 0
    for k in order:
        while freed < len(ends) and requests[ends[freed]].end < requests[k].start:
            done = ends[freed]
            arena.free(offsets[done], _aligned(requests[done].nbytes, alignment))
            freed += 1
        offsets[k] = arena.allocate(_aligned(requests[k].nbytes, alignment))
    return offsets, arena.top


def _aligned(nbytes: int, alignment: int) -> int:
    return max(alignment, -(-nbytes // alignment) * alignment)


class _FreeList:
    """Free blocks of an arena that grows at its top, kept sorted and coalesced."""

    def __init__(self) -> None:
        self.blocks: list[tuple[int, int]] = []  # (offset, size), sorted by offset
        self.top = 0

    def allocate(self, size: int) -> int:
        fits = [(s, k) for k, (_, s) in enumerate(self.blocks) if s >= size]
        if fits:
            _, k = min(fits)  # best fit: the smallest block that holds it
            offset, block = self.blocks[k]
            self.blocks[k : k + 1] = [(offset + size, block - size)] if block > size else []
            return offset
        if self.blocks and sum(self.blocks[-1]) == self.top:  # extend the free block at the top
            offset, _ = self.blocks.pop()
        else:
            offset = self.top
        self.top = offset + size
        return offset

    def free(self, offset: int, size: int) -> None:
        k = bisect.bisect(self.blocks, (offset, size))
        self.blocks.insert(k, (offset, size))
        if k + 1 < len(self.blocks) and offset + size == self.blocks[k + 1][0]:
            size += self.blocks.pop(k + 1)[1]
            self.blocks[k] = (offset, size)
        if k > 0 and sum(self.blocks[k - 1]) == offset:
            prev_offset, prev_size = self.blocks.pop(k - 1)
            self.blocks[k - 1] = (prev_offset, prev_size + size)


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

    def leaves(self, ty: Type, kind: str, index: int = -1) -> tuple[int, ...]:
        if isinstance(ty, TupleType):
            return tuple(i for f in ty.fields for i in self.leaves(f, kind, index))
        assert isinstance(ty, TensorType), ty
        self.slots.append(
            {
                "id": len(self.slots),
                "shape": ty.shape,
                "dtype": ty.dtype,
                "kind": kind,
                "index": index,
                "start": len(self.calls),
            }
        )
        return (len(self.slots) - 1,)

    def visit(self, node: Expr) -> None:
        if isinstance(node, Constant):
            self.values[id(node)] = self.leaves(node.tensor_type, "constant", len(self.constants))
            self.constants.append(np.require(node.data, requirements="C"))
            self.constant_names.append(node.name_hint)
        elif isinstance(node, Tuple):
            self.values[id(node)] = tuple(i for f in node.fields for i in self.values[id(f)])
        elif isinstance(node, TupleGetItem):
            self.values[id(node)] = self._field(node)
        elif is_call_lowered(node):
            self._call(node)
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
        inputs = tuple(i for a in call.args for i in self.values[id(a)])
        for i in inputs:
            self.slots[i]["end"] = len(self.calls)
        outputs = self.leaves(_type(call), "intermediate")
        self.values[id(call)] = outputs
        if is_reshape_only(call) and len(inputs) == 1 and len(outputs) == 1:
            self.aliases.append((outputs[0], inputs[0], len(self.calls)))
        self.calls.append(KernelCall(call.op.name_hint, inputs, outputs))

    def _alias_reshapes(self) -> tuple[dict[int, int], set[int]]:
        """The output of a reshape-only kernel whose input is an arena tensor shares the
        input's bytes (same order, same size) and its call goes: (slot -> the slot whose
        storage it shares, the indices of the calls dropped). The shared storage lives as long
        as either does. A reshape of an input, a constant or into main's result is kept: those
        are separate memory."""
        roots: dict[int, int] = {}
        dropped: set[int] = set()
        for reshaped, source, call in self.aliases:  # in call order: a chain finds its root
            root = roots.get(source, source)
            if self.slots[root]["kind"] != "intermediate":
                continue
            if self.slots[reshaped]["kind"] != "intermediate":
                continue
            roots[reshaped] = root
            dropped.add(call)
            self.slots[root]["end"] = max(self.slots[root]["end"], self.slots[reshaped]["end"])
        return roots, dropped

    def mark_outputs(self, result: tuple[int, ...]) -> tuple[int, ...]:
        """Main's results: kernel outputs become output slots (the caller's memory)."""
        for k, i in enumerate(result):
            slot = self.slots[i]
            if slot["kind"] == "intermediate":
                slot.update(kind="output", index=k)
        return result

    def finish(self, main: Function, outputs: tuple[int, ...], alignment: int) -> MemoryPlan:
        for slot in self.slots:
            if slot["kind"] == "intermediate":
                slot.setdefault("end", slot["start"])  # written, never read: live for its kernel
        roots, dropped = self._alias_reshapes()
        arena = [s for s in self.slots if s["kind"] == "intermediate" and s["id"] not in roots]
        requests = [Request(_nbytes(s["shape"], s["dtype"]), s["start"], s["end"]) for s in arena]
        offsets, peak = assign_offsets(requests, alignment)
        for slot, offset in zip(arena, offsets, strict=True):
            slot["offset"] = offset
        for slot_id, root in roots.items():
            self.slots[slot_id].update(offset=self.slots[root]["offset"], alias_of=root)
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
        )


def _flat_types(ty: Type) -> list[TensorType]:
    if isinstance(ty, TupleType):
        return [t for f in ty.fields for t in _flat_types(f)]
    assert isinstance(ty, TensorType), ty
    return [ty]


__all__ = [
    "ALIGNMENT",
    "KernelCall",
    "MemoryPlan",
    "Request",
    "TensorSlot",
    "assign_offsets",
    "plan_memory",
]
