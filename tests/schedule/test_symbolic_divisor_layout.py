"""transform_layout with a symbolic divisor (TVM's `test_transform_layout_with_var` form):
`i // n, i % n` is a layout only when `n > 0`, which the function must state (`T.assume`); an
extent that `n` provably divides (`16 * n`) needs no padding, and the result runs like the
original for several n. Where `n > 0` or the divisibility is not known, the map is refused."""

import numpy as np
import pytest

from tessel.ir.structural import assert_structural_equal
from tessel.schedule import Schedule, ScheduleError
from tessel.schedule.primitives.layout_assumptions import function_assumptions
from tessel.script import tir as T
from tessel.testing import check_schedule
from tessel.testing.differential import BACKENDS, run_with
from tessel.testing.schedules import named_like


@T.prim_func
def scaled(a: T.handle, c: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (16, n), "float32")
    C = T.match_buffer(c, (16, n), "float32")
    B = T.alloc_buffer((16 * n,), "float32")
    T.evaluate(T.assume(0 < n))
    for i in range(16 * n):
        with T.block("B"):
            vi = T.axis.remap("S", [i])
            B[vi] = A[vi // n, vi % n] * T.float32(2)
    for i in range(16 * n):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            C[vi // n, vi % n] = B[vi] + T.float32(1)


@T.prim_func
def scaled_by_param(a: T.handle, c: T.handle, n: T.int32):
    A = T.match_buffer(a, (16 * n,), "float32")
    C = T.match_buffer(c, (16 * n,), "float32")
    B = T.alloc_buffer((16 * n,), "float32")
    T.evaluate(T.assume(n > 0))
    for i in range(16 * n):
        with T.block("B"):
            vi = T.axis.remap("S", [i])
            B[vi] = A[vi] * T.float32(2)
    for i in range(16 * n):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            C[vi] = B[vi] + T.float32(1)


@T.prim_func
def scaled_without_assume(a: T.handle, c: T.handle, n: T.int32):
    A = T.match_buffer(a, (16 * n,), "float32")
    C = T.match_buffer(c, (16 * n,), "float32")
    B = T.alloc_buffer((16 * n,), "float32")
    for i in range(16 * n):
        with T.block("B"):
            vi = T.axis.remap("S", [i])
            B[vi] = A[vi] * T.float32(2)
    for i in range(16 * n):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            C[vi] = B[vi] + T.float32(1)


@T.prim_func
def unaligned(a: T.handle, c: T.handle, n: T.int32):
    A = T.match_buffer(a, (16,), "int32")
    C = T.match_buffer(c, (16,), "int32")
    B = T.alloc_buffer((16,), "int32")
    T.evaluate(T.assume(0 < n))
    for i in range(16):
        with T.block("B"):
            vi = T.axis.remap("S", [i])
            B[vi] = A[vi]
    for i in range(16):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            C[vi] = B[vi]


def _n(func):
    """The divisor variable: the scalar parameter, or the shape variable of the first buffer."""
    last = func.params[-1]
    return last if last not in func.buffer_map else func.buffer_map[func.params[0]].shape[1]


@pytest.mark.parametrize("n", [1, 3])
def test_split_by_a_shape_var_dividing_the_extent_needs_no_padding(n):
    @T.prim_func
    def expected(a: T.handle, c: T.handle):
        n = T.int32()
        A = T.match_buffer(a, (16, n), "float32")
        C = T.match_buffer(c, (16, n), "float32")
        B = T.alloc_buffer((16, n), "float32")
        T.evaluate(T.assume(0 < n))
        for i in range(16 * n):
            with T.block("B"):
                vi = T.axis.remap("S", [i])
                B[vi // n, vi % n] = A[vi // n, vi % n] * T.float32(2)
        for i in range(16 * n):
            with T.block("C"):
                vi = T.axis.remap("S", [i])
                C[vi // n, vi % n] = B[vi // n, vi % n] + T.float32(1)

    var = _n(scaled)
    check_schedule(
        scaled,
        lambda sch: sch.transform_layout(
            sch.get_block("B"), ("write", 0), lambda i: [i // var, i % var]
        ),
        expected,
        shape_vars={"n": n},
    )


def test_split_by_a_scalar_param_gives_tvm_form_and_replays():
    @T.prim_func
    def expected(a: T.handle, c: T.handle, n: T.int32):
        A = T.match_buffer(a, (16 * n,), "float32")
        C = T.match_buffer(c, (16 * n,), "float32")
        B = T.alloc_buffer((16, n), "float32")
        T.evaluate(T.assume(n > 0))
        for i in range(16 * n):
            with T.block("B"):
                vi = T.axis.remap("S", [i])
                B[vi // n, vi % n] = A[vi] * T.float32(2)
        for i in range(16 * n):
            with T.block("C"):
                vi = T.axis.remap("S", [i])
                C[vi] = B[vi // n, vi % n] + T.float32(1)

    var = _n(scaled_by_param)
    sch = Schedule(scaled_by_param)
    sch.transform_layout("B", "B", lambda i: [i // var, i % var])
    assert_structural_equal(sch.func, named_like(expected, sch.func))
    replayed = Schedule(scaled_by_param)
    sch.trace.apply_to_schedule(replayed)
    assert_structural_equal(replayed.func, sch.func)


@pytest.mark.parametrize("n", [2, 5])
def test_split_parameter_buffer_runs_on_the_reshaped_argument(n):
    var = _n(scaled_by_param)
    sch = Schedule(scaled_by_param)
    sch.transform_layout("B", "A", lambda i: [i // var, i % var])
    sch.transform_layout("C", "C", lambda i: [i // var, i % var])
    assert tuple(str(e) for e in sch.func.buffer_map[sch.func.params[0]].shape) == ("16", "n")
    rng = np.random.default_rng(0)
    a = rng.standard_normal(16 * n).astype("float32")
    c = np.zeros(16 * n, "float32")
    # C takes only plain extents, so `16 * n` runs in the interpreter; the result runs in both.
    want = run_with("interpreter", scaled_by_param, [a, c, n])[1]
    for backend in BACKENDS:  # row-major (16, n) holds element i at (i // n, i % n)
        got = run_with(backend, sch.func, [a.reshape(16, n), c.reshape(16, n), n])[1]
        np.testing.assert_allclose(got.reshape(-1), want, rtol=1e-6, err_msg=backend)


def test_function_assumptions_are_the_unconditional_assumes_and_argument_extents():
    facts = [str(f) for f in function_assumptions(scaled)]
    assert facts == ["0 < n", "n >= 0"]
    assert [str(f) for f in function_assumptions(assumed_inside_a_loop)] == ["16 * n >= 0"]


def _refusal(func, index_map):
    sch = Schedule(func)
    with pytest.raises(ScheduleError) as err:
        sch.transform_layout("B", "B", index_map)
    assert_structural_equal(sch.func, func)
    assert len(sch.trace) == 1  # only the get_block naming "B"
    return err.value


def test_divisor_not_known_positive_is_refused_naming_the_fact():
    var = _n(scaled_without_assume)
    err = _refusal(scaled_without_assume, lambda i: [i // var, i % var])
    assert err.rule == "transform_layout.index-map-not-invertible"
    assert "`n > 0`" in str(err)
    assert err.hint == "state it in the function: T.assume(n > 0)"


@T.prim_func
def assumed_inside_a_loop(a: T.handle, c: T.handle, n: T.int32):
    A = T.match_buffer(a, (16 * n,), "float32")
    C = T.match_buffer(c, (16 * n,), "float32")
    B = T.alloc_buffer((16 * n,), "float32")
    for i in range(16 * n):
        with T.block("B"):
            vi = T.axis.remap("S", [i])
            T.evaluate(T.assume(0 < n))
            B[vi] = A[vi] * T.float32(2)
    for i in range(16 * n):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            C[vi] = B[vi] + T.float32(1)


def test_assume_that_may_not_run_does_not_prove_the_divisor_positive():
    # The loop runs no iteration when n <= 0, so its T.assume says nothing about such an n.
    var = _n(assumed_inside_a_loop)
    err = _refusal(assumed_inside_a_loop, lambda i: [i // var, i % var])
    assert err.rule == "transform_layout.index-map-not-invertible"
    assert "T.assume(n > 0)" in err.hint


@T.prim_func
def copied(A: T.Buffer(16, "int32"), n: T.int32):
    B = T.alloc_buffer(16, "int32")
    T.evaluate(T.assume(n > 0))
    for i in T.serial(16):
        with T.block("block"):
            vi = T.axis.remap("S", [i])
            B[vi] = A[vi]


def test_padded_split_by_a_symbolic_divisor_is_tvms_layout():
    # TVM's test_transform_layout_with_var, with the `n > 0` it needs stated; TVM leaves
    # `(vj + vi * n) // n` and `(vj + vi * n) % n`, which are `vi` and `vj` once n > 0 is known.
    @T.prim_func
    def expected(A: T.Buffer(16, "int32"), n: T.int32):
        B = T.alloc_buffer([(-16 % n + 16) // n, n], dtype="int32")
        T.evaluate(T.assume(n > 0))
        for i, j in T.grid((-16 % n + 16) // n, n):
            with T.block("block"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = T.if_then_else(
                    -16 % n != 0 and vi == 16 // n and 16 % n <= vj,
                    0,
                    A[vj + vi * n],
                    dtype="int32",
                )

    var = copied.params[1]
    sch = Schedule(copied)
    sch.transform_layout("block", "B", lambda i: [i // var, i % var], pad_value=0)
    assert_structural_equal(sch.func, named_like(expected, sch.func))
    replayed = Schedule(copied)
    sch.trace.apply_to_schedule(replayed)
    assert_structural_equal(replayed.func, sch.func)


@T.prim_func
def doubled(a: T.handle, c: T.handle, n: T.int32):
    A = T.match_buffer(a, (16,), "float32")
    C = T.match_buffer(c, (16,), "float32")
    B = T.alloc_buffer((16,), "float32")
    T.evaluate(T.assume(n > 0))
    for i in range(16):
        with T.block("B"):
            vi = T.axis.remap("S", [i])
            B[vi] = A[vi] * T.float32(2)
    for i in range(16):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            C[vi] = B[vi] + T.float32(1)


@pytest.mark.parametrize("pad_value", [None, 0.0])
def test_padded_split_by_a_symbolic_divisor_runs_like_the_original_for_every_n(pad_value):
    var = doubled.params[2]
    sch = Schedule(doubled)
    if pad_value is None:
        sch.transform_layout(
            "B", "B", lambda i: [i // var, i % var], assume_injective_transform=True
        )
    else:
        sch.transform_layout("B", "B", lambda i: [i // var, i % var], pad_value=pad_value)
    shape = sch.func.script()
    assert "(-16 % n + 16) // n, n" in shape
    rng = np.random.default_rng(0)
    a = rng.standard_normal(16).astype("float32")
    want = a * 2 + 1
    for n in (1, 3, 4, 5, 7, 16, 20):  # padded (3, 5, 7, 20) and not (1, 4, 16)
        for backend in BACKENDS:
            got = run_with(backend, sch.func, [a, np.zeros(16, "float32"), n])[1]
            np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=f"{backend}, n={n}")


def test_padded_split_needs_the_divisor_known_positive():
    @T.prim_func
    def unknown_sign(A: T.Buffer(16, "int32"), n: T.int32):
        B = T.alloc_buffer(16, "int32")
        for i in T.serial(16):
            with T.block("B"):
                vi = T.axis.remap("S", [i])
                B[vi] = A[vi]

    var = unknown_sign.params[1]
    err = _refusal(unknown_sign, lambda i: [i // var, i % var])
    assert err.rule == "transform_layout.index-map-not-invertible"
    assert err.hint == "state it in the function: T.assume(n > 0)"


def test_padded_shifted_split_by_a_symbolic_divisor_is_refused():
    var = _n(unaligned)
    err = _refusal(unaligned, lambda i: [(i + 1) // var, (i + 1) % var])
    assert err.rule == "transform_layout.index-map-not-invertible"
    assert "not known to divide" in str(err)
    assert "plain split of one index" in str(err)


def test_padded_split_without_pad_value_is_refused():
    var = copied.params[1]
    sch = Schedule(copied)
    with pytest.raises(ScheduleError) as err:
        sch.transform_layout("block", "B", lambda i: [i // var, i % var])
    assert err.value.rule == "transform_layout.padding-needs-pad-value"
    assert "-16 % n != 0" in str(err.value)
    assert_structural_equal(sch.func, copied)


@pytest.mark.parametrize("n", [1, 3])
def test_block_layout_split_by_a_divisor_known_positive_runs_like_the_original(n):
    var = _n(scaled)
    sch = check_schedule(
        scaled,
        lambda sch: sch.transform_block_layout(sch.get_block("B"), lambda i: [i // var, i % var]),
        shape_vars={"n": n},
    )
    block = sch.block(sch.get_block("B")).block
    assert [str(iv.dom.extent) for iv in block.iter_vars] == ["16", "n"]


def test_block_layout_split_by_a_divisor_not_known_positive_is_refused_naming_the_fact():
    var = _n(scaled_without_assume)
    sch = Schedule(scaled_without_assume)
    with pytest.raises(ScheduleError) as err:
        sch.transform_block_layout(sch.get_block("B"), lambda i: [i // var, i % var])
    assert err.value.rule == "transform_block_layout.not-bijective"
    assert "iteration space [16 * n]" in str(err.value) and "`n > 0`" in str(err.value)
    assert err.value.hint == "state it in the function: T.assume(n > 0)"
    assert_structural_equal(sch.func, scaled_without_assume)


@T.prim_func
def stated_multiple(a: T.handle, c: T.handle, n: T.int32):
    m = T.int32()
    A = T.match_buffer(a, (m,), "float32")
    C = T.match_buffer(c, (m,), "float32")
    B = T.alloc_buffer((m,), "float32")
    T.evaluate(T.assume(n > 0))
    T.evaluate(T.assume(m % n == 0))
    for i in range(m):
        with T.block("B"):
            vi = T.axis.remap("S", [i])
            B[vi] = A[vi] * T.float32(2)
    for i in range(m):
        with T.block("C"):
            vi = T.axis.remap("S", [i])
            C[vi] = B[vi] + T.float32(1)


@pytest.mark.parametrize(("m", "n"), [(12, 3), (12, 12), (10, 1)])
def test_split_by_a_divisor_stated_to_divide_the_extent_needs_no_padding(m, n):
    var = stated_multiple.params[2]
    sch = Schedule(stated_multiple)
    sch.transform_layout("B", "B", lambda i: [i // var, i % var])  # no pad_value needed
    assert "B = T.alloc_buffer((m // n, n)" in sch.func.script()
    assert "if_then_else" not in sch.func.script()
    a = np.random.default_rng(1).standard_normal(m).astype("float32")
    for backend in BACKENDS:
        got = run_with(backend, sch.func, [a, np.zeros(m, "float32"), n])[1]
        np.testing.assert_allclose(got, a * 2 + 1, rtol=1e-6, err_msg=backend)


@pytest.mark.parametrize(("m", "n"), [(12, 4), (7, 7)])
def test_block_layout_split_by_a_divisor_stated_to_divide_the_extent(m, n):
    var = stated_multiple.params[2]
    sch = Schedule(stated_multiple)
    sch.transform_block_layout(sch.get_block("B"), lambda i: [i // var, i % var])
    assert "T.grid(m // n, n)" in sch.func.script()
    a = np.random.default_rng(2).standard_normal(m).astype("float32")
    for backend in BACKENDS:
        got = run_with(backend, sch.func, [a, np.zeros(m, "float32"), n])[1]
        np.testing.assert_allclose(got, a * 2 + 1, rtol=1e-6, err_msg=backend)
