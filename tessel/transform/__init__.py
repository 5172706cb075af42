"""TensorIR lowering passes, one per file, ordered by `pipeline.lower` (DESIGN.md section 6)."""

from tessel.transform.compact_buffer_allocation import CompactBufferAllocation
from tessel.transform.errors import LoweringError
from tessel.transform.extract_constants import ExtractConstants
from tessel.transform.flatten_buffer import FlattenBuffer
from tessel.transform.lower_blocks import LowerBlocks
from tessel.transform.plan_buffer_allocation import PlanBufferAllocation
from tessel.transform.pipeline import default_passes, lower
from tessel.transform.prim_func_pass import PrimFuncPass
from tessel.transform.remove_assume import RemoveAssume
from tessel.transform.remove_undef_stores import RemoveUndefStores
from tessel.transform.simplify import Simplify
from tessel.transform.unroll_loop import UnrollLoop
from tessel.transform.vectorize_loop import VectorizeLoop

__all__ = [
    "CompactBufferAllocation",
    "ExtractConstants",
    "FlattenBuffer",
    "LowerBlocks",
    "LoweringError",
    "PlanBufferAllocation",
    "PrimFuncPass",
    "RemoveAssume",
    "RemoveUndefStores",
    "Simplify",
    "UnrollLoop",
    "VectorizeLoop",
    "default_passes",
    "lower",
]
