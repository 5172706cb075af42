"""The reference evaluator of the graph IR: runs a program operator by operator with each
operator's NumPy reference (closures, let, if, tuples, module functions). The oracle of graph
tests: slow and simple on purpose."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tessel.arith.dims import bind_shape, check_shape, evaluate_dim, mentions_symbols
from tessel.graph.expr import Call, Constant, Expr, Function, If, Let, Tuple, TupleGetItem, Var
from tessel.graph.op import get_op
from tessel.graph.traversal import operands
from tessel.graph.ty import TensorType
from tessel.ir.expr import GlobalVar, Op, PrimExpr
from tessel.ir.module import IRModule
from tessel.support.dtype import DataType
from tessel.support.errors import UserError


class EvaluationError(UserError):
    """A program that cannot run: an unbound variable, a wrong number of arguments, ..."""


@dataclass(eq=False)
class Closure:
    """A function value: the function and the variables it captured."""

    func: Function
    env: dict[Var, Any] = field(default_factory=dict)


@dataclass
class _Frame:
    """One activation: variable values and the values of expressions already evaluated."""

    env: dict[Var, Any]
    memo: dict[int, Any] = field(default_factory=dict)


class _Interpreter:
    def __init__(self, mod: IRModule | None) -> None:
        self.mod = mod
        self.sizes: dict[Any, int] = {}  # shape symbols' sizes in this run

    def call(self, closure: Closure, args: list[Any], where: Any = None) -> Any:
        func = closure.func
        if len(args) != len(func.params):
            raise EvaluationError(
                f"the function takes {len(func.params)} argument(s), got {len(args)}",
                span=getattr(where, "span", None),
            )
        env = dict(closure.env)
        env.update(zip(func.params, args, strict=True))
        return self.eval(func.body, _Frame(env))

    def eval(self, expr: Expr, frame: _Frame) -> Any:
        """The value of `expr`; let and if in tail position loop instead of recursing."""
        while True:
            if isinstance(expr, Let):
                frame.env[expr.var] = self.eval(expr.value, frame)
                expr = expr.body
            elif isinstance(expr, If):
                expr = (
                    expr.true_branch
                    if bool(np.asarray(self.eval(expr.cond, frame)))
                    else expr.false_branch
                )
            else:
                return self._eval_dataflow(expr, frame)

    def _eval_dataflow(self, root: Expr, frame: _Frame) -> Any:
        """Evaluate calls, tuples and projections bottom-up with an explicit stack."""
        stack: list[tuple[Expr, bool]] = [(root, False)]
        while stack:
            expr, ready = stack.pop()
            if id(expr) in frame.memo:
                continue
            children = operands(expr)
            if ready or not children:
                frame.memo[id(expr)] = self._step(expr, frame)
                continue
            stack.append((expr, True))
            stack.extend((c, False) for c in children if id(c) not in frame.memo)
        return frame.memo[id(root)]

    def _value(self, expr: Any, frame: _Frame) -> Any:
        if isinstance(expr, GlobalVar):
            return Closure(self._global(expr))
        return frame.memo[id(expr)]

    def _step(self, expr: Expr, frame: _Frame) -> Any:
        if isinstance(expr, Var):
            if expr not in frame.env:
                raise EvaluationError(f"variable `%{expr.name_hint}` is not bound", span=expr.span)
            return frame.env[expr]
        if isinstance(expr, Constant):
            return expr.data
        if isinstance(expr, Function):
            return Closure(expr, frame.env)
        if isinstance(expr, GlobalVar):  # a module function used as a value
            return Closure(self._global(expr))
        if isinstance(expr, Let | If):
            return self.eval(expr, frame)
        if isinstance(expr, Tuple):
            return tuple(self._value(f, frame) for f in expr.fields)
        if isinstance(expr, TupleGetItem):
            return self._value(expr.tuple_value, frame)[expr.index]
        if isinstance(expr, Call):
            return self._call(expr, frame)
        raise EvaluationError(f"cannot evaluate a {type(expr).__name__}", span=expr.span)

    def _call(self, call: Call, frame: _Frame) -> Any:
        args = [self._value(a, frame) for a in call.args]
        if isinstance(call.op, Op):
            return get_op(call.op.name).evaluate(args, self._sized_attrs(call))
        callee = (
            Closure(self._global(call.op))
            if isinstance(call.op, GlobalVar)
            else self._value(call.op, frame)
        )
        if not isinstance(callee, Closure):
            raise EvaluationError("calling a value that is not a function", span=call.span)
        return self.call(callee, args, call)

    def _sized_attrs(self, call: Call) -> Any:
        """The call's attributes with each symbolic size (a reshape to (batch, seq, 12, 32))
        evaluated at this run's sizes."""
        attrs = call.attrs
        if not any(mentions_symbols(v) for v in attrs.values()):
            return attrs
        try:
            return {k: _sized(v, self.sizes) for k, v in attrs.items()}
        except KeyError as err:
            raise EvaluationError(
                f"{call.op.name}: an attribute mentions the symbol `{err.args[0].name}`, which no "
                "input's shape gives",
                span=call.span,
            ) from None

    def _global(self, gv: GlobalVar) -> Function:
        func = self.mod.functions.get(gv) if self.mod is not None else None
        if not isinstance(func, Function):
            raise EvaluationError(f"no graph function @{gv.name_hint} in the module")
        return func


def _sized(value: Any, sizes: Mapping[Any, int]) -> Any:
    if isinstance(value, tuple):
        return tuple(_sized(v, sizes) for v in value)
    return evaluate_dim(value, sizes) if isinstance(value, PrimExpr) else value


def _as_input(value: Any, param: Var) -> Any:
    """An argument as the evaluator holds it: arrays in the parameter's annotated dtype."""
    if isinstance(value, Closure | tuple):
        return value
    array = np.asarray(value)
    if isinstance(param.type_annotation, TensorType):
        array = array.astype(DataType.of(param.type_annotation.dtype).value_numpy, copy=False)
    return array


def evaluate(
    mod_or_func: IRModule | Expr, *args: Any, params: Mapping[str, Any] | None = None
) -> Any:
    """Run `main` of a module (or a function, or a closed expression) on `args`; `params` binds
    parameters by name (weights), the positional `args` fill the others in order. Returns an
    array, a tuple of values, or a Closure."""
    mod = mod_or_func if isinstance(mod_or_func, IRModule) else None
    root = mod_or_func["main"] if mod is not None else mod_or_func
    interpreter = _Interpreter(mod)
    if not isinstance(root, Function):
        if args or params:
            raise EvaluationError("arguments were given to an expression that is not a function")
        return interpreter.eval(root, _Frame({}))
    named = dict(params or {})
    unknown = set(named) - {p.name_hint for p in root.params}
    if unknown:
        raise EvaluationError(f"`params` names no parameter: {sorted(unknown)}")
    positional = iter(args)
    values = []
    for param in root.params:
        if param.name_hint in named:
            values.append(_as_input(named[param.name_hint], param))
            continue
        try:
            values.append(_as_input(next(positional), param))
        except StopIteration:
            raise EvaluationError(f"no value for parameter `%{param.name_hint}`") from None
    extra = list(positional)
    if extra:
        raise EvaluationError(f"{len(extra)} argument(s) more than the function's parameters")
    interpreter.sizes = check_symbolic_shapes(root.params, values)
    return interpreter.call(Closure(root), values)


def check_symbolic_shapes(params: Sequence[Var], values: Sequence[Any]) -> dict[Any, int]:
    """The sizes of the shape symbols of `params`' types, which `values` (the arguments) must
    agree with: each symbol takes one size in every input (`batch` in two inputs) within its
    bounds, static axes match; else a ValueError naming the input and the axis."""
    declared = [
        (p, v)
        for p, v in zip(params, values, strict=True)
        if isinstance(p.type_annotation, TensorType) and isinstance(v, np.ndarray)
    ]
    sizes: dict[Any, int] = {}
    if all(p.type_annotation.is_static for p, _ in declared):
        return sizes
    for param, value in declared:
        bind_shape(param.type_annotation.shape, value.shape, sizes, f"input `{param.name_hint}`")
    for param, value in declared:
        check_shape(param.type_annotation.shape, value.shape, sizes, f"input `{param.name_hint}`")
    return sizes


__all__ = ["Closure", "EvaluationError", "check_symbolic_shapes", "evaluate"]
