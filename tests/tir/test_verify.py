"""verify_well_formed: valid functions pass; each rule has a failing case naming the culprit."""

import pytest

from tessel.ir import builders
from tessel.ir.expr import IntImm, Range, SizeVar, Var
from tessel.ir.functor import post_order
from tessel.ir.module import IRModule
from tessel.support.dtype import handle, int32
from tessel.tir.block import Block, BlockRealize, IterVar, IterVarType, MatchBufferRegion
from tessel.tir.buffer import BufferRegion, decl_buffer
from tessel.tir.function import PrimFunc
from tessel.tir.stmt import (
    Allocate,
    BufferStore,
    DeclBuffer,
    For,
    ForKind,
    LetStmt,
    SeqStmt,
)
from tessel.tir.verify import VerifyError, is_well_formed, verify_well_formed

_TRUE = builders.const(True)


def _loop(var, extent, body):
    extent = extent if not isinstance(extent, int) else IntImm(int32, extent)
    return For(var, IntImm(int32, 0), extent, ForKind.SERIAL, body)


def _func(buffers, body, scalars=()):
    params = tuple(Var(b.name, handle) for b in buffers) + tuple(scalars)
    return PrimFunc(params, body, buffer_map=dict(zip(params, buffers, strict=False)))


def _root(body, alloc_buffers=()):
    root = Block((), (), (), "root", body, alloc_buffers=tuple(alloc_buffers))
    return BlockRealize((), _TRUE, root)


def _spatial(var, extent):
    return IterVar(Range.from_min_extent(0, extent), var, IterVarType.DATA_PAR)


def _matmul(n=8):
    """C = A @ B with a root block, an init, and explicit regions: a valid function."""
    a, b, c = (decl_buffer((n, n), "float32", name) for name in "ABC")
    i, j, k = Var("i"), Var("j"), Var("k")
    vi, vj, vk = Var("vi"), Var("vj"), Var("vk")
    iters = (
        _spatial(vi, n),
        _spatial(vj, n),
        IterVar(Range.from_min_extent(0, n), vk, IterVarType.COMM_REDUCE),
    )
    block = Block(
        iters,
        (c[vi, vj : vj + 1], a[vi, vk : vk + 1], b[vk, vj : vj + 1]),
        (c[vi, vj : vj + 1],),
        "C",
        BufferStore(c, c[vi, vj] + a[vi, vk] * b[vk, vj], (vi, vj)),
        init=BufferStore(c, builders.const(0.0, "float32"), (vi, vj)),
    )
    nest = _loop(i, n, _loop(j, n, _loop(k, n, BlockRealize((i, j, k), _TRUE, block))))
    return _func((a, b, c), _root(nest))


def _expect(rule, func, *names):
    with pytest.raises(VerifyError) as err:
        verify_well_formed(func)
    assert err.value.rule == rule
    for name in names:
        assert f"`{name}`" in str(err.value)
    assert not is_well_formed(func)
    return err.value


def test_valid_matmul_passes():
    func = _matmul()
    verify_well_formed(func)
    assert is_well_formed(func)
    assert is_well_formed(IRModule.from_func(func, "main"))


def test_symbolic_shape_vars_of_param_buffers_are_defined():
    n = SizeVar("n")
    a = decl_buffer((n,), "float32", "A")
    i = Var("i")
    body = _loop(i, n, BufferStore(a, a[i] + 1.0, (i,)))
    verify_well_formed(_func((a,), body))


def test_scalar_param_and_let_and_allocate_scopes_are_respected():
    a = decl_buffer((4,), "int32", "A")
    n, t, i = Var("n"), Var("t"), Var("i")
    tmp = decl_buffer((4,), "int32", "tmp")
    inner = DeclBuffer(tmp, SeqStmt((BufferStore(tmp, n, (i,)), BufferStore(a, tmp[i] + t, (i,)))))
    alloc = Allocate(tmp.data, tmp.dtype, tmp.shape, _TRUE, inner)
    body = LetStmt(t, n * 2, _loop(i, 4, alloc))
    verify_well_formed(_func((a,), body, scalars=(n,)))


def test_loop_variable_used_after_its_loop_is_undefined():
    a = decl_buffer((4,), "float32", "A")
    i = Var("i")
    body = SeqStmt((_loop(i, 4, BufferStore(a, a[i], (i,))), BufferStore(a, a[0], (i,))))
    err = _expect("verify.undefined-var", _func((a,), body), "i")
    assert "function" in str(err)


def test_free_variable_in_an_extent_is_undefined():
    a = decl_buffer((4,), "float32", "A")
    i, m = Var("i"), Var("m")
    body = _loop(i, m, BufferStore(a, a[0], (IntImm(int32, 0),)))
    _expect("verify.undefined-var", _func((a,), body), "m")


def test_same_var_for_two_nested_loops_is_redefined():
    a = decl_buffer((4, 4), "float32", "A")
    i = Var("i")
    body = _loop(i, 4, _loop(i, 4, BufferStore(a, a[i, i], (i, i))))
    _expect("verify.var-redefined", _func((a,), body), "i")


def test_same_var_for_sibling_loops_is_allowed():
    a = decl_buffer((4,), "float32", "A")
    i = Var("i")
    store = BufferStore(a, a[i] * 2.0, (i,))
    verify_well_formed(_func((a,), SeqStmt((_loop(i, 4, store), _loop(i, 4, store)))))


def test_buffer_not_in_the_signature_is_undeclared():
    a, ghost = decl_buffer((4,), "float32", "A"), decl_buffer((4,), "float32", "ghost")
    i = Var("i")
    body = _loop(i, 4, BufferStore(a, ghost[i], (i,)))
    _expect("verify.undeclared-buffer", _func((a,), body), "ghost")


def test_alloc_buffer_of_a_sibling_block_is_undeclared():
    a, tmp = decl_buffer((4,), "float32", "A"), decl_buffer((4,), "float32", "tmp")
    i, j = Var("i"), Var("j")
    fill = _loop(i, 4, BufferStore(tmp, a[i], (i,)))
    first = Block((), (), (), "first", fill, alloc_buffers=(tmp,))
    second = Block((), (), (), "second", _loop(j, 4, BufferStore(a, tmp[j], (j,))))
    body = _root(SeqStmt((BlockRealize((), _TRUE, first), BlockRealize((), _TRUE, second))))
    err = _expect("verify.undeclared-buffer", _func((a,), body), "tmp")
    assert "block `second`" in str(err)


def test_binding_to_another_blocks_iterator_is_rejected():
    a = decl_buffer((4,), "float32", "A")
    i = Var("i")
    vi, vj = Var("vi"), Var("vj")
    first = Block((_spatial(vi, 4),), (), (), "first", BufferStore(a, a[vi], (vi,)))
    second = Block((_spatial(vj, 4),), (), (), "second", BufferStore(a, a[vj], (vj,)))
    body = _loop(
        i,
        4,
        SeqStmt((BlockRealize((i,), _TRUE, first), BlockRealize((vi,), _TRUE, second))),
    )
    err = _expect("verify.block-binding", _func((a,), _root(body)), "vi", "first")
    assert "binding" in err.message


def test_binding_count_mismatch_is_rejected():
    func = _matmul()
    realize = next(n for n in _walk(func.body) if isinstance(n, BlockRealize) and n.iter_values)
    # The constructor refuses this; a buggy pass could still produce it by bypassing it.
    object.__setattr__(realize, "iter_values", realize.iter_values[:2])
    _expect("verify.block-binding", func, "C")


def test_nested_block_may_bind_to_the_outer_blocks_iterator():
    a = decl_buffer((16,), "float32", "A")
    o, ii = Var("o"), Var("ii")
    vo, vi = Var("vo"), Var("vi")
    inner = Block((_spatial(vi, 16),), (), (), "inner", BufferStore(a, a[vi] + 1.0, (vi,)))
    outer_body = _loop(ii, 4, BlockRealize((vo * 4 + ii,), _TRUE, inner))
    outer = Block((_spatial(vo, 4),), (), (), "outer", outer_body)
    verify_well_formed(_func((a,), _root(_loop(o, 4, BlockRealize((o,), _TRUE, outer)))))


def test_iterator_used_after_its_block_is_reported():
    a = decl_buffer((4,), "float32", "A")
    i = Var("i")
    vi = Var("vi")
    block = Block((_spatial(vi, 4),), (), (), "B", BufferStore(a, a[vi], (vi,)))
    body = _loop(i, 4, SeqStmt((BlockRealize((i,), _TRUE, block), BufferStore(a, a[vi], (i,)))))
    _expect("verify.iter-var-outside-block", _func((a,), _root(body)), "vi", "B")


def test_nested_block_reusing_the_outer_iterator_is_redefined():
    a = decl_buffer((4,), "float32", "A")
    i, j = Var("i"), Var("j")
    vi = Var("vi")
    inner = Block((_spatial(vi, 4),), (), (), "inner", BufferStore(a, a[vi], (vi,)))
    outer_body = _loop(j, 4, BlockRealize((j,), _TRUE, inner))
    outer = Block((_spatial(vi, 4),), (), (), "outer", outer_body)
    body = _root(_loop(i, 4, BlockRealize((i,), _TRUE, outer)))
    _expect("verify.var-redefined", _func((a,), body), "vi")


def test_match_buffer_defines_its_buffer_and_shape_vars():
    a = decl_buffer((16,), "float32", "A")
    m = Var("m")
    sub = decl_buffer((m,), "float32", "A_sub")
    vo, o, k = Var("vo"), Var("o"), Var("k")
    source = BufferRegion(a, (Range(vo * 4, IntImm(int32, 4)),))
    body = _loop(k, m, BufferStore(sub, sub[k] * 2.0, (k,)))
    block = Block(
        (_spatial(vo, 4),),
        (),
        (),
        "tile",
        body,
        match_buffers=(MatchBufferRegion(sub, source),),
    )
    func = _func((a,), _root(_loop(o, 4, BlockRealize((o,), _TRUE, block))))
    verify_well_formed(func)


def test_module_reports_the_function_at_fault():
    a = decl_buffer((4,), "float32", "A")
    i, stray = Var("i"), Var("stray")
    bad = _func((a,), _loop(i, 4, BufferStore(a, a[stray], (i,))))
    mod = IRModule.from_dict({"good": _matmul(), "bad": bad})
    err = _expect("verify.undefined-var", mod, "stray")
    assert "`bad`" in str(err)


def _walk(node):
    return post_order(node)


def test_a_view_of_a_parameters_memory_must_be_declared():
    a = decl_buffer((4, 2), "float32", "A")
    flat = decl_buffer((8,), "float32", "A_flat", data=a.data)
    i = Var("i")
    body = _loop(i, 8, BufferStore(flat, flat[i] * 2.0, (i,)))
    _expect("verify.undeclared-buffer", _func((a,), body), "A_flat")
    verify_well_formed(_func((a,), DeclBuffer(flat, body)))
