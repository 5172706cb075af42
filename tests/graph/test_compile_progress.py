"""`tessel.graph.compile(..., progress=...)` reports its stages in order and, within a counted
stage, counts that rise one by one to the stage's total (tessel.support.progress)."""

import pytest
from graph_models import INPUTS, load, random_weights

import tessel.graph as graph
from tessel.support.progress import Progress


class _Recorder(Progress):
    """Every stage with its total and the count after each advance."""

    def __init__(self) -> None:
        self.stages: list[tuple[str, int | None, list[int]]] = []

    def stage(self, name: str, total: int | None = None) -> None:
        self.stages.append((name, total, []))

    def advance(self, count: int = 1) -> None:
        counts = self.stages[-1][2]
        counts.append((counts[-1] if counts else 0) + count)


@pytest.mark.parametrize("executor", ["aot", "python"])
def test_compile_reports_stages_and_counts_that_end_at_each_total(executor):
    mod = load("mlp")
    progress = _Recorder()
    model = graph.compile(
        mod, random_weights(mod, INPUTS["mlp"]), executor=executor, progress=progress
    )
    names = [name for name, _, _ in progress.stages]
    # "lowering TensorIR passes" and "generating C" are left out when the lowering is cached.
    required = ["graph passes", "scheduling kernels", "planning memory", "compiling and linking C"]
    assert [n for n in names if n in required] == required
    assert names[-1] == "compiling and linking C"
    for name, total, counts in progress.stages:
        if total is None:
            assert counts == [], name
            continue
        assert counts == list(range(1, total + 1)), name  # one by one, ending at the total
    kernels = dict((name, total) for name, total, _ in progress.stages)["scheduling kernels"]
    assert kernels == len(model.plan.calls)
