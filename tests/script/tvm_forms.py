"""What the tests of TVM's script forms (test_tvm_forms_*.py) share: parsing a script written as
TVM prints it, and the round trip every form must survive."""

import textwrap

from tessel.ir import assert_structural_equal
from tessel.script import parse
from tessel.script.printer import script

HEADER = "from tessel.script import tir as T\nfrom tessel.script import ir as I\n"


def parse_form(source: str):
    """The IR of a TVM-style script (indented as in a test), with the `T` and `I` imports."""
    return parse(HEADER + textwrap.dedent(source))


def roundtrip(source: str):
    """Parse, print, parse again: structurally equal IR and the same text; the parsed IR."""
    original = parse_form(source)
    text = script(original)
    reparsed = parse(text)
    assert_structural_equal(reparsed, original)
    assert script(reparsed) == text
    return original
