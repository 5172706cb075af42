"""Compiled blocks: iterator binding, predicate, alloc_buffers, match_buffers, init, body.

TVM's semantics: a BlockRealize whose predicate is false does nothing; the iterators take the
bound values (which must lie in their domains); `init` runs exactly when every COMM_REDUCE
iterator is at its domain's minimum; alloc_buffers are fresh for each execution; a
match_buffer is a view of the matched region of its source.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tessel.ir.expr import IntImm, PrimExpr, Var
from tessel.tir.block import Block, BlockRealize, IterVar, IterVarType, MatchBufferRegion
from tessel.tir.interpreter.errors import InterpreterError, describe
from tessel.tir.interpreter.stmt import run_all
from tessel.tir.interpreter.values import Fn
from tessel.tir.interpreter.views import (
    compile_buffer_allocator,
    compile_buffer_binder,
    is_zero,
    make_view,
)

if TYPE_CHECKING:
    from tessel.tir.interpreter.compiler import Compiler


def _domain_error(block: Block, iv: IterVar, bound: int, low: int, high: int) -> InterpreterError:
    return InterpreterError(
        f"block `{block.name_hint}`: iterator `{iv.var.name}` is bound to {bound}, "
        f"outside its domain [{low}, {high})",
        rule="interpreter.block-domain",
    )


def _compile_iter_binding(c: Compiler, block: Block, iv: IterVar, value: PrimExpr) -> Fn:
    """Bind one iterator to its value, checking the value lies in the iterator's domain."""
    slot, value_fn = c.var_slot(iv.var), c.expr(value)
    if isinstance(iv.dom.min, IntImm) and isinstance(iv.dom.extent, IntImm):
        low, high = iv.dom.min.value, iv.dom.min.value + iv.dom.extent.value  # the usual case

        def bind_in_constant_domain(env: list) -> None:
            bound = value_fn(env)
            if not low <= bound < high:
                raise _domain_error(block, iv, bound, low, high)
            env[slot] = bound

        return bind_in_constant_domain
    low_fn, extent_fn = c.expr(iv.dom.min), c.expr(iv.dom.extent)

    def bind(env: list) -> None:
        bound, dom_low = value_fn(env), low_fn(env)
        dom_high = dom_low + extent_fn(env)
        if not dom_low <= bound < dom_high:
            raise _domain_error(block, iv, bound, dom_low, dom_high)
        env[slot] = bound

    return bind


def _compile_init_condition(c: Compiler, block: Block) -> Fn | None:
    """True when every reduction iterator is at its minimum (None: no reduction iterators)."""
    reductions = [
        (c.var_slot(iv.var), c.expr(iv.dom.min))
        for iv in block.iter_vars
        if iv.iter_type is IterVarType.COMM_REDUCE
    ]
    if not reductions:
        return None

    def at_reduction_start(env: list) -> bool:
        return all(env[slot] == low(env) for slot, low in reductions)

    return at_reduction_start


def _field_binder(c: Compiler, field: PrimExpr, what: str, defined: list[Var]) -> Any:
    """For a match_buffer field: a function binding it (a variable it defines) or checking it
    against the value the matched region gives."""
    if isinstance(field, Var) and field not in c.bound_vars:
        defined.append(field)
        slot = c.var_slot(field)

        def define(env: list, actual: int) -> None:
            env[slot] = actual

        return define
    expected_fn = c.expr(field)

    def check(env: list, actual: int) -> None:
        expected = expected_fn(env)
        if expected != actual:
            raise InterpreterError(
                f"match_buffer {what} is {expected}, but the matched region gives {actual}",
                rule="interpreter.match-buffer",
            )

    return check


def _check_region(
    match: MatchBufferRegion, mins: list[int], extents: list[int], shape: tuple[int, ...]
) -> None:
    """Check the region lies in the source, and that dimensions the buffer drops have extent 1."""
    source = match.source.buffer
    for low, extent, size in zip(mins, extents, shape, strict=True):
        if low < 0 or extent < 0 or low + extent > size:
            raise InterpreterError(
                f"match_buffer `{match.buffer.name}`: region "
                f"{list(zip(mins, extents, strict=True))} "
                f"(min, extent) lies outside `{source.name}` of shape {list(shape)}",
                rule="interpreter.out-of-bounds",
            )
    dropped = len(extents) - len(match.buffer.shape)
    if dropped < 0 or any(e != 1 for e in extents[:dropped]):
        raise InterpreterError(
            f"match_buffer `{match.buffer.name}` of rank {len(match.buffer.shape)} cannot match a "
            f"region of extents {extents}",
            rule="interpreter.match-buffer",
        )


def compile_match_buffer(c: Compiler, match: MatchBufferRegion, defined: list[Var]) -> Fn:
    """Bind `match.buffer` as a view of the region (its trailing dimensions); variables in its
    shape, strides or elem_offset that nothing defined yet are defined here."""
    target, source = match.buffer, match.source.buffer
    if target.dtype != source.dtype:
        raise InterpreterError(
            f"match_buffer `{target.name}` of {target.dtype} matches `{source.name}` of "
            f"{source.dtype}",
            rule="interpreter.match-buffer",
        )
    c.note_access(source)
    source_slot, target_slot = c.buffer_slot(source), c.buffer_slot(target)
    storage_slot = c.storage_slot(target.data)
    min_fns = [c.expr(r.min) for r in match.source.region]
    extent_fns = [c.expr(r.extent) for r in match.source.region]
    name = target.name
    shape_binders = [_field_binder(c, e, f"`{name}` shape", defined) for e in target.shape]
    stride_binders = [_field_binder(c, s, f"`{name}` stride", defined) for s in target.strides]
    offset_binder = None
    if not is_zero(target.elem_offset):  # a zero elem_offset means "not specified" here
        offset_binder = _field_binder(c, target.elem_offset, f"`{name}` elem_offset", defined)

    def bind(env: list) -> None:
        _, shape, layout = env[source_slot]
        mins, extents = [f(env) for f in min_fns], [f(env) for f in extent_fns]
        _check_region(match, mins, extents, shape)
        kept = len(extents) - len(target.shape)
        offset = layout.elem_offset + sum(m * s for m, s in zip(mins, layout.strides, strict=False))
        strides, new_shape = layout.strides[kept:], tuple(extents[kept:])
        for binder, actual in zip(shape_binders, new_shape, strict=False):
            binder(env, actual)
        for binder, actual in zip(stride_binders, strides, strict=False):
            binder(env, actual)
        if offset_binder is not None:
            offset_binder(env, offset)
        env[storage_slot] = layout.storage
        env[target_slot] = make_view(target, layout.storage, new_shape, strides, offset)

    return bind


def compile_block_body(c: Compiler, block: Block) -> Fn:
    """Everything inside a block once its iterators are bound."""
    defined: list[Var] = []
    setup = [compile_buffer_allocator(c, b) for b in block.alloc_buffers]
    setup += [compile_match_buffer(c, m, defined) for m in block.match_buffers]
    own_buffers = [*block.alloc_buffers, *(m.buffer for m in block.match_buffers)]
    with c.binding(defined), c.declaring(own_buffers):
        init = None if block.init is None else c.stmt(block.init)
        body = c.stmt(block.body)
    for buffer in own_buffers:
        setup += [compile_buffer_binder(c, b) for b in c.take_implicit(buffer.data)]
    at_reduction_start = _compile_init_condition(c, block)

    def run_block(env: list) -> None:
        run_all(setup, env)
        if init is not None and (at_reduction_start is None or at_reduction_start(env)):
            init(env)
        body(env)

    return run_block


def compile_block_realize(c: Compiler, node: BlockRealize) -> Fn:
    """Run the block for one binding of its iterators, when the predicate holds."""
    block = node.block
    bindings = [
        _compile_iter_binding(c, block, iv, value)
        for iv, value in zip(block.iter_vars, node.iter_values, strict=True)
    ]
    always = isinstance(node.predicate, IntImm) and node.predicate.value == 1
    predicate = None if always else c.expr(node.predicate)
    with c.binding(iv.var for iv in block.iter_vars):
        run_block = compile_block_body(c, block)

    def realize(env: list) -> None:
        if predicate is not None and not predicate(env):
            return
        for bind in bindings:
            bind(env)
        run_block(env)

    return realize


def compile_block(c: Compiler, node: Block) -> Fn:
    """A Block outside a BlockRealize: only one without iterators can run."""
    if node.iter_vars:
        raise InterpreterError(
            f"block `{node.name_hint}` has iterators but no BlockRealize binds them "
            f"({describe(node.iter_vars[0].var)} is unbound)",
            rule="interpreter.block-binding",
        )
    return compile_block_body(c, node)


COMPILERS = {BlockRealize: compile_block_realize, Block: compile_block}
