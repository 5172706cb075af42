"""graph.compile's `jobs`: the kernels scheduled and lowered in worker processes give the model
compiled in one process, C text and results alike; a bad count is a clear error."""

from __future__ import annotations

import numpy as np
import pytest
from graph_models import INPUTS, load, random_inputs, random_weights

import tessel.graph as graph
from tessel.support.errors import UserError


def test_a_model_compiled_by_several_processes_is_the_one_compiled_by_one(tmp_path, monkeypatch):
    mod = load("cnn")
    weights = random_weights(mod, INPUTS["cnn"])
    inputs = random_inputs(mod, INPUTS["cnn"])
    models = []
    for jobs in (1, 2):
        monkeypatch.setenv("HOME", str(tmp_path / f"home{jobs}"))  # an empty cache each
        models.append(graph.compile(mod, params=weights, jobs=jobs))
    one, several = models
    assert len(one.plan.calls) > 1
    assert several.library.source == one.library.source
    np.testing.assert_array_equal(several(*inputs), one(*inputs))


@pytest.mark.parametrize("jobs", [0, -1, 1.5, "2", True])
def test_a_bad_count_of_processes_is_refused(jobs):
    with pytest.raises(UserError, match="jobs must be a positive integer or None"):
        graph.compile(load("mlp"), jobs=jobs)
