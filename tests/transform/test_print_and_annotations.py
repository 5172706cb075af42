"""Lowering shows the IR after each pass on request; array-valued loop annotations never fail it:
a non-pragma one stays on its loop, a pragma one is dropped with the reason recorded."""

import numpy as np

import tessel
from tessel.cli import MATMUL_127
from tessel.ir.functor import post_order
from tessel.ir.transform import PrintAfterAll
from tessel.script import parse
from tessel.tir.stmt import For
from tessel.transform.lower_opaque_block import DROPPED_ANNOTATIONS_ATTR

ANNOTATED = """
@T.prim_func
def annotated(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in T.serial(8, annotations={"pragma_list": [1, 2, 3], "meta": {"tile": [4, 2]}}):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi] + T.float32(1)
"""


def test_print_after_all_shows_the_seed_matmul_after_every_pass():
    printed = []
    mod = tessel.lower(parse(MATMUL_127), instruments=[PrintAfterAll(write=printed.append)])
    text = "\n".join(printed)
    block_passes = ("lower_init_block", "convert_blocks_to_opaque", "lower_match_buffer",
                    "lower_opaque_block")  # fmt: skip
    for pass_name in (*block_passes, "flatten_buffer"):
        assert f"# after {pass_name}" in text
    assert text.count("def matmul(") == len(printed) > 1
    assert "matmul" in mod.names()


def test_list_and_dict_loop_annotations_never_fail_lowering_or_codegen():
    func = parse(ANNOTATED)
    lowered = tessel.lower(func)["annotated"]
    loops = [n for n in post_order(lowered.body) if isinstance(n, For)]
    assert loops
    assert dict(loops[0].annotations) == {"meta": {"tile": (4, 2)}}
    (dropped,) = lowered.attrs[DROPPED_ANNOTATIONS_ATTR]
    assert dropped.startswith("loop `i`: pragma_list=[1, 2, 3]: a pragma becomes an AttrStmt")
    assert "pragma_list=[1, 2, 3]" in lowered.script()  # the printed IR shows what was dropped
    a, b = np.arange(8, dtype="float32"), np.zeros(8, "float32")
    tessel.build(func)(a, b)
    np.testing.assert_array_equal(b, a + 1)
