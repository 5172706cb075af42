"""Worker processes for a compile's independent pieces: results in order, each reported as it
arrives, and None (the caller does the work) whenever the workers cannot do all of it."""

from __future__ import annotations

import os

import pytest

from tessel.support.errors import UserError
from tessel.support.worker_processes import compile_jobs, map_in_workers, usable_cores


def test_results_come_back_in_order_from_other_processes_and_each_is_reported():
    done = []
    results = map_in_workers(lambda i: (i * i, os.getpid()), 5, jobs=2, on_done=done.append)
    assert results is not None
    assert [square for square, _ in results] == [0, 1, 4, 9, 16]
    assert os.getpid() not in {pid for _, pid in results}
    assert sorted(done) == [0, 1, 2, 3, 4]


def test_work_sees_this_process_memory_without_being_pickled():
    table = {"unpicklable": lambda: 3}  # a lambda cannot be pickled; forked workers see it
    assert map_in_workers(lambda i: table["unpicklable"]() + i, 3, jobs=2) == [3, 4, 5]


def test_one_job_or_one_piece_is_left_to_the_caller():
    assert map_in_workers(lambda i: i, 5, jobs=1) is None
    assert map_in_workers(lambda i: i, 1, jobs=4) is None


def test_a_piece_that_raises_gives_none():
    def work(i):
        if i == 2:
            raise ValueError("no")
        return i

    assert map_in_workers(work, 4, jobs=2) is None


def test_a_worker_that_dies_gives_none():
    def work(i):
        if i == 1:
            os._exit(3)
        return i

    assert map_in_workers(work, 3, jobs=2) is None


def test_a_result_that_cannot_be_pickled_gives_none():
    assert map_in_workers(lambda i: lambda: i, 2, jobs=2) is None


def test_jobs_are_the_given_count_else_the_usable_cores():
    assert compile_jobs(3) == 3
    assert compile_jobs(None) == usable_cores() == len(os.sched_getaffinity(0))


@pytest.mark.parametrize("jobs", [0, -2, "two", 1.5, True])
def test_a_bad_jobs_count_is_a_clear_error(jobs):
    with pytest.raises(UserError, match="jobs must be a positive integer or None"):
        compile_jobs(jobs)
