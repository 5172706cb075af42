"""Tensor intrinsics: a named pair of PrimFuncs, the computation (desc) and its replacement (impl).

As in TVM, both functions take the same buffers (by position, usually declared with
`T.match_buffer` of fixed shapes) and their body is one root block: the desc's root block
states what one call computes, over whole buffers; the impl's root block body is what
`Schedule.tensorize` puts in place of a matching block's body, with each impl buffer bound to
the matched region of the scheduled function's buffer by a `match_buffer`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from tessel.ir.expr import IntImm
from tessel.ir.structural import structural_equal
from tessel.support.errors import UserError
from tessel.tir.block import BlockRealize
from tessel.tir.buffer import Buffer, BufferRegion
from tessel.tir.function import PrimFunc


class TensorIntrinError(UserError):
    """A tensor intrinsic that cannot be registered, or a name that is not registered."""


@dataclass(frozen=True, eq=False)
class TensorIntrin:
    """A registered tensor intrinsic; `TensorIntrin.register` / `TensorIntrin.get` by name."""

    name: str
    desc: PrimFunc
    impl: PrimFunc

    # The registry: user-visible names (docs/architecture.md §11), filled only by explicit
    # `register` calls.
    _registry: ClassVar[dict[str, TensorIntrin]] = {}

    @classmethod
    def register(
        cls, name: str, desc: PrimFunc, impl: PrimFunc, *, override: bool = False
    ) -> TensorIntrin:
        """Check and register `desc`/`impl` under `name` (a duplicate name is an error unless
        `override`); returns the intrinsic."""
        if name in cls._registry and not override:
            raise TensorIntrinError(
                f"a tensor intrinsic named `{name}` is already registered; "
                f"registered: {cls.names()}",
                rule="tensor_intrin.duplicate",
                hint="pick another name, or pass override=True to replace it",
            )
        _check_pair(name, desc, impl)
        intrin = cls(name, desc, impl)
        cls._registry[name] = intrin
        return intrin

    @classmethod
    def get(cls, name: str) -> TensorIntrin:
        """The intrinsic registered under `name`."""
        intrin = cls._registry.get(name)
        if intrin is None:
            raise TensorIntrinError(
                f"no tensor intrinsic named `{name}`; registered: {cls.names()}",
                rule="tensor_intrin.unknown",
                hint="register it first with TensorIntrin.register(name, desc, impl)",
            )
        return intrin

    @classmethod
    def names(cls) -> list[str]:
        """The registered names, sorted."""
        return sorted(cls._registry)

    def root(self, which: str) -> BlockRealize:
        """The root block of the desc or the impl (checked at registration)."""
        body = self.desc.body if which == "desc" else self.impl.body
        assert isinstance(body, BlockRealize)
        return body


def _invalid(name: str, message: str) -> TensorIntrinError:
    return TensorIntrinError(
        f"tensor intrinsic `{name}`: {message}",
        rule="tensor_intrin.invalid",
        hint="write desc and impl as TVM does: the same buffer parameters (T.match_buffer of "
        'fixed shapes), and a body that is one `with T.block("root"):` block',
    )


def _check_pair(name: str, desc: PrimFunc, impl: PrimFunc) -> None:
    """Both bodies are one root block; the buffers agree by position in dtype and shape; the
    desc's root block reads and writes whole buffers (so a match covers a buffer exactly)."""
    for which, func in (("desc", desc), ("impl", impl)):
        if not isinstance(func, PrimFunc):
            raise _invalid(name, f"the {which} is a {type(func).__name__}, not a PrimFunc")
        body = func.body
        if not isinstance(body, BlockRealize) or body.block.iter_vars:
            raise _invalid(name, f"the {which}'s body must be one root block without iterators")
    desc_buffers, impl_buffers = desc.param_buffers(), impl.param_buffers()
    if len(desc_buffers) != len(impl_buffers):
        raise _invalid(
            name, f"the desc has {len(desc_buffers)} buffers, the impl {len(impl_buffers)}"
        )
    for position, (d, i) in enumerate(zip(desc_buffers, impl_buffers, strict=True)):
        _check_buffer_pair(name, position, d, i)
    root = desc.body.block  # type: ignore[attr-defined]  # a BlockRealize, checked above
    _check_whole_regions(name, desc_buffers, (*root.reads, *root.writes))


def _check_buffer_pair(name: str, position: int, desc: Buffer, impl: Buffer) -> None:
    if desc.const_shape() is None:
        raise _invalid(name, f"desc buffer `{desc.name}` needs a constant shape")
    if desc.dtype != impl.dtype or not structural_equal(desc.shape, impl.shape):
        raise _invalid(
            name,
            f"buffer {position} is `{desc.name}` {list(desc.const_shape() or ())} {desc.dtype} "
            f"in the desc but `{impl.name}` of shape {[str(e) for e in impl.shape]} "
            f"{impl.dtype} in the impl",
        )


def _check_whole_regions(
    name: str, buffers: Sequence[Buffer], regions: Sequence[BufferRegion]
) -> None:
    params = set(buffers)
    for region in regions:
        if region.buffer not in params:
            raise _invalid(
                name, f"the desc's root block accesses `{region.buffer.name}`, not a parameter"
            )
        shape = region.buffer.const_shape()
        whole = all(
            isinstance(r.min, IntImm)
            and r.min.value == 0
            and isinstance(r.extent, IntImm)
            and r.extent.value == extent
            for r, extent in zip(region.region, shape or (), strict=True)
        )
        if not whole:
            raise _invalid(
                name,
                f"the desc's root block must read and write whole buffers; "
                f"`{region.buffer.name}` is accessed on a part of it",
            )
