"""image.grid_sample: the TOPI lowering against the NumPy reference in every mode and padding
mode, on grids that reach beyond [-1, 1]."""

import numpy as np
import pytest
from graph_lowering import lower

from tessel.graph import TensorType
from tessel.graph.op import get_op
from tessel.testing.topi import check_operator

CASES = [
    ((1, 2, 3, 4), (1, 2, 3, 2), dict(mode="linear", padding_mode="reflection")),
    ((1, 1, 4, 3), (1, 3, 2, 2), dict(mode="cubic", padding_mode="border", align_corners=True)),
    (
        (2, 1, 3, 2, 2),
        (2, 2, 1, 2, 3),
        dict(mode="nearest", padding_mode="reflection", align_corners=True),
    ),
    ((1, 2, 5), (1, 4, 1), dict(mode="linear", padding_mode="zeros")),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[2]['mode']}-{c[2]['padding_mode']}")
def test_lowering_matches_reference(case):
    data, grid, attrs = case
    types = (TensorType(data, "float32"), TensorType(grid, "float32"))
    inputs, outputs = lower("image.grid_sample", types, attrs)
    op = get_op("image.grid_sample")
    rng = np.random.default_rng(0)
    values = [
        rng.standard_normal(data).astype(np.float32),
        rng.uniform(-2.5, 2.5, grid).astype(np.float32),
    ]
    check_operator(
        inputs,
        outputs,
        lambda x, g: op.evaluate([x, g], attrs),
        values=values,
        rtol=1e-4,
        atol=1e-4,
        backends=("c",),
    )
