"""Cases (graph_op_cases.Case) for the string operators (tessel/graph/op/strings.py). They run
in C only (the string runtime has no interpreter form), so `lowers=False` here and
tests/graph/test_string_ops.py compiles them against their references."""

from __future__ import annotations

import numpy as np
from graph_op_cases import Case, T

WORDS = ["", "a", "cat", "Dog", "中文", "ß", "www.x.com", "a b"]

# Pieces of random RE2 patterns (tests/graph/test_string_regex.py, test_string_ops.py).
ATOMS = ["a", "b", ".", r"\d", r"\w", r"\s", r"\W", "[ab]", "[^a]", r"\.", "[0-9a-c]", "(?:ab)"]
QUANTIFIERS = ["", "*", "+", "?", "{1,2}", "*?"]


def random_strings(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """An object array of strings drawn from WORDS (ASCII, CJK, the empty string, spaces)."""
    out = np.empty(int(np.prod(shape, dtype=np.int64)), dtype=object)
    out[:] = [WORDS[k] for k in rng.integers(0, len(WORDS), out.size)]
    return out.reshape(shape)


def _strings(rng, types):
    return [random_strings(rng, t.shape) for t in types]


def S(*shape: int):  # noqa: N802  (a type constructor, as T and I)
    return T(*shape, dtype="string")


def string_cases() -> list[Case]:
    """Each string operator at two shapes, with an argument its relation refuses."""
    cases = [
        Case(
            "string.concat",
            (S(2, 3), S(3)),
            {},
            S(2, 3),
            ((S(), S(4, 1)), {}),
            ((S(2), T(2)), {}, "rhs"),
            values=_strings,
        ),
        Case(
            "string.equal",
            (S(4), S(1)),
            {},
            T(4, dtype="bool"),
            ((S(2, 2), S(2, 2)), {}),
            ((S(3), S(2)), {}, "rhs"),
            values=_strings,
        ),
        Case(
            "string.regex_full_match",
            (S(3, 2),),
            {"pattern": r"[\w.]+\.com"},
            T(3, 2, dtype="bool"),
            ((S(0, 2),), {"pattern": "(?i)c.t|d.g"}),
            ((S(2),), {"pattern": r"\p{L}"}, "pattern"),
            values=_strings,
        ),
        Case(
            "string.change_case",
            (S(5),),
            {"action": "UPPER"},
            S(5),
            ((S(2, 3),), {"action": "LOWER"}),
            ((S(2),), {"action": "TITLE"}, "action"),
            values=_strings,
        ),
    ]
    for case in cases:
        case.lowers = False
    return cases
