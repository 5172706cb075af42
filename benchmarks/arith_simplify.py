"""Time `Analyzer().simplify` on random integer expressions of about 10, 100 and 1000 nodes.

Run as `python benchmarks/arith_simplify.py`. The expressions are seeded; they range over three
bound variables and use + - * // % min max select, with constants as multipliers and divisors
and select conditions that compare a sub-expression with a constant. Each time is the median of
several runs with a fresh Analyzer per run. The reference is the time a plain Python tree walk
(`tessel.testing.arith_strategies.evaluate`) takes to evaluate the same expression once, measured
in the same run, so the ratio says how many evaluations one simplification costs.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable

from tessel.arith.analyzer import Analyzer
from tessel.ir.expr import (
    GE,
    LT,
    Add,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Mul,
    PrimExpr,
    Range,
    Select,
    Sub,
    Var,
)
from tessel.ir.functor import post_order
from tessel.support.dtype import int32
from tessel.testing.arith_strategies import evaluate

SIZES = (10, 100, 1000)
BUDGET_MS = 50.0  # the acceptance bar for the 1000-node case

VARIABLES = (Var("i"), Var("j"), Var("k"))
EXTENTS = (16, 64, 8)


class RandomExpressions:
    """Seeded random expressions of about a requested node count, built unfolded, node by node."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def constant(self, low: int = -16, high: int = 16) -> IntImm:
        return IntImm(int32, self.rng.randint(low, high))

    def divisor(self) -> IntImm:
        return IntImm(int32, self.rng.choice((2, 3, 4, 8, 16)))

    def leaf(self) -> PrimExpr:
        return self.rng.choice(VARIABLES) if self.rng.random() < 0.75 else self.constant()

    def expr(self, size: int) -> PrimExpr:
        """An expression of `size` nodes (leaves and operations both count)."""
        if size == 2:  # no node has one child: one or three nodes, two on average
            return self.leaf() if self.rng.random() < 0.5 else Add(self.leaf(), self.constant())
        if size <= 1:
            return self.leaf()
        kind = self.rng.choice(("add", "sub", "min", "max", "mul", "div", "mod", "select"))
        if kind in ("mul", "div", "mod"):  # one operand, by a constant
            operand = self.expr(size - 2)
            if kind == "mul":
                return Mul(operand, self.constant(-4, 8))
            return (FloorDiv if kind == "div" else FloorMod)(operand, self.divisor())
        if kind == "select" and size >= 7:
            return self._select(size)
        left = self.rng.randint(1, size - 2)
        node = {"add": Add, "sub": Sub, "min": Min, "max": Max, "select": Add}[kind]
        return node(self.expr(left), self.expr(size - 1 - left))

    def _select(self, size: int) -> PrimExpr:
        """select(e < c, t, f): the condition, the compare node and the constant take 3 nodes."""
        rest = size - 3
        cond_size = max(1, rest // 3)
        true_size = self.rng.randint(1, rest - cond_size - 1)
        compare = self.rng.choice((LT, GE))
        condition = compare(self.expr(cond_size), self.constant())
        return Select(condition, self.expr(true_size), self.expr(rest - cond_size - true_size))


def node_count(expr: PrimExpr) -> int:
    """The number of expression nodes in the tree."""
    return sum(1 for node in post_order(expr) if isinstance(node, PrimExpr))


def fresh_analyzer() -> Analyzer:
    analyzer = Analyzer()
    for var, extent in zip(VARIABLES, EXTENTS, strict=True):
        analyzer.bind(var, Range.from_min_extent(0, extent))
    return analyzer


def median_ms(action: Callable[[], object], runs: int) -> float:
    """The median wall time of `action` over `runs` calls, in milliseconds."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append((time.perf_counter() - start) * 1000.0)
    return statistics.median(times)


def check_equal_values(before: PrimExpr, after: PrimExpr, rng: random.Random) -> bool:
    """The simplified expression has the original's value at a few points of the domain."""
    for _ in range(50):
        env = {v: rng.randrange(extent) for v, extent in zip(VARIABLES, EXTENTS, strict=True)}
        if evaluate(before, env, wrap=False) != evaluate(after, env, wrap=False):
            return False
    return True


HEADER = f"{'nodes':>6} {'after':>6} {'simplify ms':>12} {'tree walk ms':>13} {'ratio':>7}  equal"


def measure(size: int, seed: int, runs: int) -> tuple[str, float]:
    """One table row for an expression of about `size` nodes, and its median simplify time."""
    expr = RandomExpressions(seed * 1000 + size).expr(size)
    result = fresh_analyzer().simplify(expr)  # also warms up lazily imported parts
    simplify_ms = median_ms(lambda: fresh_analyzer().simplify(expr), runs)
    env = {v: extent - 1 for v, extent in zip(VARIABLES, EXTENTS, strict=True)}
    walk_ms = median_ms(lambda: evaluate(expr, env, wrap=False), runs)
    equal = "yes" if check_equal_values(expr, result, random.Random(size)) else "NO"
    row = (
        f"{node_count(expr):>6} {node_count(result):>6} {simplify_ms:>12.2f} "
        f"{walk_ms:>13.3f} {simplify_ms / walk_ms:>7.0f}  {equal}"
    )
    return row, simplify_ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()

    print(f"Analyzer().simplify, median of {args.runs} runs, a fresh Analyzer each;")
    print("reference: one evaluation by a Python tree walk (arith_strategies.evaluate)")
    print(HEADER)
    print("-" * len(HEADER))
    largest_ms = 0.0
    for size in SIZES:
        row, largest_ms = measure(size, args.seed, args.runs)
        print(row)
    verdict = "meets" if largest_ms < BUDGET_MS else "MISSES"
    print(f"\n{max(SIZES)}-node case: {largest_ms:.1f} ms, {verdict} the {BUDGET_MS:.0f} ms bar")


if __name__ == "__main__":
    main()
