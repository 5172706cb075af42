"""Exact integer-set questions (proofs, injectivity, coverage, padding) decided by isl.

The rules-based analyzer answers most questions; this module is its exact fallback. Answers are
never approximate: an expression outside Presburger arithmetic (a product of variables, a
division by a non-constant, a buffer load, a call, a float, a narrowing cast) raises
`NotPresburger`, and the caller falls back. Arithmetic is on mathematical integers (overflow of
a dtype is not modelled). A `SizeVar` or unsigned variable is known to be non-negative, and a
bool variable to be 0 or 1.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import islpy as isl

from tessel.arith.presburger_read import NotPresburger, set_to_expr
from tessel.ir import builders
from tessel.ir.expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    Cast,
    Div,
    FloorDiv,
    FloorMod,
    IntImm,
    Let,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    PrimExpr,
    Range,
    Select,
    SizeVar,
    Sub,
    Var,
)
from tessel.ir.functor import post_order
from tessel.support.errors import InternalError
from tessel.support.names import c_identifier, unique_name

# isl's budget per question, in its own operation units: a question that needs more goes back
# to the caller as NotPresburger instead of stalling compilation. Layout and bound questions
# take thousands to tens of thousands; isl's count is uneven, and a contrived 4-d map of mods
# of fused indices spends about 4 s reaching this budget.
_MAX_OPERATIONS = 100_000


def can_prove(
    condition: PrimExpr, domain: Mapping[Var, Range], assumptions: Sequence[PrimExpr] = ()
) -> bool:
    """True iff `condition` holds wherever `domain` and `assumptions` do, for all other Vars."""
    condition, assumptions = builders.convert(condition), _converted(assumptions)
    conv = _Converter.over(list(domain), [condition, *assumptions, *_range_exprs(domain)])

    def holds() -> bool:
        conv.known = conv.context().intersect(conv.domain_set(domain))
        for assumption in assumptions:
            conv.known = conv.to_set(assumption)  # within what was known before it
        return conv.known.is_subset(conv.to_set(condition))

    return conv.run(holds)


def is_injective(
    indices: Sequence[PrimExpr], domain: Mapping[Var, Range], predicate: PrimExpr | None = None
) -> bool:
    """True iff no two points of `domain` (satisfying `predicate`) map to one index tuple."""
    graph = _Graph(indices, domain, predicate, _fresh_vars(len(indices)), ())
    return graph.conv.run(lambda: graph.as_map().is_injective())


def is_surjective_onto(
    indices: Sequence[PrimExpr],
    domain: Mapping[Var, Range],
    shape: Sequence[int | PrimExpr],
    predicate: PrimExpr | None = None,
) -> bool:
    """True iff every point of the box `0 <= k[d] < shape[d]` is the image of a domain point."""
    region = [Range.from_min_extent(0, extent) for extent in shape]
    return region_covered(indices, domain, region, predicate)


def region_covered(
    indices: Sequence[PrimExpr],
    domain: Mapping[Var, Range],
    region: Sequence[Range],
    predicate: PrimExpr | None = None,
) -> bool:
    """True iff every point of the box `region` is the image of a domain point (fully written)."""
    _check_rank(indices, region, "region")
    graph = _Graph(indices, domain, predicate, _fresh_vars(len(indices)), region)
    return graph.conv.run(lambda: graph.box().is_subset(graph.image()))


def padding_predicate(
    indices: Sequence[PrimExpr],
    domain: Mapping[Var, Range],
    new_shape: Sequence[int | PrimExpr],
    new_vars: Sequence[Var],
) -> PrimExpr:
    """A condition over `new_vars`, true exactly on the elements of the `new_shape` box that no
    domain point maps to: the padding of a non-surjective layout transform
    (docs/architecture.md §5).

    The condition is simplified under `0 <= new_vars[d] < new_shape[d]`: it is exact inside
    that box, where it is evaluated, and says nothing outside it. It is read back from isl's
    set and checked against it, so an answer is never approximate.
    """
    _check_rank(indices, new_shape, "new_shape")
    _check_rank(indices, new_vars, "new_vars")
    region = [Range.from_min_extent(0, extent) for extent in new_shape]
    graph = _Graph(indices, domain, None, list(new_vars), region)
    return graph.conv.run(graph.padding)


class _Graph:
    """The set {(d, k) : d in domain, predicate(d), k = indices(d)} over one isl space."""

    def __init__(
        self,
        indices: Sequence[PrimExpr],
        domain: Mapping[Var, Range],
        predicate: PrimExpr | None,
        outputs: Sequence[Var],
        region: Sequence[Range],
    ) -> None:
        self.indices, self.domain = _converted(indices), domain
        self.predicate = None if predicate is None else builders.convert(predicate)
        self.outputs = tuple(outputs)
        self.region = dict(zip(self.outputs, region, strict=False))
        exprs = [*self.indices, *_range_exprs(domain), *_range_exprs(self.region)]
        if self.predicate is not None:
            exprs.append(self.predicate)
        self.conv = _Converter.over([*domain, *self.outputs], exprs, outputs=self.outputs)

    def points(self) -> isl.Set:
        """The graph as a set over the domain and output dimensions."""
        conv = self.conv
        conv.known = conv.context().intersect(conv.domain_set(self.domain))
        if self.predicate is not None:
            conv.known = conv.to_set(self.predicate)
        points = conv.known
        for out, index in zip(self.outputs, self.indices, strict=True):
            points = points.intersect(conv.aff(out).eq_set(conv.aff(index)))
        conv.known = isl.Set.universe(conv.space)
        return points

    def as_map(self) -> isl.Map:
        """The graph as a map from domain points to index tuples."""
        as_range = isl.Map.from_range(self.points())
        return as_range.move_dims(isl.dim_type.in_, 0, isl.dim_type.out, 0, len(self.domain))

    def _outputs_only(self, points: isl.Set) -> isl.Set:
        return points.project_out(isl.dim_type.set, 0, len(self.domain))

    def image(self) -> isl.Set:
        """The index tuples hit by some domain point."""
        return self._outputs_only(self.points())

    def box(self) -> isl.Set:
        """The region's points, within what the symbols' types say."""
        return self._outputs_only(self.conv.context().intersect(self.conv.domain_set(self.region)))

    def padding(self) -> PrimExpr:
        """The box minus the image, read back as a condition and checked against isl's set."""
        box = self.box()
        padding = box.subtract(self.image()).coalesce()
        simplified = padding.gist(box).coalesce().compute_divs()
        expr = set_to_expr(simplified, self.conv.names())
        if not self._outputs_only(self.conv.to_set(expr)).intersect(box).is_equal(padding):
            raise InternalError(f"padding predicate `{expr}` does not match isl's set {padding}")
        return expr


class _Converter:
    """PrimExprs to isl objects on one space: `dims` are set dimensions, other Vars parameters."""

    def __init__(self, dims: Sequence[Var], params: Sequence[Var]) -> None:
        self.ctx = isl.Context()
        self.variables = (*dims, *params)
        taken: set[str] = set()  # isl names are labels only; Vars are told apart by identity
        self.isl_names = {var: unique_name(c_identifier(var.name), taken) for var in self.variables}
        self.space = isl.Space.create_from_names(
            self.ctx,
            set=[self.isl_names[v] for v in dims],
            params=[self.isl_names[v] for v in params],
        )
        self.local = isl.LocalSpace.from_space(self.space)
        # The points under consideration; conversions drop pieces outside them, and negation
        # complements within them.
        self.known = isl.Set.universe(self.space)
        self.bindings: dict[Var, isl.PwAff] = {}
        for dim_type, group in ((isl.dim_type.set, dims), (isl.dim_type.param, params)):
            for pos, var in enumerate(group):
                aff = isl.Aff.var_on_domain(self.local, dim_type, pos)
                self.bindings[var] = isl.PwAff.from_aff(aff)

    @staticmethod
    def over(
        dims: Sequence[Var], exprs: Iterable[PrimExpr], outputs: Sequence[Var] = ()
    ) -> _Converter:
        """A converter with `dims` as dimensions and the other free Vars of `exprs` as symbols."""
        dim_ids = {id(v) for v in dims}
        if len(dim_ids) != len(dims):
            raise InternalError("a domain variable is also one of the new (output) variables")
        free = _free_vars(exprs)
        if {id(v) for v in outputs} & {id(v) for v in free}:
            raise InternalError("the new (output) variables occur in the indices or the domain")
        return _Converter(dims, [v for v in free if id(v) not in dim_ids])

    def run(self, question: Callable[[], Any]) -> Any:
        """Answer `question`, turning isl running out of budget into NotPresburger."""
        self.ctx.set_max_operations(_MAX_OPERATIONS)
        self.ctx.reset_operations()
        try:
            return question()
        except isl.Error as err:
            if "operations exceeded" in str(err):
                raise NotPresburger("isl's operation budget ran out on this question") from err
            raise InternalError(f"isl failed: {err}") from err

    def names(self) -> dict[str, Var]:
        """isl name -> Var for every variable of the space."""
        return {self.isl_names[v]: v for v in self.variables}

    def constant(self, value: int) -> isl.PwAff:
        """The constant `value` on this space."""
        val = isl.Val.read_from_str(self.ctx, str(value))
        return isl.PwAff.from_aff(isl.Aff.val_on_domain(self.local, val))

    def universe(self) -> isl.Set:
        """Every point under consideration."""
        return self.known

    def context(self) -> isl.Set:
        """What the variables' types say: SizeVar and unsigned are >= 0, bool is 0 or 1."""
        known = isl.Set.universe(self.space)
        for var in self.variables:
            if isinstance(var, SizeVar) or var.dtype.is_uint or var.dtype.is_bool:
                known = known.intersect(self.bindings[var].ge_set(self.constant(0)))
            if var.dtype.is_bool:
                known = known.intersect(self.bindings[var].le_set(self.constant(1)))
        return known

    def domain_set(self, domain: Mapping[Var, Range]) -> isl.Set:
        """The points with `r.min <= v < r.min + r.extent` for each `v: r` of `domain`."""
        points = isl.Set.universe(self.space)
        for var, extent in domain.items():
            low, value = self.aff(extent.min), self.bindings[var]
            points = points.intersect(value.ge_set(low))
            points = points.intersect(value.lt_set(low.add(self.aff(extent.extent))))
        return points

    def aff(self, expr: PrimExpr) -> isl.PwAff:
        """The integer value of `expr` (a bool counts 0 or 1) as a piecewise affine function."""
        _check_scalar_integer(expr)
        if expr.dtype.is_bool and not isinstance(expr, Var | Let | IntImm):
            return self.piecewise(self.to_set(expr), self.constant(1), self.constant(0))
        rule = _lookup(_AFF_RULES, expr)
        if rule is None:
            raise NotPresburger(f"{type(expr).__name__} is outside Presburger arithmetic")
        return rule(self, expr).intersect_domain(self.known).coalesce()

    def to_set(self, condition: PrimExpr) -> isl.Set:
        """The points where the bool expression `condition` holds."""
        _check_scalar_integer(condition)
        rule = _lookup(_SET_RULES, condition)
        if rule is not None:
            return rule(self, condition).intersect(self.known).coalesce()
        if isinstance(condition, Var) or not condition.dtype.is_bool:
            return self.aff(condition).non_zero_set()
        raise NotPresburger(f"{type(condition).__name__} is outside Presburger arithmetic")

    def piecewise(self, points: isl.Set, inside: isl.PwAff, outside: isl.PwAff) -> isl.PwAff:
        """`inside` on `points`, `outside` elsewhere."""
        rest = self.universe().subtract(points)
        return inside.intersect_domain(points).union_add(outside.intersect_domain(rest))

    def divisor(self, expr: PrimExpr) -> isl.PwAff:
        """The divisor of a division: a non-zero constant, or NotPresburger."""
        outer, self.known = self.known, isl.Set.universe(self.space)  # constant everywhere
        try:
            value = self.aff(expr)
        finally:
            self.known = outer
        if not value.is_cst() or value.n_piece() != 1:
            raise NotPresburger(f"division by the non-constant `{expr}`")
        if value.is_equal(self.constant(0)):
            raise NotPresburger(f"division by zero in `{expr}`")
        return value

    def bound(self, let: Let, convert: Callable[[PrimExpr], Any]) -> Any:
        """`convert(let.body)` with `let.var` bound to the value of `let.value`."""
        outer = self.bindings.get(let.var)
        self.bindings[let.var] = self.aff(let.value)
        try:
            return convert(let.body)
        finally:
            if outer is None:
                del self.bindings[let.var]
            else:
                self.bindings[let.var] = outer


def _check_scalar_integer(expr: PrimExpr) -> None:
    dtype = expr.dtype
    if dtype.is_vector or not (dtype.is_integer or dtype.is_bool):
        raise NotPresburger(f"`{expr}` of dtype {dtype} is not a scalar integer")


def _lookup(rules: Mapping[type, Callable[..., Any]], expr: PrimExpr) -> Callable[..., Any] | None:
    for klass in type(expr).__mro__:
        if klass in rules:
            return rules[klass]
    return None


def _mul_aff(conv: _Converter, expr: Mul) -> isl.PwAff:
    a, b = conv.aff(expr.a), conv.aff(expr.b)
    if not (a.is_cst() or b.is_cst()):
        raise NotPresburger(f"`{expr}` multiplies two non-constant expressions")
    return a.mul(b)


def _floormod_aff(conv: _Converter, expr: FloorMod) -> isl.PwAff:
    a, b = conv.aff(expr.a), conv.divisor(expr.b)
    return a.sub(b.mul(a.div(b).floor()))  # a - b * floor(a / b), for either sign of b


def _cast_aff(conv: _Converter, expr: Cast) -> isl.PwAff:
    source, target = expr.value.dtype, expr.dtype
    same_sign = source.is_int == target.is_int and target.bits >= source.bits
    unsigned_to_signed = source.is_uint and target.is_int and target.bits > source.bits
    if not (source.is_bool or same_sign or unsigned_to_signed):
        raise NotPresburger(f"`{expr}` may wrap around: only widening integer casts are exact")
    return conv.aff(expr.value)


def _select_aff(conv: _Converter, expr: Select) -> isl.PwAff:
    taken = conv.to_set(expr.condition)
    return conv.piecewise(taken, conv.aff(expr.true_value), conv.aff(expr.false_value))


_AFF_RULES: dict[type, Callable[[_Converter, Any], isl.PwAff]] = {
    IntImm: lambda conv, e: conv.constant(e.value),
    Var: lambda conv, e: conv.bindings[e],  # every free Var is in the space (`over`)
    Add: lambda conv, e: conv.aff(e.a).add(conv.aff(e.b)),
    Sub: lambda conv, e: conv.aff(e.a).sub(conv.aff(e.b)),
    Mul: _mul_aff,
    FloorDiv: lambda conv, e: conv.aff(e.a).div(conv.divisor(e.b)).floor(),
    FloorMod: _floormod_aff,
    Div: lambda conv, e: conv.aff(e.a).tdiv_q(conv.divisor(e.b)),
    Mod: lambda conv, e: conv.aff(e.a).tdiv_r(conv.divisor(e.b)),
    Min: lambda conv, e: conv.aff(e.a).min(conv.aff(e.b)),
    Max: lambda conv, e: conv.aff(e.a).max(conv.aff(e.b)),
    Select: _select_aff,
    Cast: _cast_aff,
    Let: lambda conv, e: conv.bound(e, conv.aff),
}


def _select_set(conv: _Converter, expr: Select) -> isl.Set:
    taken = conv.to_set(expr.condition)
    rest = conv.universe().subtract(taken)
    when_true = taken.intersect(conv.to_set(expr.true_value))
    return when_true.union(rest.intersect(conv.to_set(expr.false_value)))


def _compare(method: str) -> Callable[[_Converter, Any], isl.Set]:
    return lambda conv, e: getattr(conv.aff(e.a), method)(conv.aff(e.b))


_SET_RULES: dict[type, Callable[[_Converter, Any], isl.Set]] = {
    IntImm: lambda conv, e: conv.universe() if e.value else isl.Set.empty(conv.space),
    EQ: _compare("eq_set"),
    NE: _compare("ne_set"),
    LT: _compare("lt_set"),
    LE: _compare("le_set"),
    GT: _compare("gt_set"),
    GE: _compare("ge_set"),
    And: lambda conv, e: conv.to_set(e.a).intersect(conv.to_set(e.b)),
    Or: lambda conv, e: conv.to_set(e.a).union(conv.to_set(e.b)),
    Not: lambda conv, e: conv.universe().subtract(conv.to_set(e.a)),
    Select: _select_set,
    Cast: lambda conv, e: conv.aff(e.value).non_zero_set(),
    Let: lambda conv, e: conv.bound(e, conv.to_set),
}


def _free_vars(exprs: Iterable[PrimExpr]) -> list[Var]:
    """The Vars `exprs` use and do not bind, in first-use order, each once (by identity)."""
    seen: dict[Var, None] = {}  # Vars hash by identity
    bound: set[int] = set()
    for expr in exprs:
        for node in post_order(expr):
            if isinstance(node, Let):
                bound.add(id(node.var))
            elif isinstance(node, Var):
                seen[node] = None
    return [var for var in seen if id(var) not in bound]


def _converted(exprs: Iterable[Any]) -> tuple[PrimExpr, ...]:
    """Expressions from expressions, `a == b` results and Python ints."""
    return tuple(builders.convert(e) for e in exprs)


def _range_exprs(domain: Mapping[Var, Range]) -> list[PrimExpr]:
    return [e for r in domain.values() for e in (r.min, r.extent)]


def _fresh_vars(count: int) -> list[Var]:
    return [Var(f"k{d}") for d in range(count)]


def _check_rank(indices: Sequence[PrimExpr], other: Sequence[Any], what: str) -> None:
    if len(indices) != len(other):
        raise InternalError(f"{len(indices)} indices but {len(other)} entries in `{what}`")


__all__ = [
    "NotPresburger",
    "can_prove",
    "is_injective",
    "is_surjective_onto",
    "padding_predicate",
    "region_covered",
]
