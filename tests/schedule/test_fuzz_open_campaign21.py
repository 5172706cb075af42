"""Failures the 20000-case campaign of seed 21 found and that are not fixed yet (issue 12).

Each case is regenerated from the campaign's seed and index, so `python tools/fuzz_schedules.py
--cases N --seed 21` shows the same failure. strict=True: a fix makes these pass and the marker
must then go.
"""

import pytest

from tessel.testing.fuzz import campaign
from tessel.testing.fuzz.case import Options


def _failure(index: int):
    return campaign.run_in_process(21, [index], Options())[0].result.failure


@pytest.mark.xfail(strict=True, reason="the C of case 1933 is wrong at -O3 only; right at -O0..-O2 "
                   "and with -fno-tree-slp-vectorize (a gcc 12 SLP miscompile, or UB it exploits)")
def test_campaign_21_case_1933_split_without_unit_iters_then_compute_at():
    assert _failure(1933) is None


@pytest.mark.xfail(strict=True, reason="split, reorder, reverse_compute_at read T2[1] before it "
                   "is written (case 2569); there before this session's changes")
def test_campaign_21_case_2569_reorder_then_reverse_compute_at():
    assert _failure(2569) is None
