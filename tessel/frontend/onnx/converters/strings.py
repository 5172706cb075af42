"""The string operators: StringConcat and RegexFullMatch (opset 20) and StringNormalizer's case
change (opset 10) as graph operators that run in the compiled model (tessel/graph/op/strings.py);
Equal on strings is converters/elementwise.py's.

StringSplit and StringNormalizer with stopwords give a shape that depends on the strings, which a
static graph cannot hold: they are computed at import when their input is known (a constant, or
an input the caller binds: tessel.frontend.onnx.backend), as ONNX's reference computes them, and
otherwise need dynamic shapes (issue 29).
"""

from __future__ import annotations

import numpy as np

from tessel.frontend.onnx.node import OnnxNode
from tessel.frontend.onnx.opsets import Entry, every_opset
from tessel.frontend.onnx.relay import call, fold
from tessel.frontend.onnx.values import Value
from tessel.graph.op.strings import simple_case

Result = object


def _strings_in(node: OnnxNode, index: int) -> None:
    dtype = node.input(index).type.dtype
    if dtype != "string":
        raise node.error(f"input {index} must be a string tensor, got {dtype}")


def convert_string_concat(node: OnnxNode) -> Result:
    """StringConcat: each pair joined, broadcast."""
    _strings_in(node, 0)
    _strings_in(node, 1)
    if node.all_constant():
        return fold("string.concat", *node.arrays())
    return call("string.concat", node.expr(0), node.expr(1))


def convert_regex_full_match(node: OnnxNode) -> Result:
    """RegexFullMatch: whether each string matches `pattern` (RE2 syntax) as a whole."""
    _strings_in(node, 0)
    pattern = node.attr("pattern")  # attributes come decoded (node.attribute_values)
    if pattern is None:
        raise node.error("needs the attribute `pattern`")
    if node.all_constant():
        return fold("string.regex_full_match", node.input(0).data, pattern=pattern)
    return call("string.regex_full_match", node.expr(0), pattern=pattern)


def convert_string_normalizer(node: OnnxNode) -> Result:
    """StringNormalizer: stopwords removed (compared in lower case unless is_case_sensitive),
    then the case changed; [C] or [1, C] in and out, one empty string where nothing is left."""
    _strings_in(node, 0)
    shape = node.shape(0)
    if len(shape) not in (1, 2) or (len(shape) == 2 and shape[0] != 1):
        raise node.error(f"takes a [C] or [1, C] tensor, got shape {list(shape)}")
    action = node.attr("case_change_action", "NONE")
    if action not in ("NONE", "LOWER", "UPPER"):
        raise node.error(f"case_change_action {action!r} is not NONE, LOWER or UPPER")
    stopwords = list(node.attr("stopwords") or [])
    if not stopwords:  # the shape stays (ONNX's inference leaves it unknown)
        if node.all_constant():
            return fold("string.change_case", node.input(0).data, action=action)
        return Value(call("string.change_case", node.expr(0), action=action), node.input(0).type)
    data = node.static(0, "strings, which stopwords filter to a shape that depends on them")
    sensitive = bool(node.attr("is_case_sensitive", 0))
    stop = set(stopwords) if sensitive else {w.lower() for w in stopwords}
    kept = [s for s in map(str, data.reshape(-1)) if (s if sensitive else s.lower()) not in stop]
    kept = [simple_case(s, action) for s in kept] or [""]
    out = np.empty(len(kept), dtype=object)
    out[:] = kept
    return out.reshape((1, -1) if len(shape) == 2 else (-1,))


def convert_string_split(node: OnnxNode) -> Result:
    """StringSplit: each string split at `delimiter` (runs of whitespace without one), at most
    `maxsplit` times, an empty string into nothing; the substrings padded with "" to the most
    any string gives, and their counts."""
    _strings_in(node, 0)
    data = node.static(0, "strings, whose splits give a shape that depends on them")
    delimiter = node.attr("delimiter", "") or None
    maxsplit = node.attr("maxsplit")
    limit = -1 if maxsplit is None else int(maxsplit)
    if limit < 0 and maxsplit is not None:
        raise node.error(f"maxsplit must be positive, got {maxsplit}")
    # An empty string has no substrings, whatever the delimiter (ONNX's reference, onnxruntime).
    parts = [str(s).split(delimiter, limit) if str(s) else [] for s in data.reshape(-1)]
    width = max((len(p) for p in parts), default=0)
    substrings = np.empty((len(parts), width), dtype=object)
    substrings[...] = ""
    for row, items in enumerate(parts):
        substrings[row, : len(items)] = items
    counts = np.array([len(p) for p in parts], np.int64).reshape(data.shape)
    return substrings.reshape((*data.shape, width)), counts


TABLE: dict[str, tuple[Entry, ...]] = {
    "StringConcat": every_opset(convert_string_concat, first=20),
    "RegexFullMatch": every_opset(convert_regex_full_match, first=20),
    "StringNormalizer": every_opset(convert_string_normalizer, first=10),
    "StringSplit": every_opset(convert_string_split, first=20),
}
