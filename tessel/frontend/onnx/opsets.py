"""The opsets the importer covers and how a converter module declares the ones it implements.

Each converter module has a `TABLE`: ONNX op type -> (first opset, last opset, converter) entries,
an entry per range where the operator's semantics differ (Softmax's axis at 13, Pad's pads
attribute before 11, ...). Ranges end at LAST_OPSET, the newest opset of the pinned onnx release:
when onnx is upgraded, tests/frontend/onnx/test_opsets.py fails until every operator that changed
in the new opset is reviewed (onnxruntime registers its kernels per range in the same way).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Converter = Callable[[Any], Any]
Entry = tuple[int, int, Converter]

FIRST_OPSET = 7
LAST_OPSET = 28  # onnx 1.23's newest


def every_opset(
    converter: Converter, first: int = FIRST_OPSET, last: int = LAST_OPSET
) -> tuple[Entry, ...]:
    """One converter for every opset from `first` to `last` (the newest covered by default)."""
    return ((first, last, converter),)
