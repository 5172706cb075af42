"""The ONNX importer (docs/architecture.md §3): `from_onnx(model) -> (IRModule, params)`.

One table (`table.CONVERTERS`) maps each ONNX op type and opset range to a converter; the
converters live by family in `converters/`. Shape subgraphs fold to constants at import, and every
unsupported operator is reported at once, before anything converts.
"""

from tessel.frontend.onnx.errors import (
    DynamicInputError,
    OnnxImportError,
    UnsupportedOperatorError,
)
from tessel.frontend.onnx.importer import from_onnx
from tessel.frontend.onnx.table import supported_operators

__all__ = [
    "DynamicInputError",
    "OnnxImportError",
    "UnsupportedOperatorError",
    "from_onnx",
    "supported_operators",
]
