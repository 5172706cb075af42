"""Parallel loops run on Tessel's thread pool (tessel/codegen/c_parallel.py): each body is
outlined into a function that receives the locals it reads, and the results agree with the
reference interpreter at every team size, from several Python threads and after fork."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import tessel
from tessel.codegen.c_parallel import used_names
from tessel.ir.target import Target
from tessel.runtime import RuntimeCallError
from tessel.runtime.threads import current_threads, set_threads
from tessel.script import parse
from tessel.script import tir as T
from tessel.testing.differential import check_same_results

# The body reads a serial loop's variable, a stack buffer and a heap buffer of the enclosing
# function, and a scalar parameter: all of them cross into the outlined function.
CAPTURES = """
@T.prim_func
def captures(A: T.Buffer((3, 37, 8), "float32"), B: T.Buffer((3, 37, 8), "float32"),
             scale: T.float32):
    for b in range(3):
        with T.block("batch"):
            vb = T.axis.spatial(3, b)
            shift = T.alloc_buffer((8,), "float32", scope="global.stack")
            total = T.alloc_buffer((37,), "float32", scope="global.workspace")
            for j in range(8):
                with T.block("shift"):
                    vj = T.axis.spatial(8, j)
                    shift[vj] = T.Cast("float32", vb * 8 + vj)
            for i in range(37):
                with T.block("total"):
                    vi = T.axis.spatial(37, i)
                    total[vi] = A[vb, vi, 0] * scale
            offset = vb + 1
            for i in T.parallel(37):
                for j in range(8):
                    with T.block("B"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        B[vb, vi, vj] = A[vb, vi, vj] + shift[vj] + total[vi] * scale + T.Cast(
                            "float32", offset)
"""

SYMBOLIC = """
@T.prim_func
def symbolic(a: T.handle, b: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (n, 4), "float32")
    B = T.match_buffer(b, (n, 4), "float32")
    for i in T.parallel(n):
        for j in range(4):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] * T.float32(2) + T.Cast("float32", vi)
"""

DIVIDES = """
@T.prim_func
def divides(A: T.Buffer((64,), "int32"), B: T.Buffer((64,), "int32"), d: T.int32):
    for i in T.parallel(64):
        with T.block("B"):
            vi = T.axis.spatial(64, i)
            B[vi] = A[vi] // d
"""


@pytest.fixture
def threads():
    """Set the team size for a test and restore the caller's afterwards."""
    before = current_threads()
    yield set_threads
    set_threads(before)


@pytest.mark.parametrize("team", [1, 2, 3, 5])
def test_a_body_reading_the_enclosing_locals_matches_the_interpreter_at_every_team(threads, team):
    threads(team)
    func = parse(CAPTURES)
    check_same_results(func, func, scalars={"scale": 0.5})


def test_the_outlined_body_receives_the_locals_with_their_c_types():
    source = tessel.build(parse(CAPTURES)).source
    header = next(line for line in source.splitlines() if "captures_parallel_body(" in line)
    assert "float* restrict A" in header and "float scale" in header
    assert "int32_t b" in header
    assert "float* shift" in header and "float* total" in header


@pytest.mark.parametrize("rows", [1, 2, 3, 7, 64, 1001])
def test_symbolic_extents_of_any_size_run_every_row_once(threads, rows):
    threads(3)
    module = tessel.build(parse(SYMBOLIC))
    a = np.random.default_rng(rows).normal(size=(rows, 4)).astype("float32")
    b = np.full_like(a, np.nan)
    module(a, b)
    np.testing.assert_array_equal(b, a * 2 + np.arange(rows, dtype="float32")[:, None])


def test_a_division_by_zero_in_a_parallel_loop_is_an_error_after_the_loop(threads):
    threads(2)
    module = tessel.build(parse(DIVIDES))
    a = np.arange(64, dtype="int32")
    b = np.zeros(64, "int32")
    with pytest.raises(RuntimeCallError, match="division by zero in the parallel loop `i`"):
        module(a, b, 0)
    module(a, b, 3)  # the status of the failed call is not left behind
    np.testing.assert_array_equal(b, a // 3)


def test_calls_from_several_python_threads_at_once_all_get_their_results(threads):
    threads(2)
    module = tessel.build(parse(SYMBOLIC))
    errors = []

    def work(seed: int) -> None:
        rng = np.random.default_rng(seed)
        for _ in range(50):
            a = rng.normal(size=(int(rng.integers(1, 300)), 4)).astype("float32")
            b = np.empty_like(a)
            module(a, b)
            expected = a * 2 + np.arange(len(a), dtype="float32")[:, None]
            if not np.array_equal(b, expected):
                errors.append(seed)

    workers = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert errors == []


def _run_in_child(queue) -> None:
    module = tessel.build(parse(SYMBOLIC))
    a = np.arange(40, dtype="float32").reshape(10, 4)
    b = np.zeros_like(a)
    module(a, b)
    queue.put(bool(np.array_equal(b, a * 2 + np.arange(10, dtype="float32")[:, None])))


def test_a_forked_child_runs_parallel_loops_of_a_library_its_parent_used(threads):
    threads(2)
    module = tessel.build(parse(SYMBOLIC))
    a = np.ones((50, 4), "float32")
    module(a, np.zeros_like(a))  # the parent's pool has started its worker
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_run_in_child, args=(queue,))
    child.start()
    child.join(timeout=60)
    assert child.exitcode == 0
    assert queue.get(timeout=5) is True


_LIFECYCLE = """
import os, time
import numpy as np
import tessel
from tessel.runtime.threads import set_threads
from tessel.script import parse

def threads_now():
    return len(os.listdir("/proc/self/task"))

module = tessel.build(parse('''{program}'''))
a = np.ones((64, 4), "float32")
base = threads_now()
set_threads(1)
module(a, np.zeros_like(a))
alone = threads_now()
set_threads(3)
module(a, np.zeros_like(a))
team = threads_now()
deadline = time.time() + 10
while threads_now() > base and time.time() < deadline:
    time.sleep(0.1)
print(base, alone, team, threads_now())
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs Linux's /proc")
def test_the_pool_starts_team_minus_one_workers_and_ends_them_when_idle():
    script = _LIFECYCLE.format(program=SYMBOLIC)
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    base, alone, team, after = map(int, result.stdout.split())
    assert alone == base  # one thread: the loop runs on the caller, no worker starts
    assert team == base + 2  # three threads: the caller and two workers
    assert after == base  # a worker idle for a second ends


def test_used_names_skips_comments_and_string_literals():
    text = 'x = y + 1; /* z */ // w\n tessel_set_error("v is bad");'
    assert used_names(text) == {"x", "y", "tessel_set_error"}


def test_an_outlined_body_name_does_not_clash_with_a_function_of_that_name():
    program = """
@I.ir_module
class Module:
    @T.prim_func
    def f_parallel(A: T.Buffer((16,), "float32")):
        for i in range(16):
            with T.block("A"):
                vi = T.axis.spatial(16, i)
                A[vi] = A[vi] + T.float32(1)

    @T.prim_func
    def f(A: T.Buffer((16,), "float32")):
        for i in T.parallel(16):
            with T.block("A"):
                vi = T.axis.spatial(16, i)
                A[vi] = A[vi] * T.float32(2)
"""
    module = tessel.build(parse(program))
    a = np.arange(16, dtype="float32")
    module["f"](a)
    module["f_parallel"](a)
    np.testing.assert_array_equal(a, np.arange(16, dtype="float32") * 2 + 1)


@T.prim_func
def constant_in_the_loop(A: T.Buffer((16, 8), "float32"), B: T.Buffer((16, 8), "float32")):
    for i in T.parallel(16):
        W = T.allocate_const([0.5, -1.25, 3.0, 1e-7, 2.5, 0.1, -0.0, 7.0], "float32", [8])
        for j in range(8):
            B[i, j] = A[i, j] * W[j]


@pytest.mark.parametrize(
    "target", [Target(link_params=True), Target(link_params=False)], ids=["linked", "table"]
)
def test_a_constant_declared_inside_the_loop_is_read_through_the_table_or_the_blob(threads, target):
    threads(2)
    a = np.random.default_rng(3).normal(size=(16, 8)).astype("float32")
    b = np.zeros_like(a)
    tessel.build(constant_in_the_loop, target)(a, b)
    weights = np.array([0.5, -1.25, 3.0, 1e-7, 2.5, 0.1, -0.0, 7.0], "float32")
    np.testing.assert_array_equal(b, a * weights)
