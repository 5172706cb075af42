"""`expect_parse_error`: assert a script fails to parse exactly where a `# error:` marker says."""

from __future__ import annotations

import re
import textwrap
from typing import Any

from tessel.script import parse
from tessel.script.errors import ParseError

_MARKER = "# error:"


def expect_parse_error(
    source: str, match: str | None = None, extra_vars: dict[str, Any] | None = None
) -> ParseError:
    """Parse dedented `source`, expecting a ParseError on the line marked `# error: <text>`.

    The error's line must be the marked line, its message must contain the marker text (and
    match the regex `match`, when given), and its rendering must show the line with carets.
    """
    text = textwrap.dedent(source)
    line, expected = _marker(text)
    try:
        parse(text, extra_vars=extra_vars)
    except ParseError as err:
        _check(err, line, expected, match)
        return err
    raise AssertionError(f"expected a ParseError at line {line} ({expected!r}), but it parsed")


def _marker(text: str) -> tuple[int, str]:
    marked = [(n, row) for n, row in enumerate(text.splitlines(), start=1) if _MARKER in row]
    if len(marked) != 1:
        raise AssertionError(f"the source needs exactly one `{_MARKER}` line, found {len(marked)}")
    number, line = marked[0]
    return number, line.split(_MARKER, 1)[1].strip()


def _check(err: ParseError, line: int, expected: str, match: str | None) -> None:
    assert err.span.line == line, f"error on line {err.span.line}, expected {line}: {err}"
    assert expected in err.message, f"{expected!r} not in the message {err.message!r}"
    if match is not None:
        assert re.search(match, err.message), f"{match!r} does not match {err.message!r}"
    rendered = str(err).splitlines()
    assert rendered[0].startswith(f"{err.span.file}:{line}:{err.span.column}: error: ")
    assert "^" in rendered[2], f"no caret line under the source line:\n{err}"
