"""Elementwise math beyond elemwise.py: trigonometric and hyperbolic functions, bitwise operators."""

from __future__ import annotations

from tessel.graph.op.op_def import OpDef

OPERATORS: tuple[OpDef, ...] = ()
