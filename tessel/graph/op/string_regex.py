"""RE2 patterns (ONNX RegexFullMatch's syntax, onnxruntime's engine) for whole-string matching,
translated to a POSIX extended expression for glibc's regcomp (the C the kernel runs) and to a
Python `re` pattern (the operator's NumPy reference), from one parse.

Whether a string matches as a whole does not depend on how a match is searched for, so
leftmost-longest (POSIX) and leftmost-first (RE2, Python) agree on it, lazy quantifiers are
plain ones, and groups need not capture. As in RE2: `.` is any code point but `\\n`, `$` only
the end, and `\\d \\w \\s` (and their negations), POSIX classes (`[[:alpha:]]`) and case-free
ASCII letters are ASCII. Refused with a clear error: Unicode classes (`\\p{L}`), `\\C`, `\\Q..\\E`,
flags other than a leading `(?i)`, and a negated class escape inside brackets (`[\\W]`).
Known difference: `\\b` and `(?i)` use glibc's Unicode word characters and case folding, where
RE2's `\\b` is ASCII.
"""

from __future__ import annotations

import ctypes
import functools
import re
from dataclasses import dataclass

from tessel.support.errors import UserError


class RegexError(UserError):
    """A pattern RegexFullMatch cannot take: malformed, or beyond the translated subset."""


@dataclass(frozen=True)
class Translated:
    """One pattern in both syntaxes: `posix` anchored for regcomp, `python` for re.fullmatch."""

    posix: str
    python: str
    ignore_case: bool


_POSIX_SPECIAL = set(".[]()*+?{}|^$\\")
_CLASSES = {
    "d": [("0", "9")],
    "w": [("0", "9"), ("A", "Z"), ("a", "z"), ("_", "_")],
    "s": [(c, c) for c in "\t\n\f\r "],
}
_POSIX_CLASSES = {
    "alpha": [("A", "Z"), ("a", "z")],
    "digit": [("0", "9")],
    "alnum": [("0", "9"), ("A", "Z"), ("a", "z")],
    "upper": [("A", "Z")],
    "lower": [("a", "z")],
    "space": [(c, c) for c in "\t\n\v\f\r "],
    "xdigit": [("0", "9"), ("A", "F"), ("a", "f")],
    "word": [("0", "9"), ("A", "Z"), ("a", "z"), ("_", "_")],
    "punct": [("!", "/"), (":", "@"), ("[", "`"), ("{", "~")],
    "blank": [(" ", " "), ("\t", "\t")],
    "cntrl": [("\x00", "\x1f"), ("\x7f", "\x7f")],
    "print": [(" ", "~")],
    "graph": [("!", "~")],
}
_CONTROL = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v", "a": "\a"}


@functools.lru_cache(maxsize=256)
def translate(pattern: str) -> Translated:
    """`pattern` (RE2 syntax) for whole-string matching in POSIX and Python syntax."""
    parser = _Parser(pattern)
    posix, python = parser.parse()
    anchored = f"^({posix})$" if posix else "^$"
    _check_posix(pattern, anchored, parser.ignore_case)
    return Translated(anchored, python, parser.ignore_case)


def full_match(translated: Translated, text: str) -> bool:
    """The reference: whether `text` matches as a whole (Python's engine)."""
    flags = re.ASCII | (re.IGNORECASE if translated.ignore_case else 0)
    return re.fullmatch(translated.python, text, flags) is not None


class _Parser:
    def __init__(self, pattern: str) -> None:
        self.pattern, self.at = pattern, 0
        self.ignore_case = False
        self.posix: list[str] = []
        self.python: list[str] = []
        self.quantifiable = False  # whether the last item may take a quantifier
        self.depth = 0  # groups open

    def error(self, message: str) -> RegexError:
        caret = " " * self.at + "^"
        return RegexError(
            f"RegexFullMatch pattern {self.pattern!r}: {message}\n  {self.pattern}\n  {caret}",
            rule="regex.unsupported",
        )

    def emit(self, posix: str, python: str, quantifiable: bool = True) -> None:
        self.posix.append(posix)
        self.python.append(python)
        self.quantifiable = quantifiable

    def parse(self) -> tuple[str, str]:
        if self.pattern.startswith("(?i)"):
            self.ignore_case, self.at = True, 4
        self.depth = 0
        handlers = {
            "\\": self._escape,
            "[": self._bracket,
            "(": self._group_open,
            ")": self._group_close,
            "{": self._interval,
        }
        plain = {
            "|": ("|", "|", False),
            ".": ("[^\n]", ".", True),
            "^": ("^", r"\A", False),
            "$": ("$", r"\Z", False),
        }
        while self.at < len(self.pattern):
            c = self.pattern[self.at]
            self.at += 1
            if c in handlers:
                handlers[c]()
            elif c in "*+?":
                self._quantifier(c)
            elif c in plain:
                self.emit(*plain[c])
            else:
                self._literal(c)
        if self.depth:
            raise self.error("unbalanced `(`")
        return "".join(self.posix), "".join(self.python)

    def _group_close(self) -> None:
        if self.depth == 0:
            raise self.error("unbalanced `)`")
        self.depth -= 1
        self.emit(")", ")")

    def _literal(self, c: str) -> None:
        self.emit("\\" + c if c in _POSIX_SPECIAL else c, re.escape(c))

    def _class(self, ranges: list[tuple[str, str]], negated: bool) -> None:
        self.emit(_posix_bracket(ranges, negated), _python_bracket(ranges, negated))

    def _escape(self) -> None:
        if self.at >= len(self.pattern):
            raise self.error("the pattern ends in `\\`")
        c = self.pattern[self.at]
        self.at += 1
        if c.lower() in _CLASSES:
            self._class(_CLASSES[c.lower()], negated=c.isupper())
        elif c in "bB":
            self.emit("\\" + c, "\\" + c, quantifiable=False)
        elif c == "A":
            self.emit("^", r"\A", quantifiable=False)
        elif c == "z":
            self.emit("$", r"\Z", quantifiable=False)
        elif c in _CONTROL:
            self._literal(_CONTROL[c])
        elif c == "x":
            self._literal(self._hex())
        elif c.isalnum():
            raise self.error(
                f"`\\{c}` is not supported (Unicode classes, \\C, \\Q, back-references)"
            )
        else:
            self._literal(c)

    def _hex(self) -> str:
        if self.pattern.startswith("{", self.at):
            end = self.pattern.find("}", self.at)
            digits, self.at = self.pattern[self.at + 1 : end], end + 1
        else:
            digits, self.at = self.pattern[self.at : self.at + 2], self.at + 2
        try:
            return chr(int(digits, 16))
        except ValueError:
            raise self.error(f"`\\x{digits}` is not a hexadecimal code point") from None

    def _group_open(self) -> None:
        self.depth += 1
        if not self.pattern.startswith("?", self.at):
            self.emit("(", "(", quantifiable=False)
            return
        for prefix in ("?:", "?P<", "?<"):
            if self.pattern.startswith(prefix, self.at):
                self.at += len(prefix)
                if prefix != "?:":  # a name: capturing does not change a whole match
                    end = self.pattern.find(">", self.at)
                    if end < 0 or not self.pattern[self.at : end].isidentifier():
                        raise self.error("a group name must be an identifier closed by `>`")
                    self.at = end + 1
                self.emit("(", "(?:", quantifiable=False)
                return
        raise self.error("flags other than a leading `(?i)` are not supported")

    def _quantifier(self, c: str) -> None:
        if not self.quantifiable:
            raise self.error(f"`{c}` repeats nothing")
        self.emit(c, c, quantifiable=False)
        if self.pattern.startswith("?", self.at):  # lazy: the same whole matches
            self.at += 1

    def _interval(self) -> None:
        match = re.compile(r"(\d+)(,(\d*))?\}").match(self.pattern, self.at)
        if match is None:  # RE2 takes a `{` that starts no repetition as a literal
            self._literal("{")
            return
        low = int(match.group(1))
        high = match.group(3)
        if low > 255 or (high and int(high) > 255) or (high and int(high) < low):
            raise self.error("repetition counts must be ordered and at most 255")
        if not self.quantifiable:
            raise self.error("`{` repeats nothing")
        text = "{" + self.pattern[self.at : match.end()]
        self.at = match.end()
        self.emit(text, text, quantifiable=False)
        if self.pattern.startswith("?", self.at):
            self.at += 1

    def _bracket(self) -> None:
        negated = self.pattern.startswith("^", self.at)
        self.at += negated
        ranges: list[tuple[str, str]] = []
        first = True
        while True:
            if self.at >= len(self.pattern):
                raise self.error("unclosed `[`")
            c = self.pattern[self.at]
            if c == "]" and not first:
                self.at += 1
                break
            first = False
            if self.pattern.startswith("[:", self.at):
                end = self.pattern.find(":]", self.at)
                name = self.pattern[self.at + 2 : end] if end > 0 else ""
                if name not in _POSIX_CLASSES:
                    raise self.error(f"unknown class `[:{name}:]`")
                ranges += _POSIX_CLASSES[name]
                self.at = end + 2
                continue
            low = self._bracket_char(ranges)
            if low is None:
                continue
            if self.pattern.startswith("-", self.at) and not self.pattern.startswith("-]", self.at):
                self.at += 1
                high = self._bracket_char(ranges)
                if high is None or high < low:
                    raise self.error("a range in `[...]` must go from a character to a later one")
                ranges.append((low, high))
            else:
                ranges.append((low, low))
        self._class(ranges, negated)

    def _bracket_char(self, ranges: list[tuple[str, str]]) -> str | None:
        """One character of a bracket (None: it was a class escape, added to `ranges`)."""
        c = self.pattern[self.at]
        self.at += 1
        if c != "\\":
            return c
        if self.at >= len(self.pattern):
            raise self.error("unclosed `[`")
        e = self.pattern[self.at]
        self.at += 1
        if e in _CLASSES:
            ranges += _CLASSES[e]
            return None
        if e.lower() in _CLASSES:
            raise self.error(f"`\\{e}` inside `[...]` is not supported; write `[^...]`")
        if e in _CONTROL:
            return _CONTROL[e]
        if e == "x":
            return self._hex()
        if e.isalnum():
            raise self.error(f"`\\{e}` is not supported inside `[...]`")
        return e


def _posix_bracket(ranges: list[tuple[str, str]], negated: bool) -> str:
    """A POSIX bracket of `ranges` (brackets have no escapes): `]` first, then the others,
    then `[` and `^`, and `-` last, where each is a literal."""
    specials = {low for low, high in ranges if low == high and low in "]-^["}
    items = []
    for low, high in ranges:
        if low == high and low in specials:
            continue
        if low in "]-^[" or high in "]-^[":
            raise RegexError(
                f"a range from {low!r} to {high!r} has an end POSIX brackets cannot spell",
                rule="regex.unsupported",
            )
        items.append(low if low == high else f"{low}-{high}")
    body = ("]" if "]" in specials else "") + "".join(items)
    body += ("[" if "[" in specials else "") + ("^" if "^" in specials else "")
    body += "-" if "-" in specials else ""
    if body == "^":  # a `^` first would negate
        return "[^^]" if negated else "\\^"
    if body == "^-":
        body = "-^"
    return f"[{'^' if negated else ''}{body}]"


def _python_bracket(ranges: list[tuple[str, str]], negated: bool) -> str:
    def char(c: str) -> str:
        return "\\" + c if c in "\\]^-[" else c

    body = "".join(char(a) if a == b else f"{char(a)}-{char(b)}" for a, b in ranges)
    return f"[{'^' if negated else ''}{body}]" if body else ("[\\s\\S]" if negated else "(?!)")


def _check_posix(pattern: str, posix: str, ignore_case: bool) -> None:
    """Compile the translation with the C library's regcomp, as the kernel will."""
    libc = ctypes.CDLL(None)
    compiled = ctypes.create_string_buffer(256)  # larger than glibc's regex_t (64 bytes)
    flags = 1 | 8 | (2 if ignore_case else 0)  # REG_EXTENDED | REG_NOSUB | REG_ICASE
    status = libc.regcomp(compiled, posix.encode("utf-8"), flags)
    if status != 0:
        raise RegexError(
            f"RegexFullMatch pattern {pattern!r}: its POSIX form {posix!r} does not compile "
            f"(regcomp error {status})",
            rule="regex.unsupported",
        )
    libc.regfree(compiled)


__all__ = ["RegexError", "Translated", "full_match", "translate"]
