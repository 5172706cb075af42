"""Random block steps: compute placement, inlining, caching and scopes, reductions, queries,
padding (pad_einsum).

Each takes the chosen block and every block of the function (a producer or consumer is
preferred as the partner of compute_at and reverse_compute_at, any block sometimes).
"""

from __future__ import annotations

import random

from tessel.testing.fuzz.steps import Ref, Step
from tessel.testing.fuzz.view import BlockView

SCOPES = ("global", "global", "local", "shared", "global.stack", "global.workspace")


def _reads_from(consumer: BlockView, producer: BlockView) -> bool:
    return any(buf in consumer.reads for buf in producer.writes)


def _partner(
    rng: random.Random, b: BlockView, blocks: list[BlockView], related: list[BlockView]
) -> BlockView | None:
    others = [c for c in blocks if c.name != b.name and c.loop_extents]
    related = [c for c in related if c.loop_extents]
    pool = related if related and rng.random() < 0.85 else others
    return rng.choice(pool) if pool else None


def compute_at(rng: random.Random, b: BlockView, blocks: list[BlockView]) -> Step | None:
    reverse = rng.random() < 0.5
    related = [c for c in blocks if (_reads_from(b, c) if reverse else _reads_from(c, b))]
    partner = _partner(rng, b, blocks, related)
    if partner is None:
        return None
    name = "reverse_compute_at" if reverse else "compute_at"
    loop = Ref(partner.name, rng.randrange(len(partner.loop_extents)))
    preserve = rng.random() < 0.3
    return Step(
        name, (Ref(b.name), loop), f"sch.{name}({{0}}, {{1}}, preserve_unit_loops={preserve})"
    )


def inline(rng: random.Random, b: BlockView, blocks: list[BlockView]) -> Step | None:
    name = rng.choice(("compute_inline", "compute_inline", "reverse_compute_inline"))
    return Step(name, (Ref(b.name),), f"sch.{name}({{0}})")


def _index(rng: random.Random, count: int) -> int:
    return count if rng.random() < 0.05 else rng.randrange(max(count, 1))  # sometimes out of range


def cache(rng: random.Random, b: BlockView, blocks: list[BlockView]) -> Step | None:
    scope = rng.choice(SCOPES)
    if rng.random() < 0.5:
        return Step(
            "cache_read",
            (Ref(b.name),),
            f"sch.cache_read({{0}}, {_index(rng, len(b.reads))}, {scope!r})",
        )
    return Step(
        "cache_write",
        (Ref(b.name),),
        f"sch.cache_write({{0}}, {_index(rng, len(b.writes))}, {scope!r})",
    )


def reindex(rng: random.Random, b: BlockView, blocks: list[BlockView]) -> Step | None:
    kind = rng.choice(("read", "write"))
    index = _index(rng, len(b.reads if kind == "read" else b.writes))
    return Step("reindex", (Ref(b.name),), f"sch.reindex({{0}}, ({kind!r}, {index}))")


def storage(rng: random.Random, b: BlockView, blocks: list[BlockView]) -> Step | None:
    index = _index(rng, len(b.writes))
    if rng.random() < 0.5:
        scope = rng.choice(SCOPES)
        return Step("set_scope", (Ref(b.name),), f"sch.set_scope({{0}}, {index}, {scope!r})")
    rank = len(b.writes[0].shape) if b.writes else 1
    axis, factor, offset = rng.randrange(rank), rng.choice((4, 8, 16)), rng.choice((0, 1))
    return Step(
        "storage_align",
        (Ref(b.name),),
        f"sch.storage_align({{0}}, {index}, {axis}, {factor}, {offset})",
    )


def reduction(rng: random.Random, b: BlockView, blocks: list[BlockView]) -> Step | None:
    if not b.loop_extents:
        return None
    loop = Ref(b.name, rng.randrange(len(b.loop_extents)))
    if rng.random() < 0.5:
        return Step("decompose_reduction", (Ref(b.name), loop), "sch.decompose_reduction({0}, {1})")
    factor_axis = rng.choice((0, 0, 1, -1))
    return Step("rfactor", (loop,), f"sch.rfactor({{0}}, {factor_axis})")


def query(rng: random.Random, b: BlockView, blocks: list[BlockView]) -> Step | None:
    name = rng.choice(("get_child_blocks", "get_producers", "get_consumers"))
    return Step(name, (Ref(b.name),), f"sch.{name}({{0}})")


def pad_einsum(rng: random.Random, b: BlockView, blocks: list[BlockView]) -> Step | None:
    # Mostly spatial factors; sometimes a reduction factor, which pad_einsum must refuse.
    factors = [
        rng.choice((1, 2, 4, 8, 16)) if kind == "S" or rng.random() < 0.1 else 1
        for kind in b.iter_kinds
    ]
    if rng.random() < 0.05:
        factors = factors[:-1]  # a wrong count
    return Step("pad_einsum", (Ref(b.name),), f"sch.pad_einsum({{0}}, {factors})")
