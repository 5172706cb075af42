"""Named rewrite rules `lhs -> rhs` with an optional guard, and rule sets indexed by node type."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from tessel.arith.pattern import Bindings, Pattern, PConst, PIfThenElse, PNode, as_pattern
from tessel.ir.expr import Call, IntImm, PrimExpr

if TYPE_CHECKING:
    from tessel.arith.analyzer import Analyzer


class Match:
    """What a guard sees: `m.x` is the expression bound to PVar x, `m.c1` the int of PConst c1."""

    __slots__ = ("_bindings", "_const_names", "analyzer")

    def __init__(self, bindings: Bindings, const_names: frozenset[str], analyzer: Analyzer) -> None:
        self._bindings, self._const_names, self.analyzer = bindings, const_names, analyzer

    def __getattr__(self, name: str) -> Any:
        try:
            value = self._bindings[name]
        except KeyError:
            raise AttributeError(f"the rule's pattern has no variable `{name}`") from None
        if name in self._const_names:
            assert isinstance(value, IntImm)
            return value.value
        return value

    def can_prove(self, condition: PrimExpr) -> bool:
        """The analyzer proves `condition` under the facts in scope (rules and bounds only: guards
        run on every match, so they skip the exact islpy fallback)."""
        return self.analyzer.can_prove(condition, exact=False)

    def bound(self, expr: PrimExpr) -> Any:
        """Constant integer bounds of `expr` (a ConstIntBound)."""
        return self.analyzer.const_int_bound(expr)

    def nonnegative(self, expr: PrimExpr) -> bool:
        """`expr >= 0` holds (by bounds)."""
        return self.bound(expr).min_value >= 0

    def below(self, expr: PrimExpr, limit: int) -> bool:
        """`0 <= expr < limit` holds (by bounds)."""
        bound = self.bound(expr)
        return bound.min_value >= 0 and bound.max_value < limit


Guard = Callable[[Match], bool]


@dataclass(frozen=True, eq=False)
class Rule:
    """A named law `lhs == rhs`, applied left to right where `when` holds."""

    name: str
    lhs: Pattern
    rhs: Pattern | int
    when: Guard | None = None
    root_type: type = field(init=False)
    const_names: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "rhs", as_pattern(self.rhs))
        if isinstance(self.lhs, PNode):
            root: type = self.lhs.node_cls
        elif isinstance(self.lhs, PIfThenElse):
            root = Call
        else:
            raise TypeError(
                f"rule `{self.name}`: the left side must be an operation, not {self.lhs}"
            )
        object.__setattr__(self, "root_type", root)
        consts = frozenset(v.name for v in self.lhs.variables() if isinstance(v, PConst))
        object.__setattr__(self, "const_names", consts)

    @property
    def pattern_vars(self) -> tuple[Pattern, ...]:
        """The PVar/PConst leaves of the left side (the right side may use only these)."""
        return self.lhs.variables()

    def guard_holds(self, bindings: Bindings, analyzer: Analyzer) -> bool:
        """The guard (if any) accepts these bindings."""
        return self.when is None or bool(self.when(Match(bindings, self.const_names, analyzer)))

    def apply(self, expr: PrimExpr, analyzer: Analyzer) -> PrimExpr | None:
        """The rewritten expression, or None when the rule does not match or its guard fails."""
        bindings: Bindings = {}
        if not self.lhs.match(expr, bindings) or not self.guard_holds(bindings, analyzer):
            return None
        return self.rhs.build(bindings, expr.dtype)

    def __str__(self) -> str:
        return f"{self.name}: {self.lhs} -> {self.rhs}"


class RuleSet:
    """Rules under a family name (`add`, `floordiv`, ...), indexed by the node type they rewrite."""

    def __init__(self, name: str, rules: Sequence[Rule]) -> None:
        self.name = name
        self.rules = tuple(rules)
        names = [r.name for r in self.rules]
        duplicates = {n for n in names if names.count(n) > 1}
        if duplicates:
            raise ValueError(f"rule set `{name}` names several rules {sorted(duplicates)}")

    def __iter__(self):  # type: ignore[no-untyped-def]  # an iterator of Rule
        return iter(self.rules)

    def __len__(self) -> int:
        return len(self.rules)


@lru_cache(maxsize=16)
def index_by_root_type(rule_sets: tuple[RuleSet, ...]) -> dict[type, tuple[Rule, ...]]:
    """Rules of all sets grouped by the node type their left side starts with, in order
    (cached: every Analyzer of the default rules shares one index)."""
    index: dict[type, list[Rule]] = {}
    seen: set[str] = set()
    for rule_set in rule_sets:
        for rule in rule_set:
            if rule.name in seen:
                raise ValueError(f"two rules are named `{rule.name}`")
            seen.add(rule.name)
            index.setdefault(rule.root_type, []).append(rule)
    return {node_type: tuple(rules) for node_type, rules in index.items()}
