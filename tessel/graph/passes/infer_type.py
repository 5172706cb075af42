"""InferType: every graph expression gets its `checked_type`, solved by unification, so that
unannotated parameters (`fn (%g) {...}`) are typed from their uses."""

from __future__ import annotations

import contextlib
import weakref
from dataclasses import dataclass, fields
from typing import ClassVar

from tessel.graph.expr import Expr, Function, with_type
from tessel.graph.passes.type_checker import TypeChecker, TypeInferenceError
from tessel.graph.traversal import expr_children, post_order_exprs
from tessel.graph.ty import Type
from tessel.graph.type_util import type_equal
from tessel.ir.expr import GlobalVar
from tessel.ir.module import IRModule
from tessel.ir.node import with_changes
from tessel.ir.transform import Pass, PassContext
from tessel.support.frozen_map import FrozenMap


def infer_module_types(mod: IRModule) -> TypeChecker:
    """Type every graph function of `mod`; the checker's `types` maps expression ids to types."""
    checker = TypeChecker(mod)
    for gv, func in mod.items():
        if isinstance(func, Function):
            checker.check(func, expected=checker.globals[gv])
    checker.solve()
    return checker


def infer_expr_types(expr: Expr, mod: IRModule | None = None) -> TypeChecker:
    """Type one expression (its free variables typed by their annotations or their uses)."""
    checker = infer_module_types(mod) if mod is not None else TypeChecker()
    checker.check(expr)
    checker.solve()
    return checker


def annotate(root: Expr, types: dict[int, Type]) -> Expr:
    """`root` rebuilt with `checked_type` from `types` on every expression; shared
    sub-expressions and variables stay shared, and unchanged nodes are the same objects."""
    rebuilt: dict[int, Expr] = {}
    for node in post_order_exprs(root):
        if not isinstance(node, Expr):  # a GlobalVar used as a value keeps its identity
            rebuilt[id(node)] = node
            continue
        rebuilt[id(node)] = _with_children(node, rebuilt, types[id(node)])
    return rebuilt[id(root)]


def _with_children(node: Expr, rebuilt: dict[int, Expr], ty: Type) -> Expr:
    changes = {}
    children = {id(c) for c in expr_children(node)}
    for item in fields(node):
        name = item.name
        if name in ("checked_type", "span"):
            continue
        value = getattr(node, name)
        if isinstance(value, Expr | GlobalVar) and id(value) in children:
            changes[name] = rebuilt[id(value)]
        elif isinstance(value, tuple) and any(isinstance(v, Expr) for v in value):
            new = tuple(rebuilt.get(id(v), v) if isinstance(v, Expr) else v for v in value)
            if any(a is not b for a, b in zip(new, value, strict=True)):
                changes[name] = new
    updated = with_changes(node, **changes) if changes else node
    if updated is node and type_equal(node.checked_type, ty):
        return node
    return with_type(updated, ty)


@dataclass(frozen=True)
class InferType(Pass):
    """Fill in `checked_type` everywhere in the graph functions of a module (PrimFuncs are left
    alone); errors are TypeInferenceError / OpTypeError naming the operator and argument."""

    name: ClassVar[str] = "infer_type"

    def transform_module(self, mod: IRModule, ctx: PassContext) -> IRModule:
        if mod in _TYPED:
            return mod
        checker = infer_module_types(mod)
        functions = {
            gv: annotate(func, checker.types) if isinstance(func, Function) else func
            for gv, func in mod.items()
        }
        if not all(functions[gv] is func for gv, func in mod.items()):
            mod = with_changes(mod, functions=FrozenMap(functions))
        with contextlib.suppress(TypeError):  # Python 3.10: no weak reference to a module
            _TYPED.add(mod)
        return mod


# Modules InferType gave back (or found typed), by identity: a module is immutable, so it stays
# typed, and the next pass's typing of it (every graph rewrite types its input, then its
# result) is free. Checking them again was two fifths of a warm compile of EfficientNet-B0.
_TYPED: weakref.WeakSet[IRModule] = weakref.WeakSet()


__all__ = [
    "InferType",
    "TypeInferenceError",
    "annotate",
    "infer_expr_types",
    "infer_module_types",
]
