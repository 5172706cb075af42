"""Cases (graph_op_cases.Case) for the random operators (tessel/graph/op/random.py). They run in
C only (the Philox runtime has no interpreter form), so `lowers=False` here and
tests/graph/test_random_ops.py compiles them against their references."""

from __future__ import annotations

import numpy as np
from graph_op_cases import Case, T

STATE = T(2, dtype="uint64")


def _state_and(rng, types):
    state = np.array([rng.integers(0, 2**63), rng.integers(0, 100)], np.uint64)
    return [state, *(rng.uniform(0, 1, t.shape).astype(t.dtype) for t in types[1:])]


def random_cases() -> list[Case]:
    """Each random operator at two shapes, with an argument its relation refuses."""
    cases = [
        Case(
            "random.uniform",
            (STATE,),
            {"shape": (2, 3), "low": -1.0, "high": 2.0},
            T(2, 3),
            ((STATE,), {"shape": (0,), "dtype": "float64", "seed": 1.5}),
            ((T(3, dtype="uint64"),), {"shape": (2,)}, "state"),
            values=_state_and,
        ),
        Case(
            "random.normal",
            (STATE,),
            {"shape": (4,), "dtype": "float16", "stream": 3},
            T(4, dtype="float16"),
            ((STATE,), {"shape": (2, 2), "mean": 5.0, "scale": 0.1}),
            ((STATE,), {"shape": (2,), "dtype": "int32"}, "dtype"),
            values=_state_and,
        ),
        Case(
            "random.bernoulli",
            (STATE, T(5)),
            {"dtype": "bool"},
            T(5, dtype="bool"),
            ((STATE, T(2, 3, dtype="float64")), {}),
            ((STATE, T(2, dtype="int32")), {}, "probs"),
            values=_state_and,
        ),
        Case(
            "random.multinomial",
            (STATE, T(2, 4)),
            {"sample_size": 3},
            T(2, 3, dtype="int32"),
            ((STATE, T(1, 2)), {"sample_size": 5, "dtype": "int64"}),
            ((STATE, T(2, 4)), {"sample_size": 0}, "sample_size"),
            values=_state_and,
        ),
    ]
    for case in cases:
        case.lowers = False
    return cases
