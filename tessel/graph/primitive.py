"""Primitive functions (`Primitive=1`, one kernel each) in the form LowerTE compiles them:
canonical (tensor parameters only, annotated, constants lifted to parameters) so that equal
functions compare structurally equal, then built into a PrimFunc through each operator's TOPI
lowering and `te.create_prim_func`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tessel import te
from tessel.arith.dims import normalize_dim, shape_symbols
from tessel.graph.expr import Call, Constant, Expr, Function, Tuple, TupleGetItem, Var
from tessel.graph.op import get_op
from tessel.graph.traversal import post_order_exprs
from tessel.graph.ty import TensorType, TupleType, Type
from tessel.graph.type_util import type_str
from tessel.ir.expr import Op
from tessel.ir.expr import Var as PrimVar
from tessel.support.frozen_map import FrozenMap
from tessel.tir.function import PrimFunc
from tessel.transform.errors import LoweringError

MAX_NAME_LENGTH = 80  # TVM's kMaxFuncNameLength: longer fused names are cut


@dataclass(frozen=True)
class Primitive:
    """A primitive function in canonical form and the arguments of one call of it."""

    func: Function  # tensor-typed, annotated parameters; no constants in the body
    args: tuple[Expr, ...]  # one per parameter: the call's arguments, fields, lifted constants


def one_op_primitive(call: Call, args: Sequence[Expr]) -> Primitive:
    """An operator call left unfused (with arguments `args`, typed), as the one-operator
    primitive function it stands for."""
    params = tuple(Var(f"p{k}", type_annotation=_type_of(a)) for k, a in enumerate(args))
    func = Function(params, Call(call.op, params, call.attrs), attrs={"Primitive": 1})
    return canonical(func, args)


def canonical(func: Function, args: Sequence[Expr]) -> Primitive:
    """`func` called on `args` in canonical form: tuple parameters spread into one parameter per
    field, every constant of the body lifted to a parameter, parameters named p0, p1, ..."""
    params: list[Var] = []
    call_args: list[Expr] = []
    env: dict[int, Expr] = {}
    for param, arg in zip(func.params, args, strict=True):
        ty = param.type_annotation or param.checked_type or _type_of(arg)
        if isinstance(ty, TupleType):
            fields = [_new_param(params, f) for f in ty.fields]
            env[id(param)] = Tuple(tuple(fields))
            call_args.extend(_fields_of(arg, len(fields)))
        else:
            env[id(param)] = _new_param(params, ty)
            call_args.append(arg)
    constants: list[Constant] = []
    body = _rebuild(func.body, env, params, constants)
    call_args.extend(constants)
    attrs = FrozenMap({"Primitive": 1})
    return Primitive(Function(tuple(params), body, attrs=attrs), tuple(call_args))


def _type_of(expr: Expr) -> Type:
    ty = expr.checked_type
    if ty is None:
        raise LoweringError(
            "lower_te needs typed expressions", rule="lower_te.untyped", hint="run InferType first"
        )
    return ty


def _new_param(params: list[Var], ty: Type) -> Var:
    if not isinstance(ty, TensorType):
        raise LoweringError(
            f"a primitive function parameter must be a tensor or a tuple of tensors, got "
            f"{type_str(ty)}",
            rule="lower_te.param-type",
        )
    var = Var(f"p{len(params)}", type_annotation=ty)
    params.append(var)
    return var


def _fields_of(arg: Expr, count: int) -> list[Expr]:
    if isinstance(arg, Tuple):
        return list(arg.fields)
    ty = _type_of(arg)
    assert isinstance(ty, TupleType)
    return [TupleGetItem(arg, k, checked_type=ty.fields[k]) for k in range(count)]


def _rebuild(
    body: Expr, env: dict[int, Expr], params: list[Var], constants: list[Constant]
) -> Expr:
    """The body with parameters replaced from `env` and constants lifted to new parameters."""
    for node in post_order_exprs(body):
        if id(node) in env:
            continue
        if isinstance(node, Constant):
            env[id(node)] = _new_param(params, node.tensor_type)
            constants.append(node)
        elif isinstance(node, Call) and isinstance(node.op, Op):
            env[id(node)] = Call(node.op, tuple(env[id(a)] for a in node.args), node.attrs)
        elif isinstance(node, Tuple):
            env[id(node)] = Tuple(tuple(env[id(f)] for f in node.fields))
        elif isinstance(node, TupleGetItem):
            env[id(node)] = TupleGetItem(env[id(node.tuple_value)], node.index)
        else:
            raise LoweringError(
                f"a primitive function may hold operator calls, tuples and constants, not a "
                f"{type(node).__name__}",
                rule="lower_te.primitive-body",
                hint="only dataflow (no let, if, closures or function calls) fuses into a kernel",
            )
    return env[id(body)]


def kernel_name(func: Function) -> str:
    """TVM's name for the kernel of `func`: `fused_` and its operators in order
    (`fused_nn_conv2d_add_nn_relu`)."""
    names = [
        node.op.name.replace(".", "_")
        for node in post_order_exprs(func.body)
        if isinstance(node, Call) and isinstance(node.op, Op)
    ]
    return "_".join(["fused", *names])[:MAX_NAME_LENGTH]


def build_prim_func(func: Function, name: str) -> PrimFunc:
    """The PrimFunc of canonical primitive `func`: its parameters, then its outputs (flattened)."""
    inputs = [
        te.placeholder(p.type_annotation.shape, p.type_annotation.dtype, name=p.name_hint)
        for p in func.params
    ]
    values: dict[int, Any] = {id(p): t for p, t in zip(func.params, inputs, strict=True)}
    for node in post_order_exprs(func.body):
        if id(node) in values:
            continue
        if isinstance(node, Call):
            args = [values[id(a)] for a in node.args]
            values[id(node)] = get_op(node.op.name).lower_to_te(args, node.attrs)
        elif isinstance(node, Tuple):
            values[id(node)] = [values[id(f)] for f in node.fields]
        else:
            assert isinstance(node, TupleGetItem), type(node)
            values[id(node)] = values[id(node.tuple_value)][node.index]
    outputs = _distinct_outputs(_flatten(values[id(func.body)]), set(inputs))
    shapes = [tuple(normalize_dim(d) for d in t.shape) for t in inputs + outputs]
    return te.create_prim_func([*inputs, *outputs, *size_params(shapes)], name=name)


def size_params(shapes: Sequence[Sequence[Any]]) -> list[PrimVar]:
    """The shape symbols that a kernel's buffers of `shapes` (its inputs', then its outputs')
    use: the kernel's scalar parameters, after the buffers, in this order, which the caller
    passes (docs/dynamic_shapes.md). Every symbol, also one that a buffer has as a whole
    extent: then each extent is a parameter or an expression of them, and the model's `main`
    can call the kernel with pointers (tessel.tir.module_calls)."""
    return shape_symbols(shapes)


def _flatten(value: Any) -> list[Any]:
    if isinstance(value, list | tuple):
        return [t for v in value for t in _flatten(v)]
    return [value]


def _distinct_outputs(outputs: list[Any], inputs: set[Any]) -> list[Any]:
    """Outputs as distinct computed tensors: an input or a repeated output becomes a copy, as
    every output needs a buffer of its own."""
    seen: set[Any] = set()
    result = []
    for k, tensor in enumerate(outputs):
        if tensor in inputs or tensor in seen:
            tensor = te.compute(tensor.shape, lambda *i, t=tensor: t(*i), name=f"copy{k}")
        seen.add(tensor)
        result.append(tensor)
    return result


__all__ = [
    "Primitive",
    "build_prim_func",
    "canonical",
    "kernel_name",
    "one_op_primitive",
    "size_params",
]
