"""C text of `T.reinterpret` (tir.reinterpret): the bits of a value read as another type of
the same total width (int32 <-> float32, int64 <-> float64, uint16 <-> float16 or bfloat16,
and vectors of equal byte size, lanes included: int32x4 <-> float32x4, int64 <-> int32x2).

The bits move with `__builtin_memcpy` between two locals of a statement expression, which GCC
compiles to a register move; a pointer cast would break C's strict-aliasing rule. bfloat16 is
its bits in C (a `uint16_t`, c_types.py), so it moves like any other 16-bit type. As in TVM,
types of different widths are refused (there are no common bits), and so are bool (its C
representation is not a number's) and handles (a pointer made from bits has no C meaning
here).
"""

from __future__ import annotations

from tessel.codegen.c_names import NameScope
from tessel.codegen.c_types import c_type
from tessel.codegen.errors import CodegenError
from tessel.support.dtype import DataType


def check_reinterpretable(source: DataType, target: DataType) -> None:
    """Raise the error for a reinterpret the C backend cannot emit (rule codegen.reinterpret)."""
    if source.element.is_handle or target.element.is_handle:
        raise CodegenError(
            f"T.reinterpret between {source} and {target}: the C backend does not make or "
            "read pointers from bits",
            rule="codegen.reinterpret",
        )
    if source.element.is_bool or target.element.is_bool:
        raise CodegenError(
            f"T.reinterpret between {source} and {target}: a bool has no numeric bits",
            rule="codegen.reinterpret",
            hint="compare with zero, or cast, to convert between bool and a number",
        )
    if source.bits * source.lanes != target.bits * target.lanes:
        raise CodegenError(
            f"T.reinterpret from {source} ({source.bits * source.lanes} bits) to {target} "
            f"({target.bits * target.lanes} bits): the widths differ, so there are no common "
            "bits",
            rule="codegen.reinterpret",
            hint="use T.Cast to convert the value, or reinterpret to a type of the same width",
        )


def reinterpret_text(names: NameScope, source: DataType, target: DataType, value: str) -> str:
    """C reading the bits of `value` (C of `source`) as `target`, without aliasing."""
    check_reinterpretable(source, target)
    if source == target:
        return value
    from_type, to_type = c_type(source), c_type(target)
    src, dst = names.fresh("bits_in"), names.fresh("bits_out")
    return (
        f"({{ {from_type} {src} = {value}; {to_type} {dst}; "
        f"__builtin_memcpy(&{dst}, &{src}, sizeof {dst}); {dst}; }})"
    )
