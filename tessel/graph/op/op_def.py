"""What an operator of the graph IR is (docs/architecture.md §8): its arguments, attribute schema,
type relation, lowering to TOPI, fusion pattern and NumPy reference, as one `OpDef`."""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tessel.arith.dims import normalize_dim
from tessel.graph.op.elementwise_semantics import BINARY_NAMES
from tessel.graph.ty import TensorType, TupleType, Type
from tessel.graph.type_util import type_str
from tessel.ir.expr import PrimExpr
from tessel.ir.virtual_device import VirtualDevice
from tessel.support.dtype import DataType
from tessel.support.errors import UserError
from tessel.support.frozen_map import FrozenMap


class OpTypeError(UserError):
    """An operator was called with arguments or attributes its type relation rejects."""


class OpPattern(enum.IntEnum):
    """How an operator fuses (Relay's OpPatternKind, with its numbering)."""

    ELEMWISE = 0
    BROADCAST = 1
    INJECTIVE = 2
    COMM_REDUCE = 3
    OUT_ELEMWISE_FUSABLE = 4
    TUPLE = 7
    OPAQUE = 8


REQUIRED = object()  # the default of an attribute that every call must give


def _integer(value: Any) -> int:
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
        raise TypeError("an integer")
    return int(value)


def _number(value: Any) -> float:
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | float | np.number):
        raise TypeError("a number")
    return float(value)


def _boolean(value: Any) -> bool:
    if isinstance(value, bool | np.bool_) or (isinstance(value, int) and value in (0, 1)):
        return bool(value)
    raise TypeError("a bool")


def _string(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("a string")
    return value


def _ints(value: Any) -> tuple[int, ...]:
    if isinstance(value, int | np.integer) and not isinstance(value, bool):
        return (int(value),)
    if not isinstance(value, Sequence | np.ndarray) or isinstance(value, str):
        raise TypeError("a list of integers")
    return tuple(_integer(v) for v in value)


def _dims(value: Any) -> tuple[Any, ...]:
    """Integers or symbolic integer expressions (tessel/arith/dims.py): sizes in attributes
    that an imported shape computation gives (a Reshape to (batch, seq, 12, 32))."""
    if isinstance(value, PrimExpr):
        value = (value,)
    if not isinstance(value, Sequence | np.ndarray) or isinstance(value, str):
        raise TypeError("a list of integers or integer expressions")
    return tuple(normalize_dim(v) if isinstance(v, PrimExpr) else _integer(v) for v in value)


def _dtype(value: Any) -> str:
    if value == "":
        return ""
    try:
        return str(DataType.of(value))
    except (UserError, TypeError) as err:
        raise TypeError("a dtype such as 'float32'") from err


def _virtual_device(value: Any) -> VirtualDevice:
    if not isinstance(value, VirtualDevice):
        raise TypeError("a VirtualDevice (in text: meta[VirtualDevice][i])")
    return value


_CONVERTERS: dict[str, Callable[[Any], Any]] = {
    "int": _integer,
    "float": _number,
    "bool": _boolean,
    "str": _string,
    "ints": _ints,
    "dims": _dims,
    "floats": lambda v: tuple(_number(x) for x in (v if isinstance(v, Sequence) else [v])),
    "dtype": _dtype,
    "int_or_ints": lambda v: _integer(v) if isinstance(v, int | np.integer) else _ints(v),
    "ints_list": lambda v: tuple(_ints(row) for row in v),
    "virtual_device": _virtual_device,
    "any": lambda v: v,
}


@dataclass(frozen=True)
class Attr:
    """One attribute of an operator: its Relay name, kind and default (`optional`: None allowed)."""

    name: str
    kind: str
    default: Any = REQUIRED
    optional: bool = False

    def convert(self, op: str, value: Any) -> Any:
        """`value` checked and normalised (lists to tuples, ints to floats, ...)."""
        if value is None and self.optional:
            return None
        try:
            return _CONVERTERS[self.kind](value)
        except (TypeError, ValueError) as err:
            raise OpTypeError(
                f"{op}: attribute `{self.name}` must be {err}, got {value!r}",
                rule="graph.op-attr",
            ) from err


class Attrs(FrozenMap):
    """The attributes of one call, complete with defaults; read them as `attrs.strides`."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        try:
            return self._data[name]
        except KeyError:
            raise AttributeError(name) from None


class Args:
    """The argument types of one call, as a type relation reads them; errors name the operator
    and the argument (or attribute) at fault."""

    def __init__(self, op: OpDef, types: Sequence[Type]) -> None:
        self.op, self.types = op, tuple(types)
        self.by_name = dict(zip(op.arguments, self.types, strict=True))

    def error(self, name: str, message: str, hint: str | None = None) -> OpTypeError:
        """The error for argument or attribute `name`: `<op>: argument `name` <message>`."""
        kind = "argument" if name in self.by_name else "attribute"
        return OpTypeError(
            f"{self.op.name}: {kind} `{name}` {message}", rule="graph.op-type", hint=hint
        )

    def tensor(self, name: str, *, ndim: int | Sequence[int] | None = None) -> TensorType:
        """Argument `name`, which must be a tensor (of rank `ndim` when given)."""
        ty = self.by_name[name]
        if not isinstance(ty, TensorType):
            raise self.error(name, f"must be a tensor, got {type_str(ty)}")
        ranks = (ndim,) if isinstance(ndim, int) else ndim
        if ranks is not None and ty.ndim not in ranks:
            wanted = " or ".join(str(r) for r in ranks)
            raise self.error(name, f"must have rank {wanted}, got {type_str(ty)}")
        return ty

    def tensors(self, name: str) -> tuple[TensorType, ...]:
        """Argument `name`, which must be a tuple of tensors."""
        ty = self.by_name[name]
        if not isinstance(ty, TupleType) or not all(isinstance(f, TensorType) for f in ty.fields):
            raise self.error(name, f"must be a tuple of tensors, got {type_str(ty)}")
        return ty.fields  # type: ignore[return-value]  # checked all TensorTypes just above

    def same_dtype(self, name: str, other: str) -> None:
        """Arguments `name` and `other` must share a dtype."""
        a, b = self.tensor(other), self.tensor(name)
        if a.dtype != b.dtype:
            raise self.error(name, f"has dtype {b.dtype} but `{other}` has {a.dtype}")

    def axis(self, name: str, axis: int, ndim: int) -> int:
        """Attribute `name` (an axis) in [0, ndim), negative axes counting from the end."""
        if not -ndim <= axis < ndim:
            raise self.error(name, f"{axis} is out of range for rank {ndim}")
        return axis + ndim if axis < 0 else axis


Relation = Callable[[Args, Attrs], Type]

# The operators that take string tensors (ONNX's): the string operators, and those that only
# move elements, whose computes copy a string's record like any element.
STRING_OPERATORS = frozenset(
    {
        "string.concat",
        "string.equal",
        "string.regex_full_match",
        "string.change_case",
        "reshape",
        "squeeze",
        "expand_dims",
        "transpose",
        "concatenate",
        "split",
        "strided_slice",
        "broadcast_to",
        "take",
        "stack",
        "tile",
        "repeat",
        "device_copy",
        "on_device",
    }
)


# The operators whose type relations take symbolic dimensions (tessel/arith/dims.py): every
# elementwise operator, and these, whose relations decide equalities by proof. A call of any
# other operator on a symbolic shape is refused, naming the operator, so no relation guesses.
SYMBOLIC_OPERATORS = frozenset(
    {
        *BINARY_NAMES,
        "where",
        "reshape",
        "transpose",
        "squeeze",
        "expand_dims",
        "concatenate",
        "strided_slice",
        "broadcast_to",
        "split",
        "gather",
        "gather_nd",
        "nn.batch_norm",
        "take",
        "nn.dense",
        "nn.matmul",
        "nn.batch_matmul",
        "nn.bias_add",
        "nn.batch_flatten",
        "nn.softmax",
        "nn.log_softmax",
        "nn.layer_norm",
        "nn.l2_normalize",
        "sum",
        "mean",
        "max",
        "min",
        "prod",
        "nn.conv2d",
        "nn.max_pool2d",
        "nn.avg_pool2d",
        "nn.global_avg_pool2d",
        "nn.global_max_pool2d",
    }
)


def _symbolic_argument(arguments: Sequence[str], types: Sequence[Type]) -> tuple[str, str] | None:
    """The first argument with a symbolic dimension and its type's text, or None."""
    for name, ty in zip(arguments, types, strict=True):
        fields = ty.fields if isinstance(ty, TupleType) else (ty,)
        for field in fields:
            if isinstance(field, TensorType) and not field.is_static:
                return name, type_str(field)
    return None


def _refuse_strings(op: str, arguments: Sequence[str], types: Sequence[Type]) -> None:
    for name, ty in zip(arguments, types, strict=True):
        fields = ty.fields if isinstance(ty, TupleType) else (ty,)
        if any(isinstance(f, TensorType) and f.dtype == "string" for f in fields):
            raise OpTypeError(
                f"{op}: argument `{name}` is a string tensor, which `{op}` does not take",
                rule="graph.op-strings",
                hint="strings are concatenated, compared, matched, case-changed and moved "
                "(reshaped, sliced, gathered); not computed on",
            )


@dataclass(frozen=True, eq=False)
class OpDef:
    """An operator: everything the graph level knows about it, defined in one place."""

    name: str
    arguments: tuple[str, ...]
    attrs: tuple[Attr, ...]
    relation: Relation  # argument types + attrs -> result type
    lower: Callable[..., Any]  # (te tensors, lists of them for tuples, attrs) -> tensor(s)
    reference: Callable[..., Any]  # (NumPy arrays, tuples of them, attrs) -> array(s)
    pattern: OpPattern
    doc: str = ""

    def normalize_attrs(self, attrs: Mapping[str, Any] | None) -> Attrs:
        """The call's attributes checked, with defaults filled in; unknown names are errors."""
        given = dict(attrs or {})
        known = {a.name for a in self.attrs}
        unknown = sorted(set(given) - known)
        if unknown:
            raise OpTypeError(
                f"{self.name}: unknown attribute `{unknown[0]}`; "
                f"it has {sorted(known) or 'no attributes'}",
                rule="graph.op-attr",
            )
        values = {}
        for attr in self.attrs:
            if attr.name in given:
                values[attr.name] = attr.convert(self.name, given[attr.name])
            elif attr.default is REQUIRED:
                raise OpTypeError(
                    f"{self.name}: attribute `{attr.name}` is required", rule="graph.op-attr"
                )
            else:
                values[attr.name] = attr.default
        return Attrs(values)

    def infer_type(self, arg_types: Sequence[Type], attrs: Mapping[str, Any] | None) -> Type:
        """The result type of a call with `arg_types` (complete types) and `attrs`."""
        if len(arg_types) != len(self.arguments):
            raise OpTypeError(
                f"{self.name}: expects {len(self.arguments)} argument(s) "
                f"({', '.join(self.arguments)}), got {len(arg_types)}",
                rule="graph.op-arity",
            )
        normalized = attrs if isinstance(attrs, Attrs) else self.normalize_attrs(attrs)
        if self.name not in STRING_OPERATORS:
            _refuse_strings(self.name, self.arguments, arg_types)
        symbolic = _symbolic_argument(self.arguments, arg_types)
        if symbolic is None:
            return self.relation(Args(self, arg_types), normalized)
        name, text = symbolic
        if self.name not in SYMBOLIC_OPERATORS and self.pattern != OpPattern.ELEMWISE:
            raise OpTypeError(
                f"{self.name}: argument `{name}` has symbolic shape {text}, which `{self.name}` "
                "does not take yet",
                rule="graph.op-symbolic",
                hint="give the symbols sizes (tessel.frontend.from_onnx's `dims`, or --shape)",
            )
        try:
            return self.relation(Args(self, arg_types), normalized)
        except TypeError as err:  # a relation met a comparison no proof decides
            raise OpTypeError(
                f"{self.name}: cannot type the call for argument `{name}` of symbolic shape "
                f"{text}: {err}",
                rule="graph.op-symbolic",
            ) from None

    def evaluate(self, args: Sequence[Any], attrs: Mapping[str, Any] | None) -> Any:
        """The NumPy reference applied to argument values (arrays, tuples of arrays)."""
        normalized = attrs if isinstance(attrs, Attrs) else self.normalize_attrs(attrs)
        return self.reference(*args, attrs=normalized)

    def lower_to_te(self, args: Sequence[Any], attrs: Mapping[str, Any] | None) -> Any:
        """The TOPI computation applied to te tensors (lists of them for tuple arguments)."""
        normalized = attrs if isinstance(attrs, Attrs) else self.normalize_attrs(attrs)
        return self.lower(*args, attrs=normalized)
