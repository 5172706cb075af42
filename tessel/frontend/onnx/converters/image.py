"""Image operators: Resize, GridSample, AffineGrid, DepthToSpace/SpaceToDepth, Col2Im, CenterCropPad."""

from __future__ import annotations

from tessel.frontend.onnx.opsets import Entry

TABLE: dict[str, tuple[Entry, ...]] = {}
