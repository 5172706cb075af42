"""Fuzzer regressions (issue 12) from the 20000-case campaign of seed 10: reindex copied points
that nothing wrote, of a guarded write (case 17112) and of a layout's padding (case 6286);
blockize gave an iterator the extent its predicate keeps, not the range its binding takes
(case 5353), or a domain its binding through an outer block's iterator leaves (case 17005);
reverse_compute_at counted a tail's guarded points as written (case 4714); cache_write of an
update that reads its old value started from an empty cache (case 6104)."""

import pytest

from tessel import te, topi
from tessel.schedule import Schedule, ScheduleError
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
        sch.transform_layout(
            sch.get_block("T2"),
            ("read", 0),
            lambda i: (i // 8, i % 8),
            assume_injective_transform=True,
        )
        sch.reindex(sch.get_block("T2"), ("read", 0))

    sch = check_schedule(func, steps)
    assert "T.where" in sch.func.script()


def test_blockize_of_a_guarded_copy_keeps_its_iterator_over_the_bound_values():  # case 5353
    a = te.placeholder((2,), "float32", name="A0")
    func = te.create_prim_func([a, topi.nn.pad(a, [1], [1], pad_value=0.0, name="T1")])

    def steps(sch: Schedule) -> None:
        copy = sch.reindex(sch.get_block("T1"), ("read", 0))  # under T.where(1 <= ax0 < 3)
        sch.blockize(sch.get_loops(copy)[0])

    sch = check_schedule(func, steps)
    (iterator,) = sch.block(sch.get_block("A0_reindex")).block.iter_vars
    assert iterator.dom.extent.value == 3  # ax0 runs to 2 under the predicate: [0, 3)


def test_blockize_inside_a_block_keeps_a_binding_through_its_iterator():  # case 17005
    a, b = (te.placeholder((2, 1, 1), "float32", name=n) for n in ("A0", "A1"))
    product = te.compute((2, 1, 1), lambda i, j, k: a[i, j, k] * b[i, j, k], name="T2")
    func = te.create_prim_func([a, b, product])

    def steps(sch: Schedule) -> None:
        sch.blockize(sch.get_loops(sch.get_block("T2"))[1])
        copy = sch.cache_read(sch.get_block("T2"), 1, "shared")  # v0 = v_i0 + ax0
        sch.blockize(sch.get_loops(copy)[2])

    sch = check_schedule(func, steps)
    iterator = sch.block(sch.get_block("A1_shared")).block.iter_vars[0]
    assert iterator.dom.extent.value == 2  # v_i0's domain, not the inner loops' extent 1


def test_reverse_compute_at_takes_only_the_rows_a_guarded_tail_writes():  # case 4714
    a, b = (te.placeholder((4, 2), "int32", name=n) for n in ("A0", "A2"))
    diff = te.compute((4, 2), lambda i, j: a[i, j] - b[i, j], name="T3")
    func = te.create_prim_func([a, b, te.compute((4, 2), lambda i, j: diff[i, j] * 2, name="T5")])

    def steps(sch: Schedule) -> None:
        block = sch.get_block("T5")
        outer, _ = sch.split(sch.get_loops(block)[0], [None, 3])
        sch.split(sch.get_loops(block)[1], [None, 4])  # 3 rows under a loop of 4: guarded
        copy = sch.cache_write(block, 0, "global")
        sch.reverse_compute_at(copy, outer, preserve_unit_loops=False)

    sch = check_schedule(func, steps)
    rows = sch.get_loops(sch.get_block("T5_global"))[1]
    assert sch.loop(rows).extent.value == 3  # not 4: the fourth row is the next tile's


def test_cache_write_of_an_update_reading_its_old_value_is_refused():  # case 6104
    a = te.placeholder((1, 1, 1), "int32", name="A0")
    r = te.reduce_axis((0, 1), name="r")
    func = te.create_prim_func(
        [a, te.compute((1, 1), lambda i, j: te.max(a[i, j, r], axis=r), name="T1")]
    )
    sch = Schedule(func)
    update = sch.get_block("T1")
    sch.decompose_reduction(update, sch.get_loops(update)[1])
    sch.blockize(sch.get_loops(update)[1])  # the init stays outside the update's scope
    before = sch.func
    with pytest.raises(ScheduleError, match="reads-old-value"):
        sch.cache_write(update, 0, "global")
    assert sch.func is before
