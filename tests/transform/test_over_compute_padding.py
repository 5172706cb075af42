"""OverComputePadding: padding branches and reduction guards removed where running on the
padding is proven harmless by the inputs' buffer constraints; kept where it is not."""

import re

from tessel.driver import generate_c_source
from tessel.ir.module import IRModule
from tessel.ir.structural import assert_structural_equal
from tessel.schedule import Schedule
from tessel.script import tir as T
from tessel.testing import check_transformed_results
from tessel.transform import lower
from tessel.transform.over_compute_padding import OverComputePadding


def run_pass(func):
    (after,) = OverComputePadding()(IRModule.from_func(func)).functions.values()
    return after


@T.prim_func
def padded_matmul(
    A: T.Buffer((128, 128), "float32"),
    B: T.Buffer((128, 128), "float32"),
    C: T.Buffer((128, 128), "float32"),
):
    for ax0, ax1 in T.grid(128, 128):
        with T.block("A_assumption"):
            v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
            T.reads(A[v_ax0, v_ax1])
            T.writes()
            T.evaluate(
                T.assume(not (v_ax0 >= 127 or v_ax1 >= 127) or A[v_ax0, v_ax1] == T.float32(0))
            )
    for ax0, ax1 in T.grid(128, 128):
        with T.block("B_assumption"):
            v_ax0, v_ax1 = T.axis.remap("SS", [ax0, ax1])
            T.reads(B[v_ax0, v_ax1])
            T.writes()
            T.evaluate(
                T.assume(not (v_ax0 >= 127 or v_ax1 >= 127) or B[v_ax0, v_ax1] == T.float32(0))
            )
    for i, j, k in T.grid(128, 128, 128):
        with T.block("compute"):
            vi, vj = T.axis.remap("SS", [i, j])
            vk = T.axis.reduce(127, k)
            T.where(k < 127)
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = T.if_then_else(
                vi >= 127 or vj >= 127, T.float32(0), C[vi, vj] + A[vi, vk] * B[vk, vj]
            )


def test_padding_branch_and_reduction_guard_are_removed_under_the_constraints():
    after = run_pass(padded_matmul)
    compute = after.body.block.body.seq[2].body.body.body
    assert compute.predicate.value == 1
    assert int(compute.block.iter_vars[2].dom.extent.value) == 128
    assert "if_then_else" not in after.script()


def test_without_constraints_nothing_is_removed():
    @T.prim_func
    def unconstrained(A: T.Buffer((128, 128), "float32"), C: T.Buffer((128,), "float32")):
        for i, k in T.grid(128, 128):
            with T.block("sum"):
                vi = T.axis.spatial(128, i)
                vk = T.axis.reduce(127, k)
                T.where(k < 127)
                with T.init():
                    C[vi] = T.float32(0)
                C[vi] = T.if_then_else(vi >= 127, T.float32(0), C[vi] + A[vi, vk])

    assert run_pass(unconstrained) is unconstrained


def test_a_pad_value_that_is_not_the_identity_keeps_the_guard():
    @T.prim_func
    def ones(A: T.Buffer((128,), "float32"), S: T.Buffer((1,), "float32")):
        for ax0 in range(128):
            with T.block("A_assumption"):
                v_ax0 = T.axis.spatial(128, ax0)
                T.reads(A[v_ax0])
                T.writes()
                T.evaluate(T.assume(not v_ax0 >= 127 or A[v_ax0] == T.float32(1)))
        for k in range(128):
            with T.block("sum"):
                vk = T.axis.reduce(127, k)
                T.where(k < 127)
                with T.init():
                    S[0] = T.float32(0)
                S[0] = S[0] + A[vk]

    assert run_pass(ones) is ones


def seed_padded_matmul_schedule(matmul, pad_value):
    sch = Schedule(matmul)
    block = sch.get_block("compute")
    for loop in sch.get_loops(block):
        sch.fuse(*sch.split(loop, factors=[4, 32]))
    for name in ("A", "B", "C"):
        sch.transform_layout(
            block,
            name,
            lambda a, b: ((a // 32) * 32 + a % 32, (b // 32) * 32 + b % 32),
            pad_value=pad_value,
        )
    return sch


@T.prim_func
def matmul(
    A: T.Buffer((127, 127), "float32"),
    B: T.Buffer((127, 127), "float32"),
    C: T.Buffer((127, 127), "float32"),
):
    for i, j, k in T.grid(127, 127, 127):
        with T.block("compute"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


def test_seed_matmul_padded_to_128_lowers_to_c_without_a_branch_in_the_innermost_loop():
    sch = seed_padded_matmul_schedule(matmul, 0.0)
    lowered = lower(sch.func)
    text = lowered["matmul"].script()
    assert "if_then_else" not in text and "< 127" not in text
    source = generate_c_source(sch.func)
    innermost = source[source.rindex("for (") :]
    # The only test left in the innermost loop is the reduction's init (`k == 0`).
    assert "127" not in innermost and "?" not in innermost, innermost
    assert re.findall(r"\bif \(\((\w+) == 0\)\)", innermost) == ["k_0_k_1_fused"], innermost
    check_transformed_results(matmul, sch, rtol=1e-4, atol=1e-4)


def test_seed_matmul_padded_with_a_lambda_pad_value_is_the_same():
    by_value = seed_padded_matmul_schedule(matmul, 0.0)
    by_lambda = seed_padded_matmul_schedule(matmul, lambda a, b: T.float32(0))
    assert_structural_equal(by_value.func, by_lambda.func)
