"""Lowering shows the IR after each pass on request, and keeps array-valued loop annotations."""

import numpy as np

import tessel
from tessel.cli import MATMUL_127
from tessel.ir.functor import post_order
from tessel.ir.transform import PrintAfterAll
from tessel.script import parse
from tessel.tir.stmt import For

ANNOTATED = '''
@T.prim_func
def annotated(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    for i in T.serial(8, annotations={"pragma_list": [1, 2, 3], "meta": {"tile": [4, 2]}}):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi] + T.float32(1)
'''


def test_print_after_all_shows_the_seed_matmul_after_every_pass():
    printed = []
    mod = tessel.lower(parse(MATMUL_127), instruments=[PrintAfterAll(write=printed.append)])
    text = "\n".join(printed)
    for pass_name in ("lower_blocks", "flatten_buffer"):
        assert f"# after {pass_name}" in text
    assert text.count("def matmul(") == len(printed) > 1
    assert "matmul" in mod.names()


def test_list_and_dict_loop_annotations_survive_lowering_and_codegen():
    func = parse(ANNOTATED)
    lowered = tessel.lower(func)["annotated"]
    loops = [n for n in post_order(lowered.body) if isinstance(n, For)]
    assert loops and loops[0].annotations["pragma_list"] == (1, 2, 3)
    a, b = np.arange(8, dtype="float32"), np.zeros(8, "float32")
    tessel.build(func)(a, b)
    np.testing.assert_array_equal(b, a + 1)
