"""first_block: the block (if any) that lowering passes must not leave behind."""

from __future__ import annotations

from tessel.testing.ir_programs import loops, matmul, prim_func, store
from tessel.tir.analysis.blocks import first_block
from tessel.tir.buffer import decl_buffer


def test_first_block_finds_the_innermost_block_first():
    block = first_block(matmul(4).body)
    assert block is not None
    assert block.name_hint == "C"


def test_first_block_of_loop_code_is_none():
    a_buf = decl_buffer((4,), "int32", "A")
    func = prim_func("f", (a_buf,), loops((4,), lambda i: store(a_buf, (i,), i)))
    assert first_block(func.body) is None
