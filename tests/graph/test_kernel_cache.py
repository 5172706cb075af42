"""LowerTE keeps its scheduled kernels between compiles (tessel/graph/kernel_cache.py): a second
lowering of a model builds no kernel and gives the same ones, and anything a kernel depends on
(the function's attributes, the target, Tessel's source) gives another key."""

import numpy as np
import pytest
from graph_models import INPUTS, assert_close, load, random_inputs, random_weights

import tessel.graph as graph
from tessel.codegen import generate
from tessel.graph import InferType, evaluate, kernel_cache, parse
from tessel.graph.passes import lower_te
from tessel.ir.structural import assert_structural_equal
from tessel.ir.target import Target
from tessel.tir.function import PrimFunc
from tessel.transform import lower

SOFTMAX = """#[version = "0.0.5"]
def @main(%x: Tensor[(4, 24), float32]) {{ nn.softmax(%x, axis={axis}) }}
"""


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A fresh cache directory (the default one is under $HOME)."""
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


@pytest.fixture
def builds(monkeypatch):
    """Counts the kernels LowerTE builds (rather than takes from the cache); the tests build
    them in this process (`jobs=1`: a worker process would count in its own memory)."""
    made = []
    original = lower_te.build_prim_func
    monkeypatch.setattr(
        lower_te, "build_prim_func", lambda func, name: made.append(name) or original(func, name)
    )
    return made


def entries(home):
    return [
        p for p in (home / ".cache/tessel" / kernel_cache.KERNEL_KIND).rglob("*") if p.is_file()
    ]


def kernels(mod):
    return {gv.name_hint: f for gv, f in mod.items() if isinstance(f, PrimFunc)}


def test_second_lowering_builds_no_kernel_and_gives_equal_kernels(home, builds):
    mod = InferType()(load("cnn"))
    first = lower_te.LowerTE(jobs=1)(mod)
    assert builds
    assert len(entries(home)) == len(builds)
    built = len(builds)
    second = lower_te.LowerTE(jobs=1)(mod)
    assert len(builds) == built
    assert kernels(first).keys() == kernels(second).keys()
    for name, func in kernels(first).items():
        assert_structural_equal(kernels(second)[name], func)


def test_model_compiled_from_cached_kernels_gives_the_same_results(home, builds):
    mod = load("attention")
    weights = random_weights(mod, INPUTS["attention"])
    inputs = random_inputs(mod, INPUTS["attention"])
    graph.compile(mod, params=weights, jobs=1)
    built = len(builds)
    model = graph.compile(mod, params=weights, jobs=1)
    assert len(builds) == built
    assert_close(model(*inputs), evaluate(mod, *inputs, params=weights))


def test_key_follows_attributes_target_schedule_and_source(home, monkeypatch):
    def key(axis=-1, target=None, schedule=True):
        func = InferType()(parse(SOFTMAX.format(axis=axis)))["main"]
        return kernel_cache.kernel_key(func, "fused_nn_softmax", target, schedule)

    base = key()
    assert key() == base
    assert key(axis=0) != base
    assert key(target=Target(kind="c", vector_bytes=64)) != base
    assert key(schedule=False) != base
    monkeypatch.setattr(kernel_cache, "source_fingerprint", lambda: "an edited Tessel")
    assert key() != base


def test_damaged_entry_is_rebuilt(home, builds):
    mod = InferType()(parse(SOFTMAX.format(axis=-1)))
    lower_te.LowerTE(jobs=1)(mod)
    for entry in entries(home):
        entry.write_bytes(b"not a pickle")
    after = lower_te.LowerTE(jobs=1)(mod)
    assert builds == ["fused_nn_softmax", "fused_nn_softmax"]
    x = np.random.default_rng(0).normal(size=(4, 24)).astype("float32")
    assert_close(graph.compile(mod, jobs=1)(x), evaluate(mod, x))
    assert isinstance(kernels(after)["fused_nn_softmax"], PrimFunc)


def test_kernel_read_back_from_the_cache_lowers_to_the_same_c(home, builds):
    # Passes compare builtin ops by identity (a padding's if_then_else is vectorized only if
    # its op is builtin.if_then_else_op): an unpickled kernel must keep them.
    mod = InferType()(load("cnn"))
    fresh = kernels(lower_te.LowerTE(jobs=1)(mod))
    cached = kernels(lower_te.LowerTE(jobs=1)(mod))
    assert len(builds) == len(fresh)
    for name, func in fresh.items():
        assert generate(lower(cached[name])).source == generate(lower(func)).source


def test_kernels_built_in_worker_processes_equal_those_built_here_and_are_kept(home):
    mod = InferType()(load("cnn"))
    here = kernels(lower_te.LowerTE(jobs=1)(mod))
    for entry in entries(home):
        entry.unlink()
    in_workers = kernels(lower_te.LowerTE(jobs=2)(mod))
    assert len(here) > 1 and list(in_workers) == list(here)  # the same names, in one order
    for name, func in here.items():
        assert_structural_equal(in_workers[name], func)
    assert len(entries(home)) == len(here)  # each worker stored the kernel it built
