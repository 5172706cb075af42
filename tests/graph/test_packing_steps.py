"""LayoutRewrite's packing in NumPy (tessel.graph.passes.packing_steps): the rules' packing stages
(a dense weight's panels, a tall matmul's, a batch's, a conv weight's channel blocks) are pad,
reshape and transpose steps whose result equals the compiled packing function's on random
weights; steps that disagree with the stage are refused; a model's weights are packed with no
packing function compiled (a stage of another form: test_layout_rewrite.py)."""

import numpy as np
import pytest

import tessel
import tessel.graph as graph
from tessel import te, topi
from tessel.graph import InferType, evaluate, parse
from tessel.graph.passes import layout_rewrite
from tessel.graph.passes.layout_rewrite import lift_packing_stages
from tessel.graph.passes.packing_steps import pack_array, packing_copy, packing_record
from tessel.schedule.layout_steps import LayoutRecord, Reshape, Transpose
from tessel.schedule.rules import default_schedule


def _dense(m, k, n):
    a, w = te.placeholder((m, k), name="a"), te.placeholder((n, k), name="w")
    return te.create_prim_func([a, w, topi.nn.dense(a, w)])


def _matmul(m, k, n):
    a, b = te.placeholder((m, k), name="a"), te.placeholder((k, n), name="b")
    return te.create_prim_func([a, b, topi.matmul(a, b)])


def _batch_matmul(b, m, k, n):
    x, y = te.placeholder((b, m, k), name="x"), te.placeholder((b, n, k), name="y")
    return te.create_prim_func([x, y, topi.nn.batch_matmul(x, y)])


def _conv(c, f):
    d, k = te.placeholder((1, c, 9, 9), name="d"), te.placeholder((f, c, 3, 3), name="k")
    return te.create_prim_func([d, k, topi.nn.conv2d_nchw(d, k, 1, 1, 1)])


def _stage(func):
    lifted = lift_packing_stages(default_schedule(func).func, [1])
    assert lifted is not None
    (stage,) = lifted.stages
    return stage


def _compiled_packing(stage, source):
    out = np.empty([int(d.value) for d in stage.packed.shape], source.dtype)
    tessel.build(stage.pack)(source, out)
    return out


@pytest.mark.parametrize(
    "make",
    [lambda: _dense(13, 129, 40), lambda: _dense(3, 70, 100), lambda: _matmul(600, 64, 37),
     lambda: _batch_matmul(2, 13, 64, 40), lambda: _conv(16, 64), lambda: _conv(5, 24)],
    ids=["dense-padded", "dense", "tall-matmul", "batch-matmul", "conv", "conv-narrow"],
)  # fmt: skip
def test_rule_packing_is_numpy_steps_equal_to_the_compiled_packing(make):
    stage = _stage(make())
    copy = packing_copy(stage.pack)
    assert copy is not None
    record = packing_record(copy)
    assert record is not None
    source_shape = [int(d.value) for d in copy.source.shape]
    source = np.random.default_rng(0).standard_normal(source_shape).astype("float32")
    packed = pack_array(copy, record, source)
    assert packed is not None
    np.testing.assert_array_equal(packed, _compiled_packing(stage, source))


def test_steps_that_disagree_with_the_stage_are_refused():
    copy = packing_copy(_stage(_conv(16, 64)).pack)
    assert copy is not None
    # the right shape, [2, 16, 3, 3, 32], with channel f at [f % 2, .., f // 2], not [f // 32,
    # .., f % 32]
    wrong = LayoutRecord(
        "k", (64, 16, 3, 3), (Reshape((32, 2, 16, 3, 3)), Transpose((1, 2, 3, 4, 0)))
    )
    source = np.random.default_rng(0).standard_normal((64, 16, 3, 3)).astype("float32")
    assert pack_array(copy, wrong, source) is None


def _model(body: str, params: str):
    return InferType()(parse(f'#[version = "0.0.5"]\ndef @main({params}) {{\n{body}\n}}\n'))


def test_a_models_weights_are_packed_without_compiling_a_packing_function(monkeypatch):
    """The dense weight of the model is packed by NumPy steps: LayoutRewrite builds nothing."""
    built = []
    monkeypatch.setattr(layout_rewrite, "build", lambda *a, **k: built.append(a))
    mod = _model(
        "  %0 = nn.dense(%x, %w, units=40);\n  nn.relu(%0)",
        "%x: Tensor[(8, 129), float32], %w: Tensor[(40, 129), float32]",
    )
    rng = np.random.default_rng(0)
    w = rng.standard_normal((40, 129)).astype("float32")
    x = rng.standard_normal((8, 129)).astype("float32")
    model = graph.compile(mod, params={"w": w})
    assert built == []
    assert any(c.ndim == 3 for c in model.plan.constants)  # the packed weight
    np.testing.assert_allclose(model(x), evaluate(mod, x, params={"w": w}), rtol=1e-5, atol=1e-5)
