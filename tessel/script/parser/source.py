"""Script source text: reading it from Python objects, parsing it with `ast`, and spans."""

from __future__ import annotations

import ast
import inspect
import linecache
from dataclasses import dataclass
from typing import Any

from tessel.script.errors import ParseError
from tessel.support.errors import InternalError
from tessel.support.span import Span


@dataclass(frozen=True)
class ScriptSource:
    """Source text plus where it came from: `line_offset` maps parsed lines to file lines.

    `text` is what error excerpts are cut from, so it holds the whole file for the decorator
    path (spans carry real file line numbers).
    """

    text: str
    filename: str
    line_offset: int = 0

    def span(self, node: ast.AST) -> Span:
        """The span of an AST node, 1-based, in file coordinates."""
        line = getattr(node, "lineno", 1) + self.line_offset
        column = getattr(node, "col_offset", 0) + 1
        end_line = (getattr(node, "end_lineno", None) or line - self.line_offset) + self.line_offset
        end_column = (getattr(node, "end_col_offset", None) or column) + 1
        return Span(self.filename, line, column, end_line, end_column)

    def error(self, node: ast.AST, message: str, hint: str | None = None) -> ParseError:
        """A ParseError pointing at `node`."""
        return ParseError(message, self.span(node), self.text, hint)

    def internal_error(self, node: ast.AST, err: Exception) -> InternalError:
        """An InternalError for a bug that `err` revealed while parsing `node`."""
        span = self.span(node)
        where = f"{span.file}:{span.line}:{span.column}"
        return InternalError(
            f"{where}: {type(err).__name__} while parsing `{ast.unparse(node)[:80]}`: {err}"
        )


def parse_python(code: str, source: ScriptSource) -> list[ast.stmt]:
    """The top-level statements of `code`; indented code (a method's source) parses as is.

    Indented code is wrapped in `if True:` rather than dedented so that columns stay exact;
    `source.line_offset` must already account for the extra line.
    """
    wrapped = code.lstrip("\n").startswith((" ", "\t"))
    text = "if True:\n" + code if wrapped else code
    try:
        module = ast.parse(text, filename=source.filename)
    except SyntaxError as err:
        line = (err.lineno or 1) + source.line_offset
        column = err.offset or 1
        span = Span(source.filename, line, column, line, column + 1)
        raise ParseError(f"invalid Python syntax: {err.msg}", span, source.text) from err
    except RecursionError as err:  # Python's own parser gave up on a deeply nested expression
        raise _too_deep(text, source) from err
    if wrapped:
        return module.body[0].body  # type: ignore[attr-defined]  # the `if True:` wrapper
    return module.body


def _too_deep(text: str, source: ScriptSource) -> ParseError:
    """Python's parser reports no location when it gives up: point at the longest line."""
    lines = text.splitlines() or [""]
    index = max(range(len(lines)), key=lambda i: len(lines[i]))
    line = index + 1 + source.line_offset
    indent = len(lines[index]) - len(lines[index].lstrip())
    span = Span(source.filename, line, indent + 1, line, len(lines[index]) + 1)
    message = "an expression is nested too deeply for Python's parser (probably on this line)"
    hint = "split it into several statements (e.g. with let bindings)"
    return ParseError(message, span, source.text, hint)


def source_of(obj: Any) -> tuple[str, ScriptSource]:
    """The source of a function or class, and where it lies in its file."""
    try:
        lines, start = inspect.getsourcelines(obj)
        filename = inspect.getsourcefile(obj) or inspect.getfile(obj)
    except (OSError, TypeError) as err:
        raise OSError(
            f"cannot read the source of {obj.__qualname__}; "
            "define it in a file, or use tessel.script.parse(text)"
        ) from err
    code = "".join(lines)
    file_text = "".join(linecache.getlines(filename)) or code
    wrapped = code.startswith((" ", "\t"))
    offset = start - 1 - (1 if wrapped else 0)
    if file_text == code:
        offset = -1 if wrapped else 0
    return code, ScriptSource(file_text, filename, offset)
