"""StorageRewrite on whole programs: a lowered function's temporaries, and a property over any
arrangement of lifetimes (as many allocations as temporaries live at once, same results)."""

from hypothesis import given, settings
from hypothesis import strategies as st

from tessel.ir.functor import post_order
from tessel.ir.module import IRModule
from tessel.ir.target import Target
from tessel.ir.transform import Sequential
from tessel.script import parse
from tessel.script import tir as T
from tessel.testing import check_same_results
from tessel.tir.stmt import Allocate
from tessel.transform import LowerMemoryScopes, default_passes
from tessel.transform.storage_rewrite import StorageRewrite


def _rewrite(func):
    return StorageRewrite()(IRModule.from_func(func))[func.name]


def _allocations(func):
    return [n for n in post_order(func.body) if isinstance(n, Allocate)]


def test_temporaries_of_a_lowered_function_share_and_results_agree():
    @T.prim_func
    def chain(A: T.Buffer((8, 8), "float32"), D: T.Buffer((8, 8), "float32")):
        B = T.alloc_buffer((8, 8))
        C = T.alloc_buffer((8, 8))
        E = T.alloc_buffer((8, 8))
        for i, j in T.grid(8, 8):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] * T.float32(2)
        for i, j in T.grid(8, 8):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = B[vj, vi] + T.float32(1)
        for i, j in T.grid(8, 8):
            with T.block("E"):
                vi, vj = T.axis.remap("SS", [i, j])
                E[vi, vj] = C[vj, vi] * T.float32(3)
        for i, j in T.grid(8, 8):
            with T.block("D"):
                vi, vj = T.axis.remap("SS", [i, j])
                D[vi, vj] = E[vj, vi]

    # The pipeline up to StorageRewrite's place (LowerMemoryScopes, which follows it, decides
    # placements by the final sizes), without it.
    later = (StorageRewrite, LowerMemoryScopes)
    passes = tuple(p for p in default_passes(Target()) if not isinstance(p, later))
    lowered = Sequential(passes)(IRModule.from_func(chain))
    assert len(_allocations(lowered["chain"])) == 3
    after = StorageRewrite()(lowered)
    assert sorted(a.buffer_var.name for a in _allocations(after["chain"])) == ["B", "C"]  # E in B
    check_same_results(chain, after["chain"])


# -- property: any arrangement of lifetimes ----------------------------------------------------


@st.composite
def _lifetimes(draw):
    """Temporaries (start step, end step, size) over a few steps of a straight-line program."""
    steps = draw(st.integers(2, 6))
    count = draw(st.integers(1, 5))
    spans = []
    for _ in range(count):
        start = draw(st.integers(0, steps - 1))
        end = draw(st.integers(start, steps - 1))
        spans.append((start, end, draw(st.sampled_from([4, 8, 16]))))
    return steps, spans


def _program(steps, spans):
    """Step s: every temporary born at s is written from A; then every one dying at s is added
    into B. Built as script text, so the temporaries can vary in number."""
    lines = ["@T.prim_func", 'def f(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):']
    for t, (_, _, size) in enumerate(spans):
        lines.append(f'    X{t} = T.allocate([{size}], "float32", "global")')
    lines.append("    for i in range(16):\n        B[i] = T.float32(0)")
    for step in range(steps):
        for t, (start, _, size) in enumerate(spans):
            if start == step:
                lines.append(f"    for i in range({size}):")
                lines.append(f"        X{t}[i] = A[i] * T.float32({t + 1})")
        for t, (_, end, size) in enumerate(spans):
            if end == step:
                lines.append(f"    for i in range({size}):")
                lines.append(f"        B[i] = B[i] + X{t}[{size - 1} - i]")
    return parse("\n".join(lines) + "\n")


@settings(max_examples=25, deadline=None)
@given(_lifetimes())
def test_sharing_uses_as_many_allocations_as_are_live_at_once_and_keeps_results(case):
    steps, spans = case
    before = _program(steps, spans)
    after = _rewrite(before)
    # The write of a temporary born at s comes before the reads of those dying at s: two
    # temporaries overlap when each is born no later than the other dies.
    most_live = max(sum(1 for start, end, _ in spans if start <= s <= end) for s in range(steps))
    assert len(_allocations(after)) == most_live
    check_same_results(before, after, backends=("interpreter",))
    assert _rewrite(after) is after
