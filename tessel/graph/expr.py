"""Graph expressions, functional in the spirit of Relay: variables, constants, calls of operators
and functions, first-class functions (closures), let, if, tuples.

Every expression may carry `checked_type`, filled in by InferType; it is derived, so structural
equality and mutators ignore it. `with_changes` carries it over to the rebuilt node, so a pass
that changes types runs InferType again (the graph passes do).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

import numpy as np

from tessel.graph.ty import TensorType, Type
from tessel.ir.expr import GlobalVar, Op
from tessel.ir.node import Node
from tessel.ir.virtual_device import VirtualDevice
from tessel.support.dtype import text_of
from tessel.support.errors import IRTypeError, UserError
from tessel.support.frozen_map import FrozenMap, freeze


@dataclass(frozen=True, slots=True, eq=False)
class Expr(Node):
    """Base of graph expressions."""

    checked_type: Type | None = field(default=None, kw_only=True, compare=False)


@dataclass(frozen=True, slots=True, eq=False)
class Var(Expr):
    """A local variable (a function parameter or a let binding); two Vars are different variables
    whatever their names. `virtual_device` is where its value lives (Relay's `virtual_device_`,
    printed `%x {virtual_device=meta[VirtualDevice][0]}: T`); None constrains nothing."""

    name_hint: str
    type_annotation: Type | None = None
    virtual_device: VirtualDevice | None = field(default=None, kw_only=True)
    structural_binding: ClassVar[str] = "var"

    def __post_init__(self) -> None:
        _check_device(self)


@dataclass(frozen=True, slots=True, eq=False)
class Constant(Expr):
    """A constant tensor (weights, shapes, scalars); `name_hint` is where it came from (an ONNX
    initializer's name, a bound parameter's), a hint like a Var's name: never compared, not
    printed (Relay's text has no place for it), and the name of the weight in a compiled or
    exported model. A pass that computes a constant from one named constant names the result
    after it (`derived_name`); one computed from several (CombineParallelDense's concatenated
    weights) or from none is unnamed, and an export calls it `constant_<k>`."""

    data: np.ndarray
    name_hint: str = field(default="", kw_only=True, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.data, np.ndarray):
            object.__setattr__(self, "data", np.asarray(self.data))
        if self.data.dtype.kind in "OUS":  # strings: an object array of `str`, as ONNX's
            object.__setattr__(self, "data", _strings(self.data))
        if self.data.flags.writeable:
            frozen = self.data.copy()
            frozen.flags.writeable = False
            object.__setattr__(self, "data", frozen)

    @property
    def tensor_type(self) -> TensorType:
        """The constant's type, known without inference."""
        dtype = "string" if self.data.dtype == object else str(self.data.dtype)
        return TensorType(tuple(int(d) for d in self.data.shape), dtype)


def _strings(data: np.ndarray) -> np.ndarray:
    """`data` as an object array of `str` (bytes read as UTF-8); any other element is an error."""
    out = np.empty(data.shape, dtype=object)
    flat = out.reshape(-1)
    for k, item in enumerate(data.reshape(-1)):
        try:
            flat[k] = text_of(item)
        except TypeError:
            raise UserError(
                f"a constant of strings holds a {type(item).__name__} at element {k}",
                rule="graph.constant-strings",
            ) from None
    return out


@dataclass(frozen=True, slots=True, eq=False)
class Call(Expr):
    """A call of an operator (`Op`), a module function (`GlobalVar`) or a function value."""

    op: Op | GlobalVar | Expr
    args: tuple[Expr, ...]
    attrs: FrozenMap[str, Any] = field(default_factory=FrozenMap)

    def __post_init__(self) -> None:
        if not isinstance(self.attrs, FrozenMap):
            object.__setattr__(self, "attrs", freeze(self.attrs))
        object.__setattr__(self, "args", tuple(self.args))
        for position, arg in enumerate(self.args):
            if not isinstance(arg, Expr | GlobalVar):
                raise IRTypeError(f"argument {position} of a call is not an expression: {arg!r}")


@dataclass(frozen=True, slots=True, eq=False)
class Function(Expr):
    """A function value: parameters, a body, an optional return type, attributes (`Primitive=1`).
    Free variables of the body are captured (a closure). `virtual_device` is where its result
    lives (Relay's `virtual_device_`, printed as a last `virtual_device=...` parameter)."""

    params: tuple[Var, ...]
    body: Expr
    ret_type: Type | None = None
    attrs: FrozenMap[str, Any] = field(default_factory=FrozenMap)
    virtual_device: VirtualDevice | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", tuple(self.params))
        if not isinstance(self.attrs, FrozenMap):
            object.__setattr__(self, "attrs", freeze(self.attrs))
        _check_device(self)


def _check_device(node: Var | Function) -> None:
    """A VirtualDevice or None; a fully unconstrained one becomes None, so a device that says
    nothing is absent, as in Relay (whose printer omits it), and never tells programs apart."""
    device = node.virtual_device
    if device is None:
        return
    if not isinstance(device, VirtualDevice):
        raise IRTypeError(f"virtual_device must be a VirtualDevice or None, not {device!r}")
    if device.is_fully_unconstrained:
        object.__setattr__(node, "virtual_device", None)


# The attribute of `main` naming its results, flattened (a frontend's output names: ONNX's), so a
# compiled and exported model keeps them.
OUTPUT_NAMES = "output_names"


@dataclass(frozen=True, slots=True, eq=False)
class Let(Expr):
    """`let var = value; body`."""

    var: Var
    value: Expr
    body: Expr


@dataclass(frozen=True, slots=True, eq=False)
class If(Expr):
    """`if (cond) { true_branch } else { false_branch }` on a scalar bool tensor."""

    cond: Expr
    true_branch: Expr
    false_branch: Expr


@dataclass(frozen=True, slots=True, eq=False)
class Tuple(Expr):
    """A tuple of values."""

    fields: tuple[Expr, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", tuple(self.fields))


@dataclass(frozen=True, slots=True, eq=False)
class TupleGetItem(Expr):
    """Field `index` of a tuple value (`%t.0`)."""

    tuple_value: Expr
    index: int


def derived_name(sources: Iterable[Expr], suffix: str) -> str:
    """The name_hint of a constant computed from `sources` (`<name><suffix>`: a weight folded
    or packed keeps its weight's name): the one name the named Constants among them share,
    else "" (several weights combined, or none named). A name already ending in `suffix` is
    kept, so a chain of folds stays `<name>_folded`."""
    names = {s.name_hint for s in sources if isinstance(s, Constant) and s.name_hint}
    if len(names) != 1:
        return ""
    (name,) = names
    return name if name.endswith(suffix) else f"{name}{suffix}"


def const(value: Any, dtype: str | None = None) -> Constant:
    """A Constant from a Python number, list or array (float32 / int64 by default, as Relay)."""
    array = np.asarray(value)
    if dtype is None:
        if array.dtype == np.float64:
            array = array.astype("float32")
        elif array.dtype == np.int64 and array.ndim == 0:
            array = array.astype("int32")
    else:
        array = array.astype(dtype)
    return Constant(array)


def with_type(expr: Expr, checked_type: Type) -> Expr:
    """`expr` carrying `checked_type` (the same object if it already does)."""
    if expr.checked_type is checked_type:
        return expr
    copy = object.__new__(type(expr))
    for item in fields(expr):  # not __dataclass_fields__: it lists ClassVars too
        object.__setattr__(copy, item.name, getattr(expr, item.name))
    object.__setattr__(copy, "checked_type", checked_type)
    return copy
