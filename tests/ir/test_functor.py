"""Visitor / Mutator / post_order / substitute: copy-on-write, sharing, buffer identity, depth."""

from hypothesis import given
from hypothesis import strategies as st

from tessel.ir import builders
from tessel.ir.expr import Add, IntImm, PrimExpr, Var
from tessel.ir.functor import Mutator, Visitor, method_name, post_order
from tessel.ir.node import child_items
from tessel.ir.substitute import substitute
from tessel.support.dtype import handle, int32
from tessel.tir.buffer import Buffer, BufferLoad, decl_buffer
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import BufferStore, For, ForKind, SeqStmt


def _loop(var: Var, extent: PrimExpr, body) -> For:
    return For(var, IntImm(int32, 0), extent, ForKind.SERIAL, body)


def _two_loop_func(n: PrimExpr | None = None):
    """A[i] = A[i] + 1 over i, then B[j] = A[j] * 2 over j (shape `n`, default 8)."""
    n = IntImm(int32, 8) if n is None else n
    a, b = decl_buffer((n,), "float32", "A"), decl_buffer((n,), "float32", "B")
    i, j = Var("i"), Var("j")
    first = _loop(i, n, BufferStore(a, a[i] + 1.0, (i,)))
    second = _loop(j, n, BufferStore(b, a[j] * 2.0, (j,)))
    params = (Var("A", handle), Var("B", handle))
    func = PrimFunc(
        params, SeqStmt((first, second)), buffer_map=dict(zip(params, (a, b), strict=True))
    )
    return func, (i, j)


class _Replace(Mutator):
    def __init__(self, old: Var, new: PrimExpr) -> None:
        super().__init__()
        self.old, self.new = old, new

    def visit_Var(self, var: Var) -> PrimExpr:
        return self.new if var is self.old else var


def test_mutator_that_changes_nothing_returns_the_same_function():
    func, _ = _two_loop_func()
    assert Mutator().visit(func) is func


def test_mutator_replacing_one_var_rebuilds_only_the_path_to_it():
    func, (_, j) = _two_loop_func()
    first, second = func.body.seq
    new_func = _Replace(j, Var("k")).visit(func)
    assert new_func is not func
    new_first, new_second = new_func.body.seq
    assert new_first is first  # untouched subtree shared
    assert new_second is not second
    assert new_second.extent is second.extent  # siblings of the path are shared too
    assert new_second.body.value.a.buffer is second.body.value.a.buffer
    assert new_func.buffer_map is func.buffer_map


def test_substitute_returns_the_same_object_when_no_mapped_var_occurs():
    func, _ = _two_loop_func()
    assert substitute(func, {Var("unrelated"): IntImm(int32, 0)}) is func
    assert substitute(func, {}) is func


def test_substitute_preserves_buffer_identity_across_many_accesses():
    n = Var("n")
    func, _ = _two_loop_func(n)
    new_func = substitute(func, {n: IntImm(int32, 16)})
    accesses = [
        node.buffer
        for node in post_order(new_func.body)
        if isinstance(node, BufferLoad | BufferStore)
    ]
    by_name: dict[str, set[int]] = {}
    for buffer in accesses:
        by_name.setdefault(buffer.name, set()).add(id(buffer))
    assert {name: len(ids) for name, ids in by_name.items()} == {"A": 1, "B": 1}
    new_a = next(b for b in accesses if b.name == "A")
    assert new_a.const_shape() == (16,)
    # The signature follows the body: buffer_map holds the very buffers the body accesses.
    assert set(map(id, new_func.buffer_map.values())) == {id(b) for b in accesses}


def test_substitute_keeps_data_variable_shared_by_rebuilt_buffer():
    n = Var("n")
    func, _ = _two_loop_func(n)
    old_a = func.buffer_map[func.params[0]]
    new_a = substitute(func, {n: IntImm(int32, 4)}).buffer_map[func.params[0]]
    assert new_a is not old_a
    assert new_a.data is old_a.data


def _children(node):
    for _, value in child_items(node):
        yield from ([value] if not isinstance(value, tuple) else value)


def test_post_order_yields_children_before_parents():
    func, _ = _two_loop_func()
    order = list(post_order(func))
    first_seen: dict[int, int] = {}
    for index, node in enumerate(order):
        first_seen.setdefault(id(node), index)
    assert order[-1] is func
    for index, node in enumerate(order):  # shared nodes (buffers) come once per use
        for child in _children(node):
            assert first_seen[id(child)] < index


def _recursive_post_order(node):
    for child in _children(node):
        yield from _recursive_post_order(child)
    yield node


_LEAVES = [IntImm(int32, 3), Var("x"), Var("y")]


@st.composite
def _expressions(draw, depth=4):
    """Expressions of adds and loads over a few shared leaves (the walk meets them repeatedly)."""
    if depth == 0 or draw(st.booleans()):
        return draw(st.sampled_from(_LEAVES))
    buffer = decl_buffer((8,), "int32", "A")
    if draw(st.booleans()):
        return BufferLoad(buffer, (draw(_expressions(depth - 1)),))
    return Add(draw(_expressions(depth - 1)), draw(_expressions(depth - 1)))


@given(_expressions())
def test_post_order_is_the_recursive_post_order(expr):
    assert [id(n) for n in post_order(expr)] == [id(n) for n in _recursive_post_order(expr)]


def test_post_order_is_iterative_on_a_deep_chain():
    x = Var("x")
    chain: PrimExpr = x
    for step in range(5000):
        chain = Add(chain, IntImm(int32, step))
    nodes = list(post_order(chain))
    assert nodes[0] is x
    assert nodes[-1] is chain
    assert sum(isinstance(node, Add) for node in nodes) == 5000


def test_mutator_override_of_a_class_without_node_fields_sees_every_constant():
    func, _ = _two_loop_func()

    class Double(Mutator):
        def visit_IntImm(self, node: IntImm) -> IntImm:
            return IntImm(node.dtype, node.value * 2)

    doubled = Double().visit(func)
    extents = [loop.extent.value for loop in doubled.body.seq]
    assert extents == [16, 16]
    assert doubled.buffer_map[doubled.params[0]].shape[0].value == 16


def test_mutator_memo_entry_for_a_buffer_replaces_every_use():
    func, _ = _two_loop_func()
    a = func.buffer_map[func.params[0]]
    wider = decl_buffer((IntImm(int32, 8),), "float32", "A2")
    mutator = Mutator()
    mutator.memo[id(a)] = wider  # as passes seed it to swap a definition
    swapped = mutator.visit(func)
    first, second = swapped.body.seq
    assert swapped.buffer_map[swapped.params[0]] is wider
    assert first.body.buffer is wider and first.body.value.a.buffer is wider
    assert second.body.value.a.buffer is wider


def test_visitor_dispatches_on_node_type_and_walks_everything():
    func, _ = _two_loop_func()

    class CountStores(Visitor):
        def __init__(self) -> None:
            self.buffers: list[Buffer] = []

        def visit_BufferStore(self, node: BufferStore) -> None:
            self.buffers.append(node.buffer)
            self.generic_visit(node)

    counter = CountStores()
    counter.visit(func)
    assert [b.name for b in counter.buffers] == ["A", "B"]


def test_visitor_dispatch_follows_the_class_hierarchy():
    class CountBinary(Visitor):
        def __init__(self) -> None:
            self.count = 0

        def visit_BinaryOp(self, node) -> None:
            self.count += 1
            self.generic_visit(node)

    counter = CountBinary()
    counter.visit(builders.mul(Var("x") + Var("y"), Var("z")))
    assert counter.count == 2


def test_method_name_dispatches_along_the_mro_with_a_prefix():
    class Printer:
        def expr_PrimExpr(self, node):  # noqa: N802  (dispatch on class names)
            return "any expression"

        def expr_Var(self, node):  # noqa: N802
            return "a variable"

    assert method_name(Printer, Var, "expr_") == "expr_Var"
    assert method_name(Printer, Add, "expr_") == "expr_PrimExpr"
    assert method_name(Printer, For, "expr_") is None
    assert method_name(Printer, Var, "stmt_") is None


def _let_chain(depth: int):
    """A function of `depth` nested LetStmts, each adding 1 to the previous variable."""
    from tessel.tir.stmt import LetStmt

    a = decl_buffer((1,), "int32", "A")
    names = [Var(f"v{k}") for k in range(depth)]
    body = BufferStore(a, names[-1], (IntImm(int32, 0),))
    for k in reversed(range(depth)):
        value = Add(names[k - 1], IntImm(int32, 1)) if k else IntImm(int32, 1)
        body = LetStmt(names[k], value, body)
    param = Var("A", handle)
    return PrimFunc((param,), body, buffer_map={param: a}), names


def test_visitor_and_mutator_walk_10000_nested_lets_without_recursion():
    func, names = _let_chain(10_000)

    class _Counter(Visitor):
        def __init__(self) -> None:
            self.vars = 0

        def visit_Var(self, var: Var) -> None:
            self.vars += 1

    counter = _Counter()
    counter.visit(func)
    assert counter.vars >= 2 * 10_000
    assert Mutator().visit(func) is func
    renamed = substitute(func, {names[0]: Var("w")})
    assert renamed is not func
    assert renamed.script().count("\n") > 10_000  # the printer is iterative too
