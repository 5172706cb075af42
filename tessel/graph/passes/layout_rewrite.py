"""LayoutRewrite: weights packed once, at compile time, in the layout the schedule chose for
them (the schedule-aware layout rewrite of the TY-NNP discussion; TVM's meta-schedule
RewriteLayout with its layout-free placeholders, applied without tuning).

A default-schedule rule that wants a parameter in another layout (dense's W[j, k] as
W'[j // 16, k, j % 16], conv2d's W[f, c, r, s] as W'[f // 16, c, r, s, f % 16]) copies it into
a packed buffer at the start of the kernel (cache_read + transform_layout, padding included),
so the kernel is correct whatever its caller passes. This pass, on the module LowerTE made,
lifts such a packing stage out of the kernel wherever the caller passes a constant:

- in the kernel: a top-level loop nest of the root block whose block the rule marked as a
  packing stage (the annotation `meta_schedule.layout_rewrite_preproc`, TVM's, set by the
  rules' plans: tessel.schedule.rules.plan.LAYOUT_REWRITE_PREPROC) is lifted if it reads only a
  parameter P (read nowhere else) and writes only a buffer P' the root allocates (written
  nowhere else, and before any use). The mark, not the nest's shape, says what a stage is:
  a copy a user's schedule wrote for another reason stays in the kernel. The kernel loses the
  stage, and P' becomes the parameter in P's place; the stage alone becomes a packing function
  (P -> P').
- in `main`: each `call_lowered` of the kernel whose argument for P is a Constant gets the
  packed kernel and the Constant packed by running the packing function (compiled to C once
  for all kernels), so the compiled model loads pre-packed weights and runs no packing. Calls
  with a non-constant argument keep the original kernel, which still packs at run time.

Types are kept: the packed constant carries its new TensorType, and every call its old result
type (InferType cannot type a call_lowered; see tessel/graph/call_lowered.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from tessel.driver import build
from tessel.graph.call_lowered import is_call_lowered
from tessel.graph.expr import Call, Constant, Expr, Function, derived_name, with_type
from tessel.graph.passes.packing_steps import (
    PackingCopy,
    pack_array,
    packing_copy,
    packing_record,
)
from tessel.graph.passes.rewriter import ExprRewriter
from tessel.graph.traversal import post_order_exprs
from tessel.graph.ty import TensorType
from tessel.ir.expr import GlobalVar, Var
from tessel.ir.functor import post_order
from tessel.ir.module import IRModule
from tessel.ir.node import with_changes
from tessel.ir.target import Target
from tessel.ir.transform import Pass, PassContext
from tessel.runtime import Module
from tessel.schedule.layout_steps import LayoutRecord
from tessel.schedule.rules.plan import LAYOUT_REWRITE_PREPROC
from tessel.support.dtype import DataType
from tessel.support.frozen_map import FrozenMap
from tessel.support.names import unique_name
from tessel.tir.block import Block, BlockRealize
from tessel.tir.buffer import Buffer, BufferLoad
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import BufferStore, SeqStmt, Stmt


@dataclass(frozen=True)
class PackingStage:
    """A kernel's parameter `param` (its position) packed into `packed` by `pack`."""

    param: int
    packed: Buffer
    pack: PrimFunc


@dataclass(frozen=True)
class LiftedKernel:
    """A kernel with its packing stages lifted out: `kernel` takes the packed buffers."""

    kernel: PrimFunc
    stages: tuple[PackingStage, ...]


def lift_packing_stages(func: PrimFunc, params: Sequence[int] | None = None) -> LiftedKernel | None:
    """`func` without the packing stages of the parameters at positions `params` (all when
    None), and those stages as functions; None when it has none."""
    root = func.body
    if not isinstance(root, BlockRealize) or not isinstance(root.block.body, SeqStmt):
        return None
    block = root.block
    statements = block.body.seq
    accesses = [_accesses(stmt) for stmt in statements]
    param_buffers = [func.buffer_map.get(p) for p in func.params]
    wanted = range(len(func.params)) if params is None else params
    stages: list[tuple[int, Buffer, list[int]]] = []
    for position in wanted:
        buffer = param_buffers[position]
        if buffer is None:
            continue
        found = _stage_of(buffer, block.alloc_buffers, statements, accesses)
        if found is not None:
            stages.append((position, *found))
    if not stages:
        return None
    lifted = {index for _, _, indices in stages for index in indices}
    kernel_params, buffer_map = list(func.params), dict(func.buffer_map)
    packing: list[PackingStage] = []
    for position, packed, indices in stages:
        source = func.params[position]
        target = Var(packed.name, source.dtype, source.type_annotation)
        kernel_params[position] = target
        buffer_map[target] = packed
        body = SeqStmt.flatten([statements[i] for i in indices])
        pack_root = BlockRealize(root.iter_values, root.predicate, Block((), (), (), "root", body))
        pack = PrimFunc(
            (source, target),
            pack_root,
            buffer_map={source: func.buffer_map[source], target: packed},
            attrs=func.attrs,
        )
        packing.append(PackingStage(position, packed, pack))
    kept = [stmt for index, stmt in enumerate(statements) if index not in lifted]
    moved = {packed for _, packed, _ in stages}
    new_block = with_changes(
        block,
        body=SeqStmt.flatten(kept),
        alloc_buffers=tuple(b for b in block.alloc_buffers if b not in moved),
    )
    # In parameter order, as the original's (the packed buffer where the weight was).
    buffer_map = {p: buffer_map[p] for p in kernel_params if p in buffer_map}
    kernel = with_changes(
        func,
        params=tuple(kernel_params),
        buffer_map=FrozenMap(buffer_map),
        body=with_changes(root, block=new_block),
    )
    return LiftedKernel(kernel, tuple(packing))


def _accesses(stmt: Stmt) -> tuple[set[object], set[object]]:
    """The buffers `stmt` reads and writes (loads, stores, and blocks' declared regions); a
    block with views or scratch buffers counts as reading `_OPAQUE` (never a plain copy)."""
    reads: set[object] = set()
    writes: set[object] = set()
    for node in post_order(stmt):
        if isinstance(node, BufferLoad):
            reads.add(node.buffer)
        elif isinstance(node, BufferStore):
            writes.add(node.buffer)
        elif isinstance(node, Block):
            reads.update(region.buffer for region in node.reads)
            writes.update(region.buffer for region in node.writes)
            if node.match_buffers or node.alloc_buffers:
                reads.add(_OPAQUE)  # views and scratch: not a plain copy
    return reads, writes


_OPAQUE = object()


def _stage_of(
    param: Buffer,
    allocated: tuple[Buffer, ...],
    statements: tuple[Stmt, ...],
    accesses: list[tuple[set[object], set[object]]],
) -> tuple[Buffer, list[int]] | None:
    """(packed buffer, statement indices) of `param`'s packing stage, if it has one."""
    readers = [i for i, (reads, _) in enumerate(accesses) if param in reads]
    if not readers or any(param in writes for _, writes in accesses):
        return None
    targets = {frozenset(accesses[i][1]) for i in readers}
    if len(targets) != 1:
        return None
    (written,) = targets
    if len(written) != 1:
        return None
    (packed,) = written
    if packed not in allocated or packed.scope not in ("", "global"):
        return None  # only a global buffer can become a parameter
    writers = [i for i, (_, writes) in enumerate(accesses) if packed in writes]
    users = [i for i, (reads, _) in enumerate(accesses) if packed in reads and i not in writers]
    if set(readers) != set(writers) or (users and max(writers) > min(users)):
        return None  # P is read by the compute too, or P' is used before it is complete
    for index in writers:
        reads, writes = accesses[index]
        if writes != {packed} or not reads <= {param}:
            return None  # more than a copy of P into P'
    if not all(_marked(statements[index]) for index in writers):
        return None  # a copy, but not one a rule marked as packing
    return packed, writers


def _marked(stmt: Stmt) -> bool:
    """Whether a block in `stmt` carries the packing-stage annotation."""
    return any(
        isinstance(node, Block) and bool(node.annotations.get(LAYOUT_REWRITE_PREPROC))
        for node in post_order(stmt)
    )


@dataclass(frozen=True)
class LayoutRewrite(Pass):
    """Pack the constant arguments of lowered kernels at compile time, in the layout their
    schedules chose, and call the packed kernels (see the module docstring); the packing
    functions are lowered in up to `jobs` processes (None: the cores this process may use)."""

    name: ClassVar[str] = "layout_rewrite"
    target: Target | str = "c"
    jobs: int | None = None

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        main_gv = mod.get_global_var("main")
        main = mod[main_gv]
        lifted = _liftable(mod)
        if not lifted:
            return mod
        taken = set(mod.names())
        # A kernel every call of which can pack keeps its name; else the packed one is new.
        mixed = _kernels_called_unpackable(main, lifted)
        packed_gvs = {
            gv: GlobalVar(unique_name(f"{gv.name_hint}_packed", taken)) if gv in mixed else gv
            for gv in lifted
        }
        packer = _Packer(lifted, self.target, taken, self.jobs)
        rewriter = _CallRewriter(lifted, packed_gvs, packer)
        new_main = with_changes(main, body=rewriter.rewrite(main.body))
        functions: dict[GlobalVar, object] = {}
        for gv, func in mod.items():
            functions[gv] = new_main if gv is main_gv else func
        for gv, packed_gv in packed_gvs.items():
            functions[packed_gv] = lifted[gv].kernel
        return IRModule(FrozenMap(functions), mod.attrs)


def _constant_params(main: Function) -> dict[GlobalVar, set[int]]:
    """For each kernel `main` calls, the argument positions that some call passes a Constant."""
    found: dict[GlobalVar, set[int]] = {}
    for node in post_order_exprs(main.body):
        if is_call_lowered(node):
            positions = {i for i, arg in enumerate(node.args) if isinstance(arg, Constant)}
            if positions:
                found.setdefault(node.op, set()).update(positions)
    return found


def packing_left(mod: IRModule) -> list[tuple[str, int]]:
    """(kernel, argument position) of every call in `main` that passes a Constant which the
    kernel still packs at run time: empty after LayoutRewrite (a check for tests and users)."""
    lifted = _liftable(mod)
    return sorted((gv.name_hint, stage.param) for gv, k in lifted.items() for stage in k.stages)


def _liftable(mod: IRModule) -> dict[GlobalVar, LiftedKernel]:
    """Each kernel of `main` with packing stages of arguments some call passes a Constant."""
    lifted = {}
    for gv, positions in _constant_params(mod["main"]).items():
        func = mod[gv]
        if isinstance(func, PrimFunc):
            result = lift_packing_stages(func, sorted(positions))
            if result is not None:
                lifted[gv] = result
    return lifted


def _kernels_called_unpackable(
    main: Function, lifted: dict[GlobalVar, LiftedKernel]
) -> set[GlobalVar]:
    """The lifted kernels that some call passes a non-constant argument to pack."""
    return {
        node.op
        for node in post_order_exprs(main.body)
        if is_call_lowered(node) and node.op in lifted and not _packable(node, lifted[node.op])
    }


def _packable(call: Call, lifted: LiftedKernel) -> bool:
    return all(isinstance(call.args[stage.param], Constant) for stage in lifted.stages)


class _Packer:
    """Packs constants by their kernels' packing stages (each Constant once): in NumPy, by the
    stage's pad, reshape and transpose steps (tessel.graph.passes.packing_steps), else by the
    packing functions, compiled together the first time one is needed."""

    def __init__(
        self,
        lifted: dict[GlobalVar, LiftedKernel],
        target: Target | str,
        taken: set[str],
        jobs: int | None = None,
    ) -> None:
        names: dict[tuple[GlobalVar, int], str] = {}
        functions: dict[GlobalVar, PrimFunc] = {}
        self.steps: dict[tuple[GlobalVar, int], tuple[PackingCopy, LayoutRecord]] = {}
        for gv, kernel in lifted.items():
            for stage in kernel.stages:
                name = unique_name(f"pack_{gv.name_hint}_p{stage.param}", taken)
                names[(gv, stage.param)] = name
                functions[GlobalVar(name)] = with_changes(
                    stage.pack, attrs=FrozenMap({**stage.pack.attrs, "global_symbol": name})
                )
                copy = packing_copy(stage.pack)
                record = packing_record(copy) if copy is not None else None
                if copy is not None and record is not None:
                    self.steps[(gv, stage.param)] = (copy, record)
        self.names, self.functions = names, functions
        self.target, self.jobs = target, jobs
        self._library: Module | None = None
        self.done: dict[tuple[Constant, str], Constant] = {}

    @property
    def library(self) -> Module:
        """The packing functions, compiled (once, when first asked for)."""
        if self._library is None:
            # Run here, in this process: never with a sanitizer (its runtime is not loaded).
            self._library = build(
                IRModule(FrozenMap(self.functions)),
                Target(kind=Target.of(self.target).kind),
                jobs=self.jobs,
            )
        return self._library

    def pack(self, gv: GlobalVar, stage: PackingStage, constant: Constant) -> Constant:
        """`constant` packed by `stage` (the same Constant object packs once), named after it
        (`<weight>_packed`: the packed weight is the same weight in another layout)."""
        name = self.names[(gv, stage.param)]
        key = (constant, name)
        if key not in self.done:
            shape = tuple(int(getattr(d, "value", d)) for d in stage.packed.shape)
            dtype = DataType.of(stage.packed.dtype)
            source = np.ascontiguousarray(constant.data)
            steps = self.steps.get((gv, stage.param))
            out = pack_array(*steps, source) if steps is not None else None
            if out is None or out.shape != shape or out.dtype != dtype.numpy:
                out = np.empty(shape, dtype.numpy)
                self.library[name].call_once(np.array(source, copy=True), out)  # writeable
            packed = Constant(out, name_hint=derived_name((constant,), "_packed"))
            # with_type keeps the node class: a Constant
            packed = with_type(packed, TensorType(shape, str(dtype)))  # type: ignore[assignment]
            self.done[key] = packed
        return self.done[key]


class _CallRewriter(ExprRewriter):
    def __init__(
        self,
        lifted: dict[GlobalVar, LiftedKernel],
        packed_gvs: dict[GlobalVar, GlobalVar],
        packer: _Packer,
    ) -> None:
        super().__init__()
        self.lifted, self.packed_gvs, self.packer = lifted, packed_gvs, packer

    def rewrite_node(self, old: Expr, new: Expr) -> Expr:
        if not is_call_lowered(new) or new.op not in self.lifted:
            return new
        assert isinstance(new, Call)
        lifted = self.lifted[new.op]
        if not _packable(new, lifted):
            return new  # packs at run time: the kernel stays whole
        args = list(new.args)
        for stage in lifted.stages:
            args[stage.param] = self.packer.pack(new.op, stage, args[stage.param])
        # The call as it was (its device and every other attribute), on the packed kernel.
        packed = with_changes(new, op=self.packed_gvs[new.op], args=tuple(args))
        return with_type(packed, old.checked_type)
