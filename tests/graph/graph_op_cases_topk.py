"""Cases (graph_op_cases.Case) for topk (tessel/graph/op/indexing.py): values from a small pool,
so that ties (the lower index first) are common."""

from __future__ import annotations

import numpy as np
from graph_op_cases import Case, T

from tessel.graph import TensorType, TupleType


def _tied(rng, types):
    return [rng.integers(0, 4, t.shape).astype(t.dtype) for t in types]


def topk_cases() -> list[Case]:
    """One case per direction: float largest, int smallest."""
    pair = TupleType((T(3, 2), TensorType((3, 2), "int64")))
    cases = [
        Case(
            "topk",
            (T(3, 5),),
            {"k": 2},
            pair,
            ((T(2, 6, 1, dtype="int32"),), {"k": 6, "axis": 1, "largest": False}),
            ((T(3, 5),), {"k": 9}, "k"),
            _tied,
        ),
    ]
    for case in cases:
        case.id = f"{case.op}-{np.dtype(case.args[0].dtype)}"
    return cases
