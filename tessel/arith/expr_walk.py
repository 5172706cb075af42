"""Pieces every arithmetic analysis shares: rule tables looked up along the class hierarchy, the
if_then_else builtin recognised by name, and an iterative children-first walk."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from tessel.ir.expr import Call, PrimExpr

T = TypeVar("T")
R = TypeVar("R")

IF_THEN_ELSE = "tir.if_then_else"  # matched by name: the Op lives in tir, above arith

_RESOLVED: dict[tuple[int, type], Any] = {}


def lookup_by_mro(table: dict[type, T], cls: type) -> T | None:
    """The entry for `cls` or its nearest base class (SizeVar uses Var's, EQ uses CmpOp's).

    Resolutions are cached per (table, class): the tables are module constants.
    """
    key = (id(table), cls)
    if key not in _RESOLVED:
        _RESOLVED[key] = next((table[k] for k in cls.__mro__ if k in table), None)
    return _RESOLVED[key]


def is_if_then_else(node: PrimExpr) -> bool:
    """`node` is a call of the `T.if_then_else` builtin."""
    return (
        isinstance(node, Call)
        and getattr(node.op, "name", None) == IF_THEN_ELSE
        and len(node.args) == 3
    )


def walk_children_first(
    root: PrimExpr,
    memo: dict[int, R],
    operands: Callable[[PrimExpr], tuple[PrimExpr, ...]],
    finish: Callable[[PrimExpr], R],
) -> R:
    """`finish(node)` for every node below `root` whose result is not in `memo`, each after its
    operands (so `finish` reads theirs from `memo`); without recursion, for deep expressions."""
    stack = [root]
    while stack:
        node = stack[-1]
        if id(node) in memo:
            stack.pop()
            continue
        pending = [op for op in operands(node) if id(op) not in memo]
        if pending:
            stack.extend(pending)
            continue
        stack.pop()
        memo[id(node)] = finish(node)
    return memo[id(root)]
