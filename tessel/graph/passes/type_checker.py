"""The constraint generation behind InferType: one type (possibly unknown) per expression,
equalities solved by unification, operator relations solved once their arguments are known."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tessel.graph.call_lowered import is_call_lowered
from tessel.graph.expr import Call, Constant, Expr, Function, If, Let, Tuple, TupleGetItem, Var
from tessel.graph.op import OpDef, OpTypeError, get_op
from tessel.graph.op.op_def import Attrs
from tessel.graph.passes.solver import TypeMismatchError, TypeSolver
from tessel.graph.traversal import post_order_exprs
from tessel.graph.ty import FuncType, IncompleteType, TensorType, TupleType, Type
from tessel.graph.type_util import is_complete, type_str
from tessel.ir.expr import GlobalVar, Op
from tessel.ir.module import IRModule
from tessel.support.errors import UserError
from tessel.tir.function import PrimFunc

BOOL_SCALAR = TensorType((), "bool")


class TypeInferenceError(UserError):
    """A program whose types do not fit together, or cannot be inferred."""


@dataclass
class _OpCall:
    """An operator call waiting for its argument types."""

    call: Call
    op: OpDef
    attrs: Attrs
    arg_types: tuple[Type, ...]
    result: IncompleteType


@dataclass
class _Projection:
    """A TupleGetItem waiting for its tuple's type."""

    node: TupleGetItem
    tuple_type: Type
    result: IncompleteType


def _error(message: str, node: Any, rule: str, hint: str | None = None) -> TypeInferenceError:
    return TypeInferenceError(message, span=getattr(node, "span", None), rule=rule, hint=hint)


def _error_site(arg: Any, call: Call) -> Any:
    """Where an argument's error points: the argument, unless it is a variable (whose span is
    where it is bound, far from this use) or a module function: then the call."""
    return arg if isinstance(arg, Expr) and not isinstance(arg, Var) else call


def _name_of(callee: Any) -> str:
    if isinstance(callee, GlobalVar):
        return f"@{callee.name_hint}"
    if isinstance(callee, Var):
        return f"%{callee.name_hint}"
    return "a function value"


def _buffer_type(buffer: Any, kernel: str, call: Call) -> TensorType:
    """The graph type of a kernel parameter's buffer, which must have a constant shape."""
    shape = [getattr(extent, "value", None) for extent in buffer.shape]
    if any(not isinstance(d, int) for d in shape):
        raise _error(
            f"call_lowered of {kernel}: parameter `{buffer.name}` has a symbolic shape",
            call,
            "graph.kernel-shape",
        )
    return TensorType(tuple(shape), str(buffer.dtype))


class TypeChecker:
    """Types the graph functions of a module (or one expression); `types` maps expression ids
    to their solved types once `solve` has run."""

    def __init__(self, mod: IRModule | None = None) -> None:
        self.solver = TypeSolver()
        self.types: dict[int, Type] = {}
        self.var_types: dict[Var, Type] = {}
        self.globals: dict[GlobalVar, Type] = {}
        self.functions: dict[Any, Function] = {}  # callee (GlobalVar, let-bound Var) -> Function
        self.kernels: dict[GlobalVar, PrimFunc] = {}  # what call_lowered may call
        self.pending: list[_OpCall | _Projection] = []
        self.nodes: list[Expr] = []
        for gv, func in mod.items() if mod is not None else []:
            if isinstance(func, Function):
                self.globals[gv] = self._signature(func)
                self.functions[gv] = func
            elif isinstance(func, PrimFunc):
                self.kernels[gv] = func

    # --- entry points ----------------------------------------------------------------------

    def check(self, root: Expr, expected: Type | None = None) -> Type:
        """Generate and solve what can be solved of `root`'s constraints; its type."""
        nodes = list(post_order_exprs(root))
        lets: dict[int, list[Let]] = {}  # a let's value -> the lets binding it
        for node in nodes:
            if isinstance(node, Let):
                lets.setdefault(id(node.value), []).append(node)
                if isinstance(node.value, Function):
                    self.functions[node.var] = node.value
        for node in nodes:
            self.types[id(node)] = self._type_of(node)
            for let in lets.get(id(node), ()):  # bind the variable before its body is typed
                self._bind_let(let)
        self.nodes.extend(nodes)
        if expected is not None:
            self._unify(
                expected,
                self.types[id(root)],
                root,
                "graph.function-type",
                lambda a, b: f"function has type {b} but its uses need {a}",
            )
        return self.types[id(root)]

    def solve(self) -> None:
        """Solve the waiting operator relations; an error names what stays unknown."""
        progress = True
        while self.pending and progress:
            waiting = self.pending
            self.pending = []
            for item in waiting:
                if not self._try(item):
                    self.pending.append(item)
            progress = len(self.pending) < len(waiting)
        if self.pending:
            raise self._unsolved(self.pending[0])
        for var, ty in self.var_types.items():
            if not is_complete(self.solver.zonk(ty)):
                raise _error(
                    f"cannot infer the type of `%{var.name_hint}` "
                    f"(it is {type_str(self.solver.zonk(ty))})",
                    var,
                    "graph.infer-unknown",
                    hint="annotate the parameter with its type",
                )
        for node in self.nodes:
            self.types[id(node)] = self.solver.zonk(self.types[id(node)])

    # --- per-node typing ---------------------------------------------------------------------

    def _signature(self, func: Function) -> FuncType:
        params = tuple(self._var_type(p) for p in func.params)
        return FuncType(params, func.ret_type or self.solver.fresh())

    def _var_type(self, var: Var) -> Type:
        if var not in self.var_types:
            self.var_types[var] = var.type_annotation or self.solver.fresh()
        return self.var_types[var]

    def _type_of(self, node: Expr) -> Type:
        if isinstance(node, GlobalVar):  # a module function used as a value (`let %g = @f`)
            return self._callee_type(node, node)
        method = getattr(self, f"_type_{type(node).__name__}", None)
        if method is None:
            raise _error(f"InferType cannot type a {type(node).__name__}", node, "graph.infer-node")
        return method(node)

    def _type_Var(self, var: Var) -> Type:  # noqa: N802
        return self._var_type(var)

    def _type_Constant(self, const: Constant) -> Type:  # noqa: N802
        return const.tensor_type

    def _type_Tuple(self, tup: Tuple) -> Type:  # noqa: N802
        return TupleType(tuple(self.types[id(f)] for f in tup.fields))

    def _type_TupleGetItem(self, item: TupleGetItem) -> Type:  # noqa: N802
        projection = _Projection(item, self.types[id(item.tuple_value)], self.solver.fresh())
        if not self._try(projection):
            self.pending.append(projection)
        return projection.result

    def _type_If(self, node: If) -> Type:  # noqa: N802
        self._unify(
            BOOL_SCALAR,
            self.types[id(node.cond)],
            node.cond,
            "graph.if-cond",
            lambda a, b: f"if: the condition must be {a}, got {b}",
        )
        true_type = self.types[id(node.true_branch)]
        self._unify(
            true_type,
            self.types[id(node.false_branch)],
            node,
            "graph.if-branches",
            lambda a, b: f"if: the branches have different types: {a} and {b}",
        )
        return true_type

    def _type_Let(self, let: Let) -> Type:  # noqa: N802
        return self.types[id(let.body)]

    def _bind_let(self, let: Let) -> None:
        self._unify(
            self._var_type(let.var),
            self.types[id(let.value)],
            let,
            "graph.let-type",
            lambda a, b: (
                f"let %{let.var.name_hint}: the variable has type {a} but the value has {b}"
            ),
        )

    def _type_Function(self, func: Function) -> Type:  # noqa: N802
        body = self.types[id(func.body)]
        if func.ret_type is not None:
            self._unify(
                func.ret_type,
                body,
                func,
                "graph.return-type",
                lambda a, b: f"function: the body has type {b} but the return type is {a}",
            )
        params = tuple(self._var_type(p) for p in func.params)
        return FuncType(params, func.ret_type or body)

    def _type_Call(self, call: Call) -> Type:  # noqa: N802
        if isinstance(call.op, Op):
            return self._type_op_call(call)
        if is_call_lowered(call):
            return self._type_lowered_call(call)
        callee_type = self._callee_type(call.op, call)
        arg_types = tuple(self._arg_type(a, call) for a in call.args)
        callee = self.solver.resolve(callee_type)
        name = _name_of(call.op)
        if isinstance(callee, IncompleteType):  # a parameter called as a function: learn its type
            ret = self.solver.fresh()
            if any(self.solver.occurs(callee, a) for a in arg_types):
                raise _error(
                    f"call of {name}: it is applied to itself (directly or inside an argument), "
                    "which no finite type allows",
                    call,
                    "graph.infinite-type",
                )
            self._unify(
                callee,
                FuncType(arg_types, ret),
                call,
                "graph.call-type",
                lambda a, b: (
                    f"call of {name}: a value of type {a} cannot be called with these arguments"
                ),
            )
            return ret
        if not isinstance(callee, FuncType):
            raise _error(
                f"call of {name}: it is not a function but {type_str(self.solver.zonk(callee))}",
                call,
                "graph.call-non-function",
            )
        if len(callee.arg_types) != len(arg_types):
            raise _error(
                f"call of {name}: expects {len(callee.arg_types)} argument(s), "
                f"got {len(arg_types)}",
                call,
                "graph.call-arity",
            )
        params = self._param_names(call.op, len(arg_types))
        for param, expected, arg_type, arg in zip(
            params, callee.arg_types, arg_types, call.args, strict=True
        ):
            self._unify(
                expected,
                arg_type,
                _error_site(arg, call),
                "graph.call-arg",
                lambda a, b, p=param: (
                    f"call of {name}: argument `{p}` has type {b} but the function expects {a}"
                ),
            )
        return callee.ret_type

    def _type_op_call(self, call: Call) -> Type:
        try:
            op = get_op(call.op.name)
            attrs = op.normalize_attrs(call.attrs)
        except UserError as err:
            raise type(err)(err.message, span=call.span, rule=err.rule, hint=err.hint) from err
        if len(call.args) != len(op.arguments):
            raise OpTypeError(
                f"{op.name}: expects {len(op.arguments)} argument(s) ({', '.join(op.arguments)}), "
                f"got {len(call.args)}",
                span=call.span,
                rule="graph.op-arity",
            )
        arg_types = tuple(self._arg_type(a, call) for a in call.args)
        pending = _OpCall(call, op, attrs, arg_types, self.solver.fresh())
        if not self._try(pending):
            self.pending.append(pending)
        return pending.result

    def _type_lowered_call(self, call: Call) -> Type:
        """A kernel takes its inputs then its outputs (destination passing): the arguments must
        have the types of its first parameters' buffers, and the call has the type of the rest."""
        name = f"@{call.op.name_hint}"
        kernel = self.kernels.get(call.op)
        if kernel is None:
            raise _error(
                f"call_lowered of {name}: no PrimFunc of that name in the module",
                call,
                "graph.unknown-kernel",
            )
        buffers = [kernel.buffer_map.get(p) for p in kernel.params]
        if any(b is None for b in buffers) or len(buffers) <= len(call.args):
            raise _error(
                f"call_lowered of {name}: the kernel takes {len(buffers)} parameter(s), so it "
                f"cannot take {len(call.args)} input(s) and at least one output",
                call,
                "graph.call-arity",
            )
        types = [_buffer_type(b, name, call) for b in buffers]
        for k, (expected, arg) in enumerate(zip(types, call.args, strict=False)):
            self._unify(
                expected,
                self._arg_type(arg, call),
                _error_site(arg, call),
                "graph.call-arg",
                lambda a, b, p=buffers[k].name: (
                    f"call_lowered of {name}: argument `{p}` has type {b} "
                    f"but the kernel expects {a}"
                ),
            )
        outputs = types[len(call.args) :]
        return outputs[0] if len(outputs) == 1 else TupleType(tuple(outputs))

    def _callee_type(self, callee: Any, call: Call) -> Type:
        if isinstance(callee, GlobalVar):
            if callee not in self.globals:
                raise _error(
                    f"call of @{callee.name_hint}: no graph function of that name in the module",
                    call,
                    "graph.unknown-function",
                )
            return self.globals[callee]
        return self.types[id(callee)]

    def _arg_type(self, arg: Any, call: Call) -> Type:
        return self._callee_type(arg, call) if isinstance(arg, GlobalVar) else self.types[id(arg)]

    def _param_names(self, callee: Any, count: int) -> list[str]:
        func = self.functions.get(callee)
        if func is not None and len(func.params) == count:
            return [f"%{p.name_hint}" for p in func.params]
        return [str(k) for k in range(count)]

    # --- solving ------------------------------------------------------------------------------

    def _unify(self, expected: Type, actual: Type, node: Any, rule: str, message) -> None:
        try:
            self.solver.unify(expected, actual)
        except TypeMismatchError as err:
            zonk = self.solver.zonk
            text = message(type_str(zonk(expected)), type_str(zonk(actual)))
            if not (err.lhs is expected or err.rhs is actual):
                text += f" ({type_str(zonk(err.lhs))} against {type_str(zonk(err.rhs))})"
            raise _error(text, node, rule) from err

    def _try(self, item: _OpCall | _Projection) -> bool:
        if isinstance(item, _Projection):
            return self._try_projection(item)
        arg_types = [self.solver.zonk(t) for t in item.arg_types]
        if not all(is_complete(t) for t in arg_types):
            return False
        try:
            result = item.op.infer_type(arg_types, item.attrs)
        except OpTypeError as err:
            raise OpTypeError(
                err.message, span=item.call.span, rule=err.rule, hint=err.hint
            ) from err
        self._unify(
            item.result,
            result,
            item.call,
            "graph.op-result",
            lambda a, b: f"{item.op.name}: the result has type {b} but its use needs {a}",
        )
        return True

    def _try_projection(self, item: _Projection) -> bool:
        tuple_type = self.solver.resolve(item.tuple_type)
        if isinstance(tuple_type, IncompleteType):
            return False
        if not isinstance(tuple_type, TupleType):
            raise _error(
                f"tuple index .{item.node.index} of a value of type "
                f"{type_str(self.solver.zonk(tuple_type))}, not a tuple",
                item.node,
                "graph.getitem-type",
            )
        if not 0 <= item.node.index < len(tuple_type.fields):
            raise _error(
                f"tuple index .{item.node.index} is out of range for a tuple of "
                f"{len(tuple_type.fields)} field(s)",
                item.node,
                "graph.getitem-range",
            )
        self.solver.unify(item.result, tuple_type.fields[item.node.index])
        return True

    def _unsolved(self, item: _OpCall | _Projection) -> TypeInferenceError:
        if isinstance(item, _Projection):
            return _error(
                "cannot infer the type of the tuple in a tuple-index expression",
                item.node,
                "graph.infer-unknown",
                hint="annotate the parameter it comes from",
            )
        unknown = next(
            k for k, t in enumerate(item.arg_types) if not is_complete(self.solver.zonk(t))
        )
        name = item.op.arguments[unknown] if unknown < len(item.op.arguments) else str(unknown)
        return _error(
            f"{item.op.name}: cannot infer the type of argument `{name}`",
            item.call,
            "graph.infer-unknown",
            hint="annotate the parameter it comes from",
        )
