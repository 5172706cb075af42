"""Target.fp_contract: the C compiler fuses `a * b + c` into one multiply-add when asked (one
rounding instead of two), and not by default, where C agrees with the interpreter bit for bit;
graph.compile asks for it when given a kind name."""

import numpy as np
import pytest

import tessel
from tessel.ir.target import Target
from tessel.script import tir as T


@T.prim_func
def _multiply_add(
    a: T.Buffer((4,), "float32"),
    b: T.Buffer((4,), "float32"),
    c: T.Buffer((4,), "float32"),
    d: T.Buffer((4,), "float32"),
):
    for i in range(4):
        with T.block("d"):
            vi = T.axis.spatial(4, i)
            d[vi] = a[vi] * b[vi] + c[vi]


def _run(target):
    # (1 + 2**-12)**2 = 1 + 2**-11 + 2**-24: rounded to float32 the 2**-24 is lost, so the
    # unfused sum with -(1 + 2**-11) is 0 and the fused one is 2**-24.
    x = np.full(4, 1 + 2.0**-12, np.float32)
    c = np.full(4, -(1 + 2.0**-11), np.float32)
    out = np.empty(4, np.float32)
    tessel.build(_multiply_add, target)(x, x, c, out)
    return out


def test_separate_multiply_and_add_by_default():
    assert (_run(Target()) == 0).all()


@pytest.mark.skipif(not Target.detect().fma, reason="this CPU has no fused multiply-add")
def test_fp_contract_fuses_multiply_add():
    np.testing.assert_array_equal(_run(Target(fp_contract=True)), np.float32(2.0**-24))


def test_graph_compile_fuses_for_a_kind_name_only(monkeypatch):
    from tessel import graph
    from tessel.graph import InferType, executor, parse

    seen = []
    monkeypatch.setattr(
        executor,
        "build",
        lambda mod, target, **kw: seen.append(target) or tessel.build(mod, target, **kw),
    )
    mod = InferType()(
        parse('#[version = "0.0.5"]\ndef @main(%x: Tensor[(2), float32]) {\n  add(%x, %x)\n}\n')
    )
    graph.compile(mod)
    graph.compile(mod, target=Target())
    assert [t.fp_contract for t in seen] == [True, False]
