"""TVM script forms of issue 30 for GPU code: tensor-core and PTX intrinsics, and the thread
allreduce with its `T.comm_reducer`. They parse and print as TVM writes them; the C backend
refuses the intrinsics by name, as GPU intrinsics with no CPU meaning."""

# ruff: noqa: E501  (the scripts are written on one line per call, as TVM prints them)

import numpy as np
import pytest
from tvm_forms import parse_form as _parse
from tvm_forms import roundtrip

from tessel.driver import build
from tessel.ir import assert_structural_equal
from tessel.ir.expr import Call, StringImm
from tessel.runtime import BuildError
from tessel.script.printer import script
from tessel.testing import expect_parse_error
from tessel.tir import gpu_builtin, interpreter
from tessel.tir.interpreter.errors import InterpreterError
from tessel.tir.reduce_expr import CommReducer
from tessel.tir.stmt import AttrStmt, Evaluate


def _calls(func):
    from tessel.ir.functor import post_order

    return [n for n in post_order(func.body) if isinstance(n, Call)]


# ------------------------------------------------------------------ tensor cores (wmma)
WMMA = """
@T.prim_func
def wmma_gemm(A: T.Buffer((16, 16), "float16"), B: T.Buffer((16, 16), "float16"),
              C: T.Buffer((16, 16), "float32")):
    T.func_attr({"target": T.target({"kind": "cuda", "arch": "sm_80", "host": {"kind": "llvm"}})})
    A_frag = T.decl_buffer((16, 16), "float16", scope="wmma.matrix_a")
    B_frag = T.decl_buffer((16, 16), "float16", scope="wmma.matrix_b")
    C_frag = T.decl_buffer((16, 16), "float32", scope="wmma.accumulator")
    T.tvm_fill_fragment(C_frag.data, 16, 16, 16, 0, T.float32(0))
    T.tvm_load_matrix_sync(A_frag.data, 16, 16, 16, 0, T.tvm_access_ptr(T.type_annotation("float16"), A.data, 0, 256, 1), 16, "row_major")
    T.tvm_load_matrix_sync(B_frag.data, 16, 16, 16, 0, T.tvm_access_ptr(T.type_annotation("float16"), B.data, 0, 256, 1), 16, "col_major")
    T.evaluate(T.tvm_mma_sync(C_frag.data, 0, A_frag.data, 0, B_frag.data, 0, C_frag.data, 0, dtype="handle"))
    T.tvm_store_matrix_sync(C_frag.data, 16, 16, 16, 0, T.tvm_access_ptr(T.type_annotation("float32"), C.data, 0, 256, 2), 16, "row_major")
"""


def test_wmma_intrinsics_round_trip_with_their_tvm_names():
    func = roundtrip(WMMA)
    text = script(func)
    assert "T.tvm_fill_fragment(C_frag.data, 16, 16, 16, 0, T.float32(0.0))" in text
    assert (
        "T.tvm_mma_sync(C_frag.data, 0, A_frag.data, 0, B_frag.data, 0, C_frag.data, 0)\n" in text
    )
    assert '16, "row_major")' in text and '16, "col_major")' in text
    names = [c.op.name for c in _calls(func) if gpu_builtin.is_gpu_intrinsic(c.op)]
    assert names == [
        "tir.tvm_fill_fragment",
        "tir.tvm_load_matrix_sync",
        "tir.tvm_load_matrix_sync",
        "tir.tvm_mma_sync",
        "tir.tvm_store_matrix_sync",
    ]
    assert all(c.dtype.is_handle for c in _calls(func) if gpu_builtin.is_gpu_intrinsic(c.op))


def test_c_refuses_a_wmma_intrinsic_naming_it():
    with pytest.raises(
        BuildError,
        match="`T.tvm_fill_fragment` in `wmma_gemm` is a GPU intrinsic with no CPU meaning",
    ) as err:
        build(_parse(WMMA))
    assert err.value.rule == "codegen.gpu-intrinsic"


def test_the_interpreter_refuses_a_gpu_intrinsic_clearly():
    func = _parse(WMMA)
    args = [np.zeros((16, 16), d) for d in ("float16", "float16", "float32")]
    with pytest.raises(InterpreterError, match="tvm_fill_fragment"):
        interpreter.run(func, *args)


# ------------------------------------------------------------------ PTX
PTX = """
@T.prim_func
def ptx_tile(A: T.Buffer((16, 16), "float16"), B: T.Buffer((16, 8), "float16"),
             C: T.Buffer((16, 8), "float32")):
    tx = T.launch_thread("threadIdx.x", 32)
    A_shared = T.decl_buffer((256,), "float16", scope="shared")
    A_local = T.decl_buffer((8,), "float16", scope="local")
    B_local = T.decl_buffer((4,), "float16", scope="local")
    C_local = T.decl_buffer((4,), "float32", scope="local")
    T.ptx_cp_async("float16", A_shared.data, tx * 8, A.data, tx * 8, 16)
    T.ptx_commit_group()
    T.ptx_wait_group(0)
    T.ptx_ldmatrix("float16", T.bool(False), 4, ".b16", A_local.data, 0, A_shared.data, tx * 8)
    T.ptx_mma("float32", "m16n8k16", "row", "col", "fp16", "fp16", "fp32", A_local.data, 0, B_local.data, 0, C_local.data, 0, T.bool(False))
    T.mma_store("float32", 16, 8, C.data, C_local.data, 0, 8)
"""


def test_ptx_intrinsics_print_with_their_dtype_first():
    func = roundtrip(PTX)
    text = script(func)
    assert 'T.ptx_cp_async("float16", A_shared.data, tx * 8, A.data, tx * 8, 16)' in text
    assert "T.ptx_commit_group()\n" in text and "T.ptx_wait_group(0)\n" in text
    assert (
        'T.ptx_ldmatrix("float16", False, 4, ".b16", A_local.data, 0, A_shared.data, tx * 8)'
        in text
    )
    assert (
        'T.ptx_mma("float32", "m16n8k16", "row", "col", "fp16", "fp16", "fp32", A_local.data, '
        "0, B_local.data, 0, C_local.data, 0, False)"
    ) in text
    mma = next(c for c in _calls(func) if c.op.name == "tir.ptx_mma")
    assert str(mma.dtype) == "float32"
    assert isinstance(mma.args[0], StringImm) and mma.args[0].value == "m16n8k16"


def test_ptx_mma_with_the_dtype_keyword_equals_the_printed_form():
    keyword = _parse("""
        @T.prim_func
        def f(A: T.Buffer((8,), "float16"), C: T.Buffer((4,), "float32")):
            T.evaluate(T.ptx_mma("m16n8k16", "row", "col", "fp16", "fp16", "fp32", A.data, 0,
                                 A.data, 0, C.data, 0, False, dtype="float32"))
    """)
    first = _parse("""
        @T.prim_func
        def f(A: T.Buffer((8,), "float16"), C: T.Buffer((4,), "float32")):
            T.ptx_mma("float32", "m16n8k16", "row", "col", "fp16", "fp16", "fp32", A.data, 0,
                      A.data, 0, C.data, 0, False)
    """)
    assert_structural_equal(keyword, first)


def test_c_refuses_ptx_mma_naming_it():
    source = """
        @T.prim_func
        def only_mma(A: T.Buffer((8,), "float16"), C: T.Buffer((4,), "float32")):
            T.ptx_mma("float32", "m16n8k16", "row", "col", "fp16", "fp16", "fp32", A.data, 0,
                      A.data, 0, C.data, 0, False)
    """
    with pytest.raises(BuildError, match="`T.ptx_mma` in `only_mma` is a GPU intrinsic"):
        build(_parse(source))


def test_a_dtype_first_intrinsic_without_arguments_is_refused():
    expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            T.ptx_ldmatrix()  # error: needs its result dtype first
    """)


def test_a_dtype_first_intrinsic_with_a_bad_dtype_is_refused():
    expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            T.ptx_mma("m16n8k16", "row", "col", "fp16", "fp16", "fp32", A.data, 0, A.data, 0, A.data, 0, False)  # error: T.ptx_mma takes its result dtype first
    """)


# ------------------------------------------------------------------ allreduce and comm_reducer
ALLREDUCE = """
@T.prim_func
def row_sum(A: T.Buffer((32, 64), "float32"), B: T.Buffer((32,), "float32")):
    T.func_attr({"target": T.target("cuda", host="llvm")})
    reduce_temp0 = T.decl_buffer((1,), "float32", scope="local")
    for i in range(32):
        threadIdx_x = T.launch_thread("threadIdx.x", 64)
        T.attr(T.comm_reducer(lambda x, y: x + y, [T.float32(0)]), "reduce_scope", T.reinterpret(T.uint64(0), dtype="handle"))
        T.tvm_thread_allreduce(T.uint32(1), A[i, threadIdx_x], T.bool(True), reduce_temp0[0], threadIdx_x, dtype="handle")
        if threadIdx_x == 0:
            B[i] = reduce_temp0[0]
"""


def test_allreduce_with_comm_reducer_round_trips_as_tvm_prints_it():
    func = roundtrip(ALLREDUCE)
    text = script(func)
    assert (
        'T.attr(T.comm_reducer(lambda x, y: x + y, [T.float32(0.0)]), "reduce_scope", '
        'T.reinterpret("handle", T.uint64(0)))'
    ) in text
    assert (
        "T.tvm_thread_allreduce(T.uint32(1), A[i, threadIdx_x], True, reduce_temp0[0], threadIdx_x)"
    ) in text
    attrs = [n for n in _walk(func) if isinstance(n, AttrStmt) and n.attr_key == "reduce_scope"]
    reducer = attrs[0].node
    assert isinstance(reducer, CommReducer)
    assert [str(v.dtype) for v in (*reducer.lhs, *reducer.rhs)] == ["float32", "float32"]


def test_c_refuses_the_thread_allreduce():
    with pytest.raises(BuildError, match="GPU intrinsic with no CPU meaning"):
        build(_parse(ALLREDUCE))


ARGMAX_REDUCER = """
@T.prim_func
def argmax(A: T.Buffer((8, 32), "float32"), V: T.Buffer((8, 32), "int32"), B: T.Buffer((8,), "int32")):
    red_value = T.decl_buffer((1,), "float32", scope="local")
    red_index = T.decl_buffer((1,), "int32", scope="local")
    for i in range(8):
        tx = T.launch_thread("threadIdx.x", 32)
        with T.attr(T.comm_reducer(lambda x0, x1, y0, y1: (T.Select(x0 >= y0, x0, y0), T.Select(x0 >= y0, x1, y1)), [T.min_value("float32"), -1]), "reduce_scope", T.reinterpret("handle", T.uint64(0))):
            T.evaluate(T.tvm_thread_allreduce(T.uint32(2), A[i, tx], V[i, tx], True, red_value[0], red_index[0], tx, dtype="handle"))
        B[i] = red_index[0]
"""


def test_a_two_value_comm_reducer_round_trips():
    func = roundtrip(ARGMAX_REDUCER)
    text = script(func)
    assert (
        "T.comm_reducer(lambda x0, x1, y0, y1: (T.Select(x0 >= y0, x0, y0), "
        "T.Select(x0 >= y0, x1, y1)), [T.float32(-3.4028234663852886e+38), -1])"
    ) in text
    reducer = next(n for n in _walk(func) if isinstance(n, CommReducer))
    assert [str(v.dtype) for v in reducer.lhs] == ["float32", "int32"]


def test_comm_reducers_with_different_combiners_are_not_equal():
    def with_combiner(combiner):
        return _parse(f"""
            @T.prim_func
            def f(A: T.Buffer((4,), "float32")):
                with T.attr(T.comm_reducer({combiner}, [T.float32(0)]), "reduce_scope", 0):
                    A[0] = T.float32(1)
        """)

    assert_structural_equal(
        with_combiner("lambda a, b: a + b"), with_combiner("lambda x, y: x + y")
    )
    with pytest.raises(AssertionError):
        assert_structural_equal(
            with_combiner("lambda x, y: x + y"), with_combiner("lambda x, y: x * y")
        )
    with pytest.raises(AssertionError):
        assert_structural_equal(
            with_combiner("lambda x, y: x - y"), with_combiner("lambda x, y: y - x")
        )


def test_comm_reducer_with_the_wrong_number_of_parameters_is_refused():
    expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            with T.attr(T.comm_reducer(lambda x: x, [T.float32(0)]), "reduce_scope", 0):  # error: must take 2 parameters
                A[0] = T.float32(1)
    """)


def test_comm_reducer_body_errors_point_into_the_lambda():
    expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            with T.attr(T.comm_reducer(lambda x, y: x + z, [T.float32(0)]), "reduce_scope", 0):  # error: name `z` is not defined
                A[0] = T.float32(1)
    """)


def test_a_lambda_outside_a_call_is_still_refused():
    expect_parse_error("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            g = lambda x: x  # error: a lambda is not supported in TVMScript
    """)


def _walk(func):
    from tessel.script.printer.free_vars import walk

    return list(walk(func.body))


def test_gpu_intrinsic_statements_are_evaluates():
    func = _parse(PTX)
    from tessel.ir.functor import post_order

    evaluates = [n for n in post_order(func.body) if isinstance(n, Evaluate)]
    assert len(evaluates) == 6


WARP_SHUFFLE = """
@T.prim_func
def warp_sum(A: T.Buffer((32,), "float32"), B: T.Buffer((1,), "float32")):
    red_buf0 = T.decl_buffer((1,), "float32", scope="local")
    tx = T.launch_thread("threadIdx.x", 32)
    mask = T.decl_buffer((1,), "uint32", scope="local")
    mask[0] = T.tvm_warp_activemask()
    red_buf0[0] = A[tx]
    red_buf0[0] = red_buf0[0] + T.tvm_warp_shuffle_down(mask[0], red_buf0[0], 16, 32, 32)
    red_buf0[0] = T.tvm_warp_shuffle(mask[0], red_buf0[0], 0, 32, 32)
    T.tvm_storage_sync("shared")
    B[0] = red_buf0[0]
"""


def test_warp_shuffles_take_the_dtype_of_the_value_they_move():
    func = roundtrip(WARP_SHUFFLE)
    text = script(func)
    assert "T.tvm_warp_shuffle_down(mask[0], red_buf0[0], 16, 32, 32)" in text
    assert "mask[0] = T.tvm_warp_activemask()" in text
    assert 'T.tvm_storage_sync("shared")' in text
    shuffle = next(c for c in _calls(func) if c.op.name == "tir.tvm_warp_shuffle")
    assert str(shuffle.dtype) == "float32"
    with pytest.raises(BuildError, match="`T.tvm_warp_activemask` in `warp_sum`"):
        build(func)


def test_a_handle_intrinsic_with_an_unusual_dtype_prints_it():
    func = roundtrip("""
        @T.prim_func
        def f(A: T.Buffer((4,), "int32")):
            A[0] = T.tvm_warp_shuffle(T.uint32(1), A[1], 0, 32, 32, dtype="int32")
            T.evaluate(T.tvm_thread_invariant(A[0] > 0, dtype="int32"))
    """)
    text = script(func)
    assert "T.tvm_warp_shuffle(T.uint32(1), A[1], 0, 32, 32)" in text
    assert 'T.tvm_thread_invariant(A[0] > 0, dtype="int32")' in text
