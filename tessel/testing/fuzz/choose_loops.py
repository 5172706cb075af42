"""Random loop steps: split, fuse, reorder, parallel, vectorize, unroll, annotate, unit loops.

Arguments are mostly plausible (factors of the extent, adjacent loops) and sometimes not
(factors that overshoot, loops out of order), so both the rewrite and the refusal are exercised.
"""

from __future__ import annotations

import random

from tessel.testing.fuzz.steps import Ref, Step
from tessel.testing.fuzz.view import BlockView

ANNOTATIONS = (
    ("pragma_auto_unroll_max_step", "16"),
    ("pragma_unroll_explicit", "1"),
    ("fuzz_note", "'x'"),
    ("fuzz_number", "3"),
)


def _loop(rng: random.Random, b: BlockView, inner_bias: bool = False) -> int:
    last = len(b.loop_extents) - 1
    return last if inner_bias and rng.random() < 0.6 else rng.randrange(last + 1)


def _factors(rng: random.Random, extent: int | None) -> str:
    ext = extent or 4
    small = rng.choice((2, 3, 4, 8))
    divisors = [d for d in range(2, ext) if ext % d == 0] or [1]
    d = rng.choice(divisors)
    choices = (
        f"[None, {small}]",
        f"[{small}, None]",
        f"[None, {ext}]",
        f"[{ext // d}, {d}]",
        f"[None, 2, {small}]",
        f"[{ext + 1}, 2]",  # overshoots: a predicate guards the tail
        "[None, None]",
        "[0, None]",
        f"[1, {ext}]",
    )
    return rng.choices(choices, weights=(6, 3, 1, 4, 2, 1, 1, 1, 1))[0]


def split(rng: random.Random, b: BlockView) -> Step | None:
    if not b.loop_extents:
        return None
    k = _loop(rng, b)
    if rng.random() < 0.15:
        call = "v = sch.sample_perfect_tile({0}, n=2, max_innermost_factor=4)\nsch.split({0}, v)"
        return Step("split", (Ref(b.name, k),), call)
    flag = ", preserve_unit_iters=False" if rng.random() < 0.2 else ""
    return Step(
        "split", (Ref(b.name, k),), f"sch.split({{0}}, {_factors(rng, b.loop_extents[k])}{flag})"
    )


def fuse(rng: random.Random, b: BlockView) -> Step | None:
    n = len(b.loop_extents)
    if n < 2:
        return None
    if rng.random() < 0.1:  # not adjacent, or out of order: refused
        first, second = rng.sample(range(n), 2)
        return Step("fuse", (Ref(b.name, first), Ref(b.name, second)), "sch.fuse({0}, {1})")
    count = rng.randint(2, min(3, n))
    start = rng.randrange(n - count + 1)
    refs = tuple(Ref(b.name, start + j) for j in range(count))
    flag = ", preserve_unit_iters=False" if rng.random() < 0.2 else ""
    return Step(
        "fuse", refs, "sch.fuse(" + ", ".join(f"{{{j}}}" for j in range(count)) + flag + ")"
    )


def reorder(rng: random.Random, b: BlockView) -> Step | None:
    n = len(b.loop_extents)
    if n < 2:
        return None
    chosen = rng.sample(range(n), rng.randint(2, n))
    refs = tuple(Ref(b.name, k) for k in chosen)
    return Step(
        "reorder", refs, "sch.reorder(" + ", ".join(f"{{{j}}}" for j in range(len(chosen))) + ")"
    )


def loop_kind(rng: random.Random, b: BlockView) -> Step | None:
    if not b.loop_extents:
        return None
    kind = rng.choice(("parallel", "unroll", "vectorize", "vectorize"))
    k = _loop(rng, b, inner_bias=kind == "vectorize")
    if kind != "vectorize":
        return Step(kind, (Ref(b.name, k),), f"sch.{kind}({{0}})")
    length = rng.choice((None, None, 2, 3, 4, 8))
    argument = "" if length is None else f", vector_length={length}"
    return Step("vectorize", (Ref(b.name, k),), f"sch.vectorize({{0}}{argument})")


def annotate(rng: random.Random, b: BlockView) -> Step | None:
    ref = Ref(b.name, _loop(rng, b)) if b.loop_extents and rng.random() < 0.6 else Ref(b.name)
    key, value = rng.choice(ANNOTATIONS)
    if rng.random() < 0.15:
        return Step("unannotate", (ref,), f"sch.unannotate({{0}}, {key!r})")
    return Step("annotate", (ref,), f"sch.annotate({{0}}, {key!r}, {value})")


def add_unit_loop(rng: random.Random, b: BlockView) -> Step | None:
    ref = Ref(b.name, _loop(rng, b)) if b.loop_extents and rng.random() < 0.5 else Ref(b.name)
    return Step("add_unit_loop", (ref,), "sch.add_unit_loop({0})")


def blockize(rng: random.Random, b: BlockView) -> Step | None:
    if not b.loop_extents:
        return None
    preserve = rng.random() < 0.7  # TVM's default keeps unit loops in the bindings
    return Step(
        "blockize",
        (Ref(b.name, _loop(rng, b)),),
        f"sch.blockize({{0}}, preserve_unit_iters={preserve})",
    )
