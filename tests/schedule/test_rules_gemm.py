"""The default schedule's GEMM rule (tessel.schedule.rules.gemm): dense (with its bias and relu
epilogue), batch_matmul and matmul of odd shapes compile to tiled, vectorized kernels that give
the evaluator's results."""

import re

import numpy as np
import pytest
from rules_testing import (
    COLUMNS,
    LANES,
    ROWS,
    compile_and_check,
    model,
    rand,
    rule_plans,
    rule_records,
)

import tessel
from tessel import te, topi
from tessel.ir.target import Target
from tessel.schedule import Schedule
from tessel.schedule.rules import default_schedule
from tessel.schedule.rules.default import schedule_with_plans
from tessel.schedule.rules.gemm import (
    PACK_ROWS,
    PREFETCH_BYTES,
    SHORT_REDUCTION,
    GemmPlan,
    OperandPacking,
    plan_gemm,
)
from tessel.schedule.rules.gemm import row_tile as gemm_row_tile

ODD = (1, 7, 13, 127, 129)


def row_tile(rows: int) -> int:
    """i_i: the rule's choice (test_row_tile_weighs_padding_against_small_tiles pins it)."""
    return gemm_row_tile(rows, ROWS)


def _assert_tiled(mod, weights: dict, tir: str, rows: int) -> GemmPlan:
    """The model's one GEMM plan has the rule's row tile and vectors of this machine's lanes,
    and its kernel the init and the accumulators the plan's application makes."""
    (plan,) = rule_plans(mod, weights)
    assert isinstance(plan, GemmPlan)
    assert (plan.rows, plan.lanes) == (row_tile(rows), LANES)
    assert "_init" in tir  # decompose_reduction
    assert 'scope="local"' in tir  # the accumulators
    return plan


@pytest.mark.parametrize(
    ("rows", "max_rows", "tile"),
    [
        (5, 8, 5),  # fewer rows than a tile: all of them
        (42, 8, 7),
        (36, 8, 6),  # a divisor nearly as fast as 8 rows
        (44, 8, 8),
        (100, 8, 8),
        (127, 8, 8),  # 4 or 5 rows would divide, 8 padded is faster
        (10, 8, 5),  # 8 would pad 10 rows to 16
        (12, 6, 6),
        (7, 6, 5),  # AVX2's six rows at most
    ],
)
def test_row_tile_weighs_padding_against_small_tiles(rows, max_rows, tile):
    """4-row tiles ran at half the speed of 8 (44x384x384: 102 against 216 GFLOP/s, 8 rows
    padded to 48), so the rows a tile pads are weighed against how fast each tile runs."""
    assert gemm_row_tile(rows, max_rows) == tile


@pytest.mark.parametrize(
    ("m", "k", "n"),
    [(m, k, n) for m in ODD for k, n in [(13, 129), (129, 7)]]
    + [(7, 1, 13), (13, 127, 1), (127, 7, 129)],
)
def test_dense_bias_relu(m, k, n):
    mod = model(
        f"  %0 = nn.dense(%x, %w, units={n});\n  %1 = nn.bias_add(%0, %b);\n  nn.relu(%1)",
        f"%x: Tensor[({m}, {k}), float32], %w: Tensor[({n}, {k}), float32], "
        f"%b: Tensor[({n}), float32]",
    )
    weights = {"w": rand(n, k, seed=1), "b": rand(n, seed=2)}
    tir = compile_and_check(mod, {"x": rand(m, k)}, weights)
    if n == 1:  # one column: a row reduction, which the GEMM rule leaves to the others
        assert "T_matmul_NT_local" not in tir
        return
    plan = _assert_tiled(mod, weights, tir, m)
    # W[j, k] is strided along j: packed into [j // c, k, j % c], at compile time since it is
    # a constant (LayoutRewrite): the kernel takes the packed weight
    # A short reduction, or at most one vector of columns: one vector.
    columns = COLUMNS if k >= SHORT_REDUCTION and n > LANES else LANES
    assert plan.columns == columns and plan.packing == OperandPacking(1, 0, 1, columns)
    assert f'p1_global: T.Buffer(({-(-n // columns)}, {k}, {columns}), "float32")' in tir
    # Nothing allocated but the accumulators and, where the tile does not divide the rows or
    # the columns, the padded input and output of pad_einsum.
    allocated = re.findall(r"(\w+) = T.alloc_buffer", tir)
    assert all(name.endswith(("_local", "_pad")) for name in allocated)
    assert (m % row_tile(m) == 0 and n % columns == 0) == ("_unpad" not in tir)
    assert re.search(r"T\.max\(T_(matmul_NT|dense)_(local|pad)", tir)  # relu inlined


@pytest.mark.parametrize(
    ("b", "m", "k", "n"),
    [(1, 7, 13, 129), (2, 13, 129, 7), (3, 129, 1, 13), (1, 1, 127, 13), (2, 127, 7, 1)],
)
def test_batch_matmul(b, m, k, n):
    mod = model(
        "  nn.batch_matmul(%x, %y)",
        f"%x: Tensor[({b}, {m}, {k}), float32], %y: Tensor[({b}, {n}, {k}), float32]",
    )
    tir = compile_and_check(mod, {"x": rand(b, m, k), "y": rand(b, n, k, seed=1)}, {})
    if n > 1:  # one column is a row reduction, left to the other rules
        _assert_tiled(mod, {}, tir, m)


@pytest.mark.parametrize(("m", "k", "n"), [(7, 13, 129), (129, 7, 13), (1, 127, 7), (13, 1, 127)])
def test_matmul_contiguous_b(m, k, n):
    mod = model(
        "  nn.matmul(%x, %y)",
        f"%x: Tensor[({m}, {k}), float32], %y: Tensor[({k}, {n}), float32]",
    )
    tir = compile_and_check(mod, {"x": rand(m, k), "y": rand(k, n, seed=1)}, {})
    plan = _assert_tiled(mod, {}, tir, m)
    assert plan.packing is None  # B[k, j] is contiguous along j: no packed copy
    assert "_global" not in tir


def test_a_tall_matmul_packs_its_contiguous_operand_into_panels():
    """From PACK_ROWS rows on, B[k, j] is copied into panels [j // c, k, j % c] (zero-padded):
    the tile then reads one stream instead of k strided rows."""
    a, b = te.placeholder((PACK_ROWS, 3), name="A"), te.placeholder((3, 37), name="B")
    func = te.create_prim_func([a, b, topi.matmul(a, b)])
    sch = Schedule(func)
    plan = plan_gemm(sch.block(sch.get_block("T_matmul")).block)
    columns = COLUMNS if 3 >= SHORT_REDUCTION else LANES
    assert plan is not None and plan.packing == OperandPacking(1, 1, 0, columns)
    scheduled = default_schedule(func).func
    x = np.random.default_rng(0).standard_normal((PACK_ROWS, 3)).astype("float32")
    y = np.random.default_rng(1).standard_normal((3, 37)).astype("float32")
    out = np.zeros((PACK_ROWS, 37), "float32")
    tessel.build(scheduled)(x, y, out)
    np.testing.assert_allclose(out, x @ y, rtol=1e-5, atol=1e-5)


def test_column_panels_are_outside_row_tiles():
    """Each panel of B (K x 32 columns) serves every row tile while it is in cache: the
    parallel loop is columns then rows (44x384x1536: 217 to 255 GFLOP/s, one thread), and the
    result is the unscheduled one."""
    a = te.placeholder((44, 384), name="a")
    b = te.placeholder((384, 96), name="b")
    func = te.create_prim_func([a, b, topi.matmul(a, b)])
    scheduled = default_schedule(func, Target(vector_bytes=64, vector_registers=32)).func
    assert "for j_0_i_0_fused in T.parallel(18):" in scheduled.script()  # 3 panels x 6 tiles
    x, y = rand(44, 384), rand(384, 96, seed=1)
    expected, got = np.zeros((44, 96), "float32"), np.zeros((44, 96), "float32")
    tessel.build(func)(x, y, expected)
    tessel.build(scheduled)(x, y, got)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(("m", "prefetched"), [(1, True), (7, False)])
def test_a_one_row_gemm_prefetches_its_weight_stream(m, prefetched):
    """Batch 1 (a GEMV) streams B once and does little else: its reduction loop asks the C
    compiler to prefetch the loads ahead (MLP 784-512-512-10 at one thread: 0.91 to 0.85x
    onnxruntime); tiles of several rows reuse B from cache and do not."""
    a = te.placeholder((m, 64), name="a")
    w = te.placeholder((48, 64), name="w")
    func = te.create_prim_func([a, w, topi.nn.dense(a, w)])
    target = Target(vector_bytes=64, vector_registers=32)
    report = schedule_with_plans(func, target)
    (applied,) = rule_records(report)
    assert applied.plan.prefetch_bytes == (PREFETCH_BYTES if prefetched else 0)
    assert ("pragma_software_prefetch" in report.schedule.func.script()) == prefetched
    x, y = rand(m, 64), rand(48, 64, seed=1)
    expected, got = np.zeros((m, 48), "float32"), np.zeros((m, 48), "float32")
    tessel.build(func)(x, y, expected)
    tessel.build(report.schedule.func)(x, y, got)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
