"""Evaluation of script expressions: names, calls and operators, without running the function.

Each AST node is evaluated by `_eval_<NodeClass>`. Any error raised while building a node
(`IRTypeError`, a `T.*` helper's `UserError`, a Python `TypeError` ...) is re-raised as a
ParseError pointing at that node, and an `ArgumentError` at the argument it names. An
`AttributeError`, `KeyError` or `IndexError` is a Tessel bug (a script's own subscripts are
checked where they are evaluated): it becomes an InternalError naming the location.
"""

from __future__ import annotations

import ast
import builtins
import difflib
import inspect
from typing import Any

from tessel.ir import builders
from tessel.ir.expr import Call, PrimExpr
from tessel.script.errors import ArgumentError, ParseError
from tessel.script.parser import intents, operators
from tessel.script.parser.context import Scopes
from tessel.script.parser.source import ScriptSource
from tessel.support.errors import UserError
from tessel.tir import builtin
from tessel.tir.buffer import Buffer, BufferLoad
from tessel.tir.stmt import BufferStore, ForKind

# Python exceptions a malformed script can provoke while building a node.
BUILD_ERRORS = (UserError, TypeError, ValueError, ArithmeticError)
# Exceptions that only a bug in the parser or the IR raises (reported as InternalError).
BUG_ERRORS = (AttributeError, KeyError, IndexError)


def range_loop(
    start: Any, stop: Any = None, step: Any = None, *, annotations: Any = None
) -> intents.LoopIntent:
    """Python's `range` in a script: a serial loop (step 1 only), with optional annotations."""
    if step not in (None, 1):
        raise ArgumentError("range() in a script supports step 1 only", 2)
    return intents.make_loop("range", ForKind.SERIAL, start, stop, annotations=annotations)


# Python builtins a script may use; anything else must come from the enclosing scope.
SCRIPT_BUILTINS: dict[str, Any] = {
    "range": range_loop,
    **{
        name: getattr(builtins, name)
        for name in (
            "len",
            "int",
            "float",
            "str",
            "bool",
            "tuple",
            "list",
            "dict",
            "zip",
            "enumerate",
            "isinstance",
            "print",
        )
    },
}


def index_lanes(indices: tuple[PrimExpr, ...]) -> int:
    """The lane count of a (possibly vector) access."""
    return builtins.max([1, *(i.dtype.lanes for i in indices)])


def value_for_store(buffer: Buffer, value: Any, lanes: int = 1) -> PrimExpr:
    """A stored value: Python numbers become constants of the buffer's dtype (as does T.undef());
    an expression of another dtype is cast to it."""
    dtype = buffer.dtype.element.with_lanes(lanes * buffer.dtype.lanes)
    if isinstance(value, Call) and value.op is builtin.undef_op:
        return builtin.undef(dtype)
    if isinstance(value, PrimExpr):
        # As TVM's IR builder does: a value of another type is cast to the buffer's dtype.
        return builders.cast(value, dtype.element.with_lanes(value.dtype.lanes))
    if isinstance(value, int | float | bool):
        return builders.const(value, dtype)
    raise TypeError(f"cannot store {value!r} into buffer `{buffer.name}`")


def _converted(indices: Any) -> tuple[PrimExpr, ...]:
    if not isinstance(indices, list | tuple):
        indices = (indices,)
    return tuple(builders.convert(i) for i in indices)


class _BufferMethods:
    """`A.vload(...)` and `A.vstore(...)`, which Buffer itself does not define."""

    def __init__(self, buffer: Buffer) -> None:
        self.buffer = buffer

    def vload(self, indices: Any, dtype: Any = None, predicate: Any = None) -> BufferLoad:
        """A (vector) load with an optional lane mask."""
        mask = None if predicate is None else builders.convert(predicate)
        return BufferLoad(self.buffer, _converted(indices), mask)

    def access_ptr(
        self,
        access_mask: Any,
        ptr_type: Any = "handle",
        content_lanes: Any = 1,
        offset: Any = 0,
        extent: Any = None,
    ) -> PrimExpr:
        """TVM's `A.access_ptr("r")`: a tvm_access_ptr call over the buffer's elements."""
        return builtin.buffer_access_ptr(self.buffer, access_mask, offset, extent)

    def vstore(self, indices: Any, value: Any, predicate: Any = None) -> BufferStore:
        """A (vector) store with an optional lane mask."""
        index_exprs = _converted(indices)
        stored = value_for_store(self.buffer, value, index_lanes(index_exprs))
        mask = None if predicate is None else builders.convert(predicate)
        return BufferStore(self.buffer, stored, index_exprs, mask)


def error_message(err: Exception) -> str:
    """The message of an error raised while building a node."""
    if isinstance(err, UserError):
        return err.message
    if isinstance(err, KeyError):
        return f"no key {err}"
    return str(err)


def too_deep(what: str) -> str:
    """The message for a RecursionError while parsing `what`."""
    return f"{what} is nested too deeply for the parser (Python's recursion limit was reached)"


class ExprEvaluator:
    """Evaluates Python expressions of a script to Python values and IR."""

    source: ScriptSource
    scopes: Scopes

    def eval_expr(self, node: ast.expr) -> Any:
        """The value of `node`; a ParseError at `node` if it cannot be built."""
        method = getattr(self, f"_eval_{type(node).__name__}", None)
        if method is None:
            raise self.source.error(node, f"{_describe(node)} is not supported in TVMScript")
        try:
            return method(node)
        except ParseError:
            raise
        except BUILD_ERRORS as err:
            raise self.source.error(node, error_message(err), getattr(err, "hint", None)) from err
        except BUG_ERRORS as err:
            raise self.source.internal_error(node, err) from err

    def eval_args(self, nodes: list[ast.expr], lambdas: bool = False) -> list[Any]:
        """Evaluate positional arguments (with `*args` spread); with `lambdas`, a lambda among
        them (a call's argument, as in T.comm_reducer) becomes a ScriptLambda."""
        values: list[Any] = []
        for node in nodes:
            if lambdas and isinstance(node, ast.Lambda):
                values.append(self.script_lambda(node))
            elif isinstance(node, ast.Starred):
                values.extend(self.eval_expr(node.value))
            else:
                values.append(self.eval_expr(node))
        return values

    def _eval_Constant(self, node: ast.Constant) -> Any:  # noqa: N802  (ast class names)
        return node.value

    def _eval_Name(self, node: ast.Name) -> Any:  # noqa: N802
        found, value = self.scopes.lookup(node.id)
        if found:
            return value
        if node.id in SCRIPT_BUILTINS:
            return SCRIPT_BUILTINS[node.id]
        close = difflib.get_close_matches(node.id, self.scopes.names(), n=3)
        hint = f"did you mean {', '.join(f'`{c}`' for c in close)}?" if close else None
        raise self.source.error(node, f"name `{node.id}` is not defined", hint)

    def _eval_Attribute(self, node: ast.Attribute) -> Any:  # noqa: N802
        base = self.eval_expr(node.value)
        if isinstance(base, Buffer) and node.attr in ("vload", "vstore", "access_ptr"):
            return getattr(_BufferMethods(base), node.attr)
        if hasattr(base, node.attr):
            return getattr(base, node.attr)
        owner = ast.unparse(node.value)
        public = [n for n in dir(base) if not n.startswith("_")]
        close = difflib.get_close_matches(node.attr, public, n=3)
        hint = f"did you mean {', '.join(f'`{owner}.{c}`' for c in close)}?" if close else None
        raise self.source.error(node, f"`{owner}` has no attribute `{node.attr}`", hint)

    def _eval_Subscript(self, node: ast.Subscript) -> Any:  # noqa: N802
        base = self.eval_expr(node.value)
        index = self.eval_expr(node.slice)
        if isinstance(base, Buffer):
            indices = index if isinstance(index, tuple) else (index,)
            if any(isinstance(i, slice) for i in indices):
                return base[indices]
            return BufferLoad(base, _converted(indices), span=self.source.span(node))
        try:
            return base[index]
        except (KeyError, IndexError) as err:  # the script's own subscript of a Python value
            what = ast.unparse(node)
            raise self.source.error(node, f"`{what}` fails: {error_message(err)}") from err

    def _eval_Slice(self, node: ast.Slice) -> slice:  # noqa: N802
        parts = (node.lower, node.upper, node.step)
        return slice(*(None if p is None else self.eval_expr(p) for p in parts))

    def _eval_Tuple(self, node: ast.Tuple) -> tuple:  # noqa: N802
        return tuple(self.eval_args(node.elts))

    def _eval_List(self, node: ast.List) -> list:  # noqa: N802
        return self.eval_args(node.elts)

    def _eval_Dict(self, node: ast.Dict) -> dict:  # noqa: N802
        result: dict[Any, Any] = {}
        for key, value in zip(node.keys, node.values, strict=True):
            if key is None:
                result.update(self.eval_expr(value))
            else:
                result[self.eval_expr(key)] = self.eval_expr(value)
        return result

    def _eval_BinOp(self, node: ast.BinOp) -> Any:  # noqa: N802
        # `a + b + c + ...` nests to the left: walk the chain iteratively, so a long sum does
        # not exhaust Python's recursion limit.
        chain = [node]
        while isinstance(chain[-1].left, ast.BinOp):
            chain.append(chain[-1].left)  # type: ignore[arg-type]  # checked: a BinOp
        value = self.eval_expr(chain[-1].left)
        for link in reversed(chain):
            right = self.eval_expr(link.right)
            value = self._apply_binary(link, value, right)
        return value

    def _apply_binary(self, node: ast.BinOp, left: Any, right: Any) -> Any:
        """`left <op> right`; an error raised building it is reported at `node`."""
        try:
            return operators.apply_binary(node.op, left, right)
        except ParseError:
            raise
        except BUILD_ERRORS as err:
            raise self.source.error(node, error_message(err), getattr(err, "hint", None)) from err

    def _eval_UnaryOp(self, node: ast.UnaryOp) -> Any:  # noqa: N802
        return operators.apply_unary(node.op, self.eval_expr(node.operand))

    def _eval_BoolOp(self, node: ast.BoolOp) -> Any:  # noqa: N802
        combine = operators.combine_and if isinstance(node.op, ast.And) else operators.combine_or
        result = self.eval_expr(node.values[0])
        for operand in node.values[1:]:
            result = combine(result, self.eval_expr(operand))
        return result

    def _eval_Compare(self, node: ast.Compare) -> Any:  # noqa: N802
        # `0 <= i < n` is `0 <= i and i < n`, each operand evaluated once
        left = self.eval_expr(node.left)
        result: Any = True
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = self.eval_expr(right_node)
            result = operators.combine_and(result, operators.apply_compare(op, left, right))
            left = right
        return result

    def _eval_IfExp(self, node: ast.IfExp) -> Any:  # noqa: N802
        condition = self.eval_expr(node.test)
        if isinstance(condition, PrimExpr):
            true_value, false_value = self.eval_expr(node.body), self.eval_expr(node.orelse)
            return builders.select(condition, true_value, false_value)
        return self.eval_expr(node.body if condition else node.orelse)

    def script_lambda(self, node: ast.Lambda) -> ScriptLambda:
        """A lambda passed to a call (elsewhere a lambda is not part of the dialect)."""
        args = node.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.defaults or args.posonlyargs:
            message = "a lambda here takes plain parameters only (as in T.comm_reducer)"
            raise self.source.error(node, message)
        return ScriptLambda(self, tuple(a.arg for a in args.args), node.body)

    def _eval_Call(self, node: ast.Call) -> Any:  # noqa: N802
        func = self.eval_expr(node.func)
        args = self.eval_args(node.args, lambdas=True)
        kwargs: dict[str, Any] = {}
        for keyword in node.keywords:
            value = self.eval_expr(keyword.value)
            if keyword.arg is None:
                kwargs.update(value)
            else:
                kwargs[keyword.arg] = value
        if not callable(func):
            raise self.source.error(node.func, f"`{ast.unparse(node.func)}` is not callable")
        try:
            return func(*args, **kwargs)
        except ArgumentError as err:
            at = _argument_node(node, func, err.argument)
            raise self.source.error(at, err.message, err.hint) from err


class ScriptLambda:
    """A script `lambda` (the combiner of T.comm_reducer): called with IR values, it evaluates
    its body with its parameters bound to them; `parameter_names` name the variables a caller
    makes for it."""

    def __init__(
        self, evaluator: ExprEvaluator, parameter_names: tuple[str, ...], body: ast.expr
    ) -> None:
        self.evaluator, self.parameter_names, self.body = evaluator, parameter_names, body

    def __call__(self, *values: Any) -> Any:
        """The body's value with the parameters bound to `values`."""
        if len(values) != len(self.parameter_names):
            raise ArgumentError(
                f"the lambda takes {len(self.parameter_names)} arguments, got {len(values)}", 0
            )
        scopes = self.evaluator.scopes
        scopes.push()
        try:
            for name, value in zip(self.parameter_names, values, strict=True):
                scopes.bind(name, value)
            return self.evaluator.eval_expr(self.body)
        finally:
            scopes.pop()


def _argument_node(node: ast.Call, func: Any, argument: int | str) -> ast.AST:
    """The AST node of the argument an ArgumentError names (the call if it cannot be found)."""
    if isinstance(argument, str):
        for keyword in node.keywords:
            if keyword.arg == argument:
                return keyword.value
        try:
            names = list(inspect.signature(func).parameters)
        except (TypeError, ValueError):
            return node
        if argument not in names:
            return node
        argument = names.index(argument)
    if any(isinstance(a, ast.Starred) for a in node.args[: argument + 1]):
        return node
    return node.args[argument] if argument < len(node.args) else node


def _describe(node: ast.AST) -> str:
    names = {
        "Lambda": "a lambda",
        "ListComp": "a list comprehension",
        "JoinedStr": "an f-string",
        "GeneratorExp": "a generator expression",
        "DictComp": "a dict comprehension",
        "SetComp": "a set comprehension",
        "NamedExpr": "`:=`",
        "Await": "await",
        "Yield": "yield",
        "YieldFrom": "yield from",
        "Set": "a set literal",
    }
    return names.get(type(node).__name__, f"`{type(node).__name__}`")
