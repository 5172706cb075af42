"""Computes on string tensors (ONNX's StringConcat, Equal on strings, RegexFullMatch and
StringNormalizer's case change): each element through a function of the C string runtime
(tessel/codegen/c_strings.py), called as `T.call_pure_extern`, broadcast as NumPy does.

`regex_full_match` takes the pattern already in POSIX extended syntax, anchored
(tessel/graph/op/string_regex.py translates RE2's syntax).
"""

from __future__ import annotations

from tessel import te
from tessel.ir.expr import StringImm
from tessel.support.dtype import DataType
from tessel.te.tensor import Tensor
from tessel.tir.builtin import call_extern
from tessel.topi.broadcast import _apply
from tessel.topi.utils import expect_tensor, op_error

CASE_ACTIONS = {"NONE": -1, "LOWER": 0, "UPPER": 1}


def _strings(op: str, argument: str, value: object) -> Tensor:
    tensor = expect_tensor(op, argument, value)
    if tensor.dtype != "string":
        raise op_error(op, argument, f"must be a string tensor, got {tensor.dtype}")
    return tensor


def _string_only(op: str, argument: str, dtype: DataType) -> None:
    if not dtype.is_string:
        raise op_error(op, argument, f"must be a string tensor, got {dtype}")


def _elementwise(op: str, a: Tensor, b: Tensor, dtype: str, function: str) -> Tensor:
    """`function` of each broadcast pair of strings, a C function giving `dtype`."""
    return _apply(
        op,
        {"lhs": a, "rhs": b},
        lambda x, y: call_extern(dtype, function, x, y, pure=True),
        _string_only,
    )


def string_concat(lhs: Tensor, rhs: Tensor) -> Tensor:
    """Each pair of strings joined, broadcast (ONNX StringConcat)."""
    return _elementwise("string_concat", lhs, rhs, "string", "tessel_string_concat")


def string_equal(lhs: Tensor, rhs: Tensor) -> Tensor:
    """Whether each pair of strings holds the same bytes, broadcast (ONNX Equal on strings)."""
    return _elementwise("string_equal", lhs, rhs, "bool", "tessel_string_equal")


def regex_full_match(data: Tensor, posix_pattern: str, ignore_case: bool = False) -> Tensor:
    """Whether each string matches `posix_pattern` (POSIX extended, anchored) as a whole."""
    data = _strings("regex_full_match", "data", data)
    pattern = StringImm(posix_pattern)
    flags = int(ignore_case)
    return te.compute(
        data.shape,
        lambda *i: call_extern(
            "bool", "tessel_string_regex_full_match", data(*i), pattern, flags, pure=True
        ),
        name="T_regex_full_match",
        tag="string",
    )


def change_case(data: Tensor, action: str) -> Tensor:
    """Each string in upper or lower case (code point by code point), or as it is ("NONE")."""
    data = _strings("change_case", "data", data)
    if action not in CASE_ACTIONS:
        raise op_error("change_case", "action", f"must be one of {list(CASE_ACTIONS)}")
    if action == "NONE":
        return te.compute(data.shape, lambda *i: data(*i), name="T_copy", tag="string")
    upper = CASE_ACTIONS[action]
    return te.compute(
        data.shape,
        lambda *i: call_extern("string", "tessel_string_change_case", data(*i), upper, pure=True),
        name="T_change_case",
        tag="string",
    )
