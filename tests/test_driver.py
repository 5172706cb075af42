"""tessel.build: lower, generate C, compile and load, in one call."""

from __future__ import annotations

import numpy as np
import pytest

from tessel import driver
from tessel.codegen import CodegenError
from tessel.ir import builders as B
from tessel.ir.expr import Broadcast, Ramp, Var
from tessel.runtime import BuildError, Module
from tessel.tir.buffer import decl_buffer
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import BufferStore, For, ForKind


def _add_one(n: int = 16) -> PrimFunc:
    a_buf, b_buf = decl_buffer((n,), "float32", "A"), decl_buffer((n,), "float32", "B")
    i = Var("i")
    loop = For(i, B.const(0), B.const(n), ForKind.SERIAL, BufferStore(b_buf, a_buf[i] + 1.0, (i,)))
    handles = (Var("A", "handle"), Var("B", "handle"))
    return PrimFunc(
        handles,
        loop,
        buffer_map=dict(zip(handles, (a_buf, b_buf), strict=True)),
        attrs={"global_symbol": "add_one"},
    )


def test_build_returns_a_module_whose_single_function_is_callable_directly(tmp_path):
    module = driver.build(_add_one(), "c", cache_dir=tmp_path)
    assert isinstance(module, Module) and module.names() == ["add_one"]
    a, b = np.arange(16, dtype="float32"), np.zeros(16, "float32")
    module(a, b)
    np.testing.assert_array_equal(b, a + 1)
    module["add_one"](b, a)
    np.testing.assert_array_equal(a, b + 1)
    assert "add_one" in module.source and list(tmp_path.glob("*.so")) == [module.library_path]


def test_building_the_same_function_twice_reuses_the_cached_object(tmp_path):
    first = driver.build(_add_one(), cache_dir=tmp_path)
    second = driver.build(_add_one(), cache_dir=tmp_path)
    assert first.library_path == second.library_path
    assert len(list(tmp_path.glob("*.so"))) == 1


def test_wrong_arguments_name_the_parameter():
    module = driver.build(_add_one())
    with pytest.raises(ValueError, match=r"argument `B`: expected shape \(16,\), got \(15,\)"):
        module(np.zeros(16, "float32"), np.zeros(15, "float32"))
    with pytest.raises(ValueError, match=r"argument `A`: expected dtype float32, got int32"):
        module(np.zeros(16, "int32"), np.zeros(16, "float32"))


def test_code_generation_failures_surface_as_build_errors_with_their_rule():
    a_buf = decl_buffer((8,), "float32", "A")
    handle = Var("A", "handle")
    vector = BufferStore(
        a_buf, Broadcast(B.const(0.0, "float32"), 3), (Ramp(B.const(0), B.const(1), 3),)
    )
    func = PrimFunc((handle,), vector, buffer_map={handle: a_buf})
    with pytest.raises(BuildError, match="not supported by the C backend") as err:
        driver.build(func)
    assert err.value.rule == "codegen.vector"
    assert err.value.__cause__ is not None


def test_generate_c_source_returns_the_source_build_compiles():
    text = driver.generate_c_source(_add_one())
    assert "TESSEL_EXPORT int32_t add_one(" in text
    assert text == driver.build(_add_one()).source


def test_generate_c_source_wraps_codegen_errors_as_build_errors():
    a_buf = decl_buffer((8,), "float32", "A")
    handle = Var("A", "handle")
    vector = BufferStore(
        a_buf, Broadcast(B.const(0.0, "float32"), 3), (Ramp(B.const(0), B.const(1), 3),)
    )
    with pytest.raises(BuildError, match="not supported by the C backend") as err:
        driver.generate_c_source(PrimFunc((handle,), vector, buffer_map={handle: a_buf}))
    assert isinstance(err.value.__cause__, CodegenError)
