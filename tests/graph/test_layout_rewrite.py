"""LayoutRewrite (tessel.graph.passes.layout_rewrite): the packing stage a schedule rule put at
the start of a kernel is lifted out when the caller passes a constant, the constant is packed at
compile time, and the compiled model still gives the evaluator's results; a kernel whose
argument is not constant keeps packing at run time."""

import numpy as np
import pytest
from graph_models import COLUMNS, INPUTS, assert_close, load, random_inputs, random_weights

import tessel.graph as graph
from tessel.graph import InferType, evaluate, parse
from tessel.graph.executor import default_passes
from tessel.graph.expr import Constant
from tessel.graph.passes.layout_rewrite import _Packer, lift_packing_stages, packing_left
from tessel.graph.passes.packing_steps import packing_copy
from tessel.ir.expr import GlobalVar
from tessel.script import parse as parse_script
from tessel.script import tir as T


def _model(body: str, params: str):
    return InferType()(parse(f'#[version = "0.0.5"]\ndef @main({params}) {{\n{body}\n}}\n'))


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)


DENSE = "  %0 = nn.dense(%x, %w, units=20);\n  nn.relu(%0)"
DENSE_PARAMS = "%x: Tensor[(8, 64), float32], %w: Tensor[(20, 64), float32]"


def test_constant_weight_is_packed_at_compile_time():
    mod = _model(DENSE, DENSE_PARAMS)
    w, x = _rand(20, 64, seed=1), _rand(8, 64)
    model = graph.compile(mod, params={"w": w})
    assert_close(model(x), evaluate(mod, x, params={"w": w}))
    (name,) = [gv.name_hint for gv in model.lowered.functions if gv.name_hint != "main"]
    kernel = model.lowered[name]
    # the kernel takes W' [j // COLUMNS, k, j % COLUMNS] and has no copy of its own
    tiles = -(-20 // COLUMNS)
    assert f'p1_global: T.Buffer(({tiles}, 64, {COLUMNS}), "float32")' in kernel.script()
    assert f"T.alloc_buffer(({tiles}, 64, {COLUMNS})" not in kernel.script()
    (packed,) = [c for c in model.plan.constants if c.ndim == 3]
    expected = np.zeros((tiles * COLUMNS, 64), np.float32)
    expected[:20] = w
    np.testing.assert_array_equal(packed, expected.reshape(tiles, COLUMNS, 64).transpose(0, 2, 1))
    assert packing_left(model.lowered) == []


def test_weight_passed_at_run_time_keeps_the_packing_in_the_kernel():
    mod = _model(DENSE, DENSE_PARAMS)
    model = graph.compile(mod)  # w stays an input of the model
    x, w = _rand(8, 64), _rand(20, 64, seed=1)
    assert_close(model(x, w), evaluate(mod, x, w))
    (name,) = [gv.name_hint for gv in model.lowered.functions if gv.name_hint != "main"]
    assert not name.endswith("_packed")
    assert f"T.alloc_buffer(({-(-20 // COLUMNS)}, 64, {COLUMNS})" in model.lowered[name].script()


def test_kernel_called_with_a_constant_and_an_input_gets_a_packed_twin():
    mod = _model(
        "  %0 = nn.dense(%x, %w, units=20);\n  %1 = nn.dense(%x, %v, units=20);\n  add(%0, %1)",
        "%x: Tensor[(8, 13), float32], %w: Tensor[(20, 13), float32], "
        "%v: Tensor[(20, 13), float32]",
    )
    w, v, x = _rand(20, 13, seed=1), _rand(20, 13, seed=2), _rand(8, 13)
    passes = [p for p in default_passes() if p.name != "fuse_ops"]  # two equal kernels
    model = graph.compile(mod, params={"w": w}, passes=passes)
    assert_close(model(x, v), evaluate(mod, x, v, params={"w": w}))
    kernels = [c.kernel for c in model.plan.calls]
    assert any(k.endswith("_packed") for k in kernels)
    assert any(k + "_packed" in kernels for k in kernels)


@pytest.mark.parametrize("name", ["mlp", "cnn"])
def test_models_run_no_weight_packing(name):
    mod = load(name)
    weights = random_weights(mod, INPUTS[name])
    model = graph.compile(mod, params=weights)
    assert packing_left(model.lowered) == []
    assert any(c.ndim in (3, 5) for c in model.plan.constants)  # dense and conv weights packed
    inputs = random_inputs(mod, INPUTS[name])
    assert_close(model(*inputs), evaluate(mod, *inputs, params=weights))


@T.prim_func
def _packs_then_computes(
    a: T.Buffer((4, 8), "float32"), w: T.Buffer((8, 4), "float32"), c: T.Buffer((4, 4), "float32")
):
    wt = T.alloc_buffer((4, 8), "float32")
    for i, j in T.grid(4, 8):
        with T.block("pack"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.block_attr({"meta_schedule.layout_rewrite_preproc": True})
            wt[vi, vj] = w[vj, vi]
    for i, j, k in T.grid(4, 4, 8):
        with T.block("mm"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                c[vi, vj] = T.float32(0)
            c[vi, vj] = c[vi, vj] + a[vi, vk] * wt[vj, vk]


@T.prim_func
def _reads_the_weight_twice(
    a: T.Buffer((4, 8), "float32"), w: T.Buffer((8, 4), "float32"), c: T.Buffer((4, 4), "float32")
):
    wt = T.alloc_buffer((4, 8), "float32")
    for i, j in T.grid(4, 8):
        with T.block("pack"):
            vi, vj = T.axis.remap("SS", [i, j])
            T.block_attr({"meta_schedule.layout_rewrite_preproc": True})
            wt[vi, vj] = w[vj, vi]
    for i, j, k in T.grid(4, 4, 8):
        with T.block("mm"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                c[vi, vj] = w[0, 0]
            c[vi, vj] = c[vi, vj] + a[vi, vk] * wt[vj, vk]


def test_lift_splits_a_kernel_into_packing_and_compute():
    lifted = lift_packing_stages(_packs_then_computes, [1])
    assert lifted is not None
    (stage,) = lifted.stages
    assert stage.param == 1
    assert list(lifted.kernel.buffer_map.values())[1] is stage.packed
    assert 'T.block("pack")' not in lifted.kernel.script()
    assert 'T.block("mm")' in lifted.kernel.script()
    import tessel

    a, w = _rand(4, 8), _rand(8, 4, seed=1)
    packed = np.empty((4, 8), np.float32)
    tessel.build(stage.pack)(w, packed)
    whole, split = np.empty((4, 4), np.float32), np.empty((4, 4), np.float32)
    tessel.build(_packs_then_computes)(a, w, whole)
    tessel.build(lifted.kernel)(a, packed, split)
    np.testing.assert_allclose(split, whole, rtol=1e-6)


def test_a_copy_no_rule_marked_as_packing_is_not_lifted():
    """The mark (`meta_schedule.layout_rewrite_preproc`) says what a packing stage is, not the
    nest's shape: the same copy without it stays in the kernel."""
    unmarked = _packs_then_computes.script().replace(
        'T.block_attr({"meta_schedule.layout_rewrite_preproc": True})', ""
    )
    assert unmarked != _packs_then_computes.script()
    assert lift_packing_stages(parse_script(unmarked), [1]) is None


def test_weight_read_outside_its_packing_is_not_lifted():
    assert lift_packing_stages(_reads_the_weight_twice, [1]) is None
    assert lift_packing_stages(_packs_then_computes, [0]) is None  # `a` is not packed


def _packs_scaled():
    """_packs_then_computes with a packing stage that scales the weight: not a layout."""
    text = _packs_then_computes.script().replace("= w[vj, vi]", "= w[vj, vi] * T.float32(2)")
    assert text != _packs_then_computes.script()
    return parse_script(text)


def test_a_stage_that_is_more_than_a_copy_is_packed_by_its_compiled_function():
    """No NumPy steps for a scaled copy (tessel.graph.passes.packing_steps): LayoutRewrite's
    packer compiles the stage's packing function and runs it."""
    lifted = lift_packing_stages(_packs_scaled(), [1])
    assert lifted is not None
    assert packing_copy(lifted.stages[0].pack) is None
    gv = GlobalVar("kernel")
    packer = _Packer({gv: lifted}, "c", set())
    w = _rand(8, 4, seed=1)
    packed = packer.pack(gv, lifted.stages[0], Constant(w))
    np.testing.assert_array_equal(packed.data, 2 * w.T)
