"""`c_string_literal` and `c_comment`: any text reaches C text safely. A literal compiled by the C
compiler holds exactly the text's UTF-8 bytes; a comment never ends early or swallows a line."""

import shutil
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tessel.support.names import c_comment, c_string_literal

HOSTILE = [
    "",
    'say "hi"',
    "back\\slash\\",
    "new\nline\r\n",
    "*/ close /* open",
    "??/ ??= ??( ??) ??' ??< ??> ??! ??- ???/",
    "nul\x00inside\x001",  # an octal escape is three digits: the `1` after it stays a `1`
    "\x00",
    "snow \u2603 e\u0301 \U0001f600",
    '"); system("touch /tmp/pwned"); //',
    "\\x41 \\0 \\u0041",
    "tab\tbell\x07del\x7f",
    "x" * 10_000,
]


def _compiler():
    return shutil.which("cc") or shutil.which("gcc") or pytest.skip("no C compiler")


def _literal_program(texts):
    lines = ["#include <stdio.h>"]
    for k, text in enumerate(texts):
        lines.append(f"static const char s{k}[] = {c_string_literal(text)};")
    lines.append("int main(void) {")
    for k in range(len(texts)):
        lines.append(
            f"  for (size_t j = 0; j + 1 < sizeof(s{k}); ++j) "
            f'printf("%02x", (unsigned char)s{k}[j]);'
        )
        lines.append('  printf("\\n");')
    lines += ["  return 0;", "}"]
    return "\n".join(lines)


def _compile_and_run(source, tmp_path):
    (tmp_path / "p.c").write_text(source)
    # -std=c11 turns trigraphs on, so a `??/` left unescaped would change the text.
    subprocess.run(
        [
            _compiler(),
            "-std=c11",
            "-Wall",
            "-Werror",
            "-Wtrigraphs",
            "-o",
            str(tmp_path / "p"),
            str(tmp_path / "p.c"),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    return subprocess.run([str(tmp_path / "p")], check=True, capture_output=True, text=True).stdout


def _check_literals(texts, tmp_path):
    printed = _compile_and_run(_literal_program(texts), tmp_path).split("\n")[: len(texts)]
    assert printed == [t.encode("utf-8").hex() for t in texts]


def test_hostile_literals_compile_to_their_utf8_bytes(tmp_path):
    _check_literals(HOSTILE, tmp_path)


def test_literal_is_printable_ascii_on_one_line():
    for text in HOSTILE:
        literal = c_string_literal(text)
        assert literal.isascii() and literal.isprintable()
        assert "??" not in literal


@settings(max_examples=8, deadline=None)
@given(st.lists(st.text(max_size=40), min_size=1, max_size=60))
def test_any_literal_compiles_to_its_utf8_bytes(tmp_path_factory, texts):
    _check_literals(texts, tmp_path_factory.mktemp("literals"))


def _comment_program(texts):
    # Each comment sits between two statements; one that ended early or swallowed the next
    # line would break the count (or the build).
    lines = ["#include <stdio.h>", "int main(void) {", "  int count = 0;"]
    for text in texts:
        lines.append(f"  // {c_comment(text)}")
        lines.append("  count += 1;")
        lines.append(f"  /* {c_comment(text)} */ count += 1;")
    lines += ['  printf("%d\\n", count);', "  return 0;", "}"]
    return "\n".join(lines)


def _check_comments(texts, tmp_path):
    assert int(_compile_and_run(_comment_program(texts), tmp_path)) == 2 * len(texts)


def test_hostile_comments_stay_comments(tmp_path):
    _check_comments(HOSTILE, tmp_path)
    for text in HOSTILE:
        comment = c_comment(text)
        assert comment.isascii() and comment.isprintable()
        assert "*/" not in comment and "/*" not in comment and "??" not in comment
        assert not comment.endswith("\\")


@settings(max_examples=5, deadline=None)
@given(
    st.lists(
        st.text(alphabet=st.sampled_from("*/?\\\n\"' =a\x00\u2603"), max_size=20),
        min_size=1,
        max_size=60,
    )
)
def test_any_comment_stays_a_comment(tmp_path_factory, texts):
    _check_comments(texts, tmp_path_factory.mktemp("comments"))
