"""Fuzzer regression: cache_read of an input copies the scope block's declared read region, which
after blockize of a guarded padding read reaches outside the buffer (`A0[0, 0, v_i2 - 2 : v_i2]`);
the copy bound its iterator to -2 (campaign seed 1, case 927: rfactor, blockize, compute_inline,
cache_read). The copy now skips, under `T.where`, the points it cannot prove inside."""

from tessel.ir.builders import is_const_int
from tessel.ir.functor import post_order
from tessel.schedule import Schedule
from tessel.script import tir as T
from tessel.testing import check_same_results, check_schedule
from tessel.tir.block import BlockRealize


@T.prim_func
def padded_window_sum(A0: T.Buffer((1, 1, 1), "float32"), T4: T.Buffer((1, 1, 4), "float32")):
    T.func_attr({"tir.noalias": True})
    T3 = T.alloc_buffer((1, 1, 5), "float32")
    for i0, i1, i2 in T.grid(1, 1, 5):
        with T.block("T3"):
            v_i0, v_i1, v_i2 = T.axis.remap("SSS", [i0, i1, i2])
            T.reads(A0[v_i0, v_i1, v_i2 - 2])
            T.writes(T3[v_i0, v_i1, v_i2])
            T3[v_i0, v_i1, v_i2] = T.if_then_else(
                v_i2 >= 2 and v_i2 < 3, A0[v_i0, v_i1, v_i2 - 2], T.float32(0.0)
            )
    for i0, i1, i2, r in T.grid(1, 1, 4, 2):
        with T.block("T4"):
            v_i0, v_i1, v_i2, v_r = T.axis.remap("SSSR", [i0, i1, i2, r])
            T.reads(T3[v_i0, v_i1, v_i2 + v_r])
            T.writes(T4[v_i0, v_i1, v_i2])
            with T.init():
                T4[v_i0, v_i1, v_i2] = T.float32(0.0)
            T4[v_i0, v_i1, v_i2] = T4[v_i0, v_i1, v_i2] + T3[v_i0, v_i1, v_i2 + v_r]


def seed_1_case_927(sch: Schedule) -> None:
    sch.rfactor(sch.get_loops(sch.get_block("T4"))[3], 0)
    sch.blockize(sch.get_loops(sch.get_block("T4_rf"))[3])
    sch.compute_inline(sch.get_block("T3"))
    sch.cache_read(sch.get_block("T4_rf"), 1, "global.workspace")  # A0 (T4_rf is read first)


def test_cache_read_of_a_padded_input_copies_only_the_points_inside_the_buffer():
    @T.prim_func
    def expected(A0: T.Buffer((1, 1, 1), "float32"), T4: T.Buffer((1, 1, 4), "float32")):
        T.func_attr({"tir.noalias": True})
        T4_rf = T.alloc_buffer((2, 1, 1, 4), "float32")
        for i0, i1, i2 in T.grid(1, 1, 4):
            with T.block("T4_rf_o"):
                vr_o = T.axis.spatial(1, 0)
                v_i0, v_i1, v_i2 = T.axis.remap("SSS", [i0, i1, i2])
                T.reads(A0[0, 0, v_i2 - 2 : v_i2 - 2 + 2])
                T.writes(T4_rf[0:2, 0, 0, v_i2])
                A0_global_workspace = T.alloc_buffer((1, 1, 1), "float32", scope="global.workspace")
                with T.init():
                    for r in range(2):
                        with T.block("T4_rf_init"):
                            vr_init = T.axis.spatial(2, r)
                            T.reads()
                            T.writes(T4_rf[vr_init, 0, 0, v_i2])
                            T4_rf[vr_init, 0, 0, v_i2] = T.float32(0.0)
                for ax0, ax1, ax2 in T.grid(1, 1, 2):
                    with T.block("A0_global_workspace"):
                        v0, v1 = T.axis.remap("SS", [ax0, ax1])
                        v2 = T.axis.spatial(1, v_i2 - 2 + ax2)
                        T.where(0 <= v_i2 - 2 + ax2 and v_i2 - 2 + ax2 < 1)  # noqa: SIM300
                        T.reads(A0[v0, v1, v2])
                        T.writes(A0_global_workspace[v0, v1, v2])
                        A0_global_workspace[v0, v1, v2] = A0[v0, v1, v2]
                for r in range(2):
                    with T.block("T4_rf"):
                        vr = T.axis.spatial(2, r)
                        T.reads(T4_rf[vr, 0, 0, v_i2], A0_global_workspace[0, 0, v_i2 + vr - 2])
                        T.writes(T4_rf[vr, 0, 0, v_i2])
                        T4_rf[vr, 0, 0, v_i2] = T4_rf[vr, 0, 0, v_i2] + T.if_then_else(
                            v_i2 + vr >= 2 and v_i2 + vr < 3,
                            A0_global_workspace[0, 0, v_i2 + vr - 2],
                            T.float32(0.0),
                        )
        for i0, i1, i2, r in T.grid(1, 1, 4, 2):
            with T.block("T4"):
                vr, v_i0, v_i1, v_i2 = T.axis.remap("RSSS", [r, i0, i1, i2])
                T.reads(T4_rf[vr, v_i0, v_i1, v_i2])
                T.writes(T4[v_i0, v_i1, v_i2])
                with T.init():
                    T4[v_i0, v_i1, v_i2] = T.float32(0.0)
                T4[v_i0, v_i1, v_i2] = T4[v_i0, v_i1, v_i2] + T4_rf[vr, v_i0, v_i1, v_i2]

    sch = check_schedule(padded_window_sum, seed_1_case_927, expected)
    check_same_results(padded_window_sum, sch.func)


@T.prim_func
def add_one(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4, 8), "float32")):
    for i, j in T.grid(4, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] + T.float32(1.0)


def test_cache_read_of_an_input_inside_the_buffer_adds_no_guard():
    def steps(sch: Schedule) -> None:
        sch.blockize(sch.get_loops(sch.get_block("B"))[1])
        sch.cache_read(sch.get_block("B"), 0, "shared")

    sch = check_schedule(add_one, steps)
    copy = next(
        n
        for n in post_order(sch.func.body)
        if isinstance(n, BlockRealize) and n.block.name_hint == "A_shared"
    )
    assert is_const_int(copy.predicate, 1)
    check_same_results(add_one, sch.func)
