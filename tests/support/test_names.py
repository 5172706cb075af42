"""c_identifier and unique_name: names from users become valid, non-reserved, unique C names."""

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tessel.support.names import C_KEYWORDS, c_identifier, is_c_identifier, unique_name

_C_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@pytest.mark.parametrize("keyword", ["int", "for", "while", "restrict", "_Bool", "main", "NULL"])
def test_keywords_are_prefixed(keyword):
    assert c_identifier(keyword) == f"v_{keyword}"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("A.shared", "A_shared"),
        ("conv2d-nchw", "conv2d_nchw"),
        ("x y", "x_y"),
        ("café", "caf_"),
        ("1x", "_1x"),
        ("2", "_2"),
        ("", "_"),
        ("__x", "v___x"),
        ("__", "v___"),
        ("tessel_buf", "v_tessel_buf"),
        ("matmul", "matmul"),
        ("_private", "_private"),
        ("_LP64", "v__LP64"),
        ("_Exit", "v__Exit"),
        ("_", "_"),
    ],
)
def test_invalid_characters_leading_digits_and_reserved_prefixes(name, expected):
    assert c_identifier(name) == expected


@given(name=st.text(max_size=20))
def test_any_name_becomes_a_valid_unreserved_identifier(name):
    result = c_identifier(name)
    assert _C_IDENTIFIER.match(result)
    assert result not in C_KEYWORDS
    assert not result.startswith(("__", "tessel_"))
    assert not re.match(r"_[A-Z]", result)  # reserved to the C implementation


@given(name=st.text(max_size=20))
def test_sanitising_is_idempotent(name):
    once = c_identifier(name)
    assert c_identifier(once) == once


def test_unique_name_returns_base_when_free_and_records_it():
    taken: set[str] = set()
    assert unique_name("x", taken) == "x"
    assert taken == {"x"}


def test_unique_name_counts_up_past_taken_names():
    taken = {"x", "x_1"}
    assert unique_name("x", taken) == "x_2"
    assert unique_name("x", taken) == "x_3"
    assert {"x_2", "x_3"} <= taken


@given(bases=st.lists(st.sampled_from(["a", "b", "a_1", "tmp"]), max_size=30))
def test_unique_names_never_collide(bases):
    taken: set[str] = set()
    names = [unique_name(base, taken) for base in bases]
    assert len(set(names)) == len(names)


@pytest.mark.parametrize("name", ["abs", "my_fn2", "_helper", "expf"])
def test_is_c_identifier_accepts_ascii_identifiers(name):
    assert is_c_identifier(name)


@pytest.mark.parametrize("name", ["return", "int", "é", "a-b", "2x", "", " f", 3, None, b"abs"])
def test_is_c_identifier_rejects_keywords_non_ascii_and_non_strings(name):
    assert not is_c_identifier(name)
