"""The default schedule's row-reduction rule (tessel.schedule.rules.reduction): softmax,
log_softmax, layer_norm and sum/mean/max/min over the last axis, on odd shapes, run row by row
(one parallel row loop holding every block), give the unscheduled results in the interpreter
and in C, and their traces replay."""

import numpy as np
import pytest

import tessel.graph as graph
from tessel import te, topi
from tessel.graph import InferType, evaluate, parse
from tessel.ir.functor import post_order
from tessel.ir.structural import assert_structural_equal
from tessel.ir.target import Target
from tessel.schedule import Schedule
from tessel.schedule.rules import default_schedule
from tessel.schedule.rules.reduction import match_row_reduction, schedule_row_reduction
from tessel.schedule.state import block_names
from tessel.testing import check_same_results, check_schedule
from tessel.tir.block import BlockRealize
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import For, ForKind

SHAPES = [(2, 3, 7), (1, 5, 129), (4, 1)]
AVX2 = Target()  # 32-byte vectors: 8 float32 lanes
OPS = ["softmax", "log_softmax", "layer_norm", "sum", "sum_keepdims", "mean", "mean_keepdims",
       "max", "min_keepdims"]  # fmt: skip


def _func(op: str, shape: tuple[int, ...], dtype: str = "float32") -> PrimFunc:
    x = te.placeholder(shape, dtype, name="x")
    if op == "layer_norm":
        gamma = te.placeholder(shape[-1:], dtype, name="gamma")
        beta = te.placeholder(shape[-1:], dtype, name="beta")
        return te.create_prim_func([x, gamma, beta, topi.nn.layer_norm(x, gamma, beta, -1)])
    if op in ("softmax", "log_softmax"):
        return te.create_prim_func([x, getattr(topi.nn, op)(x, -1)])
    name, _, keepdims = op.partition("_")
    return te.create_prim_func([x, getattr(topi, name)(x, -1, keepdims=bool(keepdims))])


def _inline_and_schedule(sch: Schedule, target: Target = AVX2) -> set[str]:
    """What default_schedule does before the rule: inline the injective intermediates (softmax's
    exp, layer_norm's squared deviation, mean's division), then the rule on the first block,
    for `target` (default: 32-byte vectors); the blocks the rule scheduled."""
    for name in ("T_softmax_exp", "T_log_softmax_exp", "T_mean", "T_ln_sq_dev", "T_mean_1"):
        if name in _block_names(sch) and name not in _output_names(sch.func):
            sch.compute_inline(sch.get_block(name))
    applied = schedule_row_reduction(sch, _block_names(sch)[1], target)  # [0] is the root
    assert applied is not None
    return set(applied.blocks)


def _block_names(sch: Schedule) -> list[str]:
    return block_names(sch.func)


def _output_names(func: PrimFunc) -> set[str]:
    return {buffer.name for buffer in func.buffer_map.values()}


def _loops(func: PrimFunc) -> list[For]:
    return [node for node in post_order(func.body) if isinstance(node, For)]


def _root_loop(func: PrimFunc) -> For:
    """The root block's only statement, a loop (the rule leaves one row loop holding all)."""
    assert isinstance(func.body, BlockRealize)
    body = func.body.block.body
    assert isinstance(body, For), "the root holds several statements"
    return body


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("op", OPS)
def test_rule_keeps_results_and_replays(op, shape):
    func = _func(op, shape)
    sch = check_schedule(func, _inline_and_schedule, rtol=1e-5, atol=1e-5)
    nest = _root_loop(sch.func)  # every block under one row loop
    assert nest.kind is ForKind.PARALLEL
    assert nest.extent.value == int(np.prod(shape[:-1]))


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("op", OPS)
def test_default_schedule_keeps_results(op, shape):
    func = _func(op, shape)
    after = default_schedule(func).func
    check_same_results(func, after, rtol=1e-5, atol=1e-5)
    nest = _root_loop(after)
    assert nest.kind is ForKind.PARALLEL


@pytest.mark.parametrize("op", ["softmax", "layer_norm", "sum_keepdims", "max"])
def test_long_rows_get_vector_partial_results(op):
    sch = Schedule(_func(op, (1, 5, 129)))
    scheduled = _inline_and_schedule(sch)
    blocks = set(_block_names(sch)) - {"root"}
    assert scheduled == blocks  # the rule claims every block, its rfactor blocks included
    assert any(name.endswith("_rf") for name in blocks)
    assert any(name.endswith("_rf_init") for name in blocks)
    vectorized = [loop for loop in _loops(sch.func) if loop.kind is ForKind.VECTORIZED]
    assert vectorized
    assert all(loop.extent.value in (8, 129) for loop in vectorized)


def _vector_loops_under_unrolled(func: PrimFunc) -> list[tuple[int, int]]:
    """(unrolled extent, vector extent) of each vectorized loop directly under an unrolled one."""
    return [
        (outer.extent.value, outer.body.extent.value)
        for outer in _loops(func)
        if outer.kind is ForKind.UNROLLED
        and isinstance(outer.body, For)
        and outer.body.kind is ForKind.VECTORIZED
    ]


@pytest.mark.parametrize(
    ("op", "shape", "vector_bytes", "chains"),
    [
        ("softmax", (3, 128), 32, 4),  # 16 vectors of 8: four chains of four
        ("layer_norm", (2, 384), 64, 4),  # 24 vectors of 16: four chains of six
        ("max", (2, 48), 32, 2),  # 6 vectors: two chains of three
        ("sum_keepdims", (2, 3, 24), 32, 1),  # 3 vectors: one chain
    ],
    ids=["softmax-4", "layer_norm-4-avx512", "max-2", "sum-1"],
)
def test_rows_of_several_vectors_reduce_in_independent_chains(op, shape, vector_bytes, chains):
    """One vector of partial results is one dependency chain (a compare and a blend per vector
    for max); rows of at least two vectors per chain keep several, each in its own register
    (an unrolled loop of vectors), and the write-back reduces them to one vector by vector
    before reducing its lanes."""
    lanes = vector_bytes // 4

    def steps(sch):
        for name in ("T_softmax_exp", "T_mean", "T_ln_sq_dev", "T_mean_1"):
            if name in _block_names(sch):
                sch.compute_inline(sch.get_block(name))
        schedule_row_reduction(sch, _block_names(sch)[1], Target(vector_bytes=vector_bytes))

    sch = check_schedule(_func(op, shape), steps, rtol=1e-5, atol=1e-5)
    tiled = _vector_loops_under_unrolled(sch.func)
    reductions = {"softmax": 2, "layer_norm": 2}.get(op, 1)
    if chains == 1:
        assert tiled == []
        assert not any(name.endswith("_rf_1") for name in _block_names(sch))
        return
    # per reduction: the chains' init and update, then the chains reduced to one vector
    assert tiled == [(chains, lanes)] * 3 * reductions
    assert sum(1 for name in _block_names(sch) if name.endswith("_rf_1")) == reductions


def test_float64_rows_use_four_lanes():
    func = _func("softmax", (3, 9), "float64")
    sch = check_schedule(func, _inline_and_schedule, rtol=1e-12, atol=1e-12)
    assert "T_sum_rf" in _block_names(sch)
    vectorized = {loop.extent.value for loop in _loops(sch.func) if loop.kind is ForKind.VECTORIZED}
    assert vectorized == {4, 9}  # the partial results, the row


def test_short_rows_stay_scalar():
    sch = Schedule(_func("softmax", (2, 3, 7)))
    assert _inline_and_schedule(sch) == {"T_max", "T_sum", "T_softmax_norm"}
    assert not any(name.endswith("_rf") for name in _block_names(sch))


@pytest.mark.parametrize(
    "make",
    [
        lambda x: topi.sum(x, 1, keepdims=True),  # not the last axis
        lambda x: topi.sum(x, None),  # every axis
        lambda x: topi.nn.relu(x),  # no reduction
        lambda x: topi.argmax(x, -1),  # an index reduction
    ],
    ids=["middle-axis", "all-axes", "elementwise", "argmax"],
)
def test_other_blocks_are_left_alone(make):
    x = te.placeholder((2, 3, 7), "float32", name="x")
    func = te.create_prim_func([x, make(x)])
    sch = Schedule(func)
    for name in _block_names(sch)[1:]:
        assert schedule_row_reduction(sch, name) is None
    assert_structural_equal(sch.func, func)


def test_matmul_is_not_a_row_reduction():
    a = te.placeholder((4, 8), "float32", name="a")
    b = te.placeholder((8, 5), "float32", name="b")
    func = te.create_prim_func([a, b, topi.matmul(a, b)])
    sch = Schedule(func)
    (name,) = _block_names(sch)[1:]
    assert match_row_reduction(sch.block(sch.get_block(name)).block) is None


def _model(body: str, params: str) -> object:
    return InferType()(parse(f'#[version = "0.0.5"]\ndef @main({params}) {{\n{body}\n}}\n'))


def test_compiled_graph_runs_softmax_and_layer_norm_row_by_row():
    mod = _model(
        "  %0 = nn.layer_norm(%x, %g, %b, axis=-1);\n  nn.softmax(%0, axis=-1)",
        "%x: Tensor[(3, 5, 129), float32], %g: Tensor[(129), float32], %b: Tensor[(129), float32]",
    )
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 5, 129), dtype=np.float32)
    weights = {name: rng.standard_normal(129, dtype=np.float32) for name in ("g", "b")}
    model = graph.compile(mod, params=weights)
    expected = evaluate(mod, x, params=weights)
    np.testing.assert_allclose(model(x), expected, rtol=1e-4, atol=1e-5)
    kernels = [f for gv, f in model.lowered.items() if gv.name_hint != "main"]
    assert len(kernels) == 2
    for kernel in kernels:
        nest = _root_loop(kernel)
        assert nest.kind is ForKind.PARALLEL
        assert nest.extent.value == 15
        assert "_rf" in kernel.script()


@pytest.mark.parametrize(
    ("newshape", "rows"),
    [
        ((3, 7, 9), 21),  # the unit row axis dropped: two row loops for the reductions' three
        ((1, 3, 7, 9), 21),  # the same shape: the anchor's rows are the reductions'
    ],
)
def test_softmax_then_a_reshape_runs_each_row_once(newshape, rows):
    """ViT's attention: softmax over (1, 3, 7, 9), then a reshape the fusion puts in the same
    kernel. The reshape, reading the row results at its leading loops, is the anchor, and its
    row loops are the parallel loop: one iteration a row, not one an element (which redid
    every row's max and sum for each of its elements: 21 ms a kernel at (1, 3, 197, 197))."""
    mod = _model(
        f"reshape(nn.softmax(%x, axis=-1), newshape={list(newshape)})",
        "%x: Tensor[(1, 3, 7, 9), float32]",
    )
    x = np.random.default_rng(0).standard_normal((1, 3, 7, 9), dtype=np.float32)
    model = graph.compile(mod)
    np.testing.assert_allclose(model(x), evaluate(mod, x), rtol=1e-5, atol=1e-6)
    (kernel,) = [f for gv, f in model.lowered.items() if gv.name_hint != "main"]
    nest = _root_loop(kernel)
    assert nest.kind is ForKind.PARALLEL
    assert nest.extent.value == rows


@pytest.mark.parametrize("newshape", [(3, 7, 19), (1, 3, 7, 19)])
def test_softmax_exp_is_vectorized_under_a_reshaping_anchor(newshape):
    """The exp between softmax's max and sum sits under the anchor's row loops, which a
    reshape dropping the unit axis makes fewer than the reductions' (it stayed scalar there:
    ViT's softmax kernels took 2.4 ms a model against 1.9 once vectorized)."""
    x = te.placeholder((1, 3, 7, 19), "float32", name="x")
    func = te.create_prim_func([x, topi.reshape(topi.nn.softmax(x, -1), newshape)])
    after = default_schedule(func).func
    check_same_results(func, after, rtol=1e-5, atol=1e-6)
    exp_loops = [
        loop
        for loop in _loops(after)
        if isinstance(loop.body, BlockRealize) and loop.body.block.name_hint == "T_softmax_exp"
    ]
    assert [loop.kind for loop in exp_loops] == [ForKind.VECTORIZED]


def test_a_reshape_merging_the_rows_is_not_the_anchor():
    """A reshape to (21, 9) in the softmax's kernel reads the row results at `r // 7, r % 7`:
    not an anchor, so the reductions run under their own row loop (21 rows, in parallel) and
    the reshape reads their results afterwards; the results are kept."""
    x = te.placeholder((1, 3, 7, 9), "float32", name="x")
    func = te.create_prim_func([x, topi.reshape(topi.nn.softmax(x, -1), (21, 9))])
    after = default_schedule(func).func
    check_same_results(func, after, rtol=1e-5, atol=1e-6)
    parallel = [loop for loop in _loops(after) if loop.kind is ForKind.PARALLEL]
    holding_max = [loop for loop in parallel if "T_max" in loop.script()]
    assert holding_max and all(loop.extent.value == 21 for loop in holding_max)
