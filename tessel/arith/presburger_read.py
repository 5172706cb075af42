"""Reading isl sets back as PrimExpr conditions (the other half of presburger.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import islpy as isl

from tessel.ir import builders
from tessel.ir.expr import PrimExpr, Var


class NotPresburger(Exception):  # noqa: N818 (an answer to the caller, not a failure)
    """The question is outside Presburger arithmetic (or isl's budget); the caller falls back."""


# Reading isl sets back. A linear form maps keys to integer coefficients: ("dim", pos) and
# ("param", pos) are variables, ("floor", items, d) is floor(form / d) for an isl div,
# ("mod", items, d) is form % d, and _ONE is the constant term.
_ONE = ("one",)
_Form = dict[tuple[Any, ...], int]


def set_to_expr(points: isl.Set, variables: Mapping[str, Var]) -> PrimExpr:
    """A condition equivalent to `points`: a disjunction of conjunctions of affine constraints."""
    result = builders.const(False)
    for piece in points.get_basic_sets():
        atoms = _atoms(piece, variables)
        clauses = builders.const(True)
        for constraint in piece.get_constraints():
            if constraint.is_div_constraint():  # 0 <= n - d * floor(n / d) < d: always true
                continue
            form = _with_mods(_read_aff(constraint.get_aff())[0])
            clause = _constraint_expr(form, constraint.is_equality(), atoms)
            clauses = builders.logical_and(clauses, clause)
        result = builders.logical_or(result, clauses)
    return result


def _atoms(piece: isl.BasicSet, variables: Mapping[str, Var]) -> dict[tuple[str, int], Var]:
    """The Var behind each ("dim", pos) and ("param", pos) key of `piece`'s space."""
    atoms = {}
    for kind, dim_type in (("dim", isl.dim_type.set), ("param", isl.dim_type.param)):
        for pos in range(piece.dim(dim_type)):
            atoms[(kind, pos)] = variables[str(piece.get_dim_name(dim_type, pos))]
    return atoms


def _read_aff(aff: isl.Aff) -> tuple[_Form, int]:
    """The integer numerator of `aff` as a linear form, and its denominator."""
    denominator = aff.get_denominator_val()
    form: dict[tuple[Any, ...], isl.Val] = {_ONE: aff.get_constant_val()}
    for kind, dim_type in (("dim", isl.dim_type.in_), ("param", isl.dim_type.param)):
        for pos in range(aff.dim(dim_type)):
            form[(kind, pos)] = aff.get_coefficient_val(dim_type, pos)
    for pos in range(aff.dim(isl.dim_type.div)):
        coefficient = aff.get_coefficient_val(isl.dim_type.div, pos)
        if not coefficient.is_zero():  # a div's formula lives in the same local space as it
            form[_floor_key(aff.get_div(pos))] = coefficient
    integers = {key: value.mul(denominator).to_python() for key, value in form.items()}
    return {key: value for key, value in integers.items() if value}, denominator.to_python()


def _floor_key(div: isl.Aff) -> tuple[Any, ...]:
    if div.is_nan():
        raise NotPresburger("isl left an existentially quantified variable without a formula")
    form, denominator = _read_aff(div)
    return ("floor", tuple(form.items()), denominator)


def _with_mods(form: _Form) -> _Form:
    """Rewrite `s*n - s*d*floor(n/d)` into `s*(n % d)` where that leaves fewer terms."""
    for key in list(form):
        if key[0] != "floor" or key not in form or form[key] % key[2]:
            continue
        scale = -form[key] // key[2]
        rest = {k: c for k, c in form.items() if k != key}
        for k, c in key[1]:
            rest[k] = rest.get(k, 0) - scale * c
        rest = {k: c for k, c in rest.items() if c}
        if _n_terms(rest) + 1 < _n_terms(form):
            form = {**rest, ("mod", key[1], key[2]): scale}
    return form


def _n_terms(form: _Form) -> int:
    return sum(1 for key in form if key != _ONE)


def _split(form: _Form) -> tuple[list[tuple[Any, int]], list[tuple[Any, int]], int]:
    """The terms with positive coefficients, those with negative ones (negated), the constant."""
    positive = [(k, c) for k, c in form.items() if k != _ONE and c > 0]
    negative = [(k, -c) for k, c in form.items() if k != _ONE and c < 0]
    return positive, negative, form.get(_ONE, 0)


def _constraint_expr(form: _Form, is_equality: bool, atoms: Mapping[Any, PrimExpr]) -> PrimExpr:
    """`form == 0` or `form >= 0`, written with positive coefficients on both sides."""
    positive, negative, constant = _split(form)
    compare = builders.eq if is_equality else builders.ge
    if not positive and not negative:
        return builders.const(constant == 0 if is_equality else constant >= 0)
    if not positive:  # -x + c >= 0 reads better as x <= c
        if is_equality and len(negative) == 1 and negative[0][0][0] == "mod":
            return _mod_equality(negative[0], constant, atoms)
        left = _terms_expr(negative, atoms)
        return builders.eq(left, constant) if is_equality else builders.le(left, constant)
    left = _terms_expr(positive, atoms)
    if not negative:
        return compare(left, -constant)
    right = _terms_expr(negative, atoms)
    if constant > 0:
        return compare(builders.add(left, constant), right)
    return compare(left, builders.add(right, -constant))


def _mod_equality(term: tuple[Any, int], value: int, atoms: Mapping[Any, PrimExpr]) -> PrimExpr:
    """`scale * ((n + c) % d) == value`, written `n % d == r` when the remainder r is valid."""
    (_, items, divisor), scale = term
    numerator = dict(items)
    offset = numerator.pop(_ONE, 0)
    if value % scale or not 0 <= value // scale < divisor or not numerator:
        return builders.eq(_terms_expr([term], atoms), value)
    remainder = (value // scale - offset) % divisor
    return builders.eq(builders.floormod(_form_expr(numerator, atoms), divisor), remainder)


def _terms_expr(terms: Sequence[tuple[Any, int]], atoms: Mapping[Any, PrimExpr]) -> PrimExpr:
    """The sum of `coefficient * atom` over `terms` (coefficients positive, at least one term)."""
    result = None
    for key, coefficient in terms:
        term = builders.mul(_atom_expr(key, atoms), coefficient)
        result = term if result is None else builders.add(result, term)
    assert result is not None, "a sum of no terms"
    return result


def _atom_expr(key: tuple[Any, ...], atoms: Mapping[Any, PrimExpr]) -> PrimExpr:
    if key[0] == "floor":
        return builders.floordiv(_form_expr(dict(key[1]), atoms), key[2])
    if key[0] == "mod":
        return builders.floormod(_form_expr(dict(key[1]), atoms), key[2])
    return atoms[key]


def _form_expr(form: _Form, atoms: Mapping[Any, PrimExpr]) -> PrimExpr:
    """The value of a linear form: positive terms, then negative ones, then the constant."""
    positive, negative, constant = _split(form)
    if positive:
        result = _terms_expr(positive, atoms)
    else:
        result, constant = builders.const(constant), 0
    if negative:
        result = builders.sub(result, _terms_expr(negative, atoms))
    return builders.add(result, constant) if constant >= 0 else builders.sub(result, -constant)
