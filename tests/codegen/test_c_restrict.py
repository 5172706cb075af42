"""`restrict` parameters (docs/architecture.md §7): emitted unless a function allows aliasing,
and kept sound by the runtime, which refuses overlapping arguments when one of them is written."""

import numpy as np
import pytest

import tessel
from tessel.driver import generate_c_source
from tessel.script import parse

SCALE = """
@T.prim_func
def scale(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("C"):
            vi = T.axis.spatial(8, i)
            C[vi] = A[vi] * B[vi] + T.float32(1)
"""

IN_PLACE = """
@T.prim_func
def scale(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
    T.func_attr({"tir.noalias": False})
    for i in range(8):
        with T.block("C"):
            vi = T.axis.spatial(8, i)
            C[vi] = A[vi] * B[vi] + T.float32(1)
"""


def test_parameters_are_restrict_qualified_by_default():
    source = generate_c_source(parse(SCALE))
    assert source.count("* restrict ") == 3


def test_noalias_false_drops_restrict_and_allows_in_place_calls():
    func = parse(IN_PLACE)
    assert "restrict" not in generate_c_source(func)
    a = np.arange(8, dtype="float32")
    b = np.full(8, 2, dtype="float32")
    tessel.build(func)(a, b, a)  # C aliases A: elementwise, so in place is well defined
    np.testing.assert_array_equal(a, np.arange(8, dtype="float32") * 2 + 1)


def test_an_output_overlapping_an_input_is_refused_naming_both():
    module = tessel.build(parse(SCALE))
    a, b = np.ones(8, "float32"), np.ones(8, "float32")
    with pytest.raises(ValueError, match=r"`A` and `C` .* overlap in memory and `C` is written"):
        module(a, b, a)


def test_partially_overlapping_views_are_refused():
    module = tessel.build(parse(SCALE))
    base = np.zeros(12, "float32")
    with pytest.raises(ValueError, match="overlap in memory"):
        module(base[:8], np.ones(8, "float32"), base[4:])


def test_inputs_may_share_memory_when_neither_is_written():
    module = tessel.build(parse(SCALE))
    a, c = np.arange(8, dtype="float32"), np.zeros(8, "float32")
    module(a, a, c)
    np.testing.assert_array_equal(c, a * a + 1)


def test_adjacent_views_of_one_array_do_not_overlap():
    module = tessel.build(parse(SCALE))
    base = np.arange(24, dtype="float32")
    module(base[:8], base[8:16], base[16:])
    np.testing.assert_array_equal(base[16:], np.arange(8) * np.arange(8, 16) + 1)
