"""PeelVectorTails: a loop of predicated vectors runs its whole vectors unpredicated and its last
ones predicated (Before/Expected); predicates of other forms, parallel loops and loops whose
every vector is whole or partial stay; results agree before and after (interpreter, C), for
any row length and start (a hypothesis property) and for a scheduled softmax."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tessel import te, topi
from tessel.ir.functor import post_order
from tessel.ir.module import IRModule
from tessel.ir.node import with_changes
from tessel.script import tir as T
from tessel.testing import assert_structural_equal, check_same_results
from tessel.tir.buffer import BufferLoad
from tessel.tir.stmt import BufferStore, For
from tessel.transform import lower
from tessel.transform.peel_vector_tails import PeelVectorTails
from tessel.transform.simplify import Simplify
from tessel.transform.vectorize_loop import VectorizeLoop


def _peel(func):
    return PeelVectorTails()(IRModule.from_func(func))[func.name]


def _check(before, expected):
    """`before` peeled is `expected` once constants are folded (the tail's copy computes its
    iteration's indices: `2 * 16`, which the C compiler folds)."""
    after = _peel(before)
    folded = Simplify()(IRModule.from_func(after))[after.name]
    assert_structural_equal(with_changes(folded, attrs=expected.attrs), expected)
    check_same_results(before, after)


def test_whole_vectors_lose_their_predicate_and_the_last_keeps_it_without_a_loop():
    @T.prim_func
    def before(A: T.Buffer((37,), "float32"), B: T.Buffer((37,), "float32")):
        for i in range(3):
            B.vstore(
                [T.Ramp(i * 16, 1, 16)],
                A.vload(
                    [T.Ramp(i * 16, 1, 16)], predicate=T.Ramp(i * 16, 1, 16) < T.Broadcast(37, 16)
                )
                * T.Broadcast(T.float32(2), 16),
                predicate=T.Ramp(i * 16, 1, 16) < T.Broadcast(37, 16),
            )

    @T.prim_func
    def expected(A: T.Buffer((37,), "float32"), B: T.Buffer((37,), "float32")):
        for i in range(2):
            B.vstore(
                [T.Ramp(i * 16, 1, 16)],
                A.vload([T.Ramp(i * 16, 1, 16)]) * T.Broadcast(T.float32(2), 16),
            )
        B.vstore(
            [T.Ramp(32, 1, 16)],
            A.vload([T.Ramp(32, 1, 16)], predicate=T.Ramp(32, 1, 16) < T.Broadcast(37, 16))
            * T.Broadcast(T.float32(2), 16),
            predicate=T.Ramp(32, 1, 16) < T.Broadcast(37, 16),
        )

    _check(before, expected)


def test_a_predicate_over_another_variable_stays_in_both_copies():
    """The row's own bound (over i) is peeled; a bound of the outer j (not of a lane's
    position: not peelable) stays in both copies. Two iterations fail the row's bound (the
    last one every lane): the tail is a loop of two."""

    @T.prim_func
    def before(A: T.Buffer((4, 64), "float32")):
        for j in range(4):
            for i in range(4):
                A.vstore(
                    [j, T.Ramp(i * 16, 1, 16)],
                    T.Broadcast(T.float32(1), 16),
                    predicate=T.Ramp(i * 16, 1, 16) < T.Broadcast(40, 16)
                    and T.Broadcast(j, 16) < T.Broadcast(3, 16),
                )

    after = _peel(before)
    (outer,) = [n for n in post_order(after.body) if isinstance(n, For) and n.loop_var.name == "j"]
    head, tail = outer.body.seq
    assert (head.extent.value, tail.min.value, tail.extent.value) == (2, 2, 2)
    (head_store,) = [n for n in post_order(head) if isinstance(n, BufferStore)]
    (tail_store,) = [n for n in post_order(tail) if isinstance(n, BufferStore)]
    assert "j" in str(head_store.predicate) and "i * 16" not in str(head_store.predicate)
    assert "i * 16" in str(tail_store.predicate)
    check_same_results(before, after)


def test_loops_without_a_prefix_of_whole_vectors_or_a_tail_stay():
    @T.prim_func
    def partial_only(A: T.Buffer((5,), "float32")):
        for i in range(1):
            A.vstore(
                [T.Ramp(i * 8, 1, 8)],
                T.Broadcast(T.float32(1), 8),
                predicate=T.Ramp(i * 8, 1, 8) < T.Broadcast(5, 8),
            )

    @T.prim_func
    def whole_only(A: T.Buffer((32,), "float32")):
        for i in range(2):
            A.vstore(
                [T.Ramp(i * 16, 1, 16)],
                T.Broadcast(T.float32(1), 16),
                predicate=T.Ramp(i * 16, 1, 16) < T.Broadcast(40, 16),
            )

    @T.prim_func
    def parallel(A: T.Buffer((37,), "float32")):
        for i in T.parallel(3):
            A.vstore(
                [T.Ramp(i * 16, 1, 16)],
                T.Broadcast(T.float32(1), 16),
                predicate=T.Ramp(i * 16, 1, 16) < T.Broadcast(37, 16),
            )

    for func in (partial_only, whole_only, parallel):
        assert _peel(func) is func


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(1, 70),
    start=st.integers(0, 3),
    lanes=st.sampled_from([4, 8, 16]),
)
def test_any_row_keeps_its_results(n, start, lanes):
    """A vectorized loop of any length and start: the same results as the unvectorized loop,
    with at most its last vector predicated."""

    @T.prim_func
    def func(A: T.Buffer((80,), "float32"), B: T.Buffer((80,), "float32")):
        for i in T.vectorized(start, start + n):
            B[i] = A[i] * T.float32(3) + T.float32(1)

    vectorized = VectorizeLoop(vector_bytes=lanes * 4)(IRModule.from_func(func))["func"]
    peeled = _peel(vectorized)
    check_same_results(func, peeled)
    masked = 0
    for loop in [node for node in post_order(peeled.body) if isinstance(node, For)]:
        stores = [s for s in post_order(loop) if isinstance(s, BufferStore)]
        if any(s.value.dtype.lanes > 1 and s.predicate is not None for s in stores):
            masked += loop.extent.value
    # only the row's last, partial vector is predicated: whole vectors run unmasked
    assert masked <= 1


def test_a_softmax_over_197_keys_runs_its_whole_vectors_unpredicated():
    """ViT's softmax rows: the default schedule and the lowering pipeline leave 12 whole
    vectors a loop unpredicated and the 13th masked, and the C keeps the results."""
    from tessel.schedule.rules import default_schedule

    x = te.placeholder((2, 197), name="x")
    func = te.create_prim_func([x, topi.nn.softmax(x)])
    scheduled = default_schedule(func).func
    lowered = lower(scheduled)
    kernel = next(iter(lowered.functions.values()))
    loops = [n for n in post_order(kernel.body) if isinstance(n, For) and n.extent.value == 12]
    assert loops
    for loop in loops:
        loads = [n for n in post_order(loop) if isinstance(n, BufferLoad)]
        stores = [n for n in post_order(loop) if isinstance(n, BufferStore)]
        assert all(n.predicate is None for n in loads if n.dtype.lanes > 1)
        assert all(n.predicate is None for n in stores if n.value.dtype.lanes > 1)
    check_same_results(func, scheduled, rtol=1e-5, atol=1e-6)
