"""User names that are not valid C (keywords, punctuation, leading digits) compile and run."""

from __future__ import annotations

import re

import numpy as np
import pytest
from tessel.testing.ir_programs import block, loops, prim_func, root, store

from tessel.codegen import CodegenError, generate
from tessel.driver import build
from tessel.ir import builders as B
from tessel.ir.expr import Broadcast, Ramp, Var
from tessel.ir.module import IRModule
from tessel.runtime import BuildError
from tessel.tir.buffer import decl_buffer
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


def test_vector_expressions_are_rejected_with_a_clear_build_error():
    a_buf = decl_buffer((8,), "float32", "A")
    vector_store = store(a_buf, (Ramp(B.const(0), B.const(1), 4),), Broadcast(B.const(1.0, "float32"), 4))
    func = prim_func("vec", (a_buf,), vector_store)
    with pytest.raises(CodegenError, match="vector type float32x4") as err:
        generate(lower(func))
    assert err.value.rule == "codegen.vector"
    with pytest.raises(BuildError, match="vector type"):
        build(func)


def test_unlowered_blocks_are_rejected_by_codegen():
    a_buf = decl_buffer((4,), "float32", "A")
    func = prim_func("f", (a_buf,), root(loops((4,), lambda i: block("b", "S", (i,), (4,), lambda v: store(a_buf, (v,), 1.0)))))
    with pytest.raises(CodegenError, match="block `root` reached code generation") as err:
        generate(IRModule.from_func(func))
    assert err.value.rule == "codegen.block"
