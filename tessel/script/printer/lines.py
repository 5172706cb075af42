"""Indented output lines, with carets under highlighted text (used by ScheduleError).

Highlighted text is wrapped in two private-use characters while printing; `render` strips
them and writes a line of `^` under each marked span.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

MARK_OPEN = "\ue000"
MARK_CLOSE = "\ue001"
INDENT = "    "


def mark(text: str) -> str:
    """`text` flagged for underlining."""
    return f"{MARK_OPEN}{text}{MARK_CLOSE}"


class Lines:
    """Collects the printed lines at the current indentation."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 0
        self._highlight_next = False

    def emit(self, text: str) -> None:
        """Append one line; it is underlined whole if `highlight_next_line` was asked for."""
        if self._highlight_next:
            text, self._highlight_next = mark(text), False
        self.lines.append(INDENT * self.depth + text)

    def blank(self) -> None:
        """Append an empty line (between functions of a module)."""
        self.lines.append("")

    def highlight_next_line(self) -> None:
        """Underline the next emitted line (the first line of a highlighted statement)."""
        self._highlight_next = True

    @contextmanager
    def indented(self) -> Iterator[None]:
        """Lines emitted inside are indented one more level."""
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1

    def render(self) -> str:
        """The text, with caret lines under marked spans and the markers removed."""
        out: list[str] = []
        for line in self.lines:
            out.extend(render_line(line))
        return "\n".join(out)


def render_line(line: str) -> list[str]:
    """`line` without markers, followed by its caret line if it had marked spans."""
    if MARK_OPEN not in line:
        return [line]
    text: list[str] = []
    carets: list[str] = []
    depth = 0
    for char in line:
        if char == MARK_OPEN:
            depth += 1
        elif char == MARK_CLOSE:
            depth -= 1
        else:
            text.append(char)
            carets.append("^" if depth > 0 else " ")
    return ["".join(text), "".join(carets).rstrip()]
