"""Fuzzer regressions (issue 12) from the campaign of seed 11: blockize folded a predicate over
the outer loops into the outer iterator's offset (`ax1 >= 1` made the binding `ax1 - 1` over
[0, 7)) and dropped it, so the outer block ran at ax1 = 0 with its iterator at -1 (case 1703)."""

from tessel import te, topi
from tessel.ir.target import Target
from tessel.schedule import Schedule
from tessel.testing.fuzz.case import check_result


def test_blockize_keeps_an_outer_guard_the_division_folded_into_an_offset():  # case 1703
    a = te.placeholder((1, 1, 1), "int32", name="A0")
    func = te.create_prim_func([a, topi.nn.pad(a, [0, 0, 2], [0, 0, 2], pad_value=0, name="T1")])
    sch = Schedule(func)
    outer_loops = sch.get_loops(sch.get_block("T1"))
    sch.fuse(outer_loops[0], outer_loops[1])
    sch.transform_layout(
        sch.get_block("T1"), ("write", 0), lambda i0, i1, i2: (i0 // 8, i0 % 8, i1, i2), pad_value=0
    )
    padding = sch.get_block("buffer_T1_padding")  # under T.where(ax1 >= 1)
    sch.blockize(sch.get_loops(padding)[2])
    outer = sch.block(sch.get_block("buffer_T1_padding_o"))
    assert "ax1 >= 1" in str(outer.predicate) or "1 <= ax1" in str(outer.predicate)
    check_result(func, sch, target=Target())  # interpreter and C, on the transformed layout
