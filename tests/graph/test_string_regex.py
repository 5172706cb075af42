"""RE2 patterns translated for whole-string matching (tessel/graph/op/string_regex.py): the POSIX
form of each construct, the refusals with their caret, and, as a property, that the translated
Python pattern matches exactly the strings the original matches under RE2's ASCII classes."""

import re

import pytest
from graph_op_cases_strings import ATOMS, QUANTIFIERS
from hypothesis import given, settings
from hypothesis import strategies as st

from tessel.graph.op.string_regex import RegexError, full_match, translate


@pytest.mark.parametrize(
    ("pattern", "posix"),
    [
        (r"a\.b", r"^(a\.b)$"),
        (r"\d+", r"^([0-9]+)$"),
        (r"[\w.-]+", r"^([0-9A-Za-z_.-]+)$"),
        (r"\W", r"^([^0-9A-Za-z_])$"),
        (r"a.c", "^(a[^\n]c)$"),
        (r"(?:ab)+?", r"^((ab)+)$"),
        (r"(?P<x>a)|b", r"^((a)|b)$"),
        (r"x{2,3}y{4}", r"^(x{2,3}y{4})$"),
        (r"x{", r"^(x\{)$"),
        (r"[]a]", r"^([]a])$"),
        (r"[a\-z]", r"^([az-])$"),
        (r"[[:digit:]x]", r"^([0-9x])$"),
        (r"\bcat\b", r"^(\bcat\b)$"),
        (r"\x41\x{4e2d}", "^(A\u4e2d)$"),
        ("", "^$"),
    ],
)
def test_each_construct_has_its_posix_form(pattern, posix):
    assert translate(pattern).posix == posix


def test_a_leading_case_flag_becomes_ignore_case():
    translated = translate("(?i)abc")
    assert translated.ignore_case and translated.posix == "^(abc)$"
    assert full_match(translated, "aBC")


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        (r"\p{L}", r"`\\p` is not supported"),
        (r"a(?s)b", "flags other than a leading"),
        (r"[\W]", r"`\\W` inside `\[...\]`"),
        ("(a", r"unbalanced `\(`"),
        ("a)", r"unbalanced `\)`"),
        ("*a", r"`\*` repeats nothing"),
        (r"\1", r"`\\1` is not supported"),
        ("[a", r"unclosed `\[`"),
        ("a{3,2}", "repetition counts"),
        ("[z-a]", "a range"),
    ],
)
def test_what_the_translation_cannot_take_is_refused_with_a_caret(pattern, message):
    with pytest.raises(RegexError, match=message) as err:
        translate(pattern)
    assert err.value.rule == "regex.unsupported"
    assert "^" in str(err.value).splitlines()[-1]


@st.composite
def patterns(draw):
    """Small RE2 patterns: atoms with quantifiers, concatenated, maybe in an alternation."""
    pieces = draw(
        st.lists(
            st.tuples(st.sampled_from(ATOMS), st.sampled_from(QUANTIFIERS)), min_size=1, max_size=4
        )
    )
    body = "".join(a + q for a, q in pieces)
    if draw(st.booleans()):
        other = draw(st.sampled_from(ATOMS))
        body = f"(?:{body}|{other})"
    return body


@settings(max_examples=300, deadline=None)
@given(patterns(), st.text(alphabet="ab1 .\n_é", max_size=6))
def test_translated_pattern_matches_exactly_what_the_original_matches(pattern, text):
    # RE2's classes are ASCII and `.` excludes \n, which Python's re.ASCII also gives.
    expected = re.fullmatch(pattern, text, re.ASCII) is not None
    assert full_match(translate(pattern), text) == expected
