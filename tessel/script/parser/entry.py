"""Entry points: the `@T.prim_func` and `@I.ir_module` decorators, and parsing source text."""

from __future__ import annotations

import ast
import inspect
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

from tessel.ir import builders
from tessel.ir.expr import GlobalVar, PrimExpr
from tessel.ir.module import IRModule
from tessel.script.parser import intents
from tessel.script.parser.context import Scopes
from tessel.script.parser.evaluator import ExprEvaluator
from tessel.script.parser.function import FunctionParser
from tessel.script.parser.source import ScriptSource, parse_python, source_of
from tessel.support.frozen_map import FrozenMap, freeze
from tessel.tir.function import PrimFunc
from tessel.tir.module_calls import call_global


def prim_func(func: Callable | None = None, *, private: bool = False, **_options: Any) -> Any:
    """Parse the decorated function into a PrimFunc; `@T.prim_func(private=True)` has no symbol."""
    if func is None:
        caller = _caller_frame()
        return lambda f: _decorate_function(f, caller)
    return _decorate_function(func, _caller_frame())


def ir_module(cls: type) -> IRModule:
    """Parse the decorated class (its `@T.prim_func` methods) into an IRModule."""
    code, source = source_of(cls)
    namespace = {**vars(sys.modules[cls.__module__]), **_locals_of(_caller_frame())}
    definition = _only_definition(parse_python(code, source), source, namespace)
    assert isinstance(definition, ast.ClassDef)
    return parse_module(definition, source, namespace)


def parse_source(text: str, filename: str, namespace: dict[str, Any]) -> PrimFunc | IRModule:
    """Parse text holding one `@T.prim_func` def or one `@I.ir_module` class."""
    source = ScriptSource(text, filename)
    namespace = dict(namespace)
    definition = _only_definition(parse_python(text, source), source, namespace)
    if isinstance(definition, ast.ClassDef):
        return parse_module(definition, source, namespace)
    return parse_function(definition, source, namespace)


def _only_definition(
    stmts: list[ast.stmt], source: ScriptSource, namespace: dict[str, Any]
) -> ast.FunctionDef | ast.ClassDef:
    """The one def or class among `stmts`; imports are skipped, `NAME = value` is evaluated."""
    definitions = [s for s in stmts if isinstance(s, ast.FunctionDef | ast.ClassDef)]
    for stmt in stmts:
        if isinstance(stmt, ast.Assign) and _is_constant_assignment(stmt):
            name = stmt.targets[0].id  # type: ignore[attr-defined]  # checked: one Name target
            namespace[name] = _evaluator(source, namespace).eval_expr(stmt.value)
        elif not isinstance(stmt, _TOP_LEVEL):
            raise source.error(stmt, "expected a @T.prim_func def or an @I.ir_module class here")
    if len(definitions) == 1:
        return definitions[0]
    where = definitions[1] if definitions else (stmts or [ast.Pass(lineno=1, col_offset=0)])[0]
    count = len(definitions)
    message = f"expected one @T.prim_func or @I.ir_module definition, found {count}"
    raise source.error(where, message)


_TOP_LEVEL = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef, ast.Expr)


def _is_constant_assignment(stmt: ast.Assign) -> bool:
    return len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)


def parse_function(
    node: ast.FunctionDef, source: ScriptSource, namespace: dict[str, Any]
) -> PrimFunc:
    """A PrimFunc from a def decorated with @T.prim_func."""
    private = _prim_func_options(node, source, namespace)
    return FunctionParser(source, namespace).parse_prim_func(node, private)


_MODULE_BODY = "an @I.ir_module class holds @T.prim_func defs and I.module_attrs(...)"


def parse_module(node: ast.ClassDef, source: ScriptSource, namespace: dict[str, Any]) -> IRModule:
    """An IRModule from a class decorated with @I.ir_module."""
    _check_decorator(node, source, namespace, ir_module, "@I.ir_module")
    functions: dict[GlobalVar, PrimFunc] = {}
    attrs: dict[str, Any] = {}
    # Every function's GlobalVar exists before any body is parsed, so `Module.kernel(...)`
    # may call a function defined further down (TVM's spelling, named by the class).
    global_vars = {s.name: GlobalVar(s.name) for s in node.body if isinstance(s, ast.FunctionDef)}
    namespace = {**namespace, node.name: ModuleFunctions(node.name, global_vars)}
    for stmt in node.body:
        if isinstance(stmt, ast.FunctionDef):
            functions[global_vars[stmt.name]] = parse_function(stmt, source, namespace)
        elif isinstance(stmt, ast.Expr) and not isinstance(stmt.value, ast.Constant):
            value = _evaluator(source, namespace).eval_expr(stmt.value)
            if not (isinstance(value, intents.AttrsIntent) and value.target == "module"):
                raise source.error(stmt, _MODULE_BODY)
            attrs.update(value.attrs)
        elif not isinstance(stmt, ast.Expr | ast.Pass):
            raise source.error(stmt, _MODULE_BODY)
    return IRModule(FrozenMap(functions), freeze(attrs), span=source.span(node))


class ModuleFunctions:
    """The class name inside an `@I.ir_module` body: `Module.kernel(A.data, n)` builds a call of
    the module function `kernel` (tessel.tir.module_calls)."""

    def __init__(self, name: str, global_vars: dict[str, GlobalVar]) -> None:
        self._name, self._global_vars = name, global_vars

    def __getattr__(self, attr: str) -> Callable[..., PrimExpr]:
        if attr.startswith("_") or attr not in self._global_vars:
            raise AttributeError(attr)
        gv = self._global_vars[attr]
        return lambda *args: call_global(gv, *(builders.convert(a) for a in args))

    def __dir__(self) -> list[str]:
        return list(self._global_vars)


def _prim_func_options(
    node: ast.FunctionDef, source: ScriptSource, namespace: dict[str, Any]
) -> bool:
    """Check the def is decorated with @T.prim_func; return its `private` option."""
    decorator = _check_decorator(node, source, namespace, prim_func, "@T.prim_func")
    if not isinstance(decorator, ast.Call):
        return False
    evaluator = _evaluator(source, namespace)
    options = {k.arg: evaluator.eval_expr(k.value) for k in decorator.keywords}
    return bool(options.get("private", False))


def _check_decorator(
    node: ast.FunctionDef | ast.ClassDef,
    source: ScriptSource,
    namespace: dict[str, Any],
    expected: Any,
    spelling: str,
) -> ast.expr:
    evaluator = _evaluator(source, namespace)
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if evaluator.eval_expr(target) is expected:
            return decorator
    raise source.error(node, f"`{node.name}` must be decorated with {spelling}")


def _evaluator(source: ScriptSource, namespace: dict[str, Any]) -> ExprEvaluator:
    evaluator = ExprEvaluator()
    evaluator.source, evaluator.scopes = source, Scopes(namespace)
    return evaluator


def _decorate_function(func: Callable, caller: FrameType | None) -> Any:
    if _defined_in_class(func):
        return func  # the enclosing @I.ir_module parses it with the whole class
    code, source = source_of(func)
    namespace = {**func.__globals__, **_locals_of(caller), **_closure_of(func)}
    definition = _only_definition(parse_python(code, source), source, namespace)
    assert isinstance(definition, ast.FunctionDef)
    return parse_function(definition, source, namespace)


def _defined_in_class(func: Callable) -> bool:
    parts = func.__qualname__.split(".")
    return len(parts) > 1 and parts[-2] != "<locals>"


def _caller_frame() -> FrameType | None:
    frame = inspect.currentframe()
    return frame.f_back.f_back if frame is not None and frame.f_back is not None else None


def _locals_of(frame: FrameType | None) -> dict[str, Any]:
    return dict(frame.f_locals) if frame is not None else {}


def _closure_of(func: Callable) -> dict[str, Any]:
    code, cells = func.__code__, func.__closure__ or ()
    values = {}
    for name, cell in zip(code.co_freevars, cells, strict=True):
        try:
            values[name] = cell.cell_contents
        except ValueError:  # a cell not yet filled
            continue
    return values
