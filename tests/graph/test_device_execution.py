"""Execution across the host and a second device (issue 27, build items 4-6): models annotated to
run part of their graph on the ext_dev stand-in (its own memory, the same C code) give the outputs
of a one-device run, with exactly the planned copies; a value that crosses devices without a copy
is a run-time error; memory is planned per device and scope, and a planned scope reaches the
kernels' buffers."""

import numpy as np
import pytest

from tessel.graph import compile, parse
from tessel.graph.aot import aot_module
from tessel.graph.call_lowered import is_device_copy
from tessel.graph.executor import CompiledModel, bind_params
from tessel.graph.expr import Call
from tessel.graph.memory_plan import HOST, Place, plan_memory
from tessel.graph.memory_report import memory_report
from tessel.graph.passes.host_interface import PlaceForExecution, uses_devices
from tessel.graph.traversal import post_order_exprs
from tessel.ir import Target, VirtualDevice
from tessel.ir.functor import post_order
from tessel.ir.node import with_changes
from tessel.runtime.errors import RuntimeCallError
from tessel.support.errors import UserError
from tessel.tir.device_memory import DEVICE_TYPE
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import Allocate

EXT = VirtualDevice("ext_dev", 0)
EXT_PLACE = Place(12, 0)
HEADER = '#[version = "0.0.5"]\n'

# The dense layers on the ext_dev, the softmax on the host; its result comes back.
MLP = """def @main(%x: Tensor[(4, 16), float32], %w1: Tensor[(32, 16), float32],
          %b1: Tensor[(32), float32], %w2: Tensor[(8, 32), float32]) {
  %0 = nn.dense(%x, %w1);
  %1 = nn.relu(nn.bias_add(%0, %b1));
  %2 = nn.dense(%1, %w2);
  %3 = on_device(%2, virtual_device=meta[VirtualDevice][0]);
  nn.softmax(%3)
}
"""
# The convolutions on the ext_dev, pooling and the classifier on the host.
CNN = """def @main(%x: Tensor[(1, 3, 12, 12), float32], %k1: Tensor[(8, 3, 3, 3), float32],
          %k2: Tensor[(8, 8, 3, 3), float32], %w: Tensor[(10, 8), float32]) {
  %0 = nn.conv2d(%x, %k1, padding=[1, 1, 1, 1]);
  %1 = nn.relu(%0);
  %2 = on_device(nn.conv2d(%1, %k2, padding=[1, 1, 1, 1]), virtual_device=meta[VirtualDevice][0]);
  %3 = nn.relu(%2);
  %4 = nn.global_avg_pool2d(%3);
  %5 = nn.batch_flatten(%4);
  nn.dense(%5, %w)
}
"""


def _parse(text, devices=(EXT,)):
    return parse(HEADER + text, {"VirtualDevice": list(devices)})


def _without_annotations(text):
    """The same program on one device: every on_device(e, ...) replaced by e."""
    mod = _parse(text)
    main = mod["main"]
    new = {}
    for node in post_order_exprs(main.body):
        if isinstance(node, Call) and getattr(node.op, "name", "") == "on_device":
            new[id(node)] = new.get(id(node.args[0]), node.args[0])
            continue
        changes = {}
        for field in ("args", "fields"):
            value = getattr(node, field, None)
            if isinstance(value, tuple):
                rebuilt = tuple(new.get(id(v), v) for v in value)
                if any(a is not b for a, b in zip(rebuilt, value, strict=True)):
                    changes[field] = rebuilt
        new[id(node)] = with_changes(node, **changes) if changes else node
    return mod.with_function("main", with_changes(main, body=new.get(id(main.body), main.body)))


def _weights(mod, seed=0):
    rng = np.random.default_rng(seed)
    params = mod["main"].params
    weights = {
        p.name_hint: rng.standard_normal(p.type_annotation.shape).astype("float32")
        for p in params[1:]
    }
    x = rng.standard_normal(params[0].type_annotation.shape).astype("float32")
    return x, weights


def _copies_in(mod) -> int:
    return sum(is_device_copy(n) for n in post_order_exprs(mod["main"].body))


@pytest.mark.parametrize("program", [MLP, CNN], ids=["mlp", "cnn"])
def test_a_model_split_across_two_devices_matches_one_device_with_the_planned_copies(program):
    mod = _parse(program)
    x, weights = _weights(mod)
    split = compile(mod, weights)
    alone = compile(_without_annotations(program), weights)
    before = split.copies_made().copies
    np.testing.assert_allclose(split(x), alone(x), rtol=1e-5, atol=1e-6)
    # the copies the planner wrote (PlaceForExecution's graph) are the copies one run makes
    planned = PlaceForExecution()(bind_params(mod, weights))
    assert _copies_in(planned) == _copies_in(split.lowered) == split.device_copies
    assert split.copies_made().copies - before == split.device_copies
    split(x)
    assert split.copies_made().copies - before == 2 * split.device_copies
    places = {a.place for a in split.plan.arenas}
    assert places == {HOST, EXT_PLACE}
    assert split.plan.constant_bytes_on(EXT_PLACE) > 0  # the device's weights, uploaded once


def test_mlp_plan_copies_the_input_in_and_the_logits_out():
    split = compile(_parse(MLP), _weights(_parse(MLP))[1])
    copies = [(c.src, c.dst) for c in split.plan.copies]
    assert copies == [(HOST, EXT_PLACE), (EXT_PLACE, HOST)]
    kernels = {c.kernel: c.place for c in split.plan.kernel_calls}
    assert kernels["fused_nn_softmax"] == HOST
    assert {p for k, p in kernels.items() if "dense" in k} == {EXT_PLACE}


def test_the_device_arena_is_allocated_from_the_device_and_every_pointer_is_checked():
    split = compile(_parse(MLP), _weights(_parse(MLP))[1])
    main = split.aot.mod["main"]
    allocations = [n for n in post_order(main.body) if isinstance(n, Allocate)]
    devices = sorted(int(a.annotations.get(DEVICE_TYPE, 1)) for a in allocations)
    assert devices == [1, 12]
    text = repr(main)  # the checks and copies are calls of the C prelude's device runtime
    assert text.count("tessel_dev_copy") == split.device_copies
    assert "tessel_dev_holds" in text


def _lowered_without_copy(model):
    """The lowered main of `model` with its first device_copy removed: the kernel after it
    then reads memory of the other device."""
    lowered = model.lowered
    main = lowered["main"]
    new = {}
    dropped = False
    for node in post_order_exprs(main.body):
        if is_device_copy(node) and not dropped:
            new[id(node)] = new.get(id(node.args[0]), node.args[0])
            dropped = True
            continue
        args = getattr(node, "args", None)
        if isinstance(args, tuple):
            rebuilt = tuple(new.get(id(a), a) for a in args)
            if any(a is not b for a, b in zip(rebuilt, args, strict=True)):
                new[id(node)] = with_changes(node, args=rebuilt)
                continue
        new[id(node)] = node
    return lowered.with_function("main", with_changes(main, body=new[id(main.body)]))


def test_a_value_crossing_devices_without_a_copy_fails_at_run_time():
    from tessel.driver import build

    mod = _parse(MLP)
    x, weights = _weights(mod)
    model = compile(mod, weights)
    lowered = _lowered_without_copy(model)
    plan = plan_memory(lowered)
    aot = aot_module(lowered, plan, plan.weight_names())
    broken = CompiledModel(lowered, plan, build(aot.mod, Target.detect()), aot)
    with pytest.raises(RuntimeCallError, match="without a device_copy") as error:
        broken(x)
    assert "the input 0 (4x16 float32, planned on cpu(0))" in str(error.value)
    assert "is not in the memory of ext_dev(0)" in str(error.value)


def test_a_planned_memory_scope_reaches_the_kernel_buffers_and_gets_its_own_arena():
    workspace = VirtualDevice("cpu", 0, Target(), "global.workspace")
    program = """def @main(%x: Tensor[(4, 16), float32]) {
      %0 = nn.relu(%x);
      %1 = on_device(exp(%0), virtual_device=meta[VirtualDevice][0]);
      negative(%1)
    }"""
    model = compile(_parse(program, (workspace,)))
    x = np.random.default_rng(1).standard_normal((4, 16)).astype("float32")
    np.testing.assert_allclose(model(x), -np.exp(np.maximum(x, 0)), rtol=1e-6)
    kernel = next(c for c in model.plan.kernel_calls if "exp" in c.kernel)
    assert kernel.place == Place(1, 0, "global.workspace")
    func = model.lowered[kernel.kernel]
    assert isinstance(func, PrimFunc)
    assert {b.scope for b in func.param_buffers()} == {"global.workspace"}
    negative = next(c for c in model.plan.kernel_calls if "negative" in c.kernel)
    assert {b.scope for b in model.lowered[negative.kernel].param_buffers()} == {"global"}
    assert {a.place for a in model.plan.arenas} == {HOST, Place(1, 0, "global.workspace")}
    main = model.aot.mod["main"]
    scopes = {
        a.buffer_var.type_annotation.storage_scope
        for a in post_order(main.body)
        if isinstance(a, Allocate)
    }
    assert "global.workspace" in scopes
    assert model.device_copies == 2  # into the scope and out of it


def test_a_stack_scope_puts_the_arena_on_the_stack():
    stack = VirtualDevice("cpu", 0, Target(), "global.stack")
    program = """def @main(%x: Tensor[(2, 8), float32]) {
      negative(on_device(exp(%x), virtual_device=meta[VirtualDevice][0]))
    }"""
    model = compile(_parse(program, (stack,)))
    x = np.random.default_rng(2).standard_normal((2, 8)).astype("float32")
    np.testing.assert_allclose(model(x), -np.exp(x), rtol=1e-6)
    assert Place(1, 0, "global.stack") in {a.place for a in model.plan.arenas}


def test_a_scope_without_an_allocator_is_refused_naming_it():
    texture = VirtualDevice("cpu", 0, Target(), "texture")
    program = """def @main(%x: Tensor[(2, 8), float32]) {
      negative(on_device(exp(%x), virtual_device=meta[VirtualDevice][0]))
    }"""
    with pytest.raises(UserError, match=r"no allocator for memory scope 'texture' on cpu\(0\)"):
        compile(_parse(program, (texture,)))


def test_a_device_without_a_runtime_is_refused():
    cuda = VirtualDevice("cuda", 0)
    with pytest.raises(UserError, match=r"planned on \['cuda\(0\)'\]"):
        compile(_parse(MLP, (cuda,)), _weights(_parse(MLP))[1])


def test_the_python_executor_and_linked_weights_refuse_a_second_device():
    mod = _parse(MLP)
    weights = _weights(mod)[1]
    with pytest.raises(UserError, match="python executor runs one arena on the host"):
        compile(mod, weights, executor="python")
    with pytest.raises(UserError, match="read on another device"):
        compile(mod, weights, target=Target.detect(link_params=True))


def test_export_refuses_a_model_on_two_devices(tmp_path):
    model = compile(_parse(MLP), _weights(_parse(MLP))[1])
    with pytest.raises(UserError, match=r"the model runs on \['cpu\(0\)', 'ext_dev\(0\)'\]"):
        model.export(tmp_path / "out")


def test_a_weight_read_on_both_devices_is_planned_once_per_device():
    program = """def @main(%x: Tensor[(4, 8), float32], %w: Tensor[(8, 8), float32]) {
      %0 = on_device(nn.dense(%x, %w), virtual_device=meta[VirtualDevice][0]);
      nn.dense(%0, %w)
    }"""
    mod = _parse(program)
    x, weights = _weights(mod)
    model = compile(mod, weights)
    w = weights["w"]
    np.testing.assert_allclose(model(x), x @ w.T @ w.T, rtol=1e-5)
    constants = [t for t in model.plan.tensors if t.kind == "constant"]
    assert sorted(t.place for t in constants) == [HOST, EXT_PLACE]
    assert len({t.index for t in constants}) == 1  # one constant, counted once in the total
    (packed,) = model.plan.constants  # as LayoutRewrite packed it for the dense kernels
    assert model.plan.constant_bytes == packed.nbytes
    assert model.plan.constant_bytes_on(EXT_PLACE) == model.plan.constant_bytes_on(HOST)


def test_memory_report_lists_each_arena_the_constants_per_device_and_the_copies():
    model = compile(_parse(MLP), _weights(_parse(MLP))[1])
    report = memory_report(model.plan)
    for arena in model.plan.arenas:
        assert f"{arena.place}".ljust(28) in report
    assert "ext_dev(0)" in report.split("constants")[1]
    assert f"device copies per run: {model.device_copies}" in report
    assert "cpu(0) -> ext_dev(0): 4x16 float32" in report


def test_only_a_module_naming_a_device_is_planned():
    assert uses_devices(_parse(MLP))
    assert not uses_devices(_without_annotations(MLP))


def test_kernels_are_built_per_target_of_their_device():
    narrow = VirtualDevice("cpu", 1, Target(vector_bytes=16))
    program = """def @main(%x: Tensor[(4, 64), float32]) {
      %0 = on_device(exp(%x), virtual_device=meta[VirtualDevice][0]);
      exp(%0)
    }"""
    model = compile(_parse(program, (narrow,)))
    x = np.random.default_rng(3).standard_normal((4, 64)).astype("float32") / 4
    np.testing.assert_allclose(model(x), np.exp(np.exp(x)), rtol=1e-5)
    kernels = {c.kernel: c.place for c in model.plan.kernel_calls}
    assert sorted(kernels.values()) == [HOST, Place(1, 1)]  # one exp kernel per target
    assert len(kernels) == 2


def test_a_host_only_model_carries_no_device_runtime():
    model = compile(_without_annotations(MLP), _weights(_parse(MLP))[1])
    assert "tessel_dev_" not in model.library.source
    assert model.library.device_memory is None
    assert model.device_copies == 0 and model.copies_made().copies == 0
    split = compile(_parse(MLP), _weights(_parse(MLP))[1])
    assert "tessel_dev_holds" in split.library.source


def test_a_weight_copied_to_the_device_is_uploaded_once_not_copied_each_call():
    program = """def @main(%x: Tensor[(4, 8), float32]) {
      %0 = device_copy(meta[relay.Constant][0], src_virtual_device=meta[VirtualDevice][1],
                       dst_virtual_device=meta[VirtualDevice][0]);
      negative(on_device(add(%x, %0), virtual_device=meta[VirtualDevice][0]))
    }"""
    weight = np.arange(32, dtype="float32").reshape(4, 8)
    table = {"VirtualDevice": [EXT, VirtualDevice("cpu", 0, Target())], "relay.Constant": [weight]}
    model = compile(parse(HEADER + program, table))
    x = np.random.default_rng(4).standard_normal((4, 8)).astype("float32")
    np.testing.assert_allclose(model(x), -(x + weight), rtol=1e-6)
    # FoldConstant folded the copy: the input goes in and the result out, the weight is the
    # device's own from load on
    assert [(c.src, c.dst) for c in model.plan.copies] == [(HOST, EXT_PLACE), (EXT_PLACE, HOST)]
    assert model.plan.constant_bytes_on(EXT_PLACE) == weight.nbytes
