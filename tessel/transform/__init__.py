"""TensorIR lowering passes, one per file, ordered by `pipeline.lower` (docs/architecture.md §6)."""

from tessel.transform.auto_unroll_loop import AutoUnrollLoop
from tessel.transform.clamp_vector_exp import ClampVectorExp
from tessel.transform.compact_buffer_allocation import CompactBufferAllocation
from tessel.transform.convert_blocks_to_opaque import ConvertBlocksToOpaque
from tessel.transform.deinterleave_loads import DeinterleaveLoads
from tessel.transform.errors import LoweringError
from tessel.transform.extract_constants import ExtractConstants
from tessel.transform.flatten_buffer import FlattenBuffer
from tessel.transform.lower_init_block import LowerInitBlock
from tessel.transform.lower_match_buffer import LowerMatchBuffer
from tessel.transform.lower_memory_scopes import LowerMemoryScopes
from tessel.transform.lower_opaque_block import LowerOpaqueBlock
from tessel.transform.memory_usage import FunctionMemory, MemoryUsage, memory_usage
from tessel.transform.pipeline import default_passes, lower
from tessel.transform.plan_buffer_allocation import PlanBufferAllocation
from tessel.transform.prim_func_pass import PrimFuncPass
from tessel.transform.remove_assume import RemoveAssume
from tessel.transform.remove_undef_stores import RemoveUndefStores
from tessel.transform.simplify import Simplify
from tessel.transform.storage_rewrite import StorageRewrite
from tessel.transform.unroll_loop import UnrollLoop
from tessel.transform.vectorize_loop import VectorizeLoop

__all__ = [
    "AutoUnrollLoop",
    "ClampVectorExp",
    "CompactBufferAllocation",
    "ConvertBlocksToOpaque",
    "DeinterleaveLoads",
    "ExtractConstants",
    "FlattenBuffer",
    "FunctionMemory",
    "LowerInitBlock",
    "LowerMatchBuffer",
    "LowerMemoryScopes",
    "LowerOpaqueBlock",
    "LoweringError",
    "MemoryUsage",
    "PlanBufferAllocation",
    "PrimFuncPass",
    "RemoveAssume",
    "RemoveUndefStores",
    "Simplify",
    "StorageRewrite",
    "UnrollLoop",
    "VectorizeLoop",
    "default_passes",
    "lower",
    "memory_usage",
]
