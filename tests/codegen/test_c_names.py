"""User names that are not valid C (keywords, punctuation, leading digits) compile and run."""

from __future__ import annotations

import re
import subprocess

import numpy as np
import pytest

from tessel.codegen import CodegenError, generate
from tessel.codegen.c_names import RESERVED_NAMES, NameScope
from tessel.codegen.c_prelude import PRELUDE
from tessel.driver import build
from tessel.ir import builders as B
from tessel.ir.expr import Broadcast, Call, Ramp, StringImm, Var
from tessel.ir.module import IRModule
from tessel.runtime import BuildError, find_compiler
from tessel.support.dtype import DataType
from tessel.support.errors import InternalError
from tessel.support.names import c_identifier
from tessel.testing.ir_programs import block, loops, prim_func, root, store
from tessel.tir import builtin
from tessel.tir.buffer import decl_buffer
from tessel.tir.stmt import Evaluate, For, ForKind
from tessel.transform import lower

AWKWARD = ["int", "for", "my-buf", "A.B", "A_B", "2x", "double", "main", "expf", "__x"]


def _awkward_program():
    buffers = [decl_buffer((6,), "float32", name) for name in AWKWARD]
    scale = Var("float", "float32")
    out = buffers[-1]

    def body(i):
        total = buffers[0][i]
        for buffer in buffers[1:-1]:
            total = total + buffer[i]
        return block("for", "S", (i,), (6,), lambda v: store(out, (v,), total * scale))

    return prim_func("main", (*buffers, scale), root(loops((6,), body, names="i")))


def test_awkward_user_names_compile_and_compute_correctly():
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal(6).astype("float32") for _ in AWKWARD]
    module = build(_awkward_program())
    module["main"](*arrays, 0.5)
    np.testing.assert_allclose(arrays[-1], sum(arrays[:-1]) * np.float32(0.5), rtol=1e-5)


def test_generated_c_uses_no_raw_user_name_as_an_identifier():
    text = generate(lower(_awkward_program())).source
    header = next(line for line in text.splitlines() if "TESSEL_EXPORT int32_t" in line)
    params = re.findall(r"(\w+)(?=[,)])", header)
    assert not {"int", "for", "double", "main", "float", "expf", "__x"} & set(params)
    assert len(set(params)) == len(params) == len(AWKWARD) + 1
    for raw in (r"my-buf", r"A\.B", r"\b2x"):
        assert not re.search(raw, text), raw
    assert not re.search(r"\bmain\s*\(", text)


def test_vectors_without_a_gcc_vector_type_are_rejected_with_a_clear_build_error():
    a_buf = decl_buffer((8,), "float32", "A")
    vector_store = store(
        a_buf, (Ramp(B.const(0), B.const(1), 3),), Broadcast(B.const(1.0, "float32"), 3)
    )
    func = prim_func("vec", (a_buf,), vector_store)
    with pytest.raises(CodegenError, match="vector type int32x3") as err:
        generate(lower(func))
    assert err.value.rule == "codegen.vector"
    with pytest.raises(BuildError, match="vector type"):
        build(func)


def test_unlowered_blocks_are_rejected_by_codegen():
    a_buf = decl_buffer((4,), "float32", "A")
    func = prim_func(
        "f",
        (a_buf,),
        root(loops((4,), lambda i: block("b", "S", (i,), (4,), lambda v: store(a_buf, (v,), 1.0)))),
    )
    with pytest.raises(CodegenError, match="block `root` reached code generation") as err:
        generate(IRModule.from_func(func))
    assert err.value.rule == "codegen.block"


_MACRO_NAMES = ["INT32_MAX", "EXIT_FAILURE", "SIZE_MAX", "HUGE_VALF", "FP_NAN", "RAND_MAX", "NAN",
                "INFINITY", "errno", "M_PI", "linux", "_LP64", "_OPENMP", "UINT8_MAX"]  # fmt: skip


@pytest.mark.parametrize("name", _MACRO_NAMES)
def test_variables_named_like_header_macros_compile_and_run(name):
    a_buf = decl_buffer((4,), "int32", name)
    i = Var(name)
    func = prim_func(
        "f", (a_buf,), For(i, B.const(0), B.const(4), ForKind.SERIAL, store(a_buf, (i,), i * 2))
    )
    a = np.zeros(4, "int32")
    build(func)(a)
    np.testing.assert_array_equal(a, [0, 2, 4, 6])


def _prelude_macros(*flags):
    """Every macro defined after the prelude: its headers', the compiler's and its own."""
    result = subprocess.run(
        [*find_compiler(), *flags, "-dM", "-E", "-x", "c", "-"],
        input=PRELUDE,
        capture_output=True,
        text=True,
        check=True,
    )
    return {
        line.split()[1].split("(")[0]
        for line in result.stdout.splitlines()
        if line.startswith("#define")
    }


@pytest.mark.parametrize("flags", [("-std=c11",), ("-std=gnu11",)])
def test_every_macro_defined_by_the_prelude_or_its_headers_is_reserved(flags):
    try:
        macros = _prelude_macros(*flags)
    except (OSError, subprocess.CalledProcessError, BuildError) as err:
        pytest.skip(f"no usable C compiler: {err}")
    user_visible = {m for m in macros if c_identifier(m) == m}  # `__x` and `_X` get prefixed
    assert user_visible - RESERVED_NAMES == set()


def test_a_handle_parameter_aliases_its_buffer_pointer():
    scope = NameScope(set())
    data, handle = Var("A", "handle"), Var("A_handle", "handle")
    name = scope.bind(data)
    scope.alias(handle, name)
    assert scope.name_of(handle) == scope.name_of(data) == name
    with pytest.raises(InternalError):
        scope.alias(Var("x"), "unbound_name")


@pytest.mark.parametrize("name", ["return", "é", "a b"])
def test_call_extern_of_an_invalid_name_is_a_codegen_error(name):
    a_buf = decl_buffer((4,), "float32", "A")
    call = Call(DataType.of("int32"), builtin.call_extern_op, (StringImm(name), a_buf[0]))
    func = prim_func("f", (a_buf,), Evaluate(call))
    with pytest.raises(CodegenError, match="call_extern needs the name of a C function") as err:
        generate(lower(func))
    assert err.value.rule == "codegen.call-extern"
    with pytest.raises(BuildError, match="call_extern needs the name"):
        build(func)
