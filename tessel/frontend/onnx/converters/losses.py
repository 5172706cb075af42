"""Losses and normalisations built from reductions: NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss, RMSNormalization, ..."""

from __future__ import annotations

from tessel.frontend.onnx.opsets import Entry

TABLE: dict[str, tuple[Entry, ...]] = {}
