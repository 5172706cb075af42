"""InterpreterError, and Poison: the value of T.undef() and of variables read out of scope."""

from __future__ import annotations

from typing import Any, NoReturn

from tessel.support.errors import UserError


class InterpreterError(UserError):
    """The program did something the reference interpreter must reject (a failed assert, an
    out-of-bounds access, a wrong argument, a use of T.undef(), ...)."""


class Poison:
    """A value that must never be used: any arithmetic, comparison, truth test or use as an
    index raises InterpreterError. Storing T.undef()'s poison is the one permitted use (a no-op).

    NumPy hands any ufunc involving a poison to `__array_ufunc__`, so `np.exp(poison)` and
    `np.float32(1) + poison` raise too.
    """

    __slots__ = ("reason", "rule")

    def __init__(self, reason: str, rule: str) -> None:
        self.reason, self.rule = reason, rule

    def __repr__(self) -> str:
        return f"Poison({self.reason!r})"

    def _fail(self, *_args: Any) -> NoReturn:
        raise InterpreterError(self.reason, rule=self.rule)

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _fail
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = _fail
    __pow__ = __rpow__ = __neg__ = __pos__ = __abs__ = __invert__ = _fail
    __and__ = __rand__ = __or__ = __ror__ = __xor__ = __rxor__ = _fail
    __lshift__ = __rlshift__ = __rshift__ = __rrshift__ = _fail
    # A poison compares to nothing (mypy: these override object.__eq__/__ne__ on purpose).
    __lt__ = __le__ = __gt__ = __ge__ = _fail
    __eq__ = __ne__ = _fail  # type: ignore[assignment]  # see the comment above
    __bool__ = __int__ = __float__ = __index__ = __trunc__ = __iter__ = __array__ = _fail
    __array_ufunc__ = __array_function__ = _fail
    __hash__ = None  # type: ignore[assignment]  # never a dict key

    def __getattr__(self, _name: str) -> NoReturn:
        # Reached only for attributes a real value would have (`.astype`, `.dtype`, ...).
        raise InterpreterError(self.reason, rule=self.rule)


UNDEF = Poison(
    "a T.undef() value was used (in arithmetic, a comparison, a condition or as an index); "
    "the only permitted use of T.undef() is storing it, which is a no-op",
    "interpreter.undef",
)


def is_poison(value: Any) -> bool:
    """True for T.undef() and for the placeholder of a variable read outside its definition."""
    return isinstance(value, Poison)


def describe(node: Any) -> str:
    """A short text for an IR node in an error message (the script form when a printer is
    installed, else the node's class)."""
    try:
        text = str(node)
    except Exception:  # noqa: BLE001  (the printer is optional and may be mid-development)
        text = ""
    if not text or text.startswith("<"):
        return type(node).__name__
    return text if len(text) <= 200 else text[:197] + "..."
