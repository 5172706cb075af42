"""The analysis half of PlanDevices: one device domain per expression, constrained by what the
program says (parameters' and functions' `virtual_device`, `on_device`, `device_copy`, calls),
unified, then defaulted; `device_of` answers where any sub-expression lives.

Constraints:
- an operator call (a kernel) runs on one device: its arguments and result share a domain;
- a call of a function value or module function unifies the callee's higher-order domain with
  the arguments' domains and the result's, so constraints flow through closures both ways;
- `device_copy(e, src, dst)`: `e` is on src, the call on dst;
- `on_device(e, D, constrain_body, constrain_result)` puts `e` and/or the call on D; where it does
  not constrain both, the two may differ and planning inserts a copy only if they must: one that
  constrains neither keeps them together unless the program's own constraints part them, one
  that constrains one side keeps them together unless defaulting parts them. As the
  value of a let or the body of a function it always fixes the result too (the variable, the
  function's result live there), and a function value is never copied;
- let, if, tuples and projections keep their parts on one device (an if's condition on the
  device of its result).

Defaulting then walks each function top down: a function's result takes the enclosing device
(a module function's: the default device), its parameters the result's, and anything still free
the device of its lexical scope. A place that allows a copy first tries to keep both sides on
one device. On a planned module the analysis recovers the plan, which makes `device_of` the way
later passes read it.
"""

from __future__ import annotations

from typing import Any

from tessel.graph.call_lowered import is_call_lowered
from tessel.graph.expr import Call, Constant, Expr, Function, If, Let, Tuple, TupleGetItem, Var
from tessel.graph.op import get_op
from tessel.graph.op.device import DEVICE_OPERATORS
from tessel.graph.passes.device_domains import DeviceConflict, DeviceDomain, DeviceDomains
from tessel.graph.traversal import expr_children, post_order_exprs
from tessel.graph.ty import FuncType, TupleType
from tessel.ir.expr import GlobalVar, Op
from tessel.ir.module import IRModule
from tessel.ir.virtual_device import VirtualDevice
from tessel.support.errors import UserError


class DevicePlanningError(UserError):
    """A value the program places on two devices, with no copy allowed between them."""


class NeedsTypes(Exception):  # noqa: N818 - a signal to the caller, never seen by users
    """The module handles function values but carries no types: run InferType first."""


def _mentions_function(ty: Any) -> bool:
    pending = [ty]
    while pending:
        ty = pending.pop()
        if isinstance(ty, FuncType):
            return True
        if isinstance(ty, TupleType):
            pending.extend(ty.fields)
    return False


def _handles_functions(node: Any, root: Function) -> bool:
    """Whether `node` may make or take a function value (whose domain its type shapes)."""
    if isinstance(node, Function):
        return node is not root
    if isinstance(node, Var):
        return node.type_annotation is None or _mentions_function(node.type_annotation)
    return isinstance(node, GlobalVar) or (isinstance(node, Call) and not isinstance(node.op, Op))


def describe(expr: Any) -> str:
    """A one-line picture of `expr` for messages (`add(%a, ...)`, `%f(...)`, `let %x = ...`)."""
    if isinstance(expr, Var):
        return f"%{expr.name_hint}"
    if isinstance(expr, GlobalVar):
        return f"@{expr.name_hint}"
    if isinstance(expr, Constant):
        return f"a constant of shape {tuple(expr.data.shape)}"
    if isinstance(expr, Call):
        callee = expr.op.name if isinstance(expr.op, Op) else _short(expr.op)
        return f"{callee}({', '.join(_short(a) for a in expr.args)})"
    if isinstance(expr, Function):
        return f"fn ({', '.join(f'%{p.name_hint}' for p in expr.params)}) {{...}}"
    if isinstance(expr, Let):
        return f"let %{expr.var.name_hint} = {_short(expr.value)}; ..."
    if isinstance(expr, If):
        return f"if ({_short(expr.cond)}) {{...}} else {{...}}"
    if isinstance(expr, Tuple):
        return f"({', '.join(_short(f) for f in expr.fields)})"
    if isinstance(expr, TupleGetItem):
        return f"{_short(expr.tuple_value)}.{expr.index}"
    return type(expr).__name__


def _short(expr: Any) -> str:
    if isinstance(expr, Var | GlobalVar):
        return describe(expr)
    if isinstance(expr, Call) and isinstance(expr.op, Op):
        return f"{expr.op.name}(...)"
    return "..."


def _where(expr: Any) -> str:
    span = getattr(expr, "span", None)
    return f" at {span.line}:{span.column}" if span is not None else ""


class DeviceAnalysis:
    """The solved device domains of a module's graph functions (see the module docstring)."""

    def __init__(self, mod: IRModule, default_device: VirtualDevice) -> None:
        self.mod = mod  # keeps the analysed nodes alive: domains are keyed by their ids
        self.nodes: dict[int, list[Expr]] = {}  # each module function's nodes, in post-order
        self.default_device = default_device
        self.domains = DeviceDomains()
        self.expr_domains: dict[int, DeviceDomain] = {}
        self.var_domains: dict[Var, DeviceDomain] = {}
        self.global_domains: dict[GlobalVar, DeviceDomain] = {}
        self.copy_points: set[int] = set()  # on_device calls whose body and result may differ
        self._free_points: list[Call] = []  # those constraining neither
        functions = [(gv, f) for gv, f in mod.items() if isinstance(f, Function)]
        for gv, func in functions:
            ret_type = (
                func.checked_type.ret_type if isinstance(func.checked_type, FuncType) else None
            )
            params = tuple(self.var_domain(p) for p in func.params)
            self.global_domains[gv] = self.domains.function(params, self.domains.for_type(ret_type))
        for gv, func in functions:
            self._collect(func)
            self._unify(func, self.global_domains[gv], self.domain(func))
        for call in self._free_points:  # before defaulting: only real constraints separate them
            self.domains.attempt(self.domain(call.args[0]), self.domain(call))
        for _, func in functions:
            self._default(func)

    # --- reading ------------------------------------------------------------------------------

    def domain(self, expr: Any) -> DeviceDomain:
        """The domain of a sub-expression of the analysed module (or of a module function)."""
        if isinstance(expr, GlobalVar):
            return self.global_domains[expr]
        if isinstance(expr, Var):
            return self.var_domain(expr)
        domain = self.expr_domains.get(id(expr))
        if domain is None:
            raise DevicePlanningError(
                f"`{describe(expr)}` is not an expression of the analysed module",
                rule="plan_devices.unknown-expr",
                hint="ask about the nodes of `plan.mod` (the module as analysed, typed if it had "
                "to be), or run InferType before planning",
            )
        return domain

    def device_of(self, expr: Any) -> VirtualDevice:
        """Where `expr` lives (for a function value: where its result does)."""
        return self.domains.device_of(self.domain(expr))

    def var_domain(self, var: Var) -> DeviceDomain:
        """A variable's domain, shaped by its type and constrained by its `virtual_device`."""
        domain = self.var_domains.get(var)
        if domain is None:
            domain = self.domains.for_type(var.checked_type or var.type_annotation)
            self.var_domains[var] = domain
            if var.virtual_device is not None:
                reason = f"the virtual_device of %{var.name_hint}{_where(var)}"
                self._constrain(var, domain, var.virtual_device, reason)
        return domain

    # --- constraints --------------------------------------------------------------------------

    def _collect(self, func: Function) -> None:
        nodes = self.nodes[id(func)] = list(post_order_exprs(func))
        if func.checked_type is None and any(_handles_functions(n, func) for n in nodes):
            raise NeedsTypes
        fixing = {id(n.value) for n in nodes if isinstance(n, Let)}  # let values, bodies
        fixing.update(id(n.body) for n in nodes if isinstance(n, Function))
        bound_by = {id(n.value): n for n in nodes if isinstance(n, Let)}
        for node in nodes:
            self.expr_domains[id(node)] = self._constraints_of(node, id(node) in fixing)
            let = bound_by.get(id(node))
            if let is not None:  # bind the variable before its uses: errors name those
                self._unify(let, self.var_domain(let.var), self.expr_domains[id(node)])

    def _constraints_of(self, node: Expr, fixes: bool) -> DeviceDomain:
        domains = self.domains
        if isinstance(node, Var | GlobalVar):
            return self.domain(node)
        if isinstance(node, Constant):
            return domains.free()
        if isinstance(node, Call):
            return self._call_constraints(node, fixes)
        if isinstance(node, Function):
            return self._function_constraints(node)
        if isinstance(node, Let):
            self._unify(node, self.var_domain(node.var), self.domain(node.value))
            return self.domain(node.body)
        if isinstance(node, If):
            result = self.domain(node.true_branch)
            self._unify(node, result, self.domain(node.false_branch))
            self._unify(node.cond, self.domain(node.cond), domains.result_leaf(result))
            return result
        if isinstance(node, Tuple):
            domain = domains.free()
            for item in node.fields:
                self._unify(item, domain, self.domain(item))
            return domain
        if isinstance(node, TupleGetItem):
            return self.domain(node.tuple_value)
        raise DevicePlanningError(
            f"PlanDevices cannot place a {type(node).__name__}", rule="plan_devices.node"
        )

    def _function_constraints(self, func: Function) -> DeviceDomain:
        body = self.domain(func.body)
        params = tuple(self.var_domain(p) for p in func.params)
        if func.virtual_device is not None:
            reason = f"the virtual_device of {describe(func)}{_where(func)}"
            self._constrain(func, body, func.virtual_device, reason)
        if func.attrs.get("Primitive", 0):  # a fused kernel runs on one device
            for param, domain in zip(func.params, params, strict=True):
                self._unify(param, body, domain)
        return self.domains.function(params, body)

    def _call_constraints(self, call: Call, fixes: bool) -> DeviceDomain:
        domains = self.domains
        if isinstance(call.op, Op) and call.op.name in DEVICE_OPERATORS:
            attrs = get_op(call.op.name).normalize_attrs(call.attrs)
            (arg,) = call.args
            body = self.domain(arg)
            result = (
                domains.for_type(call.checked_type)
                if call.checked_type is not None
                else domains.like(body)
            )
            where = f"{call.op.name}{_where(call)}"
            if call.op.name == "device_copy":
                self._constrain(arg, body, attrs.src_virtual_device, f"the source of {where}")
                self._constrain(call, result, attrs.dst_virtual_device, f"the target of {where}")
                return result
            device = attrs.virtual_device
            if attrs.constrain_body:
                self._constrain(arg, body, device, f"{where} (on {device})")
            if attrs.constrain_result or fixes:
                self._constrain(call, result, device, f"{where} (on {device})")
            if (attrs.constrain_body and (attrs.constrain_result or fixes)) or isinstance(
                call.checked_type, FuncType
            ):
                self._unify(call, result, body)  # no copy: one device, or a function value
            else:
                self.copy_points.add(id(call))
                if not attrs.constrain_body and not attrs.constrain_result:
                    self._free_points.append(call)
            return result
        if isinstance(call.op, Op) or is_call_lowered(call):  # a kernel: one device for all
            if not call.args:
                return domains.free()
            result = self._operand_domain(call.args[0])
            for arg in call.args[1:]:
                self._unify(call, result, self._operand_domain(arg))
            return result
        result = domains.for_type(call.checked_type)
        signature = domains.function(tuple(self._operand_domain(a) for a in call.args), result)
        self._unify(call, self.domain(call.op), signature)
        return result

    def _operand_domain(self, arg: Expr) -> DeviceDomain:
        """The domain of an operand of a call. A constant read on two devices is not a
        conflict: constants are planned apart and uploaded to each device that reads them
        (seed 001), so each use of one is free on its own."""
        return self.domains.free() if isinstance(arg, Constant) else self.domain(arg)

    def _constrain(
        self, expr: Any, domain: DeviceDomain, device: VirtualDevice, reason: str
    ) -> None:
        try:
            self.domains.constrain(domain, device, reason)
        except DeviceConflict as conflict:
            raise self._conflict(expr, conflict) from None

    def _unify(self, expr: Any, lhs: DeviceDomain, rhs: DeviceDomain) -> None:
        try:
            self.domains.unify(lhs, rhs)
        except DeviceConflict as conflict:
            raise self._conflict(expr, conflict) from None

    def _conflict(self, expr: Any, conflict: DeviceConflict) -> DevicePlanningError:
        (first, why_first), (second, why_second) = conflict.lhs, conflict.rhs
        return DevicePlanningError(
            f"PlanDevices: `{describe(expr)}` must live on {first} "
            f"({why_first or 'from its uses'}) and on {second} ({why_second or 'from its uses'}), "
            "and nothing between them allows a device_copy",
            span=getattr(expr, "span", None),
            rule="plan_devices.conflict",
            hint="insert a device_copy, or an on_device with constrain_result=False, where the "
            "value may move",
        )

    # --- defaulting ---------------------------------------------------------------------------

    def _default(self, func: Function) -> None:
        # Parents before children (reversed post-order), each in its lexical scope's device; a
        # function without closures is one scope, so it needs no walk of its children.
        domains = self.domains
        nodes = self.nodes[id(func)]
        nested = any(isinstance(n, Function) for n in nodes[:-1])
        domains.default(self.domain(func), self.default_device)
        body_device = domains.device_of(self.domain(func))
        scope_of: dict[int, VirtualDevice] = {}
        for node in reversed(nodes[:-1]):
            lexical = scope_of.get(id(node), body_device) if nested else body_device
            domain = self.domain(node)
            domains.default(domain, lexical)
            if id(node) in self.copy_points:  # keep both sides together where they fit
                domains.attempt(self.domain(node.args[0]), domain)
            if nested:
                inner = domains.device_of(domain) if isinstance(node, Function) else lexical
                for child in expr_children(node):
                    scope_of.setdefault(id(child), inner)


__all__ = ["DeviceAnalysis", "DevicePlanningError", "NeedsTypes", "describe"]
