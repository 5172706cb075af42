"""ONNX's conformance suite: every node test of onnx.backend.test run by Tessel's ONNX backend
(tessel.frontend.onnx.backend) and compared with ONNX's own rule (shape, dtype, the test's rtol
and atol).

The tests Tessel does not pass are listed once, in `EXPECTED_FAILURES` (expected_failures.py
beside this file), each with its reason. A listed test must fail with a clean refusal (a
UserError naming the operator or feature): a wrong result or a crash fails the run even for a
listed test, and so does a listed test that passes, so the list stays exact. The few tests whose
expected outputs are less exact than Tessel's (INEXACT_REFERENCES, each with the measured
reason) must run and fail onnx's comparison.
`python benchmarks/onnx_conformance.py` runs the same tests on Tessel and onnxruntime side by side
and prints the table per operator.
"""

from __future__ import annotations

import functools
import re
import warnings
from collections.abc import Callable
from typing import Any

import onnx.backend.test
import pytest
from expected_failures import EXPECTED_FAILURES, INEXACT_REFERENCES

from tessel.frontend.onnx.backend import TesselBackend
from tessel.support.errors import UserError

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # the suite's generators overflow casts on purpose
    _suite = onnx.backend.test.BackendTest(TesselBackend, __name__)


def _expect_refusal(test: Callable[..., Any], reason: str) -> Callable[..., Any]:
    """`test`, which must fail with a clean refusal (then it is an expected failure)."""

    @functools.wraps(test)
    def run(self: Any) -> None:
        try:
            test(self)
        except UserError:
            pytest.xfail(reason)
        pytest.fail(f"passes now: remove it from EXPECTED_FAILURES ({reason})")

    return run


def _expect_comparison_failure(test: Callable[..., Any], reason: str) -> Callable[..., Any]:
    """`test`, which must run and then fail onnx's comparison (its reference is inexact)."""

    @functools.wraps(test)
    def run(self: Any) -> None:
        try:
            test(self)
        except (AssertionError, TypeError):  # what Runner.assert_similar_outputs raises
            pytest.xfail(reason)
        pytest.fail(f"passes now: remove it from INEXACT_REFERENCES ({reason})")

    return run


def _listed(name: str, table: dict[str, str]) -> str | None:
    test = name.removesuffix("_cpu")
    for pattern, reason in table.items():
        if re.fullmatch(pattern, test):
            return reason
    return None


# Only the node tests: the model tests download models, which the tests never do.
OnnxBackendNodeModelTest = _suite.test_cases["OnnxBackendNodeModelTest"]
for _name in [n for n in vars(OnnxBackendNodeModelTest) if n.startswith("test_")]:
    if not _name.endswith("_cpu"):  # CPU is the one device Tessel's backend runs on
        delattr(OnnxBackendNodeModelTest, _name)
        continue
    _test = getattr(OnnxBackendNodeModelTest, _name)
    if (_reason := _listed(_name, EXPECTED_FAILURES)) is not None:
        setattr(OnnxBackendNodeModelTest, _name, _expect_refusal(_test, _reason))
    elif (_reason := _listed(_name, INEXACT_REFERENCES)) is not None:
        setattr(OnnxBackendNodeModelTest, _name, _expect_comparison_failure(_test, _reason))
