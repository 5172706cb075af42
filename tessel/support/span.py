"""Source locations carried by IR nodes and errors."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Span:
    """A range of source text: 1-based line and column, end exclusive."""

    file: str
    line: int
    column: int
    end_line: int
    end_column: int

    def excerpt(self, source: str) -> str:
        """The first source line this span covers, with carets under the covered columns."""
        lines = source.splitlines()
        if not 1 <= self.line <= len(lines):
            return ""
        text = lines[self.line - 1]
        end = self.end_column if self.end_line == self.line else len(text) + 1
        width = max(1, end - self.column)
        return f"{text}\n{' ' * (self.column - 1)}{'^' * width}"
