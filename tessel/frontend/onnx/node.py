"""One ONNX node as a converter sees it: its imported inputs, attributes, opset and output types."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx

from tessel.frontend.onnx.errors import OnnxImportError, ValueNeededError
from tessel.frontend.onnx.values import Derived, Value
from tessel.graph.evaluate import evaluate
from tessel.graph.expr import Expr, Var
from tessel.graph.traversal import post_order_exprs
from tessel.graph.ty import TensorType


def attribute_values(proto: onnx.NodeProto) -> dict[str, Any]:
    """The node's attributes as Python values (strings decoded, tensors as arrays)."""
    attrs: dict[str, Any] = {}
    for attr in proto.attribute:
        value = onnx.helper.get_attribute_value(attr)
        if isinstance(value, bytes):
            value = value.decode()
        elif isinstance(value, onnx.TensorProto):
            value = onnx.numpy_helper.to_array(value)
        elif isinstance(value, list) and value and isinstance(value[0], bytes):
            value = [v.decode() for v in value]
        attrs[attr.name] = value
    return attrs


def graph_inputs_of(expr: Expr) -> tuple[str, ...]:
    """The names of the graph inputs (the Vars) `expr` is computed from, in order of first use."""
    names = dict.fromkeys(e.name_hint for e in post_order_exprs(expr) if isinstance(e, Var))
    return tuple(names)


def node_name(proto: onnx.NodeProto, index: int) -> str:
    """The node's name, or `<op_type>#<index>` for an unnamed node."""
    return proto.name or f"{proto.op_type}#{index}"


@dataclass(frozen=True)
class OnnxNode:
    """A node ready to convert. `inputs` holds None for omitted optional inputs;
    `output_types` are ONNX's static inference of the outputs (None for omitted outputs);
    `used` says which outputs some node or the graph reads; `derived` holds what the import
    derived from its values so far (one per import, shared by its nodes); `scope` is the import
    itself."""

    proto: onnx.NodeProto
    name: str
    opset: int
    inputs: tuple[Value | None, ...]
    attrs: Mapping[str, Any]
    output_types: tuple[TensorType | None, ...]
    used: tuple[bool, ...]
    derived: Derived = field(default_factory=Derived, compare=False)
    # The import converting the node (the importer, or a subgraph's Body): its values are the
    # outer scope of the node's subgraphs (If, Loop, Scan).
    scope: Any = field(default=None, compare=False)

    @property
    def op_type(self) -> str:
        return self.proto.op_type

    def error(self, message: str, hint: str | None = None) -> OnnxImportError:
        """An import error naming this node."""
        return OnnxImportError(
            f"{self.op_type} node `{self.name}`: {message}", rule=f"onnx.{self.op_type}", hint=hint
        )

    def attr(self, name: str, default: Any = None) -> Any:
        """Attribute `name`, or `default` when the node does not set it."""
        return self.attrs.get(name, default)

    def has_input(self, index: int) -> bool:
        """True if optional input `index` is given."""
        return index < len(self.inputs) and self.inputs[index] is not None

    def input(self, index: int) -> Value:
        """Input `index`, which must be given."""
        if not self.has_input(index):
            raise self.error(f"input {index} is missing")
        value = self.inputs[index]
        assert value is not None
        return value

    def expr(self, index: int) -> Expr:
        """The graph expression of input `index`."""
        return self.input(index).expr

    def shape(self, index: int) -> tuple[int, ...]:
        """The static shape of input `index`."""
        return self.input(index).type.shape

    def static(self, index: int, what: str) -> np.ndarray:
        """The array of input `index`, which must be known at import (`what` names it)."""
        value = self.input(index)
        if not value.is_constant:
            inputs = graph_inputs_of(value.expr)
            if not inputs:  # computed from constants only (a converter that did not fold)
                return np.asarray(evaluate(value.expr)).astype(value.type.dtype, copy=False)
            raise ValueNeededError(
                f"{self.op_type} node `{self.name}`: its {what} (input {index}) must be "
                f"computable at import, but it depends on graph inputs {list(inputs)}",
                inputs,
                rule=f"onnx.{self.op_type}",
                hint="Tessel compiles static graphs; give shapes so that the shape computation "
                "folds (from_onnx(model, shape={...})), or make the value an initializer",
            )
        return value.data

    def static_or(self, index: int, what: str, default: Any) -> np.ndarray | Any:
        """Like `static`, or `default` when optional input `index` is omitted."""
        return self.static(index, what) if self.has_input(index) else default

    def all_constant(self) -> bool:
        """True if every given input is known at import (the node can fold)."""
        return all(v is None or v.is_constant for v in self.inputs)

    def arrays(self) -> list[np.ndarray | None]:
        """The arrays of all inputs (None for omitted ones); only when `all_constant()`."""
        return [None if v is None else v.data for v in self.inputs]

    def out_type(self, index: int = 0) -> TensorType:
        """The static type of output `index`; an error if ONNX cannot infer it statically."""
        ty = self.output_types[index]
        if ty is None:
            # The shape follows from integer inputs computed at run time (Expand's shape, ...).
            dynamic = [
                v
                for v in self.inputs
                if v is not None and not v.is_constant and v.type.dtype.startswith(("int", "uint"))
            ]
            inputs = tuple(dict.fromkeys(n for v in dynamic for n in graph_inputs_of(v.expr)))
            if inputs:
                raise ValueNeededError(
                    f"{self.op_type} node `{self.name}`: output {index} has no static shape: it "
                    f"depends on the values of graph inputs {list(inputs)}",
                    inputs,
                    rule=f"onnx.{self.op_type}",
                    hint="Tessel compiles static graphs; make the values initializers or give "
                    "shapes so that the shape computation folds",
                )
            raise self.error(
                f"output {index} has no static shape",
                hint="Tessel compiles static graphs: the shape must follow from the input shapes "
                "and from values known at import",
            )
        return ty

    def output_used(self, index: int) -> bool:
        """True if some node or the graph reads output `index`."""
        return index < len(self.used) and self.used[index]

    def axis(self, axis: int, ndim: int, what: str = "axis") -> int:
        """`axis` in [0, ndim), counting negative axes from the end."""
        if not -ndim <= axis < ndim:
            raise self.error(f"{what} {axis} is out of range for rank {ndim}")
        return axis + ndim if axis < 0 else axis
