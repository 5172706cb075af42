"""Attention and recurrent layers: Attention, RotaryEmbedding, LSTM, GRU, RNN."""

from __future__ import annotations

from tessel.frontend.onnx.opsets import Entry

TABLE: dict[str, tuple[Entry, ...]] = {}
