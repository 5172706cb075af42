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


@T.prim_func
def more_forms(A: T.Buffer((4, 16), "float32"), X: T.Buffer((16,), "int32"), n: T.int32):
    for i, k in T.grid(4, 16):
        with T.block("A_assumption"):
            vi, vk = T.axis.remap("SS", [i, k])
            T.where(i < 3)
            T.reads(A[vi, vk])
            T.writes()
            T.evaluate(T.assume(not vk >= 14 or A[vi, vk] == T.float32(0)))
    for o in range(4):
        for i in range(16):
            T.evaluate(T.assume(not i >= 14 or A[o, i] == T.float32(0)))
    for i in range(16):
        X[i] = i * 2
    for i in range(n):
        X[i] = i
    for i in range(16):
        X[i] = T.if_then_else(X[i] == 0, 5, i)
    for i in range(16):
        X[15 - i] = i


def _more_items():
    return more_forms.body.block.body.seq


def test_a_block_predicate_becomes_a_guard_over_the_iterators():
    c = constraint_of(_more_items()[0])
    assert [v.name for v in c.vars] == ["vi", "vk"]
    assert str(c.condition) == "not vi < 3 or (not vk >= 14 or A[vi, vk] == T.float32(0.0))"


def test_a_pure_store_nest_states_its_values_and_other_nests_state_nothing():
    _, _, pure, symbolic, self_guarded, reversed_ = _more_items()
    assert str(known_contents_of(pure).condition) == "X[i] == i * 2"
    assert known_contents_of(symbolic) is None  # the extent is not a constant
    assert known_contents_of(self_guarded) is None  # the guard reads X after the store changed it
    assert known_contents_of(reversed_) is None  # the indices are not the loop variables


def test_a_constraint_over_inner_loops_matches_loads_with_the_same_outer_index():
    outer = _more_items()[1]
    constraint = constraint_of(outer.body)  # over `i`, inside `for o`
    a, o = _loads(constraint.condition)[0].buffer, outer.loop_var
    x = Var("x", "int32")
    analyzer = Analyzer()
    analyzer.bind(x, Range(T.int32(0), T.int32(16)))
    (instance,) = constraint.instances_for(BufferLoad(a, (o, x)), analyzer)
    assert str(instance) == "not x >= 14 or A[o, x] == T.float32(0.0)"
    assert constraint.instances_for(BufferLoad(a, (T.int32(1), x)), analyzer) == []


def test_instances_are_deduplicated_and_guarded_only_by_unproven_bounds():
    constraint = constraint_of(_items()[0])
    a = _loads(constraint.condition)[0].buffer
    x = Var("x", "int32")
    analyzer = Analyzer()
    analyzer.bind(x, Range(T.int32(0), T.int32(8)))
    load = BufferLoad(a, (x + 10,))
    (instance,) = constraint.instances_for(load + load, analyzer)
    assert str(instance).startswith("not x + 10 < 16 or ")
