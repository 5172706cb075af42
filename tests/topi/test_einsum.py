"""topi.einsum against numpy.einsum in the interpreter and compiled C, and its errors."""

import numpy as np
import pytest

from tessel import te, topi
from tessel.testing.topi import check_operator
from tessel.topi.utils import OperatorError

CASES = [
    ("batch_matmul", "bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("matmul_implicit_output", "ij,jk", [(2, 3), (3, 4)]),
    ("implicit_output_sorts_letters", "ba,ac", [(2, 3), (3, 4)]),
    ("diagonal", "ii->i", [(4, 4)]),
    ("trace", "ii", [(3, 3)]),
    ("diagonal_of_three_axes", "iij->ji", [(3, 3, 2)]),
    ("outer_product", "i,j->ij", [(3,), (4,)]),
    ("inner_product", "i,i", [(5,), (5,)]),
    ("sum_of_all", "ij->", [(2, 3)]),
    ("transpose", "ijk->kji", [(2, 3, 4)]),
    ("ellipsis_batch_broadcast", "...ij,...jk->...ik", [(2, 1, 2, 3), (5, 3, 4)]),
    ("ellipsis_implicit_output", "...ij,jk", [(2, 2, 3), (3, 4)]),
    ("ellipsis_in_the_middle", "i...j->j...i", [(2, 3, 4, 5)]),
    ("stretched_letter", "ij,j->i", [(2, 3), (1,)]),
    ("three_operands", "ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("scalar_operand", ",i->i", [(), (3,)]),
]


@pytest.mark.parametrize(
    ("subscripts", "shapes"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_einsum_matches_numpy(subscripts, shapes):
    tensors = [te.placeholder(s, name=f"x{i}") for i, s in enumerate(shapes)]
    out = topi.einsum(subscripts, *tensors)
    check_operator(tensors, out, lambda *v: np.einsum(subscripts, *v), rtol=1e-5, atol=1e-5)


def test_integer_einsum_is_exact():
    a = te.placeholder((2, 3), "int32", name="a")
    b = te.placeholder((3, 2), "int32", name="b")
    out = topi.einsum("ij,jk->ik", a, b)
    assert out.dtype == "int32"
    values = [
        np.arange(6, dtype="int32").reshape(2, 3) - 2,
        np.arange(6, dtype="int32").reshape(3, 2),
    ]
    check_operator([a, b], out, lambda x, y: np.einsum("ij,jk->ik", x, y), values=values)


def test_einsum_reduces_only_labels_absent_from_the_output():
    a, b = te.placeholder((2, 3), name="a"), te.placeholder((3, 4), name="b")
    out = topi.einsum("ij,jk->ik", a, b)
    assert [iv.var.name for iv in out.op.axis] == ["i", "k"]
    assert [iv.var.name for iv in out.op.reduce_axis] == ["j"]


ERRORS = [
    ("ij,jk->ik", [(2, 3)], "has 2 operands but 1 tensors"),
    ("ij->i", [(2, 3, 4)], "name 2 axes but the tensor has 3"),
    ("ij,jk->ik", [(2, 3), (4, 5)], "label 'j' has extent 4"),
    ("ij->ii", [(2, 3)], "names a label twice"),
    ("ij->iz", [(2, 3)], "output labels \\['z'\\] are in no operand"),
    ("...i->i", [(2, 3)], "drops the `...` axes"),
    ("i1->i", [(2, 3)], "is not letters"),
    ("i......->i", [(2,)], "at most one `...`"),
]


@pytest.mark.parametrize(
    ("subscripts", "shapes", "message"), ERRORS, ids=[e[2][:24] for e in ERRORS]
)
def test_bad_subscripts_are_an_operator_error(subscripts, shapes, message):
    tensors = [te.placeholder(s, name=f"x{i}") for i, s in enumerate(shapes)]
    with pytest.raises(OperatorError, match=message):
        topi.einsum(subscripts, *tensors)


def test_operands_of_different_dtypes_are_an_operator_error():
    a = te.placeholder((2,), "float32", name="a")
    b = te.placeholder((2,), "int32", name="b")
    with pytest.raises(OperatorError, match="`operand\\[1\\]`: dtype int32 differs"):
        topi.einsum("i,i", a, b)
