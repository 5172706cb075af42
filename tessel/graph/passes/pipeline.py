"""The graph pipeline `tessel.graph.compile` runs before lowering, in order, with the reason for
each step; `pipeline_until` gives a prefix of it (for `tessel show --after`)."""

from __future__ import annotations

from tessel.graph.passes.alter_op_layout import AlterOpLayout
from tessel.graph.passes.combine_parallel_dense import CombineParallelDense
from tessel.graph.passes.dead_code_elimination import DeadCodeElimination
from tessel.graph.passes.fold_constant import FoldConstant
from tessel.graph.passes.fuse_ops import FuseOps
from tessel.graph.passes.infer_type import InferType
from tessel.graph.passes.lower_te import LowerTE
from tessel.graph.passes.simplify_expr import SimplifyExpr
from tessel.graph.passes.to_graph_normal_form import ToGraphNormalForm
from tessel.ir.target import Target
from tessel.ir.transform import Pass, Sequential
from tessel.support.errors import UserError


def default_pipeline(target: Target | None = None, jobs: int | None = None) -> list[Pass]:
    """The passes before LowerTE, for `target` (this machine when None); a pass that compiles
    (CombineParallelDense's measurements) uses up to `jobs` processes (None: the usable cores)."""
    return [
        InferType(),  # every later pass reads checked types
        ToGraphNormalForm(),  # a `main` written with lets is the dataflow graph it binds
        SimplifyExpr(),  # importers leave reshape/transpose chains and no-op casts
        # Q/K/V projections and gates as one product where measuring says it pays
        CombineParallelDense(target=target, jobs=jobs),
        AlterOpLayout(target),  # convolutions in NCHW[x]c: whole vectors of channels, no transposes
        FoldConstant(),  # shape computations and transforms of weights happen once, here
        DeadCodeElimination(),  # what folding left unused
        # one kernel per fused group; attention (QK^T, softmax, PV) as one where the cost model
        # says the row-blocked kernel moves fewer bytes
        FuseOps(max_anchors=3, by_cost=True),
        InferType(),  # types of the new primitive functions
    ]


def pipeline_until(name: str) -> Sequential:
    """The default pipeline (then LowerTE) up to and including the last pass called `name`."""
    passes = [*default_pipeline(), LowerTE()]
    names = [type(p).__name__ for p in passes]
    if name not in names:
        raise UserError(
            f"no graph pass called {name!r}; the pipeline is {names}", rule="graph.pipeline"
        )
    last = len(names) - 1 - names[::-1].index(name)
    return Sequential(tuple(passes[: last + 1]))
