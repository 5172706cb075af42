"""Buffer constraints and known contents, recognised from statements and instantiated at loads."""

from tessel.arith import Analyzer
from tessel.ir.expr import Range, Var
from tessel.ir.functor import post_order
from tessel.script import tir as T
from tessel.tir.analysis.buffer_constraint import constraint_of, known_contents_of
from tessel.tir.buffer import BufferLoad, decl_buffer


@T.prim_func
def constrained(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for ax0 in range(16):
        with T.block("A_assumption"):
            v_ax0 = T.axis.spatial(16, ax0)
            T.reads(A[v_ax0])
            T.writes()
            T.evaluate(T.assume(not v_ax0 >= 14 or A[v_ax0] == T.float32(0)))
    for i in range(16):
        T.evaluate(T.assume(not i >= 15 or B[i] == T.float32(1)))
    for j in range(16):
        B[j] = T.if_then_else(j >= 12, T.float32(2), A[j])


def _items():
    return constrained.body.block.body.seq


def test_block_level_and_lowered_constraints_are_recognised():
    block_level, lowered, store_nest = _items()
    c = constraint_of(block_level)
    assert [v.name for v in c.vars] == ["v_ax0"] and int(c.ranges[0].extent.value) == 16
    assert [v.name for v in constraint_of(lowered).vars] == ["i"]
    assert constraint_of(store_nest) is None


def test_a_store_nest_states_known_contents_under_its_branch():
    _, _, store_nest = _items()
    contents = known_contents_of(store_nest)
    assert str(contents.condition) == "not j >= 12 or B[j] == T.float32(2.0)"
    assert known_contents_of(_items()[1]) is None


def test_instances_at_loads_in_range_and_not_provably_in_range():
    constraint = constraint_of(_items()[0])
    a = next(n.buffer for n in _loads(constraint.condition))
    x = Var("x", "int32")
    analyzer = Analyzer()
    analyzer.bind(x, Range(T.int32(0), T.int32(8)))
    (inside,) = constraint.instances_for(BufferLoad(a, (x,)) + 1, analyzer)
    assert str(inside) == "not x >= 14 or A[x] == T.float32(0.0)"
    y = Var("y", "int32")
    (guarded,) = constraint.instances_for(BufferLoad(a, (y,)), analyzer)
    assert "y < 16" in str(guarded) and "A[y] == T.float32(0.0)" in str(guarded)
    other = decl_buffer((16,), "float32", "Z")
    assert constraint.instances_for(BufferLoad(other, (x,)), analyzer) == []


def _loads(expr):
    return [n for n in post_order(expr) if isinstance(n, BufferLoad)]
