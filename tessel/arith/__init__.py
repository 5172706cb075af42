"""Arithmetic analysis: the Analyzer service (simplify with named rules, bounds, modular sets,
integer sets, proofs under facts), iterator-map detection, and exact Presburger questions."""

from tessel.arith.analyzer import Analyzer, TraceStep
from tessel.arith.const_int_bound import ConstIntBound, const_int_bound
from tessel.arith.int_set import IntSet, int_set
from tessel.arith.iter_map import (
    CheckLevel,
    IterMapError,
    IterMapResult,
    IterMark,
    IterSplitExpr,
    IterSumExpr,
    detect_iter_map,
    inverse_iter_map,
    normalize_iter_map_to_expr,
    subspace_divide,
)
from tessel.arith.modular_set import ModularSet, modular_set
from tessel.arith.pattern import PConst, PVar, pif_then_else, pmax, pmin, pselect
from tessel.arith.rule import Rule, RuleSet

__all__ = [
    "Analyzer",
    "CheckLevel",
    "ConstIntBound",
    "IntSet",
    "IterMapError",
    "IterMapResult",
    "IterMark",
    "IterSplitExpr",
    "IterSumExpr",
    "ModularSet",
    "PConst",
    "PVar",
    "Rule",
    "RuleSet",
    "TraceStep",
    "const_int_bound",
    "detect_iter_map",
    "int_set",
    "inverse_iter_map",
    "modular_set",
    "normalize_iter_map_to_expr",
    "pif_then_else",
    "pmax",
    "pmin",
    "pselect",
    "subspace_divide",
]
