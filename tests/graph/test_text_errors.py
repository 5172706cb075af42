"""Malformed graph text gives a located ParseError: the line (marked `// error` below), the
column (where `at` starts on that line, or the end of its code for a missing token), a caret
under it, and a message saying what was expected."""

import textwrap

import numpy as np
import pytest

from tessel.graph import parse, parse_expr
from tessel.script.errors import ParseError

HEADER = '#[version = "0.0.5"]\n'
MARK = "// error"

CASES = [
    (
        "unknown_variable",
        """
        def @main(%x: float32) {
          add(%x, %y)  // error
        }
        """,
        "%y",
        "unknown variable `%y`",
    ),
    (
        "unbound_graph_name",
        """
        def @main(%x: float32) {
          %0 = exp(%x);
          add(%0, %1)  // error
        }
        """,
        "%1",
        "`%1` is not bound",
    ),
    (
        "missing_closing_brace",
        """
        def @main(%x: float32) {
          %0 = exp(%x);
          %0  // error
        """,
        "<end>",
        "expected `}` closing the body of `@main` (opened at line 3)",
    ),
    (
        "extra_closing_brace",
        """
        def @main(%x: float32) {
          %x
        }
        }  // error
        """,
        "}",
        "expected a `def @name(...) { ... }`, found `}`",
    ),
    (
        "unbalanced_parenthesis",
        """
        def @main(%x: float32) {
          add(%x, exp(%x)  // error
        }
        """,
        "<end>",
        "expected `,` or `)` in the call, found `}`",
    ),
    (
        "tensor_type_without_dtype",
        """
        def @main(%x: Tensor[(1, 3)]) {  // error
          %x
        }
        """,
        "]",
        "expected `,` and a dtype after the shape",
    ),
    (
        "unknown_dtype",
        """
        def @main(%x: Tensor[(1, 3), flaot32]) {  // error
          %x
        }
        """,
        "flaot32",
        "unknown dtype `flaot32`",
    ),
    (
        "not_a_type",
        """
        def @main(%x: 3) {  // error
          %x
        }
        """,
        "3)",
        "expected a type",
    ),
    (
        "negative_dimension",
        """
        def @main(%x: Tensor[(2 - 5, 3), float32]) {  // error
          %x
        }
        """,
        "2",
        "a dimension is non-negative, not -3",
    ),
    (
        "dimension_missing_operand",
        """
        def @main(%x: Tensor[(n + , 3), float32]) {  // error
          %x
        }
        """,
        ",",
        "expected a dimension",
    ),
    (
        "dimension_zero_divisor",
        """
        def @main(%x: Tensor[(floordiv(n, 0), 3), float32]) {  // error
          %x
        }
        """,
        "floordiv",
        "floordiv takes a positive divisor, not 0",
    ),
    (
        "missing_semicolon",
        """
        def @main(%x: float32) {
          %0 = exp(%x)  // error
          log(%0)
        }
        """,
        "<end>",
        "expected `;` ending the binding of `%0`, found `log`",
    ),
    (
        "missing_semicolon_after_let",
        """
        def @main(%x: float32) {
          let %y = exp(%x)  // error
          %y
        }
        """,
        "<end>",
        "expected `;` ending `let %y = ...`",
    ),
    (
        "meta_index_out_of_range",
        """
        def @main(%x: float32) {
          add(%x, meta[relay.Constant][3])  // error
        }
        """,
        "3]",
        "no entry 3 in meta[relay.Constant]: it has 1 entries",
    ),
    (
        "meta_without_metadata",
        """
        def @main(%x: float32) {
          add(%x, meta[relay.Constant][0])  // error
        }
        """,
        "meta",
        "there is no metadata",
    ),
    (
        "meta_unknown_kind",
        """
        def @main(%x: float32) {
          add(%x, meta[relay.Var][0])  // error
        }
        """,
        "relay.Var",
        "metadata kind `relay.Var` is not supported",
    ),
    (
        "duplicate_def",
        """
        def @f(%x: float32) { %x }
        def @f(%y: float32) { %y }  // error
        """,
        "@f",
        "`@f` is defined twice (first at line 3)",
    ),
    (
        "unknown_function",
        """
        def @main(%x: float32) {
          @missing(%x)  // error
        }
        """,
        "@missing",
        "unknown function `@missing`",
    ),
    (
        "bad_attribute_value",
        """
        def @main(%x: float32) {
          cast(%x, dtype=float16)  // error
        }
        """,
        "float16",
        "expected an attribute value",
    ),
    (
        "attribute_given_twice",
        """
        def @main(%x: float32) {
          sum(%x, axis=[0], axis=[1])  // error
        }
        """,
        "axis=[1]",
        "the attribute `axis` is given twice",
    ),
    (
        "argument_after_attribute",
        """
        def @main(%x: float32) {
          add(%x, axis=1, %x)  // error
        }
        """,
        "%x)",
        "arguments come before the attributes",
    ),
    (
        "unsupported_version",
        """
        #[version = "0.0.4"]  // error
        def @main(%x: float32) { %x }
        """,
        '"0.0.4"',
        'unsupported version "0.0.4"',
    ),
    (
        "unclosed_comment",
        """
        def @main(%x: float32) {
          /* never closed  // error
          %x
        }
        """,
        "/*",
        "this `/*` comment is never closed",
    ),
    (
        "unclosed_string",
        """
        def @main(%x: float32) {
          cast(%x, dtype="float16)  // error
        }
        """,
        '"float16',
        "this string is never closed",
    ),
    (
        "integer_out_of_range",
        """
        def @main() {
          300i8  // error
        }
        """,
        "300i8",
        "`300i8` does not fit in int8",
    ),
    (
        "named_graph_binding",
        """
        def @main(%x: float32) {
          %y = exp(%x);  // error
          %y
        }
        """,
        "%y",
        "only numbered names",
    ),
    (
        "operator_not_called",
        """
        def @main(%x: float32) {
          (%x, nn.relu)  // error
        }
        """,
        "nn.relu",
        "the operator `nn.relu` must be called",
    ),
    (
        "if_without_else",
        """
        def @main(%c: bool, %x: float32) {
          if (%c) {
            %x
          }  // error
        }
        """,
        "<end>",
        "expected `else`: an `if` needs both branches",
    ),
    (
        "name_bound_in_a_branch_used_outside",
        """
        def @main(%c: bool, %x: float32) {
          %1 = if (%c) {
            %0 = exp(%x);
            %0
          } else {
            %x
          };
          add(%1, %0)  // error
        }
        """,
        "%0)",
        "`%0` is not bound",
    ),
    (
        "duplicate_parameter",
        """
        def @main(%x: float32, %x: float32) {  // error
          %x
        }
        """,
        "%x: float32) {",
        "the parameter `%x` appears twice",
    ),
    (
        "unexpected_character",
        """
        def @main(%x: float32) {
          add(%x, $x)  // error
        }
        """,
        "$",
        "unexpected character `$`",
    ),
    (
        "type_definition",
        """
        type List[A] { Nil }  // error
        """,
        "type",
        "type definitions (ADTs) are not supported",
    ),
    (
        "bad_string_escape",
        """
        def @main(%x: float32) {
          cast(%x, dtype="a\\qb")  // error
        }
        """,
        '"a',
        "bad escape in the string",
    ),
]


def _locate(text: str, at: str) -> tuple[int, int]:
    marked = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if MARK in line]
    assert len(marked) == 1, "each case marks exactly one line"
    number, line = marked[0]
    code = line.split(MARK)[0].rstrip()
    column = len(code) + 1 if at == "<end>" else code.index(at) + 1
    return number, column


@pytest.mark.parametrize(("name", "source", "at", "message"), CASES, ids=[c[0] for c in CASES])
def test_malformed_text_gives_a_located_parse_error(name, source, at, message):
    text = textwrap.dedent(source)
    if "#[version" not in text:
        text = HEADER + text
    line, column = _locate(text, at)
    table = (
        {"relay.Constant": [np.zeros(2, "float32")]} if name == "meta_index_out_of_range" else None
    )
    with pytest.raises(ParseError) as info:
        parse(text, init_meta_table=table, source_name="bad.relay")
    err = info.value
    assert message in err.message, err.message
    assert (err.span.line, err.span.column) == (line, column), str(err)
    assert err.rule == "graph.parse"
    rendered = str(err).splitlines()
    assert rendered[0].startswith(f"bad.relay:{line}:{column}: error: ")
    assert rendered[1] == text.splitlines()[line - 1]
    assert rendered[2].startswith(" " * (column - 1) + "^")


def test_at_least_fifteen_malformed_texts():
    assert len(CASES) >= 15


def test_bad_metadata_json_is_located_in_the_metadata_section():
    text = HEADER + textwrap.dedent(
        """\
        def @main(%x: float32) {
          add(%x, meta[relay.Constant][0])
        }
        #[metadata]
        {
          "relay.Constant": [
            {"dtype": "float32", "shape": [2], "data": "AAAAAAAAAAA="},,
          ]
        }
        """
    )
    with pytest.raises(ParseError) as info:
        parse(text)
    assert "not valid JSON" in info.value.message
    assert info.value.span.line == 8


def test_metadata_entry_that_does_not_decode_is_reported():
    text = (
        HEADER
        + "def @main() { meta[relay.Constant][0] }\n"
        + '#[metadata]\n{"relay.Constant": [{"dtype": "float32"}]}\n'
    )
    with pytest.raises(ParseError, match="needs the keys dtype, shape and data"):
        parse(text)


def test_parse_expr_rejects_definitions_and_parse_rejects_free_vars():
    with pytest.raises(ParseError, match="found a `def`"):
        parse_expr(HEADER + "def @f() { () }")
    with pytest.raises(ParseError, match="free_var"):
        parse(HEADER + "def @f() {\n  free_var %x: float32;\n  %x\n}")
