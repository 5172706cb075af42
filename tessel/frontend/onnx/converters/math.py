"""Elementwise math beyond elementwise.py: trigonometric and hyperbolic functions, activations, bitwise ops."""

from __future__ import annotations

from tessel.frontend.onnx.opsets import Entry

TABLE: dict[str, tuple[Entry, ...]] = {}
