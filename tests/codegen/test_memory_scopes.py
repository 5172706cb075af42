"""Memory scopes (docs/architecture.md §6): where each scope's allocation lives, as the lowered IR
records it (LowerMemoryScopes' `placement`) and as the generated C does it."""

import numpy as np
import pytest

import tessel
from tessel.driver import generate_c_source
from tessel.ir.functor import post_order
from tessel.ir.target import Target
from tessel.script import parse
from tessel.tir.stmt import Allocate
from tessel.transform import LoweringError, lower

TEMPLATE = """
@T.prim_func
def scaled(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    tmp = T.alloc_buffer((64,), "float32", scope="{scope}")
    for i in range(64):
        with T.block("t"):
            vi = T.axis.spatial(64, i)
            tmp[vi] = A[vi] * T.float32(2)
    for i in range(64):
        with T.block("b"):
            vi = T.axis.spatial(64, i)
            B[vi] = tmp[vi] + T.float32(1)
"""

DYNAMIC_STACK = """
@T.prim_func
def dynamic(a: T.handle, b: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (n,), "float32")
    B = T.match_buffer(b, (n,), "float32")
    tmp = T.alloc_buffer((n,), "float32", scope="global.stack")
    for i in range(n):
        with T.block("t"):
            vi = T.axis.spatial(n, i)
            tmp[vi] = A[vi]
    for i in range(n):
        with T.block("b"):
            vi = T.axis.spatial(n, i)
            B[vi] = tmp[vi]
"""


def _func(scope):
    return parse(TEMPLATE.format(scope=scope))


def _on_stack(source):
    return "float tmp[64]" in source


def _on_heap(source):
    return "tessel_workspace_alloc((size_t)" in source and "tmp == NULL" in source


def _placement(func, target="c"):
    """The placement the lowered IR records for `tmp`."""
    (alloc,) = [
        n for n in post_order(lower(func, target)["scaled"].body) if isinstance(n, Allocate)
    ]
    return alloc.annotations["placement"]


def _runs_correctly(func, target):
    a = np.random.default_rng(0).uniform(-1, 1, 64).astype("float32")
    b = np.zeros(64, "float32")
    tessel.build(func, target)(a, b)
    np.testing.assert_allclose(b, a * 2 + 1, rtol=1e-6)


def test_small_global_buffer_stays_on_the_stack_under_the_default_target():
    func = _func("global")  # 256 bytes, below the default max_stack_alloca_size of 1024
    assert _placement(func) == "stack"
    assert _on_stack(generate_c_source(func))
    _runs_correctly(func, "c")


def test_global_buffer_goes_to_the_workspace_when_the_target_allows_no_stack():
    func, target = _func("global"), Target("c", max_stack_alloca_size=0)
    assert _placement(func, target) == "workspace"
    source = generate_c_source(func, target)
    assert _on_heap(source) and not _on_stack(source)
    _runs_correctly(func, target)


def test_global_workspace_never_uses_the_stack():
    func = _func("global.workspace")
    assert _placement(func) == "workspace"
    source = generate_c_source(func)
    assert _on_heap(source) and not _on_stack(source)
    _runs_correctly(func, "c")


def test_global_stack_always_uses_the_stack_even_past_the_target_limit():
    func, target = _func("global.stack"), Target("c", max_stack_alloca_size=0)
    assert _placement(func, target) == "stack"
    assert _on_stack(generate_c_source(func, target))
    _runs_correctly(func, target)


def test_global_stack_with_a_dynamic_size_is_refused_with_a_clear_error():
    with pytest.raises(LoweringError, match="global.stack") as err:
        lower(parse(DYNAMIC_STACK))
    assert err.value.rule == "lower_memory_scopes.dynamic-stack"
    assert "`tmp`" in str(err.value) and "not a constant" in str(err.value)
