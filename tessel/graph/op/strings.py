"""Operators on string tensors (ONNX's; Relay has none): `string.concat`, `string.equal`,
`string.regex_full_match` and `string.change_case`, each element through the C string runtime
(tessel/topi/strings.py). Their references compute on object arrays of `str`.

Operators whose result shape depends on the strings (StringSplit, StringNormalizer's stopwords)
are not graph operators: the ONNX importer computes them when their input is known, and needs
dynamic shapes otherwise (issue 29).
"""

from __future__ import annotations

import numpy as np

from tessel.graph.op.common import broadcast_shapes, same_as
from tessel.graph.op.op_def import Args, Attr, Attrs, OpDef, OpPattern
from tessel.graph.op.string_regex import full_match, translate
from tessel.graph.ty import TensorType, Type
from tessel.support.dtype import text_of
from tessel.support.errors import UserError
from tessel.topi.strings import (
    CASE_ACTIONS,
    change_case,
    regex_full_match,
    string_concat,
    string_equal,
)


def _string_tensor(args: Args, name: str) -> TensorType:
    ty = args.tensor(name)
    if ty.dtype != "string":
        raise args.error(name, f"must be a string tensor, got {ty.dtype}")
    return ty


def _broadcast_rel(dtype: str):
    def relation(args: Args, attrs: Attrs) -> Type:
        _string_tensor(args, "lhs")
        _string_tensor(args, "rhs")
        return TensorType(broadcast_shapes(args, ("lhs", "rhs")), dtype)

    return relation


def _regex_rel(args: Args, attrs: Attrs) -> Type:
    data = _string_tensor(args, "data")
    try:
        translate(attrs.pattern)
    except UserError as err:
        raise args.error("pattern", err.message) from err
    return same_as(data, dtype="bool")


def _case_rel(args: Args, attrs: Attrs) -> Type:
    data = _string_tensor(args, "data")
    if attrs.action not in CASE_ACTIONS:
        raise args.error("action", f"is {attrs.action!r}; it must be one of {list(CASE_ACTIONS)}")
    return data


def _strings(shape: tuple[int, ...], values: list[str]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out.reshape(shape)


def _concat_ref(lhs: np.ndarray, rhs: np.ndarray, *, attrs: Attrs) -> np.ndarray:
    a, b = np.broadcast_arrays(lhs.astype(object), rhs.astype(object))
    return _strings(a.shape, [text_of(x) + text_of(y) for x, y in zip(a.flat, b.flat, strict=True)])


def _equal_ref(lhs: np.ndarray, rhs: np.ndarray, *, attrs: Attrs) -> np.ndarray:
    a, b = np.broadcast_arrays(lhs.astype(object), rhs.astype(object))
    return np.array(
        [text_of(x) == text_of(y) for x, y in zip(a.flat, b.flat, strict=True)], bool
    ).reshape(a.shape)


def _regex_ref(data: np.ndarray, *, attrs: Attrs) -> np.ndarray:
    pattern = translate(attrs.pattern)
    return np.array([full_match(pattern, text_of(s)) for s in data.flat], bool).reshape(data.shape)


def simple_case(text: str, action: str) -> str:
    """`text` with each code point in the case `action` asks, where that is one code point (the
    simple mapping, as towupper/towlower: "ß" stays "ß"); "NONE" leaves it."""
    if action == "NONE":
        return text
    convert = str.upper if action == "UPPER" else str.lower
    return "".join(m if len(m := convert(c)) == 1 else c for c in text)


def _case_ref(data: np.ndarray, *, attrs: Attrs) -> np.ndarray:
    return _strings(data.shape, [simple_case(text_of(s), attrs.action) for s in data.flat])


def _regex_lower(data, *, attrs: Attrs):
    translated = translate(attrs.pattern)
    return regex_full_match(data, translated.posix, translated.ignore_case)


OPERATORS = (
    OpDef(
        "string.concat",
        ("lhs", "rhs"),
        (),
        _broadcast_rel("string"),
        lambda a, b, *, attrs: string_concat(a, b),
        _concat_ref,
        OpPattern.OPAQUE,
        "Each pair of strings joined, broadcast (ONNX StringConcat).",
    ),
    OpDef(
        "string.equal",
        ("lhs", "rhs"),
        (),
        _broadcast_rel("bool"),
        lambda a, b, *, attrs: string_equal(a, b),
        _equal_ref,
        OpPattern.OPAQUE,
        "Whether each pair of strings is the same, broadcast (ONNX Equal on strings).",
    ),
    OpDef(
        "string.regex_full_match",
        ("data",),
        (Attr("pattern", "str"),),
        _regex_rel,
        _regex_lower,
        _regex_ref,
        OpPattern.OPAQUE,
        "Whether each string matches `pattern` (RE2 syntax) as a whole (ONNX RegexFullMatch).",
    ),
    OpDef(
        "string.change_case",
        ("data",),
        (Attr("action", "str", "NONE"),),
        _case_rel,
        lambda x, *, attrs: change_case(x, attrs.action),
        _case_ref,
        OpPattern.OPAQUE,
        "Each string in upper or lower case, code point by code point (StringNormalizer's "
        "case_change_action).",
    ),
)
