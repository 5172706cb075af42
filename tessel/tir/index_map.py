"""IndexMap: the map from a buffer's indices to those of its new layout (TVM's tir.IndexMap).

`map_shape` bounds each new index term by term, as TVM does, so `(i // 32) * 32 + i % 32` pads 127
to 128 (the example of TVM's RFC 77 on padding); a padded map is inverted from its splits and fuses
detected over a padded domain, and its padding predicate comes from isl, so it is exact
(docs/architecture.md §5). A split by a symbolic divisor is beyond isl; plain splits get their
shape, inverse and padding in closed form (index_map_split.py).
"""

from __future__ import annotations

import inspect
import keyword
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, NoReturn

from tessel.arith import presburger
from tessel.arith.analyzer import Analyzer
from tessel.arith.canonical import scale_ordered
from tessel.arith.iter_map import IterMapError, IterMapResult, detect_iter_map, inverse_iter_map
from tessel.ir import builders
from tessel.ir.expr import FloorDiv, FloorMod, IntImm, PrimExpr, Range, Var
from tessel.ir.functor import Mutator, post_order
from tessel.ir.node import Node
from tessel.ir.structural import same_expr
from tessel.ir.substitute import substitute
from tessel.support.errors import UserError
from tessel.support.names import unique_name
from tessel.tir.index_map_split import SplitMap, split_map
from tessel.tir.layout import extent_product

# Names a printed lambda parameter may not take: the printed text itself needs them.
_RESERVED_NAMES = frozenset({"IndexMap", "T", "I", "range", "True", "False", "None"})
_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class IndexMapError(UserError):
    """An index map that is malformed, or cannot be used as asked (inverted, applied, ...)."""


class _AxisSeparator:
    """The marker a mapping function returns between two groups of physical axes."""

    def __repr__(self) -> str:
        return "IndexMap.AXIS_SEPARATOR"


@dataclass(frozen=True, slots=True, eq=False)
class IndexMap(Node):
    """`initial_indices -> final_indices`; each `axis_separators` position starts a new physical
    axis group (TVM's axis_separators)."""

    initial_indices: tuple[Var, ...]
    final_indices: tuple[PrimExpr, ...]
    axis_separators: tuple[int, ...] = ()

    AXIS_SEPARATOR: ClassVar[object] = _AxisSeparator()

    def __post_init__(self) -> None:
        if len({id(v) for v in self.initial_indices}) != len(self.initial_indices):
            raise IndexMapError(
                "an index map's initial indices must be distinct variables",
                rule="index_map.duplicate-index",
            )
        positions = list(self.axis_separators)
        inside = all(0 < p < len(self.final_indices) for p in positions)
        if positions != sorted(set(positions)) or not inside:
            raise IndexMapError(
                f"axis separators {positions} must increase strictly and lie between "
                f"two of the {len(self.final_indices)} final indices",
                rule="index_map.axis-separators",
            )

    @staticmethod
    def from_func(
        func: Callable[..., Any], ndim: int | None = None, index_dtype: str = "int32"
    ) -> IndexMap:
        """The map `func` computes, traced with fresh Vars named after its parameters."""
        names, keywords = _parameter_names(func, ndim)
        variables = tuple(Var(name, index_dtype) for name in (*names, *keywords))
        positional = variables[: len(names)]
        result = func(*positional, **dict(zip(keywords, variables[len(names) :], strict=True)))
        items = result if isinstance(result, tuple | list) else (result,)
        final: list[PrimExpr] = []
        separators: list[int] = []
        for item in items:
            if item is IndexMap.AXIS_SEPARATOR:
                separators.append(len(final))
            else:
                final.append(_as_expr(item, index_dtype))
        return IndexMap(variables, tuple(final), tuple(separators))

    def with_index_dtype(self, dtype: str) -> IndexMap:
        """This map over indices of `dtype` (int64 for a buffer with int64 shape), its integer
        constants and variables of the other index width retyped; the same map if nothing
        changes. TVM's index-map dtype legalization."""
        if all(str(v.dtype) == dtype for v in self.initial_indices):
            return self
        retype = _IndexRetyper(dtype)
        variables = tuple(retype.visit(v) for v in self.initial_indices)
        final = tuple(retype.visit(e) for e in self.final_indices)
        # the retyper keeps Vars Vars and exprs exprs
        return IndexMap(variables, final, self.axis_separators)  # type: ignore[arg-type]

    @staticmethod
    def identity(ndim: int, index_dtype: str = "int32") -> IndexMap:
        """The map that leaves `ndim` indices as they are."""
        variables = tuple(Var(f"i{d}", index_dtype) for d in range(ndim))
        return IndexMap(variables, variables)

    def map_indices(
        self, indices: Sequence[PrimExpr | int], analyzer: Analyzer | None = None
    ) -> tuple[PrimExpr, ...]:
        """The new indices of the element at `indices` (simplified when an analyzer is given)."""
        self._check_rank(indices, "indices")
        values = {
            var: _as_index(builders.convert(e), var)
            for var, e in zip(self.initial_indices, indices, strict=True)
        }
        mapped = tuple(substitute(e, values) for e in self.final_indices)
        return mapped if analyzer is None else tuple(analyzer.simplify(e) for e in mapped)

    def map_shape(
        self, shape: Sequence[PrimExpr | int], assumptions: Sequence[PrimExpr] = ()
    ) -> tuple[PrimExpr, ...]:
        """The new buffer's shape: one past each final index's largest value over the old box
        (`assumptions` are facts about the shape's variables, such as `n > 0`)."""
        domain = self._domain(shape)
        dtype = next((r.extent.dtype for r in domain.values()), None)
        analyzer = _analyzer(assumptions)
        new_shape = []
        detected: list[IterMapResult] = []
        for position, index in enumerate(self.final_indices):
            bounds = analyzer.int_set(index, domain)  # term by term, unsimplified: TVM's padding
            symbolic = bool(symbolic_divisors(index))
            if symbolic or bounds.min_value is None or bounds.max_value is None:
                # A symbolic extent times an iterator (`y * n + w`) has no interval bound when
                # n's sign is unknown, and a split by a positive symbolic `n` only a rounded one
                # (`(16 * n - 1) // n + 1`); as one iterator of the box, its extent is exact.
                extent = _fused_extent(self.final_indices, domain, position, detected, analyzer)
                if extent is not None:
                    new_shape.append(extent if dtype is None else builders.cast(extent, dtype))
                    continue
                if symbolic:
                    split = split_map(self.initial_indices, self.final_indices, analyzer)
                    if split is not None:
                        return _typed(split.shape(domain, analyzer), dtype)
                    _raise_symbolic_split(self, index, shape, analyzer)
                raise IndexMapError(
                    f"index `{index}` of {self!r} has no bound over shape {_text(shape)}",
                    rule="index_map.unbounded-index",
                )
            if not analyzer.can_prove(bounds.min_value >= 0):
                raise IndexMapError(
                    f"index `{index}` of {self!r} can be negative (down to "
                    f"{bounds.min_value}) over shape {_text(shape)}",
                    rule="index_map.negative-index",
                    hint="add an offset so every new index is at least 0",
                )
            extent = analyzer.simplify(_lanes(index, bounds.max_value + 1))
            new_shape.append(extent if dtype is None else builders.cast(extent, dtype))
        return tuple(new_shape)

    def then(self, other: IndexMap) -> IndexMap:
        """Apply `self`, then `other` (unsimplified, so `map_shape` pads as each step would)."""
        if len(other.initial_indices) != len(self.final_indices):
            raise IndexMapError(
                f"cannot compose {self!r} ({len(self.final_indices)} indices) with "
                f"{other!r} (takes {len(other.initial_indices)})",
                rule="index_map.arity",
            )
        final = other.map_indices(self.final_indices)
        return IndexMap(self.initial_indices, final, other.axis_separators)

    def is_injective(self, shape: Sequence[PrimExpr | int]) -> bool:
        """True if no two elements of the old box map to one new index (False: not proven)."""
        try:
            return presburger.is_injective(self.final_indices, self._domain(shape))
        except presburger.NotPresburger:
            return self._detect(shape) is not None

    def inverse(
        self, shape: Sequence[PrimExpr | int], assumptions: Sequence[PrimExpr] = ()
    ) -> IndexMap:
        """The inverse of a map that is a bijection from the box `shape` onto `map_shape(shape)`
        (`assumptions` as for `map_shape`)."""
        new_shape = self.map_shape(shape, assumptions)
        found = self._detect(shape, assumptions)
        analyzer = _analyzer(assumptions)
        if not analyzer.can_prove_equal(math.prod(shape), math.prod(new_shape)):
            # a split by a divisor that facts say divides (`T.assume(m % n == 0)`) pads nothing,
            # though `m // n * n == m` is beyond the rules
            split = split_map(self.initial_indices, self.final_indices, analyzer)
            if split is not None:
                inverse, padding = self._split_inverse(split, shape, new_shape, assumptions)
                if builders.is_const_int(padding, 0):
                    return inverse
            reason = f"it pads {_text(shape)} to {_text(new_shape)}"
        elif found is None:
            reason = "it is not a split, fuse or reordering of the indices, or not injective"
        else:
            return self._inverse_of(*found, new_shape)
        raise IndexMapError(
            f"{self!r} is not a bijection on shape {_text(shape)}: {reason}",
            rule="index_map.not-bijective",
            hint="non_surjective_inverse inverts a map that pads",
        )

    def non_surjective_inverse(
        self, shape: Sequence[PrimExpr | int], assumptions: Sequence[PrimExpr] = ()
    ) -> tuple[IndexMap, PrimExpr]:
        """The inverse on the new shape, and the padding predicate over its indices (true exactly
        on the new elements no old element maps to); `assumptions` as for `map_shape`."""
        new_shape = self.map_shape(shape, assumptions)
        found = self._detect(shape, assumptions)
        if found is None:
            split = split_map(self.initial_indices, self.final_indices, _analyzer(assumptions))
            if split is None:
                self._raise_not_invertible(shape)
            return self._split_inverse(split, shape, new_shape, assumptions)
        inverse = self._inverse_of(*found, new_shape)
        try:
            padding = presburger.padding_predicate(
                self.final_indices, self._domain(shape), new_shape, inverse.initial_indices
            )
        except presburger.NotPresburger as err:
            raise IndexMapError(
                f"cannot compute the padding of {self!r} on shape {_text(shape)}: {err}",
                rule="index_map.padding-unknown",
            ) from err
        analyzer = Analyzer()  # TVM's form of the predicate: `ax0 == 3 and 2 <= ax1`
        for var, extent in zip(inverse.initial_indices, new_shape, strict=True):
            analyzer.bind(var, Range(builders.const(0, extent.dtype), extent))
        return inverse, analyzer.simplify(padding)

    def _split_inverse(
        self,
        split: SplitMap,
        shape: Sequence[PrimExpr | int],
        new_shape: Sequence[PrimExpr],
        assumptions: Sequence[PrimExpr],
    ) -> tuple[IndexMap, PrimExpr]:
        """The inverse and padding of a split by symbolic divisors (index_map_split.py)."""
        new_vars = tuple(Var(f"ax{d}", e.dtype) for d, e in enumerate(self.final_indices))
        analyzer = _analyzer(assumptions)
        for var, extent in zip(new_vars, new_shape, strict=True):
            analyzer.bind(var, Range(builders.const(0, extent.dtype), extent))
        inverse = IndexMap(new_vars, tuple(map(scale_ordered, split.inverse_values(new_vars))))
        padding = split.padding(self._domain(shape), new_vars, analyzer)
        return inverse, analyzer.simplify(padding)

    def _detect(
        self, shape: Sequence[PrimExpr | int], assumptions: Sequence[PrimExpr] = ()
    ) -> _Detected | None:
        """A bijective iterator map of the final indices over the old box, else over a padded one:
        fused numerators become fresh variables, and extents round up to the divisors applied."""
        domain = self._domain(shape)
        result = detect_iter_map(
            _simplified(self.final_indices, domain),
            domain,
            check_level="bijective",
            analyzer=_analyzer(assumptions),
        )
        if not result.errors:
            return result, domain, {}
        final, fused_domain, fused = _fuse_numerators(self.final_indices, domain)
        padded = _padded(final, fused_domain)
        result = detect_iter_map(_simplified(final, padded), padded, check_level="bijective")
        return None if result.errors else (result, padded, fused)

    def _inverse_of(
        self,
        result: IterMapResult,
        domain: Mapping[Var, Range],
        fused: Mapping[Var, PrimExpr],
        new_shape: Sequence[PrimExpr],
    ) -> IndexMap:
        """The inverse from a map detected over `domain`, where `fused` gives each fused-away
        initial index in terms of the fresh variable standing for its fuse."""
        new_vars = tuple(Var(f"ax{d}", e.dtype) for d, e in enumerate(self.final_indices))
        try:
            values = inverse_iter_map(result, domain, new_vars)
        except IterMapError as err:
            raise IndexMapError(
                f"cannot invert {self!r}: {err}", rule="index_map.not-bijective"
            ) from err
        analyzer = Analyzer()
        for var, extent in zip(new_vars, new_shape, strict=True):
            analyzer.bind(var, Range(builders.const(0, extent.dtype), extent))
        final = [
            substitute(fused[v], values) if v in fused else values[v] for v in self.initial_indices
        ]
        return IndexMap(new_vars, tuple(scale_ordered(analyzer.simplify(e)) for e in final))

    def _raise_not_invertible(self, shape: Sequence[PrimExpr | int]) -> NoReturn:
        """Say why `_detect` found no inverse: two elements collide, or the map is too complex."""
        if not self.is_injective(shape):
            raise IndexMapError(
                f"{self!r} is not provably injective on shape {_text(shape)}: two old "
                "elements may share a new index",
                rule="index_map.not-injective",
            )
        raise IndexMapError(
            f"cannot invert {self!r} on shape {_text(shape)}: it is not a split, "
            "fuse or reordering of the indices",
            rule="index_map.not-invertible",
            hint="write the map with //, % and * by constants on the indices",
        )

    def _check_rank(self, values: Sequence[Any], what: str) -> None:
        if len(values) != len(self.initial_indices):
            raise IndexMapError(
                f"{self!r} takes {len(self.initial_indices)} indices, got {len(values)} {what}",
                rule="index_map.arity",
            )

    def _domain(self, shape: Sequence[PrimExpr | int]) -> dict[Var, Range]:
        self._check_rank(shape, "extents")
        return {
            var: Range(builders.const(0, var.dtype), _as_expr(extent, var.dtype))
            for var, extent in zip(self.initial_indices, shape, strict=True)
        }

    def __repr__(self) -> str:
        params, final = self._printable()
        items = [str(e) for e in final]
        for position in reversed(self.axis_separators):
            items.insert(position, repr(IndexMap.AXIS_SEPARATOR))
        body = f"({', '.join(items)}{',' if len(items) == 1 else ''})"
        dtypes = {str(v.dtype) for v in self.initial_indices}
        dtype = "" if dtypes <= {"int32"} else f', index_dtype="{dtypes.pop()}"'
        head = f"lambda {', '.join(params)}" if params else "lambda"
        return f"IndexMap.from_func({head}: {body}{dtype})"

    __str__ = __repr__

    def _printable(self) -> tuple[list[str], tuple[PrimExpr, ...]]:
        """Parameter names that are valid, distinct and unlike any free variable's, and the final
        indices over variables of those names (the printer names each var by its hint)."""
        initial = set(self.initial_indices)
        taken = {
            n.name
            for e in self.final_indices
            for n in post_order(e)
            if isinstance(n, Var) and n not in initial
        }
        params, renames = [], {}
        for d, var in enumerate(self.initial_indices):
            name = var.name
            if _is_plain_name(name) and name not in taken:
                taken.add(name)
            else:
                name = unique_name(f"i{d}", taken)
                renames[var] = Var(name, var.dtype)
            params.append(name)
        return params, tuple(substitute(e, renames) for e in self.final_indices)


_Detected = tuple[IterMapResult, dict[Var, Range], dict[Var, PrimExpr]]


def _fuse_numerators(
    final: Sequence[PrimExpr], domain: Mapping[Var, Range]
) -> tuple[tuple[PrimExpr, ...], dict[Var, Range], dict[Var, PrimExpr]]:
    """`final` with each division numerator that fuses two or more variables bijectively replaced
    by a fresh one over the fused range (so a padded split of it can be detected), the domain of
    the remaining variables, and each fused-away variable as an expression of its fresh one."""
    final, domain, fused = tuple(final), dict(domain), {}
    divisions = [n for e in final for n in post_order(e) if isinstance(n, FloorDiv | FloorMod)]
    for numerator in (d.a for d in divisions):
        used = {n: domain[n] for n in post_order(numerator) if isinstance(n, Var) and n in domain}
        if len(used) < 2:
            continue
        result = detect_iter_map([numerator], used, check_level="bijective")
        if result.errors:
            continue
        var = Var("fused", numerator.dtype)
        fused.update(inverse_iter_map(result, used, [var]))
        final = tuple(_Replace(numerator, var).visit(e) for e in final)
        domain = {v: r for v, r in domain.items() if v not in used}
        extent = extent_product([r.extent for r in used.values()])
        domain[var] = Range(builders.const(0, var.dtype), extent)
    return final, domain, fused


def _fused_extent(
    final: Sequence[PrimExpr],
    domain: Mapping[Var, Range],
    position: int,
    detected: list[IterMapResult],
    analyzer: Analyzer,
) -> PrimExpr | None:
    """One past the largest value of `final[position]` when the final indices are a surjective
    iterator map of the box and that index is one iterator of stride 1 from a base of 0 (TVM's
    MapRanges by iterator-map detection); None otherwise. `detected` caches the detection."""
    if not detected:
        detected.append(detect_iter_map(final, domain, check_level="surjective", analyzer=analyzer))
    result = detected[0]
    if result.errors:
        return None
    index = result.indices[position]
    if len(index.args) != 1 or not builders.is_const_int(index.base, 0):
        return None
    split = index.args[0]
    return split.extent if builders.is_const_int(split.scale, 1) else None


def _typed(shape: Sequence[PrimExpr], dtype: Any) -> tuple[PrimExpr, ...]:
    return tuple(shape) if dtype is None else tuple(builders.cast(e, dtype) for e in shape)


def symbolic_divisors(expr: PrimExpr) -> list[PrimExpr]:
    """The divisors of the `//` and `%` in `expr` that involve a variable (`n` in `i // n`)."""
    return [
        node.b
        for node in post_order(expr)
        if isinstance(node, FloorDiv | FloorMod)
        and any(isinstance(part, Var) for part in post_order(node.b))
    ]


def _analyzer(assumptions: Sequence[PrimExpr]) -> Analyzer:
    """An analyzer that knows `assumptions` for as long as it lives."""
    analyzer = Analyzer()
    for fact in assumptions:
        analyzer.assume(fact)
    return analyzer


def _raise_symbolic_split(
    imap: IndexMap, index: PrimExpr, shape: Sequence[PrimExpr | int], analyzer: Analyzer
) -> NoReturn:
    """Say why a split by a symbolic divisor has no exact extent: the divisor is not known to be
    positive, or the map is more than plain splits and the divisor may not divide the extent."""
    for divisor in symbolic_divisors(index):
        if not analyzer.can_prove(builders.gt(divisor, 0)):
            raise IndexMapError(
                f"index `{index}` of {imap!r} divides by `{divisor}`, which is not known to be "
                f"positive (nothing states `{divisor} > 0`)",
                rule="index_map.divisor-sign-unknown",
                hint=f"state it in the function: T.assume({divisor} > 0)",
            )
    raise IndexMapError(
        f"index `{index}` of {imap!r} splits shape {_text(shape)} by a symbolic divisor that "
        "is not known to divide it; a symbolic divisor pads only a plain split of one index "
        "(`i // n, i % n`)",
        rule="index_map.symbolic-divisor-padding",
        hint="split the index itself, or make the extent a multiple of the divisor",
    )


def _padded(final: Sequence[PrimExpr], domain: Mapping[Var, Range]) -> dict[Var, Range]:
    """`domain` with each extent rounded up to a multiple of every constant divisor applied to
    it (`x // 2 % 3` divides `x` by 6)."""
    divisions = [n for e in final for n in post_order(e) if _divisor(n) > 1]
    padded = {}
    for var, rng in domain.items():
        step = math.lcm(*(_divisor(d) for d in divisions if any(n is var for n in post_order(d))))
        padded[var] = rng if step == 1 else Range(rng.min, (rng.extent + step - 1) // step * step)
    return padded


def _divisor(node: Node) -> int:
    """What a `//` or `%` by a constant, and the `//`s in its numerator, divide by (else 1)."""
    if not isinstance(node, FloorDiv | FloorMod) or not isinstance(node.b, IntImm):
        return 1
    inner = node.a
    return abs(node.b.value) * (_divisor(inner) if isinstance(inner, FloorDiv) else 1)


def _simplified(final: Sequence[PrimExpr], domain: Mapping[Var, Range]) -> tuple[PrimExpr, ...]:
    """`final` simplified on `domain` (an index of one value becomes a constant, as detection
    needs)."""
    analyzer = Analyzer()
    for var, rng in domain.items():
        analyzer.bind(var, rng)
    return tuple(analyzer.simplify(e) for e in final)


class _Replace(Mutator):
    """Replaces every occurrence of an expression (compared structurally) by another."""

    def __init__(self, old: PrimExpr, new: PrimExpr) -> None:
        super().__init__()
        self.old, self.new = old, new

    def visit(self, node: Node) -> Node:
        if isinstance(node, PrimExpr) and same_expr(node, self.old):
            return self.new
        return super().visit(node)


def _lanes(index: PrimExpr, extent: PrimExpr) -> PrimExpr:
    """A final index `e % c` spans `c` elements even when `e` takes fewer values: the layout
    declares `c` lanes (TY-NNP's packed weight: splitting 3 input channels by 4 pads them to 4)."""
    if isinstance(index, FloorMod) and isinstance(index.b, IntImm) and index.b.value > 0:
        return builders.max_value(extent, index.b)
    return extent


def _parameter_names(func: Callable[..., Any], ndim: int | None) -> tuple[list[str], list[str]]:
    """The names of `func`'s positional parameters, `*args` standing for `i<d>` up to `ndim`; and
    of its keyword-only ones, which take the last indices (TVM's `lambda *rest, k: ...`)."""
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    parameters = inspect.signature(func).parameters.values()
    names = [p.name for p in parameters if p.kind in kinds]
    keywords = [p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY]
    variadic = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters)
    if variadic and ndim is None:
        raise IndexMapError(
            "the mapping function takes *args, so its number of indices is unknown",
            rule="index_map.ndim-needed",
            hint="pass ndim=<number of indices>",
        )
    fixed = len(names) + len(keywords)
    if ndim is not None and (ndim < fixed or (ndim > fixed and not variadic)):
        raise IndexMapError(
            f"the mapping function takes {fixed} indices, but ndim={ndim}",
            rule="index_map.arity",
        )
    extra = [f"i{d}" for d in range(len(names), (ndim or 0) - len(keywords))]
    return names + extra, keywords


class _IndexRetyper(Mutator):
    """int32 and int64 variables and constants as `dtype` (the other index width), each
    variable renamed once, so an index map traced for one width applies to the other."""

    def __init__(self, dtype: str) -> None:
        super().__init__()
        self.dtype = dtype
        self.vars: dict[Var, Var] = {}

    def _retypes(self, dtype: Any) -> bool:
        return str(dtype) in ("int32", "int64") and str(dtype) != self.dtype

    def visit_Var(self, var: Var) -> Node:
        if not self._retypes(var.dtype):
            return var
        if var not in self.vars:
            self.vars[var] = Var(var.name, self.dtype)
        return self.vars[var]

    def visit_IntImm(self, imm: IntImm) -> Node:
        return builders.const(imm.value, self.dtype) if self._retypes(imm.dtype) else imm


def _as_expr(value: Any, dtype: Any) -> PrimExpr:
    """An expression from an expression, an `a == b` result or a Python number (ints of `dtype`);
    final indices may be values of any type (a pad value is an IndexMap too, as in TVM)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return builders.const(value, dtype)
    try:
        return builders.convert(value)
    except UserError as err:
        raise IndexMapError(
            f"the mapping function returned {value!r}, which is not an expression",
            rule="index_map.index-type",
        ) from err


def _is_plain_name(name: str) -> bool:
    """A name the printer keeps as it is (see script/printer/names.py `sanitize`)."""
    is_keyword = keyword.iskeyword(name) or keyword.issoftkeyword(name)
    return bool(_PLAIN_NAME.fullmatch(name)) and not is_keyword and name not in _RESERVED_NAMES


def _text(shape: Sequence[PrimExpr | int]) -> str:
    return "(" + ", ".join(str(e) for e in shape) + ("," if len(shape) == 1 else "") + ")"


def _as_index(value: PrimExpr, var: Var) -> PrimExpr:
    """`value` in the type of the map's variable `var`: a block that mixes int32 iterators with
    the int64 ones of a symbolic extent indexes an int64 map with both (a widening cast)."""
    if value.dtype != var.dtype and value.dtype.is_int and var.dtype.is_int:
        return builders.cast(value, var.dtype)
    return value
