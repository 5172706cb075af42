"""Cases (graph_op_cases.Case) for stack, repeat and tile (tessel/graph/op/replicate.py)."""

from __future__ import annotations

from graph_op_cases import Case, T

from tessel.graph import TupleType


def replicate_cases() -> list[Case]:
    """Each operator at two shapes, with an argument its relation refuses."""
    return [
        Case(
            "stack",
            (TupleType((T(2, 3), T(2, 3), T(2, 3))),),
            {"axis": 0},
            T(3, 2, 3),
            ((TupleType((T(4, 1), T(4, 1))),), {"axis": -1}),
            ((TupleType((T(2, 3), T(3, 2))),), {}, "data"),
        ),
        Case(
            "stack",
            (TupleType((T(2, 3, dtype="int32"),) * 2),),
            {"axis": 2},
            T(2, 3, 2, dtype="int32"),
            ((TupleType((T(5, dtype="int32"),)),), {"axis": 1}),
            ((TupleType((T(2, 3, dtype="int32"),) * 2),), {"axis": 3}, "axis"),
            id="stack-int32",
        ),
        Case(
            "repeat",
            (T(2, 3),),
            {"repeats": 3, "axis": 1},
            T(2, 9),
            ((T(4, 1, 2),), {"repeats": 2, "axis": -2}),
            ((T(2, 3),), {"repeats": -1, "axis": 0}, "repeats"),
        ),
        Case(
            "tile",
            (T(2, 3),),
            {"reps": [2, 1, 2]},
            T(2, 2, 6),
            ((T(4, 1, 2),), {"reps": [3]}),
            ((T(2, 3),), {"reps": [-1, 1]}, "reps"),
        ),
    ]
