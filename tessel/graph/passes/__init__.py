"""Graph passes, one per file (docs/architecture.md §8)."""

from tessel.graph.passes.alter_op_layout import AlterOpLayout
from tessel.graph.passes.combine_parallel_dense import CombineParallelDense
from tessel.graph.passes.dead_code_elimination import DeadCodeElimination
from tessel.graph.passes.fold_constant import FoldConstant
from tessel.graph.passes.fuse_ops import FuseOps
from tessel.graph.passes.infer_type import (
    InferType,
    TypeInferenceError,
    annotate,
    infer_expr_types,
    infer_module_types,
)
from tessel.graph.passes.lower_te import LowerTE
from tessel.graph.passes.pipeline import default_pipeline, pipeline_until
from tessel.graph.passes.plan_devices import (
    DevicePlanningError,
    PlanDevices,
    device_of,
    plan_of,
)
from tessel.graph.passes.simplify_expr import SimplifyExpr
from tessel.graph.passes.to_graph_normal_form import ToGraphNormalForm

__all__ = [
    "AlterOpLayout",
    "CombineParallelDense",
    "DeadCodeElimination",
    "DevicePlanningError",
    "FoldConstant",
    "FuseOps",
    "InferType",
    "LowerTE",
    "PlanDevices",
    "SimplifyExpr",
    "ToGraphNormalForm",
    "TypeInferenceError",
    "annotate",
    "default_pipeline",
    "device_of",
    "infer_expr_types",
    "infer_module_types",
    "pipeline_until",
    "plan_of",
]
