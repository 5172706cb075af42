"""LowerOpaqueBlock: remove the remaining (opaque) blocks, leaving loop-level code (TVM's pass
of that name).

Each opaque block becomes the code it stands for, where it stood:
- a `T.where` predicate becomes an `IfThenElse` around the block's body;
- `alloc_buffers` become `Allocate` + `DeclBuffer` (the root block's buffers thereby live for the
  whole function).

Annotations, which only loops keep after this pass:
- a `pragma_*` annotation (on a loop or a block) whose value is an expression or a string
  becomes `AttrStmt(node, key, value)`, as TVM's legacy schedules left them for later passes
  and code generation. For a loop, `node` is the loop variable and the AttrStmt wraps the loop's
  body, where that variable is in scope (TVM wraps the loop itself, with its variable used
  before the loop defines it, which the script dialect cannot print back); code generation
  applies such a pragma to the loop around it. For a block, `node` is the block's name and the
  AttrStmt wraps the block's code. Several pragmas nest in key order, the first outermost;
- other loop annotations stay on the `For`, whatever their value;
- a `pragma_*` whose value is not an expression (a list, a dict) cannot be an `AttrStmt` value.
  If its key is in `keep_on_loop` (a key some later pass reads from the loop), it stays on the
  `For`; otherwise it is dropped;
- other block annotations are dropped: they are schedule-level hints, and no pass after this
  one reads them (TVM drops them too).

Nothing is dropped silently and nothing fails: each dropped annotation is listed, with where it
was and why it went, in the function attribute `lowering.dropped_annotations` (a tuple of
strings), which the printed IR shows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from tessel.ir import builders
from tessel.ir.expr import PrimExpr, StringImm
from tessel.ir.functor import Mutator
from tessel.ir.node import Node, with_changes
from tessel.ir.transform import PassContext
from tessel.support.dtype import bool_
from tessel.support.errors import IRTypeError
from tessel.support.frozen_map import FrozenMap
from tessel.tir.block import Block, BlockRealize
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import Allocate, AttrStmt, DeclBuffer, For, IfThenElse, Stmt
from tessel.transform.buffer_layout import flat_extent
from tessel.transform.errors import LoweringError
from tessel.transform.prim_func_pass import PrimFuncPass

DROPPED_ANNOTATIONS_ATTR = "lowering.dropped_annotations"
PRAGMA_PREFIX = "pragma_"

_TRUE = builders.const(True, bool_)
_NOT_AN_ATTR_VALUE = (
    "a pragma becomes an AttrStmt, whose value must be an expression or a string, and no pass "
    "after block lowering reads this key"
)
_BLOCK_HINT = "block annotations are schedule hints; no pass after block lowering reads them"


@dataclass(frozen=True)
class LowerOpaqueBlock(PrimFuncPass):
    """Replace every opaque block by its code; `pragma_*` annotations become AttrStmts.

    `keep_on_loop` names the `pragma_*` keys whose non-expression values a later pass reads
    from the loop, so they stay on the `For` instead of being dropped.
    """

    name: ClassVar[str] = "lower_opaque_block"
    keep_on_loop: frozenset[str] = frozenset()

    def transform(self, func: PrimFunc, ctx: PassContext) -> PrimFunc:
        lowerer = _OpaqueBlockLowerer(self.keep_on_loop)
        body = lowerer.visit(func.body)
        return with_changes(func, body=body, attrs=_with_dropped(func.attrs, lowerer.dropped))


class _OpaqueBlockLowerer(Mutator):
    def __init__(self, keep_on_loop: frozenset[str]) -> None:
        super().__init__()
        self.keep_on_loop = keep_on_loop
        self.dropped: list[str] = []  # "where: key=value: why", in program order

    def visit_BlockRealize(self, realize: BlockRealize) -> Node:
        return self._lower(realize.block, realize.predicate)

    def visit_Block(self, block: Block) -> Node:
        # Only a block without a BlockRealize (a bare root block) arrives here.
        return self._lower(block, _TRUE)

    def _lower(self, block: Block, predicate: PrimExpr) -> Stmt:
        _check_opaque(block)
        _, pragmas = self._split(block.annotations, f"block `{block.name_hint}`", on_loop=False)
        body = self.visit(block.body)
        assert isinstance(body, Stmt)
        if not builders.is_const_int(predicate, 1):
            body = IfThenElse(predicate, body)  # an expression holds no blocks to lower
        for buffer in reversed(block.alloc_buffers):
            declared = DeclBuffer(buffer, body)
            # Every element the buffer reaches past its data pointer, elem_offset included.
            body = Allocate(buffer.data, buffer.dtype, (flat_extent(buffer),), _TRUE, declared)
        return _wrap_in_attrs(block.name_hint, pragmas, body)

    def visit_For(self, loop: For) -> Node:
        if not any(key.startswith(PRAGMA_PREFIX) for key in loop.annotations):
            return self.generic_visit(loop)
        # Split before visiting the body, so dropped annotations are recorded outermost first.
        kept, pragmas = self._split(loop.annotations, f"loop `{loop.loop_var.name}`", on_loop=True)
        visited = self.generic_visit(loop)
        assert isinstance(visited, For)
        body = _wrap_in_attrs(visited.loop_var, pragmas, visited.body)
        return with_changes(visited, annotations=FrozenMap(kept), body=body)

    def _split(
        self, annotations: FrozenMap[str, Any], where: str, *, on_loop: bool
    ) -> tuple[dict[str, Any], list[tuple[str, PrimExpr]]]:
        """The annotations kept on the loop and the pragmas that become AttrStmts; the rest
        is recorded as dropped."""
        kept: dict[str, Any] = {}
        pragmas = []
        for key, value in annotations.items():
            is_pragma = key.startswith(PRAGMA_PREFIX)
            expr = _attr_value(value) if is_pragma else None
            if expr is not None:
                pragmas.append((key, expr))
            elif on_loop and (not is_pragma or key in self.keep_on_loop):
                kept[key] = value
            else:
                why = _NOT_AN_ATTR_VALUE if is_pragma else _BLOCK_HINT
                self.dropped.append(f"{where}: {key}={_show(value)}: {why}")
        return kept, pragmas


def _check_opaque(block: Block) -> None:
    """The earlier block passes have run: no iterators, no init, no match_buffers are left."""
    missing = None
    if block.iter_vars:
        missing = ("has iterators", "ConvertBlocksToOpaque", "not-opaque")
    elif block.init is not None:
        missing = ("has an init", "LowerInitBlock", "init-not-lowered")
    elif block.match_buffers:
        missing = ("has match_buffers", "LowerMatchBuffer", "match-buffer-not-lowered")
    if missing is None:
        return
    what, earlier, rule = missing
    raise LoweringError(
        f"block `{block.name_hint}` still {what}; lower_opaque_block removes only opaque blocks",
        rule=f"lower_opaque_block.{rule}",
        hint=f"run {earlier} first (tessel.transform.lower runs every block pass in order)",
    )


def _attr_value(value: Any) -> PrimExpr | None:
    """`value` as an AttrStmt value (an expression; strings as StringImm), or None if it has
    no such form (a list, a dict, an integer too large for int64)."""
    if isinstance(value, PrimExpr):
        return value
    if isinstance(value, str):
        return StringImm(value)
    if isinstance(value, bool | int | float):
        try:
            return builders.const(value)
        except (IRTypeError, OverflowError):
            return None
    return None


def _wrap_in_attrs(node: Any, pragmas: list[tuple[str, PrimExpr]], body: Stmt) -> Stmt:
    """`body` inside one AttrStmt per pragma, sorted by key with the first outermost (as TVM)."""
    for key, value in sorted(pragmas, key=lambda pragma: pragma[0], reverse=True):
        body = AttrStmt(node, key, value, body)
    return body


def _show(value: Any) -> str:
    """An annotation value as the script would write it (lists, not the frozen tuples)."""
    if isinstance(value, tuple):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    if isinstance(value, FrozenMap):
        return "{" + ", ".join(f"{_show(k)}: {_show(v)}" for k, v in value.items()) + "}"
    if isinstance(value, str):
        return repr(value)
    return str(value)


def _with_dropped(attrs: FrozenMap[str, Any], dropped: list[str]) -> FrozenMap[str, Any]:
    """`attrs` with `dropped` appended to the record of dropped annotations (the same map when
    nothing was dropped)."""
    if not dropped:
        return attrs
    return attrs.set(DROPPED_ANNOTATIONS_ATTR, (*attrs.get(DROPPED_ANNOTATIONS_ATTR, ()), *dropped))
