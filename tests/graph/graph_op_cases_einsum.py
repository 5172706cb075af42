"""Cases (graph_op_cases.Case) for einsum (tessel/graph/op/einsum.py)."""

from __future__ import annotations

from graph_op_cases import Case, T

from tessel.graph import TupleType


def einsum_cases() -> list[Case]:
    """A contraction, a diagonal with `...` broadcast on integers, and a single operand."""
    return [
        Case(
            "einsum",
            (TupleType((T(2, 3), T(3, 4))),),
            {"equation": "ij,jk->ik"},
            T(2, 4),
            ((TupleType((T(5, 2, 3), T(5, 3, 2))),), {"equation": "bij,bjk->bki"}),
            ((TupleType((T(2, 3), T(4, 4))),), {"equation": "ij,jk->ik"}, "data"),
        ),
        Case(
            "einsum",
            (TupleType((T(1, 3, 3, dtype="int32"), T(4, 3, dtype="int32"))),),
            {"equation": "...ii,...i->...i"},
            T(4, 3, dtype="int32"),
            ((TupleType((T(2, 2, dtype="int32"),)),), {"equation": "ii"}),
            ((TupleType((T(2, 3, dtype="int32"),)),), {"equation": "ijk->i"}, "equation"),
            id="einsum-int32-diagonal",
        ),
        Case(
            "einsum",
            (TupleType((T(2, 3, 4),)),),
            {"equation": "abc->cb"},
            T(4, 3),
            ((TupleType((T(3, 0),)),), {"equation": "ij->i"}),  # an empty sum is 0
            ((TupleType((T(2, 3), T(3, 2, dtype="int32"))),), {"equation": "ij,jk"}, "data"),
            id="einsum-sum-transpose",
        ),
    ]
