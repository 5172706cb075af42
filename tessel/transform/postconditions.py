"""What each lowering pass promises about its output, checked when a pipeline runs with verify."""

from __future__ import annotations

from collections.abc import Callable

from tessel.ir.functor import post_order
from tessel.ir.module import IRModule
from tessel.support.errors import InternalError
from tessel.tir.analysis.blocks import first_block
from tessel.tir.buffer import BufferLoad
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import AllocateConst, BufferStore
from tessel.tir.verify import VerifyError, verify_well_formed
from tessel.transform.storage_rewrite import views_outside_allocations


def _no_blocks(func: PrimFunc) -> str | None:
    block = first_block(func.body)
    return None if block is None else f"block `{block.name_hint}` remains"


def _physical_accesses(func: PrimFunc) -> str | None:
    """Every access is physical: one index a physical axis, which is one a buffer without axis
    separators and k + 1 for a buffer whose k separators make each axis a group of its own."""
    for node in post_order(func.body):
        if not isinstance(node, BufferLoad | BufferStore):
            continue
        buffer, rank = node.buffer, len(node.indices)
        if buffer.axis_separators != tuple(range(1, rank)):
            separators = list(buffer.axis_separators)
            return (
                f"an access to `{buffer.name}` has {rank} indices, but its axis separators "
                f"{separators} do not make {rank} physical axes of one logical axis each"
            )
    return None


def _constants_extracted(func: PrimFunc) -> str | None:
    for node in post_order(func.body):
        if isinstance(node, AllocateConst) and node.data is not None:
            return f"constant `{node.buffer_var.name}` still carries its data"
    return None


_POSTCONDITIONS: dict[str, Callable[[PrimFunc], str | None]] = {
    "lower_opaque_block": _no_blocks,
    "flatten_buffer": _physical_accesses,
    "extract_constants": _constants_extracted,
    "storage_rewrite": views_outside_allocations,
}


def _storage_indices_in_range(mod: IRModule) -> str | None:
    count = len(mod.attrs.get("constants", ()))
    for gv, func in mod.items():
        if not isinstance(func, PrimFunc):
            continue
        for node in post_order(func.body):
            index = node.irmod_storage_idx if isinstance(node, AllocateConst) else None
            if index is not None and not 0 <= index < count:
                return (
                    f"`{gv.name_hint}`: constant `{node.buffer_var.name}` refers to entry {index} "
                    f'of "constants", which has {count}'
                )
    return None


# Module-wide promises: checked once per module, after the per-function ones.
_MODULE_POSTCONDITIONS: dict[str, Callable[[IRModule], str | None]] = {
    "extract_constants": _storage_indices_in_range,
}


def check_postcondition(mod: IRModule, pass_name: str) -> None:
    """Raise InternalError if the pass named `pass_name` left ill-formed IR (tir.verify) or IR
    it promised not to leave (its postcondition)."""
    try:
        verify_well_formed(mod)
    except VerifyError as err:
        raise InternalError(f"IR became invalid after pass `{pass_name}`: {err}") from err
    check = _POSTCONDITIONS.get(pass_name)
    for gv, func in mod.items() if check is not None else ():
        problem = check(func) if isinstance(func, PrimFunc) else None
        if problem is not None:
            raise InternalError(
                f"IR became invalid after pass `{pass_name}` in `{gv.name_hint}`: {problem}"
            )
    module_check = _MODULE_POSTCONDITIONS.get(pass_name)
    problem = module_check(mod) if module_check is not None else None
    if problem is not None:
        raise InternalError(f"IR became invalid after pass `{pass_name}`: {problem}")
