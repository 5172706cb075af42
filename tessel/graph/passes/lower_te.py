"""LowerTE: every primitive function called from `main` becomes a PrimFunc of the module, and
its call a `call_lowered` of that kernel (tessel/graph/call_lowered.py), as Relay's LowerTE.

Primitive functions are those FuseOps marks `Primitive=1` (inline function values or module
functions); an operator call left unfused counts as a one-operator primitive, so this pass
works with or without FuseOps. Structurally equal primitives share one kernel. Kernels get
TVM's names (`fused_nn_conv2d_add_nn_relu`, made unique) and the default schedule rules of
`tessel.schedule.rules`, kept between compiles (tessel/graph/kernel_cache.py). The rebuilt
`main` keeps every `checked_type`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from tessel.graph.call_lowered import call_lowered, is_call_lowered, is_device_copy
from tessel.graph.expr import (
    Call,
    Constant,
    Expr,
    Function,
    If,
    Let,
    Tuple,
    TupleGetItem,
    Var,
    with_type,
)
from tessel.graph.kernel_cache import KernelRequest, cached_kernels
from tessel.graph.kernel_scope import with_param_scope
from tessel.graph.passes.device_analysis import DeviceAnalysis
from tessel.graph.passes.infer_type import InferType
from tessel.graph.passes.plan_devices import plan_of
from tessel.graph.primitive import (
    Primitive,
    build_prim_func,
    canonical,
    kernel_name,
    one_op_primitive,
)
from tessel.graph.traversal import dataflow_children, post_order_exprs
from tessel.graph.ty import TensorType
from tessel.ir.expr import GlobalVar, Op
from tessel.ir.module import IRModule
from tessel.ir.node import with_changes
from tessel.ir.structural import structural_equal, structural_hash
from tessel.ir.target import Target
from tessel.ir.transform import Pass, PassContext
from tessel.ir.virtual_device import VirtualDevice
from tessel.schedule.rules import default_schedule
from tessel.support.frozen_map import FrozenMap
from tessel.support.names import unique_name
from tessel.support.progress import NO_PROGRESS, Progress
from tessel.support.worker_processes import compile_jobs
from tessel.tir.function import PrimFunc
from tessel.transform.errors import LoweringError


def is_primitive(func: object) -> bool:
    """True for a graph function marked `Primitive=1` (one kernel)."""
    return isinstance(func, Function) and bool(func.attrs.get("Primitive", 0))


@dataclass(frozen=True)
class LowerTE(Pass):
    """Lower the primitive functions called from `main` to PrimFuncs; `schedule=False` keeps
    the kernels as te.create_prim_func builds them (naive loop nests). `target` is the CPU the
    default schedules are for (None: this machine, Target.detect);
    `progress` hears of each kernel call lowered, out of main's calls. `devices` reads each
    call's device from a module PlanDevices planned: every call_lowered then names its device,
    a kernel is built for that device's target, and a planned memory scope becomes the scope
    of the kernel's buffers (issue 27). `device_copy` calls stay calls of main either way: the
    executor copies, no kernel does. Kernels not in the cache are built in up to `jobs`
    processes (None: the cores this process may use; tessel/graph/kernel_cache.py)."""

    name: ClassVar[str] = "lower_te"
    schedule: bool = True
    target: Target | None = None
    progress: Progress = field(default=NO_PROGRESS, repr=False, compare=False)
    devices: bool = False
    jobs: int | None = None

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        if mod["main"].body.checked_type is None:  # the rebuilt main keeps these types
            mod = InferType()(mod, ctx)
        main_gv = mod.get_global_var("main")
        placement = plan_of(mod) if self.devices else None
        if placement is not None:
            mod = placement.mod  # the nodes the plan answers for
        lowering = _Lowering(mod, self.schedule, self.target, self.progress, placement)
        main = lowering.lower_function(mod[main_gv])
        lowering.make_kernels(compile_jobs(self.jobs))
        functions: dict[GlobalVar, object] = {main_gv: main}
        functions.update(
            (gv, f) for gv, f in mod.items() if gv is not main_gv and not is_primitive(f)
        )
        functions.update(lowering.kernels)
        return IRModule(FrozenMap(functions), mod.attrs)


class _Lowering:
    """The state of one LowerTE run: kernels made so far, by name and by structure."""

    def __init__(
        self,
        mod: IRModule,
        schedule: bool,
        target: Target | None,
        progress: Progress,
        placement: DeviceAnalysis | None = None,
    ) -> None:
        self.mod, self.schedule, self.target, self.progress = mod, schedule, target, progress
        self.placement = placement
        self.kernels: dict[GlobalVar, PrimFunc] = {}
        self.taken = set(mod.names())
        self.by_hash: dict[tuple, list[tuple[Function, GlobalVar]]] = {}
        # The kernels to make, in the order main first calls them, and the calls of each.
        self.requests: list[tuple[GlobalVar, str, KernelRequest]] = []
        self.calls: dict[GlobalVar, int] = {}

    def lower_function(self, func: Function) -> Function:
        new: dict[int, Expr] = {}
        # main's body once each, children first; a primitive function is lowered as a whole
        order = list(post_order_exprs(func.body, dataflow_children))
        calls = sum(isinstance(n, Call) and not is_call_lowered(n) for n in order)
        self.progress.stage("scheduling kernels", total=calls)
        for node in order:
            new[id(node)] = self._lower(node, new)
        return with_changes(func, body=new[id(func.body)])

    def make_kernels(self, jobs: int) -> None:
        """Build (or read from the cache) the kernels main's calls need, all at once, so
        that they are scheduled in up to `jobs` processes; progress advances once per call of
        each."""

        def done(index: int) -> None:
            gv = self.requests[index][0]
            for _ in range(self.calls[gv]):
                self.progress.advance()

        kernels = cached_kernels([request for _, _, request in self.requests], jobs, done)
        for (gv, scope, _), kernel in zip(self.requests, kernels, strict=True):
            self.kernels[gv] = with_param_scope(kernel, scope) if scope else kernel

    def _lower(self, node: Expr, new: dict[int, Expr]) -> Expr:
        if isinstance(node, Var | Constant) or is_call_lowered(node):
            return node
        if isinstance(node, Tuple):
            rebuilt = with_changes(node, fields=tuple(new[id(f)] for f in node.fields))
        elif isinstance(node, TupleGetItem):
            rebuilt = with_changes(node, tuple_value=new[id(node.tuple_value)])
        elif isinstance(node, Let):
            rebuilt = with_changes(node, value=new[id(node.value)], body=new[id(node.body)])
        elif isinstance(node, If):
            rebuilt = with_changes(
                node,
                cond=new[id(node.cond)],
                true_branch=new[id(node.true_branch)],
                false_branch=new[id(node.false_branch)],
            )
        elif isinstance(node, Call):
            return self._lower_call(node, tuple(new[id(a)] for a in node.args))
        else:
            raise LoweringError(
                f"lower_te: `main` holds a {type(node).__name__} it cannot lower",
                span=node.span,
                rule="lower_te.unsupported",
                hint="closures and calls of non-primitive functions must be inlined first",
            )
        return rebuilt if rebuilt is node else with_type(rebuilt, node.checked_type)

    def _lower_call(self, call: Call, args: tuple[Expr, ...]) -> Expr:
        callee = self.mod[call.op] if isinstance(call.op, GlobalVar) else call.op
        if is_device_copy(call):  # the executor's step, not a kernel (call_lowered.py)
            self.progress.advance()
            rebuilt = with_changes(call, args=args)
            return rebuilt if rebuilt is call else with_type(rebuilt, call.checked_type)
        if isinstance(callee, Op):
            primitive = one_op_primitive(call, args)
        elif is_primitive(callee):
            primitive = canonical(callee, args)
        else:
            raise LoweringError(
                "lower_te: `main` calls a function that is not primitive",
                span=call.span,
                rule="lower_te.non-primitive-call",
                hint="inline it, or run FuseOps so every call is of a `Primitive=1` function",
            )
        device = self.placement.device_of(call) if self.placement is not None else None
        return call_lowered(
            self._kernel(primitive, device),
            primitive.args,
            call.checked_type,
            reshape_only=_reshape_only(primitive.func),
            device=device,
            concat_axis=_concat_axis(primitive.func, call.checked_type),
        )

    def _kernel(self, primitive: Primitive, device: VirtualDevice | None) -> GlobalVar:
        """The kernel of `primitive` on `device`: one made before for an equal function, the
        same target and memory scope, else a new one."""
        target = self.target if device is None or device.target is None else device.target
        scope = "" if device is None else device.memory_scope
        key = (structural_hash(primitive.func), target, scope)
        for func, gv in self.by_hash.get(key, ()):
            if structural_equal(func, primitive.func):
                self.calls[gv] += 1
                return gv
        gv = GlobalVar(unique_name(kernel_name(primitive.func), self.taken))
        schedule = self.schedule

        def make() -> PrimFunc:
            prim_func = build_prim_func(primitive.func, gv.name_hint)
            return default_schedule(prim_func, target).func if schedule else prim_func

        request = KernelRequest(primitive.func, gv.name_hint, target, schedule, make)
        self.requests.append((gv, scope, request))
        self.calls[gv] = 1
        self.by_hash.setdefault(key, []).append((primitive.func, gv))
        return gv


# Operators that give their input's elements in the same order under another shape.
RESHAPE_OPS = frozenset({"reshape", "squeeze", "expand_dims", "nn.batch_flatten"})


def _concat_axis(func: Function, result: object) -> int | None:
    """The axis of a primitive that only concatenates its parameters, each once and in order
    (`concatenate((%p0, %p1, ...), axis=k)`), into a tensor of type `result`, as a
    non-negative int; else None."""
    body = func.body
    if not (isinstance(body, Call) and isinstance(body.op, Op) and body.op.name == "concatenate"):
        return None
    (fields,) = body.args
    if not isinstance(fields, Tuple) or list(fields.fields) != list(func.params):
        return None
    if len(set(map(id, func.params))) != len(func.params):
        return None
    if not isinstance(result, TensorType):
        return None
    axis = int(body.attrs.get("axis", 0))
    return axis + len(result.shape) if axis < 0 else axis


def _reshape_only(func: Function) -> bool:
    """Whether the primitive only reshapes its one parameter (a chain of RESHAPE_OPS)."""
    body = func.body
    while isinstance(body, Call) and isinstance(body.op, Op) and body.op.name in RESHAPE_OPS:
        body = body.args[0]
    return len(func.params) == 1 and body is func.params[0] and func.body is not body


__all__ = ["LowerTE", "is_primitive"]
