"""Named dimensions of graph inputs: ONNX's `dim_param`s fixed by name (onnxruntime's free
dimension overrides), so that one size given for `batch` fixes it in every input naming it.

A step towards symbolic shapes (one variable per name): until they exist, a name is given one
size at import, as `--shape` gives an input's whole shape.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import onnx

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
    dims: Mapping[str, int], inputs: Sequence[onnx.ValueInfoProto], prefix: str = ""
) -> dict[str, int]:
    """`dims` as {name: size}, after checking that each name is a dimension of some graph input
    and each size a whole number of at least 1 (an OnnxImportError naming the bad one)."""
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
    checked = {}
    for name, size in dims.items():
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise OnnxImportError(
                f"{prefix}dimension `{name}`: expected a whole number of at least 1, got {size!r}",
                rule="onnx.dimension-size",
            )
        checked[name] = size
    return checked


def fix_named(dims: list[int | str] | None, sizes: Mapping[str, int]) -> list[int | str] | None:
    """`dims` with every named dimension that `sizes` gives replaced by its size."""
    if dims is None or not sizes:
        return dims
    return [sizes.get(d, d) if isinstance(d, str) else d for d in dims]


__all__ = ["checked_dims", "fix_named", "input_dims"]
