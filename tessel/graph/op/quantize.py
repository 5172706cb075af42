"""Integer quantisation operators: quantize, dequantize and integer matrix products."""

from __future__ import annotations

from tessel.graph.op.op_def import OpDef

OPERATORS: tuple[OpDef, ...] = ()
