"""Small helpers on graph types: printing them for error messages, completeness, equality."""

from __future__ import annotations

from tessel.arith.dims import dims_equal, shape_text
from tessel.graph.ty import FuncType, IncompleteType, TensorType, TupleType, Type


def type_str(ty: Type | None) -> str:
    """A type as Relay's text format writes it: `Tensor[(1, 3), float32]`, `(A, B)`,
    `fn (A) -> B`."""
    if ty is None or isinstance(ty, IncompleteType):
        return "?"
    if isinstance(ty, TensorType):
        return f"Tensor[{shape_text(ty.shape)}, {ty.dtype}]"
    if isinstance(ty, TupleType):
        inner = ", ".join(type_str(f) for f in ty.fields) + ("," if len(ty.fields) == 1 else "")
        return f"({inner})"
    if isinstance(ty, FuncType):
        return f"fn ({', '.join(type_str(a) for a in ty.arg_types)}) -> {type_str(ty.ret_type)}"
    return type(ty).__name__


def is_complete(ty: Type | None) -> bool:
    """True if `ty` holds no IncompleteType anywhere."""
    if ty is None or isinstance(ty, IncompleteType):
        return False
    if isinstance(ty, TupleType):
        return all(is_complete(f) for f in ty.fields)
    if isinstance(ty, FuncType):
        return all(is_complete(a) for a in ty.arg_types) and is_complete(ty.ret_type)
    return True


def type_equal(a: Type | None, b: Type | None) -> bool:
    """Structural equality of complete types (an IncompleteType equals only itself)."""
    if a is b:
        return True
    if isinstance(a, TensorType) and isinstance(b, TensorType):
        return (
            a.dtype == b.dtype
            and len(a.shape) == len(b.shape)
            and all(dims_equal(x, y) for x, y in zip(a.shape, b.shape, strict=True))
        )
    if isinstance(a, TupleType) and isinstance(b, TupleType):
        return len(a.fields) == len(b.fields) and all(
            type_equal(x, y) for x, y in zip(a.fields, b.fields, strict=True)
        )
    if isinstance(a, FuncType) and isinstance(b, FuncType):
        return (
            len(a.arg_types) == len(b.arg_types)
            and all(type_equal(x, y) for x, y in zip(a.arg_types, b.arg_types, strict=True))
            and type_equal(a.ret_type, b.ret_type)
        )
    return False
