"""topi.tensordot against numpy.tensordot in the interpreter and compiled C, and its errors."""

import numpy as np
import pytest

from tessel import te, topi
from tessel.testing.topi import check_operator
from tessel.topi.utils import OperatorError

CASES = [
    ("int_two_axes", (2, 3, 4), (3, 4, 5), 2),
    ("int_one_axis", (2, 3), (3, 4), 1),
    ("int_zero_is_outer_product", (2, 3), (4,), 0),
    ("lists", (2, 3, 4), (4, 3, 5), ([1, 2], [1, 0])),
    ("single_ints", (2, 3, 4), (3, 5), (1, 0)),
    ("negative_axes", (2, 3, 4), (5, 4), ([-1], [-1])),
    ("all_axes_to_a_scalar", (2, 3), (2, 3), ([0, 1], [0, 1])),
]


@pytest.mark.parametrize(
    ("a_shape", "b_shape", "axes"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_tensordot_matches_numpy(a_shape, b_shape, axes):
    a, b = te.placeholder(a_shape, name="a"), te.placeholder(b_shape, name="b")
    out = topi.tensordot(a, b, axes)
    check_operator([a, b], out, lambda x, y: np.tensordot(x, y, axes))


ERRORS = [
    ((2, 3), (4, 5), 1, "axis 1 of `a` .* has extent 3 but axis 0 of `b`"),
    ((2, 3), (3, 5), 3, "3 axes cannot be contracted"),
    ((2, 3), (3, 5), ([1], [0, 1]), "1 axes of `a` are paired with 2 axes of `b`"),
    ((2, 3), (3, 5), ([2], [0]), "2 is out of range for a tensor of rank 2"),
    ((2, 2), (2, 2), ([0, 0], [0, 1]), "name an axis twice"),
    ((2, 3), (3, 5), "ij", "expected an int or a pair"),
]


@pytest.mark.parametrize(
    ("a_shape", "b_shape", "axes", "message"), ERRORS, ids=[e[3][:20] for e in ERRORS]
)
def test_bad_axes_are_an_operator_error(a_shape, b_shape, axes, message):
    a, b = te.placeholder(a_shape, name="a"), te.placeholder(b_shape, name="b")
    with pytest.raises(OperatorError, match=message):
        topi.tensordot(a, b, axes)
