"""The lowering pipeline: the order of the TensorIR passes, with the reason for each position."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tessel.ir.module import IRModule
from tessel.ir.target import Target
from tessel.ir.transform import Pass, PassContext, PassInstrument
from tessel.tir.function import PrimFunc
from tessel.tir.module_calls import check_module_calls
from tessel.transform.auto_unroll_loop import AutoUnrollLoop
from tessel.transform.clamp_vector_exp import ClampVectorExp
from tessel.transform.compact_buffer_allocation import CompactBufferAllocation
from tessel.transform.convert_blocks_to_opaque import ConvertBlocksToOpaque
from tessel.transform.deinterleave_loads import DeinterleaveLoads
from tessel.transform.extract_constants import ExtractConstants
from tessel.transform.flatten_buffer import FlattenBuffer
from tessel.transform.hoist_divisions import HoistDivisions
from tessel.transform.lower_division import LowerDivision
from tessel.transform.lower_init_block import LowerInitBlock
from tessel.transform.lower_match_buffer import LowerMatchBuffer
from tessel.transform.lower_memory_scopes import LowerMemoryScopes
from tessel.transform.lower_opaque_block import LowerOpaqueBlock
from tessel.transform.over_compute_padding import OverComputePadding
from tessel.transform.parallel_lowering import lower_functions_in_workers
from tessel.transform.peel_vector_tails import PeelVectorTails
from tessel.transform.plan_buffer_allocation import PlanBufferAllocation
from tessel.transform.postconditions import check_postcondition
from tessel.transform.prim_func_pass import PrimFuncPass
from tessel.transform.remove_assume import RemoveAssume
from tessel.transform.remove_undef_stores import RemoveUndefStores
from tessel.transform.simplify import Simplify
from tessel.transform.storage_rewrite import StorageRewrite
from tessel.transform.unroll_loop import UnrollLoop
from tessel.transform.unswitch_guards import UnswitchGuards
from tessel.transform.vectorize_loop import VectorizeLoop


def default_passes(target: Target) -> tuple[Pass, ...]:
    """The passes `lower` runs for `target`, in order (docs/architecture.md §6 explains them)."""
    return (
        # First: it rewrites reduction blocks through their init and
        # iterators, and computing on the padding instead of branching around it changes what
        # the later passes plan.
        OverComputePadding(),
        # The init's guard needs the reduction iterators, which ConvertBlocksToOpaque removes.
        LowerInitBlock(),
        # Blocks still show each buffer's uses: move its allocation to the scope covering them.
        PlanBufferAllocation(),
        # Nothing later needs block iterators; the regions and allocations compaction reads
        # stay on the (now opaque) blocks.
        ConvertBlocksToOpaque(),
        # After planning (a scope-local buffer touches a tile), while blocks show the regions.
        CompactBufferAllocation(),
        # After compaction: a view reads its source through the data pointer, which compaction
        # cannot see, so the source must keep its shape from here on.
        LowerMatchBuffer(),
        # Then: every later pass, and codegen, works on loops and buffers, not blocks.
        LowerOpaqueBlock(),
        # Guards are `if`s now, and loops still carry their ranges; before Simplify, which
        # cleans up each copy under its branch's condition.
        UnswitchGuards(),
        # On loops (ranges known) while the `T.assume` facts are still there to remove branches.
        Simplify(),
        # After Simplify has used them as facts; assumptions have no run-time code.
        RemoveAssume(),
        # Before flattening, so no index arithmetic is built for stores that will vanish.
        RemoveUndefStores(),
        # Needs block-free IR, and gives codegen the flat indices C arrays take.
        FlattenBuffer(),
        # After flattening, each allocation is one flat constant extent; before unrolling and
        # vectorizing, which multiply the accesses and put allocations in vectorized loops.
        StorageRewrite(),
        # After Simplify (each copy is simplified alone) and before vectorizing inner loops.
        UnrollLoop(),
        # After flattening: a vector access is one Ramp over a flat index, which C can load.
        VectorizeLoop(vector_bytes=target.vector_bytes),
        # On the predicates VectorizeLoop writes, while indices still show floordiv's structure
        # to the analyzer (before LowerDivision).
        PeelVectorTails(),
        # After every pass that reads floordiv's structure (Simplify, vectorizing `ramp // c`):
        # C's own `/` on the indices that are provably non-negative, which gcc hoists.
        LowerDivision(),
        # After LowerDivision, which leaves C's `/` (hoisted by gcc) on constant divisors:
        # what remains divides by run-time sizes, which gcc kept in the innermost loops.
        HoistDivisions(),
        # After StorageRewrite has fixed each allocation's size, record stack or workspace for
        # the target in the IR, so codegen reads the decision instead of making it.
        LowerMemoryScopes(target=target),
        # Last, the C backend's decisions made explicit in the IR it prints (the printer only
        # prints them), each on the final form of the code: every vector exp exists once
        # VectorizeLoop has run; a load's index is final; a loop nest holds vector statements,
        # not vectorized loops, when its statements are counted against an unroll budget.
        ClampVectorExp(),
        DeinterleaveLoads(),
        AutoUnrollLoop(),
        # Last, the one pass over the whole module (every pass before it rewrites each function
        # on its own, so those may run per function in worker processes); after flattening
        # (constants are flat arrays by then): one deduplicated copy of each per module.
        ExtractConstants(),
    )


def lower(
    mod_or_func: IRModule | PrimFunc,
    target: Target | str = "c",
    *,
    instruments: Sequence[PassInstrument] = (),
    verify: bool = False,
    verifier: Callable[[IRModule, str], None] | None = None,
    jobs: int = 1,
    on_function_done: Callable[[], None] | None = None,
) -> IRModule:
    """Lower block-level TensorIR to the flat, loop-level form that code generation takes.

    With `verify`, the IR is checked after every pass (by `verifier`, default: each pass's
    own postcondition and `tir.verify`), naming the pass that broke it. With `jobs` > 1 and
    neither instruments nor verification (both watch each pass over the whole module), the
    functions of a module of several go through the per-function passes in up to `jobs`
    worker processes, `on_function_done` called as each comes back; the result is the same.
    """
    target = Target.of(target)
    mod = mod_or_func if isinstance(mod_or_func, IRModule) else IRModule.from_func(mod_or_func)
    check_module_calls(mod)  # calls between its functions: refused before any pass, if wrong
    ctx = PassContext(
        instruments=tuple(instruments),
        verify=verify,
        verifier=verifier or check_postcondition,
    )
    passes = default_passes(target)
    if jobs > 1 and not instruments and not verify:
        per_function = per_function_prefix(passes)
        lowered = lower_functions_in_workers(mod, per_function, jobs, on_function_done)
        if lowered is not None:
            mod, passes = lowered, passes[len(per_function) :]
    for pass_ in passes:
        mod = pass_(mod, ctx)
    return mod


def per_function_prefix(passes: tuple[Pass, ...]) -> tuple[PrimFuncPass, ...]:
    """The passes before the first that looks at more than one function at a time."""
    prefix: list[PrimFuncPass] = []
    for pass_ in passes:
        if not isinstance(pass_, PrimFuncPass):
            break
        prefix.append(pass_)
    return tuple(prefix)
