"""LowerMemoryScopes: the placement of every allocation is decided once, for the target, and
recorded in the IR (docs/architecture.md §6)."""

import pytest

from tessel.ir.functor import post_order
from tessel.ir.module import IRModule
from tessel.ir.target import Target
from tessel.script import tir as T
from tessel.testing import check_same_results
from tessel.tir.stmt import Allocate
from tessel.transform import LoweringError, LowerMemoryScopes


@T.prim_func
def temporaries(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    small = T.allocate([64], "float32", "global")  # 256 bytes
    large = T.allocate([512], "float32", "global")  # 2048 bytes
    forced = T.allocate([512], "float32", "global.stack")
    pooled = T.allocate([4], "float32", "global.workspace")
    for i in range(64):
        small[i] = A[i] * T.float32(2)
        large[i] = small[i] + T.float32(1)
        forced[i] = large[i] * T.float32(3)
        pooled[i % 4] = forced[i]
        B[i] = pooled[i % 4] - T.float32(1)


def _placements(func):
    return {
        n.buffer_var.name: n.annotations["placement"]
        for n in post_order(func.body)
        if isinstance(n, Allocate)
    }


@pytest.mark.parametrize(
    ("target", "small", "large"),
    [
        (Target(), "stack", "workspace"),  # the default limit: 1024 bytes
        (Target(max_stack_alloca_size=0), "workspace", "workspace"),
        (Target(max_stack_alloca_size=4096), "stack", "stack"),
    ],
)
def test_each_allocation_records_where_the_rule_puts_it_for_the_target(target, small, large):
    after = LowerMemoryScopes(target=target)(IRModule.from_func(temporaries))["temporaries"]
    assert _placements(after) == {
        "small": small,
        "large": large,
        "forced": "stack",
        "pooled": "workspace",
    }
    check_same_results(temporaries, after)


def test_running_again_returns_the_same_module():
    once = LowerMemoryScopes()(IRModule.from_func(temporaries))
    assert LowerMemoryScopes()(once) is once


def test_a_dynamic_global_stack_allocation_is_refused_naming_it():
    @T.prim_func
    def dynamic(n: T.int32, A: T.Buffer((16,), "float32")):
        tmp = T.allocate([n], "float32", "global.stack")
        for i in range(16):
            tmp[0] = A[i]
            A[i] = tmp[0]

    with pytest.raises(LoweringError, match="`tmp` is in scope global.stack") as err:
        LowerMemoryScopes()(IRModule.from_func(dynamic))
    assert err.value.rule == "lower_memory_scopes.dynamic-stack"
