"""Proofs with products of symbols as atoms (tessel.arith.product_atoms): what holds for a
single size variable holds for a product of them, and nothing false is proved."""

from hypothesis import given, settings
from hypothesis import strategies as st

from tessel.arith.analyzer import Analyzer
from tessel.arith.dims import symbol
from tessel.arith.product_atoms import can_prove_with_product_atoms
from tessel.ir import builders
from tessel.ir.expr import Var

B, S = symbol("b", 1, 64), symbol("s", 1, 512)


def _tiles_cover(rows, tile: int, slack: int):
    """`(rows + slack) // tile * tile >= rows`: true for slack tile - 1, not below."""
    return builders.ge((rows + slack) // tile * tile, rows)


def test_tiles_of_a_product_of_symbols_are_proved_to_cover_it():
    rows = B * S
    assert not Analyzer().can_prove(_tiles_cover(rows, 8, 7))  # the rules match a variable
    assert can_prove_with_product_atoms(Analyzer(), _tiles_cover(rows, 8, 7))
    assert can_prove_with_product_atoms(Analyzer(), _tiles_cover(S * B, 16, 15))


@settings(max_examples=40, deadline=None)
@given(
    tile=st.integers(2, 32), slack=st.integers(0, 40), b=st.integers(1, 64), s=st.integers(1, 512)
)
def test_what_is_proved_holds_at_every_size(tile, slack, b, s):
    condition = _tiles_cover(B * S, tile, slack)
    if can_prove_with_product_atoms(Analyzer(), condition):
        rows = b * s
        assert (rows + slack) // tile * tile >= rows


def test_a_product_of_unknown_sign_is_not_taken_to_be_a_size():
    u, v = Var("u", "int64"), Var("v", "int64")
    assert not can_prove_with_product_atoms(Analyzer(), builders.ge(u * v, 0))
    assert can_prove_with_product_atoms(Analyzer(), builders.ge(B * S, 0))  # sizes: >= 0
