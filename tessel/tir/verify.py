"""Well-formedness of TensorIR: every variable and buffer is used inside the scope defining it.

`PassContext(verify=True)` runs this after every pass, so an invalid IR is reported at the pass
that produced it. Rules (stable ids, matched by tests):

- `verify.undefined-var`: a variable used outside the scope that defines it (parameters, loop
  variables, let variables, block iterators, symbolic shape variables of parameter buffers and
  match_buffers, allocation variables).
- `verify.var-redefined`: a variable defined again inside the scope that already defines it.
- `verify.undeclared-buffer`: an access to a buffer not declared in scope (parameter buffer,
  block alloc_buffer / match_buffer, DeclBuffer). A view of memory in scope needs its own
  declaration too (docs/architecture.md §6): lowered code declares the flat twins of parameters
  by DeclBuffer.
- `verify.block-binding`: a block bound to values using variables not in scope (another block's
  iterators included), or to the wrong number of values.
- `verify.iter-var-outside-block`: a block iterator used outside its block.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from tessel.ir.expr import Let, PrimExpr, Var
from tessel.ir.functor import Visitor, post_order
from tessel.ir.module import IRModule
from tessel.support.errors import UserError
from tessel.tir.block import Block, BlockRealize, IterVar, IterVarType, MatchBufferRegion
from tessel.tir.buffer import Buffer, BufferLoad, BufferRegion
from tessel.tir.function import PrimFunc
from tessel.tir.module_calls import ModuleCallError, check_module_calls
from tessel.tir.stmt import Allocate, AllocateConst, AttrStmt, BufferStore, DeclBuffer, For, LetStmt


class VerifyError(UserError):
    """The IR breaks a well-formedness rule (see `tessel.tir.verify` for the rule ids)."""


def verify_well_formed(func_or_mod: PrimFunc | IRModule) -> None:
    """Raise VerifyError at the first well-formedness violation of a PrimFunc or a module."""
    if isinstance(func_or_mod, IRModule):
        for global_var, func in func_or_mod.items():
            if isinstance(func, PrimFunc):
                _ScopeChecker(global_var.name_hint).check(func)
        check_module_calls(func_or_mod)  # calls between its functions (tir/module_calls.py)
        return
    if not isinstance(func_or_mod, PrimFunc):
        kind = type(func_or_mod).__name__
        raise TypeError(f"verify_well_formed expects a PrimFunc or an IRModule, got a {kind}")
    _ScopeChecker(func_or_mod.name or "<anonymous>").check(func_or_mod)


def is_well_formed(func_or_mod: PrimFunc | IRModule) -> bool:
    """True if `verify_well_formed` finds nothing wrong."""
    try:
        verify_well_formed(func_or_mod)
    except (VerifyError, ModuleCallError):
        return False
    return True


def _bare_vars(exprs: Iterable[PrimExpr]) -> list[Var]:
    """Variables standing alone in a shape / strides / elem_offset: a buffer may define them."""
    return [e for e in exprs if isinstance(e, Var)]


def _buffer_layout(buffer: Buffer) -> tuple[PrimExpr, ...]:
    return (*buffer.shape, *buffer.strides, buffer.elem_offset)


class _ScopeChecker(Visitor):
    """Walks one function keeping the variables and buffers in scope."""

    def __init__(self, func_name: str) -> None:
        self.func_name = func_name
        self.vars: set[Var] = set()
        self.buffers: set[Buffer] = set()
        self.iter_var_owner: dict[Var, str] = {}  # every block iterator -> its block's name
        self.where: list[str] = [f"function `{func_name}`"]
        self.in_binding = False

    # -- entry -----------------------------------------------------------------------------

    def check(self, func: PrimFunc) -> None:
        self.iter_var_owner = {
            iv.var: node.name_hint
            for node in post_order(func.body)
            if isinstance(node, Block)
            for iv in node.iter_vars
        }
        with self.defining(func.params, "parameter"):
            buffers = func.param_buffers()
            introduced = [v for b in buffers for v in (b.data, *_bare_vars(_buffer_layout(b)))]
            with self.defining(self._new(introduced), "parameter buffer variable"):
                self._check_layouts(buffers)
                with self.declaring(buffers):
                    self.visit(func.body)

    # -- scopes ----------------------------------------------------------------------------

    def _new(self, variables: Iterable[Var]) -> list[Var]:
        """Variables not yet in scope, each once (shape variables may repeat across buffers)."""
        return list(dict.fromkeys(v for v in variables if v not in self.vars))

    @contextmanager
    def defining(self, variables: Iterable[Var], kind: str) -> Iterator[None]:
        """Put `variables` in scope for the duration of the `with` body."""
        variables = list(variables)
        for var in variables:
            if var in self.vars:
                self._fail(
                    "verify.var-redefined",
                    f"{kind} `{var.name}` is defined again inside the scope that already "
                    "defines it",
                    "give the inner definition a fresh Var (names may repeat, objects may not)",
                )
            self.vars.add(var)
        try:
            yield
        finally:
            self.vars.difference_update(variables)

    @contextmanager
    def declaring(self, buffers: Iterable[Buffer]) -> Iterator[None]:
        """Put `buffers` in scope for the duration of the `with` body."""
        added = [b for b in buffers if b not in self.buffers]
        self.buffers.update(added)
        try:
            yield
        finally:
            self.buffers.difference_update(added)

    @contextmanager
    def inside(self, description: str) -> Iterator[None]:
        self.where.append(description)
        try:
            yield
        finally:
            self.where.pop()

    def _fail(self, rule: str, message: str, hint: str) -> None:
        where = " in ".join(reversed(self.where))
        raise VerifyError(f"{message} (in {where})", rule=rule, hint=hint)

    def _check_layouts(self, buffers: Iterable[Buffer]) -> None:
        for buffer in buffers:
            for expr in _buffer_layout(buffer):
                self.visit(expr)

    # -- uses ------------------------------------------------------------------------------

    def visit_Var(self, var: Var) -> None:
        if var in self.vars:
            return
        owner = self.iter_var_owner.get(var)
        if self.in_binding:
            role = f"an iterator of block `{owner}`" if owner else "not defined here"
            self._fail(
                "verify.block-binding",
                f"a block binding uses variable `{var.name}`, which is {role}",
                "bind block iterators to expressions of enclosing loop variables",
            )
        if owner is not None:
            self._fail(
                "verify.iter-var-outside-block",
                f"iterator `{var.name}` of block `{owner}` is used outside that block",
                "use the loop variable the iterator is bound to instead",
            )
        self._fail(
            "verify.undefined-var",
            f"variable `{var.name}` is used outside the scope that defines it",
            "define it as a parameter, loop variable, let variable or block iterator in scope",
        )

    def visit_Buffer(self, buffer: Buffer) -> None:
        """Buffers are checked where they are declared, not at each use."""

    def _check_buffer(self, buffer: Buffer) -> None:
        if buffer in self.buffers:
            return
        self._fail(
            "verify.undeclared-buffer",
            f"buffer `{buffer.name}` is accessed but not declared in scope",
            "declare it as a parameter buffer, a block's alloc_buffer / match_buffer, "
            "or with DeclBuffer around the access",
        )

    def visit_BufferLoad(self, node: BufferLoad) -> None:
        self._check_buffer(node.buffer)
        self.generic_visit(node)

    def visit_BufferStore(self, node: BufferStore) -> None:
        self._check_buffer(node.buffer)
        self.generic_visit(node)

    def visit_BufferRegion(self, node: BufferRegion) -> None:
        self._check_buffer(node.buffer)
        self.generic_visit(node)

    def visit_AttrStmt(self, node: AttrStmt) -> None:
        # `node` is whatever the attribute is about (a buffer, a var, a string), not a use.
        if isinstance(node.value, PrimExpr):
            self.visit(node.value)
        thread = node.node if isinstance(node.node, IterVar) else None
        if thread is None or thread.iter_type is not IterVarType.THREAD_INDEX:
            self.visit(node.body)
            return
        with self.defining([thread.var], "thread variable"):  # T.launch_thread defines it
            self.visit(node.body)

    # -- definitions -----------------------------------------------------------------------

    def visit_For(self, node: For) -> None:
        self.visit(node.min)
        self.visit(node.extent)
        with (
            self.defining([node.loop_var], "loop variable"),
            self.inside(f"loop `{node.loop_var.name}`"),
        ):
            self.visit(node.body)

    def visit_LetStmt(self, node: LetStmt) -> None:
        self.visit(node.value)
        with self.defining([node.var], "let variable"):
            self.visit(node.body)

    def visit_Let(self, node: Let) -> None:
        self.visit(node.value)
        with self.defining([node.var], "let variable"):
            self.visit(node.body)

    def visit_Allocate(self, node: Allocate) -> None:
        self._visit_allocation(node)

    def visit_AllocateConst(self, node: AllocateConst) -> None:
        self._visit_allocation(node)

    def _visit_allocation(self, node: Allocate | AllocateConst) -> None:
        for extent in node.extents:
            self.visit(extent)
        if isinstance(node, Allocate):
            self.visit(node.condition)
        with self.defining([node.buffer_var], "allocation"):
            self.visit(node.body)

    def visit_DeclBuffer(self, node: DeclBuffer) -> None:
        self.visit(node.buffer.data)
        self._check_layouts([node.buffer])
        with self.declaring([node.buffer]):
            self.visit(node.body)

    # -- blocks ----------------------------------------------------------------------------

    def visit_BlockRealize(self, node: BlockRealize) -> None:
        block = node.block
        if len(node.iter_values) != len(block.iter_vars):
            self._fail(
                "verify.block-binding",
                f"block `{block.name_hint}` has {len(block.iter_vars)} iterators but is bound "
                f"to {len(node.iter_values)} values",
                "bind every block iterator to exactly one value",
            )
        self.in_binding = True
        try:
            for value in node.iter_values:
                self.visit(value)
        finally:
            self.in_binding = False
        self.visit(node.predicate)
        self.visit(block)

    def visit_Block(self, block: Block) -> None:
        for iter_var in block.iter_vars:
            self.visit(iter_var.dom)
        iter_vars = [iv.var for iv in block.iter_vars]
        with self.inside(f"block `{block.name_hint}`"), self.defining(iter_vars, "block iterator"):
            self._visit_block_buffers(block)

    def _visit_block_buffers(self, block: Block) -> None:
        self._check_layouts(block.alloc_buffers)
        allocated = [b.data for b in block.alloc_buffers]
        with (
            self.defining(self._new(allocated), "buffer data"),
            self.declaring(block.alloc_buffers),
        ):
            for match in block.match_buffers:
                self.visit(match.source)
            matched = [m.buffer for m in block.match_buffers]
            with self.defining(self._new(_match_defined_vars(block.match_buffers)), "match_buffer"):
                self._check_layouts(matched)
                with self.declaring(matched):
                    self._visit_block_contents(block)

    def _visit_block_contents(self, block: Block) -> None:
        for region in (*block.reads, *block.writes):
            self.visit(region)
        if block.init is not None:
            self.visit(block.init)
        self.visit(block.body)


def _match_defined_vars(matches: Iterable[MatchBufferRegion]) -> list[Any]:
    """The data variables and bare shape variables that match_buffers introduce."""
    defined: list[Var] = []
    for match in matches:
        defined.append(match.buffer.data)
        defined.extend(_bare_vars(_buffer_layout(match.buffer)))
    return defined
