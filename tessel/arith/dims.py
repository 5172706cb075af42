"""Dimensions of tensor shapes (graph types, te tensors): a static size (an int) or a symbolic
one (an integer expression over shape symbols such as `batch` or `seq`, Relax's symbolic
shapes).

A symbol is a `SizeVar` (non-negative) of dtype int64, ONNX's shape type; `?` is a symbol of its
own that no other dimension shares (Relay's `Any`). Every question a type relation asks of a
symbolic dimension is answered by proof with `tessel.arith`: two dimensions are equal only when
their difference simplifies to zero, so a relation never guesses, and a program whose sizes it
cannot prove consistent is refused with the dimensions named.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Union

from tessel.arith.analyzer import Analyzer
from tessel.arith.modular_set import EXACT_OPERATIONS
from tessel.ir import builders
from tessel.ir.expr import (
    Add,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Mul,
    PrimExpr,
    SizeVar,
    Sub,
    Var,
)
from tessel.ir.functor import post_order
from tessel.ir.node import Node
from tessel.ir.substitute import substitute

Dim = Union[int, PrimExpr]  # noqa: UP007 - a runtime alias, also used in isinstance checks
ANY_NAME = "?"  # the name of a dimension nobody else shares; prints as `?`


@dataclass(frozen=True, slots=True, eq=False)
class ShapeSymbol(SizeVar):
    """A shape symbol and the sizes it may take, `lower` to `upper` inclusive (None: no upper
    bound); relations prove with the bounds (a slice [0:seq] of 512 rows has `seq` rows when
    seq <= 512), and a call with a size outside them is refused."""

    lower: int = 0
    upper: int | None = None

    def __post_init__(self) -> None:
        SizeVar.__post_init__(self)
        if self.lower < 0 or (self.upper is not None and self.upper < self.lower):
            raise ValueError(
                f"shape symbol `{self.name}`: bounds {self.lower}..{self.upper} are not "
                "0 <= lower <= upper"
            )

    @property
    def bounds_text(self) -> str:
        """`1..64`, or `1..` without an upper bound."""
        return f"{self.lower}..{'' if self.upper is None else self.upper}"


def symbol(name: str, lower: int = 0, upper: int | None = None) -> ShapeSymbol:
    """A new shape symbol named `name` (int64) taking sizes `lower` to `upper` inclusive."""
    return ShapeSymbol(name, "int64", None, lower, upper)


def any_dim() -> ShapeSymbol:
    """A new dimension that is known to no other: Relay's `?` (`Any`)."""
    return ShapeSymbol(ANY_NAME, "int64")


def normalize_dim(dim: object) -> Dim:
    """`dim` as a graph dimension: an int, or a simplified integer expression (an expression
    that folds to a constant becomes that int); TypeError for anything else."""
    if isinstance(dim, bool):
        raise TypeError(f"a dimension is an int or an integer expression, not {dim!r}")
    if isinstance(dim, int):
        return dim
    if hasattr(dim, "__index__") and not isinstance(dim, PrimExpr):  # NumPy integers
        return int(dim)  # type: ignore[call-overload]
    if isinstance(dim, PrimExpr) and dim.dtype.is_int and dim.dtype.lanes == 1:
        if isinstance(dim, Var):
            return dim
        folded = Analyzer().simplify(dim)
        return folded.value if isinstance(folded, IntImm) else folded
    raise TypeError(f"a dimension is an int or an integer expression, not {dim!r}")


def is_static(shape: Sequence[Dim]) -> bool:
    """True if every dimension of `shape` is an int."""
    return all(isinstance(d, int) for d in shape)


def shape_symbols(shapes: Iterable[Sequence[Dim]]) -> list[Var]:
    """The symbols the shapes mention, each once, in order of first appearance."""
    seen: dict[int, Var] = {}
    for shape in shapes:
        for dim in shape:
            if isinstance(dim, PrimExpr):
                for node in post_order(dim):
                    if isinstance(node, Var) and id(node) not in seen:
                        seen[id(node)] = node
    return list(seen.values())


def _analyzer(*dims: Dim) -> Analyzer:
    """An analyzer that knows the bounds of the symbols of `dims`."""
    return _assume_bounds(Analyzer(), shape_symbols([dims]))


def assume_symbol_bounds(analyzer: Analyzer, root: Node) -> Analyzer:
    """`analyzer` told the bounds of every shape symbol in `root` (a kernel's body: its entry
    checks them, c_source.py, so they hold in it); returns `analyzer`."""
    return _assume_bounds(analyzer, {id(n): n for n in post_order(root)}.values())


def _assume_bounds(analyzer: Analyzer, variables: Iterable[object]) -> Analyzer:
    """`analyzer` told the bounds of each shape symbol among `variables`."""
    for var in variables:
        if not isinstance(var, ShapeSymbol):
            continue
        if var.lower:
            analyzer.assume(var >= var.lower)
        if var.upper is not None:
            analyzer.assume(var <= var.upper)
    return analyzer


def simplify_dim(dim: Dim) -> Dim:
    """`dim` simplified; an int when it folds to a constant."""
    if isinstance(dim, int):
        return dim
    folded = _analyzer(dim).simplify(dim)
    return folded.value if isinstance(folded, IntImm) else folded


def dims_equal(a: Dim, b: Dim) -> bool:
    """True if `a == b` is proved (for ints: equal; for expressions: the difference is 0)."""
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    if a is b:
        return True
    return simplify_dim(dim_expr(a) - dim_expr(b)) == 0


def dims_differ(a: Dim, b: Dim) -> bool:
    """True if `a != b` is proved (with the symbols' bounds: `seq` in 1..512 is never 0)."""
    if isinstance(a, int) and isinstance(b, int):
        return a != b
    return compare_dims("<", a, b) is True or compare_dims(">", a, b) is True


_COMPARISONS = {
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


def compare_dims(op: str, a: Dim, b: Dim) -> bool | None:
    """`a <op> b` for op in == != < <= > >=: True or False when proved (with the symbols'
    bounds), None when the sizes decide it at run time."""
    if isinstance(a, int) and isinstance(b, int):
        return bool(_COMPARISONS[op](a, b))
    x, y = dim_expr(a), dim_expr(b)
    analyzer = _analyzer(x, y)
    negation = {"==": "!=", "!=": "==", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}[op]
    for claim, answer in ((op, True), (negation, False)):
        if claim == "==":
            proved = isinstance(simplify_dim(x - y), int) and simplify_dim(x - y) == 0
        elif claim == "!=":
            proved = analyzer.can_prove(x < y) or analyzer.can_prove(x > y)
        else:
            proved = analyzer.can_prove(_symbolic_comparison(claim, x, y))
        if proved:
            return answer
    return None


def _symbolic_comparison(op: str, x: PrimExpr, y: PrimExpr) -> PrimExpr:
    return {"<": builders.lt, "<=": builders.le, ">": builders.gt, ">=": builders.ge}[op](x, y)


def dim_product(dims: Iterable[Dim]) -> Dim:
    """The product of `dims`, simplified (1 for none)."""
    total: Dim = 1
    for dim in dims:
        total = total * dim if isinstance(total, int) and isinstance(dim, int) else _mul(total, dim)
    return simplify_dim(total)


def _mul(a: Dim, b: Dim) -> PrimExpr:
    return dim_expr(a) * dim_expr(b)


def dim_expr(dim: Dim) -> PrimExpr:
    """`dim` as an expression: an int as an int64 constant."""
    return IntImm("int64", dim) if isinstance(dim, int) else dim


def mentions_symbols(value: object) -> bool:
    """True if `value` (a dimension, or an attribute's tuple of them) is symbolic."""
    if isinstance(value, tuple):
        return any(mentions_symbols(v) for v in value)
    return isinstance(value, PrimExpr)


def broadcast_dims(*shapes: Sequence[Dim]) -> tuple[Dim, ...]:
    """The NumPy broadcast of `shapes`, symbolic dimensions broadcasting when proved equal or
    against a 1; ValueError when two may differ."""
    result: tuple[Dim, ...] = ()
    for shape in shapes:
        rank = max(len(result), len(shape))
        a = (1,) * (rank - len(result)) + tuple(result)
        b = (1,) * (rank - len(shape)) + tuple(shape)
        merged = []
        for x, y in zip(a, b, strict=True):
            if dims_equal(x, y) or (isinstance(y, int) and y == 1):
                merged.append(x)
            elif isinstance(x, int) and x == 1:
                merged.append(y)
            else:
                raise ValueError(
                    f"shapes {shape_text(result)} and {shape_text(shape)} do not broadcast: "
                    f"{dim_text(x)} against {dim_text(y)}"
                )
        result = tuple(merged)
    return result


def monomial_quotient(numerator: Dim, denominator: Dim) -> Dim | None:
    """`numerator / denominator` when both are products of symbols and integers and the
    quotient is one too (batch * 64 * 16 over batch * 4 is 256); None otherwise."""
    top, bottom = _monomial(numerator), _monomial(denominator)
    if top is None or bottom is None or bottom[0] == 0 or top[0] % bottom[0]:
        return None
    powers = dict(top[1])
    for var, power in bottom[1].items():
        if powers.get(var, 0) < power:
            return None
        powers[var] -= power
    result: Dim = top[0] // bottom[0]
    for var, power in powers.items():
        for _ in range(power):
            result = result * var
    return simplify_dim(result)


def _monomial(dim: Dim) -> tuple[int, dict[Var, int]] | None:
    """(coefficient, {symbol: power}) of a product of symbols and integers; None otherwise."""
    if isinstance(dim, int):
        return dim, {}
    if isinstance(dim, IntImm):
        return dim.value, {}
    if isinstance(dim, Var):
        return 1, {dim: 1}
    if isinstance(dim, Mul):
        a, b = _monomial(dim.a), _monomial(dim.b)
        if a is None or b is None:
            return None
        powers = dict(a[1])
        for var, power in b[1].items():
            powers[var] = powers.get(var, 0) + power
        return a[0] * b[0], powers
    return None


def inferred_extent(shape: Sequence[Dim], given: Sequence[Dim]) -> Dim | None:
    """The extent a reshape's -1 stands for, when `shape` is reshaped to `given` and the -1:
    the input extents left after cancelling `given`'s symbolic extents against them, over the
    product of the rest of `given` ((n, s, 4) to (n, -1) gives s * 4; (n, 64, 16) to (n * 4,
    16, -1) gives 16), so no symbol (which may be 0) is divided by. None where no extent is
    proved to make the element counts equal."""
    rest = list(shape)
    remaining: list[Dim] = []
    for dim in given:
        if isinstance(dim, int):
            remaining.append(dim)
            continue
        match = next((k for k, d in enumerate(rest) if dims_equal(d, dim)), None)
        if match is not None:
            del rest[match]
            continue
        quotient = monomial_quotient(dim_product(rest), dim)
        if quotient is None:
            remaining.append(dim)
        else:
            rest = [quotient]
    known, remainder = dim_product(remaining), dim_product(rest)
    if isinstance(known, int) and known == 0:
        return None
    inferred = simplify_dim(remainder // known)
    return inferred if dims_equal(dim_product((inferred, known)), remainder) else None


def dim_upper_bound(dim: Dim) -> int | None:
    """The largest size `dim` takes under its symbols' bounds; None when unbounded."""
    if isinstance(dim, int):
        return dim
    bound = _analyzer(dim).const_int_bound(dim).max_value
    # An unbounded symbol is bounded only by its type (int64's largest value): no bound.
    if not isinstance(bound, int) or bound >= dim_expr(dim).dtype.max_value():
        return None
    return int(bound)


def slice_range(begin: Dim, end: Dim | None, step: int, extent: Dim) -> tuple[Dim, Dim]:
    """(start, length) of the slice begin:end:step (step > 0) of an axis of `extent`, as NumPy
    takes it: a negative int bound counts from the end, then bounds clamp to [0, extent];
    symbolic bounds are sizes (non-negative). Written with min/max that the symbols' bounds
    simplify (a slice [0:seq] of 512 rows is `seq` rows when seq <= 512)."""
    if step <= 0:
        raise ValueError(f"a symbolic slice takes a positive step, not {step}")
    size = dim_expr(extent)
    start = _clamped(begin, size)
    stop = size if end is None else _clamped(end, size)
    length = _max(stop - start, 0)
    return simplify_dim(start), simplify_dim((length + (step - 1)) // step)


def _clamped(bound: Dim, extent: PrimExpr) -> PrimExpr:
    if isinstance(bound, int) and bound < 0:
        return _max(extent + bound, 0)
    return _min(dim_expr(bound), extent)


def _max(a: PrimExpr, b: int) -> PrimExpr:
    return builders.max_value(a, IntImm(a.dtype, b))


def _min(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    return builders.min_value(a, b)


def evaluate_dim(dim: Dim, sizes: Mapping[Var, int]) -> int:
    """The size `dim` has when its symbols have `sizes`; KeyError naming a symbol not given."""
    if isinstance(dim, int):
        return dim
    mapping = {var: IntImm(var.dtype, sizes[var]) for var in shape_symbols([(dim,)])}
    folded = _analyzer().simplify(substitute(dim, mapping))
    assert isinstance(folded, IntImm), f"{dim} with every symbol given is a constant"
    return folded.value


def dim_function(dim: Dim) -> Callable[[Mapping[Var, int]], int]:
    """`evaluate_dim` for `dim` made once into a function of the sizes (a model of symbolic
    shapes evaluates every result's dimensions at each call, where simplifying each took 40
    us). Falls back to `evaluate_dim` for an expression of other operations."""
    if isinstance(dim, int):
        return lambda sizes: dim
    if isinstance(dim, IntImm):
        value = dim.value
        return lambda sizes: value
    if isinstance(dim, Var):
        return lambda sizes: sizes[dim]
    operation = EXACT_OPERATIONS.get(type(dim))
    if operation is None:
        return lambda sizes: evaluate_dim(dim, sizes)
    left, right = dim_function(dim.a), dim_function(dim.b)  # type: ignore[attr-defined]
    return lambda sizes: operation(left(sizes), right(sizes))


class SymbolNames:
    """The names a printer gives shape symbols: each symbol its own name, so text parses back to
    the same symbols (a second, different `n` prints as `n_1`); `?` stays `?`."""

    def __init__(self) -> None:
        self._names: dict[int, str] = {}
        self._taken: set[str] = set()

    def __call__(self, var: Var) -> str:
        if var.name == ANY_NAME:
            return ANY_NAME
        if id(var) not in self._names:
            name, k = var.name, 0
            while name in self._taken:
                k += 1
                name = f"{var.name}_{k}"
            self._taken.add(name)
            self._names[id(var)] = name
        return self._names[id(var)]


def dim_text(dim: Dim, names: Callable[[Var], str] | None = None) -> str:
    """A dimension as the text format writes it: `8`, `batch`, `?`, `seq * 2`, `floordiv(n, 2)`;
    `names` names the symbols (their own names when None)."""
    if isinstance(dim, int):
        return str(dim)
    return _expr_text(dim, 0, names or _own_name)


def _own_name(var: Var) -> str:
    return var.name


_INFIX = {Add: ("+", 1), Sub: ("-", 1), Mul: ("*", 2)}
_CALLS = {FloorDiv: "floordiv", FloorMod: "floormod", Min: "min", Max: "max"}


def _expr_text(expr: PrimExpr, context: int, names: Callable[[Var], str]) -> str:
    if isinstance(expr, Var):
        return names(expr)
    if isinstance(expr, IntImm):
        return str(expr.value) if expr.value >= 0 or context == 0 else f"({expr.value})"
    if type(expr) in _INFIX:
        symbol_text, level = _INFIX[type(expr)]
        left = _expr_text(expr.a, level, names)
        # Left-associative: the right operand binds tighter, so a - (b - c) keeps its parens.
        right = _expr_text(expr.b, level + 1, names)
        text = f"{left} {symbol_text} {right}"
        return f"({text})" if level < context else text
    if type(expr) in _CALLS:
        a, b = _expr_text(expr.a, 0, names), _expr_text(expr.b, 0, names)
        return f"{_CALLS[type(expr)]}({a}, {b})"
    raise TypeError(f"`{expr}` is not a dimension the text format writes")


def bind_shape(
    declared: Sequence[Dim], actual: Sequence[int], sizes: dict[Var, int], what: str
) -> None:
    """Check a concrete shape against a declared one, binding the symbols it meets in `sizes`
    (shared across calls, so `batch` in two inputs must agree): ValueError naming `what` and
    the axis on a mismatch. Expressions are checked by `check_shape` once every bare symbol is
    bound."""
    if len(declared) != len(actual):
        raise ValueError(
            f"{what}: expected rank {len(declared)} (shape {shape_text(declared)}), "
            f"got shape {tuple(actual)}"
        )
    for axis, (dim, size) in enumerate(zip(declared, actual, strict=True)):
        if isinstance(dim, int):
            if dim != size:
                raise ValueError(
                    f"{what}: axis {axis} must be {dim} (shape {shape_text(declared)}), "
                    f"got shape {tuple(actual)}"
                )
        elif isinstance(dim, Var):
            _check_bounds(dim, size, axis, what)
            bound = sizes.setdefault(dim, size)
            if bound != size:
                raise ValueError(
                    f"{what}: axis {axis} is `{dim.name}`, which is {bound} in an earlier input, "
                    f"but got {size} (shape {tuple(actual)})"
                )


def _check_bounds(var: Var, size: int, axis: int, what: str) -> None:
    if not isinstance(var, ShapeSymbol):
        return
    if size < var.lower or (var.upper is not None and size > var.upper):
        raise ValueError(
            f"{what}: axis {axis} is `{var.name}`, which takes sizes {var.bounds_text}, "
            f"but got {size}"
        )


def check_shape(
    declared: Sequence[Dim], actual: Sequence[int], sizes: Mapping[Var, int], what: str
) -> None:
    """Check the expression dimensions of `declared` against `actual` once `sizes` binds
    every symbol: ValueError naming `what`, the axis and both sizes on a mismatch."""
    for axis, (dim, size) in enumerate(zip(declared, actual, strict=True)):
        if isinstance(dim, PrimExpr) and not isinstance(dim, Var):
            try:
                expected = evaluate_dim(dim, sizes)
            except KeyError as err:
                raise ValueError(
                    f"{what}: axis {axis} is `{dim_text(dim)}`, whose symbol `{err.args[0].name}`"
                    " no input gives"
                ) from None
            if expected != size:
                raise ValueError(
                    f"{what}: axis {axis} is `{dim_text(dim)}` = {expected}, got {size}"
                )


def shape_text(shape: Sequence[Dim]) -> str:
    """A shape for messages: `(batch, 384)`."""
    inner = ", ".join(dim_text(d) for d in shape)
    return f"({inner},)" if len(shape) == 1 else f"({inner})"


__all__ = [
    "ANY_NAME",
    "Dim",
    "ShapeSymbol",
    "SymbolNames",
    "any_dim",
    "bind_shape",
    "broadcast_dims",
    "compare_dims",
    "check_shape",
    "dim_expr",
    "dim_product",
    "dim_upper_bound",
    "dim_text",
    "dims_differ",
    "dims_equal",
    "evaluate_dim",
    "inferred_extent",
    "is_static",
    "mentions_symbols",
    "monomial_quotient",
    "normalize_dim",
    "shape_symbols",
    "shape_text",
    "simplify_dim",
    "slice_range",
    "symbol",
]
