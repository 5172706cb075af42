"""Fuzzer regressions (issue 12) from the 20000-case campaign of seed 10: reindex copied points
that nothing wrote, of a guarded write (case 17112) and of a layout's padding (case 6286)."""

from tessel import te, topi
from tessel.schedule import Schedule
from tessel.testing import check_schedule


def _pad_of_one() -> object:
    a = te.placeholder((1, 1), "int32", name="A0")
    return te.create_prim_func([a, topi.nn.pad(a, [0, 2], [0, 2], pad_value=0, name="T1")])


def test_reindex_of_a_guarded_copys_write_copies_only_what_it_writes():  # case 17112
    def steps(sch: Schedule) -> None:
        sch.reindex(sch.get_block("T1"), ("read", 0))  # a copy under T.where(2 <= ax1 < 3)
        sch.reindex(sch.get_block("A0_reindex"), ("write", 0))

    sch = check_schedule(_pad_of_one(), steps)
    copy_back = sch.block(sch.get_block("A0_reindex_reindex"))
    assert copy_back.predicate is not None  # not the whole row: only the point written


def test_reindex_of_a_read_skips_the_padding_its_writer_leaves():  # case 6286
    a = te.placeholder((1, 1), "int32", name="A0")
    r = te.reduce_axis((0, 1), name="r")
    total = te.compute((1,), lambda i: te.sum(a[i, r], axis=r), name="T1")
    func = te.create_prim_func([a, topi.nn.pad(total, [1], [1], pad_value=0, name="T2")])

    def steps(sch: Schedule) -> None:
        sch.transform_layout(sch.get_block("T2"), ("read", 0), lambda i: (i // 8, i % 8),
                             assume_injective_transform=True)  # fmt: skip
        sch.reindex(sch.get_block("T2"), ("read", 0))

    sch = check_schedule(func, steps)
    assert "T.where" in sch.func.script()


