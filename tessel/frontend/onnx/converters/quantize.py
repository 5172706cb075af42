"""Quantisation: QuantizeLinear, DequantizeLinear, QLinearMatMul, QLinearConv, MatMulInteger, ConvInteger, DynamicQuantizeLinear."""

from __future__ import annotations

from tessel.frontend.onnx.opsets import Entry

TABLE: dict[str, tuple[Entry, ...]] = {}
