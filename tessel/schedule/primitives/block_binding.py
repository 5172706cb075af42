"""A block realize's bindings as primitives that rebuild its loops see them: the iterators bound
to a loop variable alone, and the conditions its iterators' domains promise. compute_at,
transform_layout and the cache stages use them to carry a block's own `T.where` (a guard that
says more than the domains) over to new loops."""

from __future__ import annotations

from collections.abc import Collection

from tessel.ir import builders
from tessel.ir.expr import PrimExpr, Var
from tessel.tir.block import BlockRealize, IterVar


def loop_binding(
    realize: BlockRealize, iter_vars: Collection[IterVar] | None = None
) -> dict[Var, Var]:
    """Each loop variable that alone binds one of the block's iterators (among `iter_vars`,
    default all), mapped to that iterator's variable."""
    pairs = zip(realize.block.iter_vars, realize.iter_values, strict=True)
    return {
        value: iv.var
        for iv, value in pairs
        if isinstance(value, Var) and (iter_vars is None or iv in iter_vars)
    }


def in_domains(realize: BlockRealize, iter_vars: Collection[IterVar] | None = None) -> PrimExpr:
    """That each iterator's bound value (of `iter_vars`, default all) lies in its domain: what
    loops over the domains guarantee, so a predicate it implies restates them."""
    pairs = zip(realize.block.iter_vars, realize.iter_values, strict=True)
    return builders.conjunction(
        [
            condition
            for iv, value in pairs
            if iter_vars is None or iv in iter_vars
            for condition in (
                builders.ge(value, iv.dom.min),
                builders.lt(value, builders.add(iv.dom.min, iv.dom.extent)),
            )
        ]
    )
