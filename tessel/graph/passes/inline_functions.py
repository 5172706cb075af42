"""InlineFunctions: a `main` that uses function values becomes the first-order dataflow graph the
executor runs (issue 27: the PlanDevices programs with closures, functions in tuples, calls of
global functions and `if` run across devices after planning).

Every call of a known function is replaced by the function's body with the arguments in place
of its parameters (beta reduction): closures literal or let-bound, functions picked from a
tuple, global graph functions, and `(if c then f else g)(x)`, which becomes `if c then f(x)
else g(x)`. Lets are substituted away (operators are pure; sharing a value node computes it
once). Primitive functions (fused kernels) stay as they are.

The executor has no control flow: an `if` whose branches are tensors (or tuples of them) becomes
`where(c, then, else)`, so both branches are computed and the condition picks the result; a
branch that fails at run time (an integer division by zero) then fails the call even when not
taken. Recursion cannot be inlined and is refused (`inline_functions.recursive`).

Device annotations are expressions like any other and stay where they are: run after PlanDevices
(which plans function values by higher-order unification), the copies and `on_device`s it wrote
keep the plan, and planning the first-order result again recovers every device.

The rewrite recurses over the program's nesting; it runs only when `main` has a function value
to remove (`needs_inlining`), so the deep first-order graphs of imported models never enter it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from tessel.graph.call_lowered import is_call_lowered
from tessel.graph.expr import Call, Constant, Expr, Function, If, Let, Tuple, TupleGetItem, Var
from tessel.graph.passes.lower_te import is_primitive
from tessel.graph.traversal import post_order_exprs
from tessel.graph.ty import TensorType, TupleType
from tessel.ir.expr import GlobalVar, Op
from tessel.ir.module import IRModule
from tessel.ir.node import with_changes
from tessel.ir.transform import Pass, PassContext
from tessel.support.errors import UserError


def needs_inlining(mod: IRModule) -> bool:
    """Whether `main` holds a function value other than a fused kernel, a call of anything but
    an operator or a kernel, or an `if`."""
    for node in post_order_exprs(mod["main"].body):
        if isinstance(node, Function) and not is_primitive(node):
            return True
        if isinstance(node, If):
            return True
        if isinstance(node, Call) and _calls_a_function_value(mod, node):
            return True
    return False


def _calls_a_function_value(mod: IRModule, call: Call) -> bool:
    """Whether `call` calls something other than an operator or a kernel: a global graph
    function, or a function value (a variable, a projection, an `if`)."""
    op = call.op
    if isinstance(op, Op) or is_call_lowered(call):
        return False
    if isinstance(op, GlobalVar):
        return _is_graph_function(mod, op)
    return not (isinstance(op, Function) and is_primitive(op))


def _is_graph_function(mod: IRModule, op: Any) -> bool:
    """Whether `op` names a global graph function that is not a kernel."""
    if not isinstance(op, GlobalVar):
        return False
    callee = mod[op]
    return isinstance(callee, Function) and not is_primitive(callee)


class _Inliner:
    """One rewrite of main; `env` maps variables to what stands in their place."""

    def __init__(self, mod: IRModule) -> None:
        self.mod = mod
        self.memo: dict[tuple[int, int], Expr] = {}
        self.envs: list[dict[Var, Expr]] = []  # alive while their ids key the memo
        self.inlining: list[GlobalVar] = []

    def rewrite(self, expr: Expr, env: dict[Var, Expr]) -> Expr:
        key = (id(expr), id(env))
        done = self.memo.get(key)
        if done is None:
            done = self.memo[key] = self._rewrite(expr, env)
        return done

    def _scope(self, env: dict[Var, Expr], bindings: dict[Var, Expr]) -> dict[Var, Expr]:
        scope = {**env, **bindings}
        self.envs.append(scope)
        return scope

    def _rewrite(self, expr: Expr, env: dict[Var, Expr]) -> Expr:
        if isinstance(expr, Var):
            return env.get(expr, expr)
        if isinstance(expr, Constant | GlobalVar | Op):
            return expr
        if isinstance(expr, Function):
            if is_primitive(expr):
                return expr
            return with_changes(expr, body=self.rewrite(expr.body, env))
        if isinstance(expr, Let | Tuple | TupleGetItem):
            return self._structure(expr, env)
        if isinstance(expr, If):
            return _select(
                self.rewrite(expr.cond, env),
                self.rewrite(expr.true_branch, env),
                self.rewrite(expr.false_branch, env),
                expr,
            )
        if isinstance(expr, Call):
            args = tuple(self.rewrite(a, env) for a in expr.args)
            op = expr.op if isinstance(expr.op, Op) else self.rewrite(expr.op, env)
            return self._call(expr, op, args)
        raise UserError(
            f"InlineFunctions cannot rewrite a {type(expr).__name__}",
            span=expr.span,
            rule="inline_functions.node",
        )

    def _structure(self, expr: Let | Tuple | TupleGetItem, env: dict[Var, Expr]) -> Expr:
        """A let (substituted away), a tuple, or a projection (of a literal tuple: its field)."""
        if isinstance(expr, Let):
            value = self.rewrite(expr.value, env)
            return self.rewrite(expr.body, self._scope(env, {expr.var: value}))
        if isinstance(expr, Tuple):
            return with_changes(expr, fields=tuple(self.rewrite(f, env) for f in expr.fields))
        value = self.rewrite(expr.tuple_value, env)
        if isinstance(value, Tuple):
            return value.fields[expr.index]
        return with_changes(expr, tuple_value=value)

    def _call(self, call: Call, op: Any, args: tuple[Expr, ...]) -> Expr:
        if not is_call_lowered(call) and _is_graph_function(self.mod, op):
            callee = self.mod[op]
            if isinstance(callee, Function):
                if op in self.inlining:
                    raise UserError(
                        f"@{op.name_hint} calls itself: a recursive function cannot be inlined, "
                        "and the executor runs a first-order graph",
                        span=call.span,
                        rule="inline_functions.recursive",
                    )
                self.inlining.append(op)
                try:
                    return self._beta(callee, args)
                finally:
                    self.inlining.pop()
        if isinstance(op, Function) and not is_primitive(op):
            return self._beta(op, args)
        if isinstance(op, If):  # (if c then f else g)(x) = if c then f(x) else g(x)
            return _select(
                op.cond,
                self._call(call, op.true_branch, args),
                self._call(call, op.false_branch, args),
                call,
            )
        changes: dict[str, Any] = {}
        if op is not call.op:
            changes["op"] = op
        if any(a is not b for a, b in zip(args, call.args, strict=True)):
            changes["args"] = args
        return with_changes(call, **changes) if changes else call

    def _beta(self, func: Function, args: tuple[Expr, ...]) -> Expr:
        bindings = dict(zip(func.params, args, strict=True))
        return self.rewrite(func.body, self._scope({}, bindings))


def _select(cond: Expr, then: Expr, otherwise: Expr, where: Expr) -> Expr:
    """`if cond then then else otherwise` without control flow: tensors (and tuples of them)
    are selected with `where`; other values (functions) stay an `if`, for a call to push into
    the branches."""
    ty = where.checked_type
    if isinstance(ty, TensorType) or (ty is None and not _is_function(then)):
        return Call(Op("where"), (cond, then, otherwise))
    if isinstance(ty, TupleType) and isinstance(then, Tuple) and isinstance(otherwise, Tuple):
        fields = tuple(
            _select(cond, a, b, a) for a, b in zip(then.fields, otherwise.fields, strict=True)
        )
        return Tuple(fields)
    if isinstance(ty, TupleType):
        fields = tuple(
            _select(cond, TupleGetItem(then, k), TupleGetItem(otherwise, k), TupleGetItem(then, k))
            for k in range(len(ty.fields))
        )
        return Tuple(fields)
    return If(cond, then, otherwise)


def _is_function(expr: Expr) -> bool:
    return isinstance(expr, Function | GlobalVar | If)


@dataclass(frozen=True)
class InlineFunctions(Pass):
    """`main` as a first-order dataflow graph: calls of known functions inlined, lets
    substituted, `if` on tensors selected with `where` (see the module docstring)."""

    name: ClassVar[str] = "inline_functions"

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        if not needs_inlining(mod):
            return mod
        main = mod["main"]
        body = _Inliner(mod).rewrite(main.body, {})
        return mod.with_function("main", with_changes(main, body=body))


__all__ = ["InlineFunctions", "needs_inlining"]
