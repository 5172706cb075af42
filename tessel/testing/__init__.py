"""Helpers every test uses, importable by users as `tvm.testing` is (docs/architecture.md §1)."""

from tessel.ir.structural import assert_structural_equal
from tessel.testing.differential import check_same_results
from tessel.testing.gradients import check_gradient, check_numerical_grads
from tessel.testing.layouts import check_layout_schedule, check_transformed_results
from tessel.testing.parse_errors import expect_parse_error
from tessel.testing.random_inputs import random_arguments
from tessel.testing.schedules import check_schedule

__all__ = [
    "assert_structural_equal",
    "check_gradient",
    "check_layout_schedule",
    "check_numerical_grads",
    "check_same_results",
    "check_schedule",
    "check_transformed_results",
    "expect_parse_error",
    "random_arguments",
]
