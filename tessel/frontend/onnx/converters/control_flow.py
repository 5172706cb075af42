"""Control flow and sequences where shapes are static: If, Loop, Scan, Sequence*."""

from __future__ import annotations

from tessel.frontend.onnx.opsets import Entry

TABLE: dict[str, tuple[Entry, ...]] = {}
