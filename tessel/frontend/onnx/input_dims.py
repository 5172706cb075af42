"""Named dimensions of graph inputs: ONNX's `dim_param`s fixed by name (onnxruntime's free
dimension overrides), so that one size given for `batch` fixes it in every input naming it.

A name given None or bounds (min, max) instead of a size stays a shape symbol, one per name
(tessel/arith/dims.py), so `main` takes any size for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import onnx

from tessel.arith.dims import ShapeSymbol, symbol
from tessel.frontend.onnx.errors import OnnxImportError


def input_dims(proto: onnx.ValueInfoProto) -> list[int | str] | None:
    """The dimensions a graph input declares: a size, its `dim_param` name, or "?" for an
    unnamed dynamic one; None when the model gives no shape."""
    tensor = proto.type.tensor_type
    if not tensor.HasField("shape"):
        return None
    return [
        d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in tensor.shape.dim
    ]


def checked_dims(
    dims: Mapping[str, Any], inputs: Sequence[onnx.ValueInfoProto], prefix: str = ""
) -> tuple[dict[str, int], dict[str, ShapeSymbol]]:
    """`dims` as ({name: size}, {name: symbol}), after checking that each name is a dimension
    of some graph input and each value a whole number of at least 1 (a fixed size), None (a
    symbol of sizes from 1) or bounds (min, max) with 0 <= min <= max, max None for no upper
    bound (an OnnxImportError naming the bad one)."""
    named = sorted(
        {d for proto in inputs for d in input_dims(proto) or () if isinstance(d, str) and d != "?"}
    )
    unknown = sorted(set(dims) - set(named))
    if unknown:
        listed = ", ".join(f"`{n}`" for n in named) or "none"
        raise OnnxImportError(
            f"{prefix}sizes given for the dimensions {unknown}, which no graph input names; the "
            f"named dimensions of its inputs are {listed}",
            rule="onnx.unknown-dimension",
        )
    checked: dict[str, int] = {}
    symbols: dict[str, ShapeSymbol] = {}
    for name, size in dims.items():
        if size is None:
            symbols[name] = symbol(name, 1)
        elif _is_bounds(size):
            symbols[name] = symbol(name, size[0], size[1])
        elif isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise OnnxImportError(
                f"{prefix}dimension `{name}`: expected a whole number of at least 1, None (any "
                f"size) or bounds (min, max), got {size!r}",
                rule="onnx.dimension-size",
            )
        else:
            checked[name] = size
    return checked, symbols


def _is_bounds(value: Any) -> bool:
    """(min, max) with 0 <= min <= max, or (min, None) without an upper bound."""
    if not isinstance(value, tuple | list) or len(value) != 2:
        return False
    low, high = value
    if not _whole(low) or low < 0:
        return False
    return high is None or (_whole(high) and low <= high)


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def fix_named(dims: list[int | str] | None, sizes: Mapping[str, Any]) -> list[Any] | None:
    """`dims` with every named dimension that `sizes` gives replaced by its size (or symbol)."""
    if dims is None or not sizes:
        return dims
    return [sizes.get(d, d) if isinstance(d, str) else d for d in dims]


__all__ = ["checked_dims", "fix_named", "input_dims"]
