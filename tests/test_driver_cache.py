"""`build` keeps what a module lowers to (its C and constants) beside the compiled objects: a
second build of the same module skips lowering, and a module that differs in anything lowering
reads (a constant's data, the target, an attribute) gets its own entry."""

import numpy as np
import pytest

from tessel import driver
from tessel.ir.module import IRModule
from tessel.ir.target import Target
from tessel.script import tir as T  # noqa: N812

RAMP = np.arange(64, dtype="float32").reshape(8, 8)


@T.prim_func
def scale(a: T.Buffer((8, 8), "float32"), b: T.Buffer((8, 8), "float32")):
    w = T.allocate_const(RAMP, "float32", [8, 8])
    for i, j in T.grid(8, 8):
        b[i, j] = a[i, j] * w[i, j]


@T.prim_func
def scale_reversed(a: T.Buffer((8, 8), "float32"), b: T.Buffer((8, 8), "float32")):
    w = T.allocate_const(RAMP[::-1], "float32", [8, 8])
    for i, j in T.grid(8, 8):
        b[i, j] = a[i, j] * w[i, j]


@pytest.fixture
def lowerings(monkeypatch):
    """Counts the runs of the TensorIR pipeline (rather than cache hits)."""
    runs = []
    original = driver.lower
    monkeypatch.setattr(
        driver, "lower", lambda mod, target, **kw: runs.append(1) or original(mod, target, **kw)
    )
    return runs


def entries(cache_dir):
    return [p for p in (cache_dir / driver.LOWERED_KIND).rglob("*") if p.is_file()]


def run(module, a):
    b = np.zeros_like(a)
    module(a, b)
    return b


def test_second_build_skips_lowering_and_computes_the_same(tmp_path, lowerings):
    a = np.random.default_rng(0).normal(size=(8, 8)).astype("float32")
    first = driver.build(scale, cache_dir=tmp_path)
    second = driver.build(scale, cache_dir=tmp_path)
    assert len(lowerings) == 1
    assert second.source == first.source
    np.testing.assert_allclose(run(second, a), a * RAMP)
    assert len(entries(tmp_path)) == 1


def test_constant_data_target_and_names_give_other_entries(tmp_path, lowerings):
    a = np.ones((8, 8), "float32")
    driver.build(scale, cache_dir=tmp_path)
    other = driver.build(scale_reversed, cache_dir=tmp_path)
    np.testing.assert_allclose(run(other, a), RAMP[::-1])
    driver.build(scale, Target(kind="c", vector_bytes=64), cache_dir=tmp_path)
    driver.build(IRModule.from_dict({"renamed": scale}), cache_dir=tmp_path)
    assert len(lowerings) == 4


def test_module_attribute_without_an_exact_digest_is_not_cached(tmp_path, lowerings):
    mod = IRModule.from_dict({"scale": scale}, {"note": object()})
    assert driver._lowering_key(mod, Target.of("c")) is None
    driver.build(mod, cache_dir=tmp_path)
    driver.build(mod, cache_dir=tmp_path)
    assert len(lowerings) == 2
    with_array = IRModule.from_dict({"scale": scale}, {"table": (RAMP, "rows")})
    assert driver._lowering_key(with_array, Target.of("c")) is not None


def test_damaged_entry_is_lowered_again(tmp_path, lowerings):
    driver.build(scale, cache_dir=tmp_path)
    for entry in entries(tmp_path):
        entry.write_bytes(b"\x80not a pickle")
    module = driver.build(scale, cache_dir=tmp_path)
    assert len(lowerings) == 2
    np.testing.assert_allclose(run(module, np.ones((8, 8), "float32")), RAMP)
