"""Importing a subgraph (an If branch, a Loop or Scan body) node by node, with the importer's own
conversion of each node, reading the names of the enclosing graphs (ONNX's outer scope).

A node's subgraphs read the names of the import converting it (OnnxNode.scope: the importer,
or the Body of an enclosing subgraph).
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Mapping, Sequence
from typing import Any

import onnx

from tessel.frontend.onnx.node import OnnxNode
from tessel.frontend.onnx.values import Value, constant_value


def outer_scope(node: OnnxNode) -> Any:
    """The import converting `node` (whose values are the subgraph's outer scope)."""
    assert node.scope is not None, "the importer gives every node its scope"
    return node.scope


class Body:
    """One subgraph of `parent`, imported afresh by each `run` (a loop body once per iteration)
    with its inputs bound; names it does not define come from the enclosing import."""

    def __init__(self, graph: onnx.GraphProto, parent: OnnxNode, owner: Any) -> None:
        self.graph, self.parent, self.owner = graph, parent, owner
        # What the importer's node conversion reads from `self` (see `_convert`).
        self.model, self.opsets, self.derived = owner.model, owner.opsets, owner.derived
        self.symbols, self.typer = owner.symbols, owner.typer  # a symbolic import's
        self.read = {name for proto in graph.node for name in proto.input}
        self.read |= {out.name for out in graph.output}
        self.values: ChainMap[str, Value] = ChainMap({}, owner.values)

    def random_state(self) -> Any:
        """The enclosing import's random state (a draw in a subgraph is one of the model's)."""
        return self.owner.random_state()

    def random_stream(self) -> int:
        """A fresh stream of the enclosing import: each unrolled iteration draws its own."""
        return self.owner.random_stream()

    def run(self, bound: Mapping[str, Value]) -> list[Value]:
        """The subgraph's outputs with its inputs bound by name."""
        self.values = ChainMap(dict(bound), self.owner.values)
        for tensor in self.graph.initializer:
            self.values[tensor.name] = constant_value(onnx.numpy_helper.to_array(tensor))
        for index, proto in enumerate(self.graph.node):
            self._convert(index, proto)
        return [self._output(out.name) for out in self.graph.output]

    def run_positional(self, inputs: Sequence[Value]) -> list[Value]:
        """The subgraph's outputs with its inputs bound in order."""
        names = [i.name for i in self.graph.input]
        if len(names) != len(inputs):
            raise self.parent.error(f"its body takes {len(names)} inputs, {len(inputs)} given")
        return self.run(dict(zip(names, inputs, strict=True)))

    def _output(self, name: str) -> Value:
        if name not in self.values:
            raise self.parent.error(f"its subgraph's output `{name}` is never computed")
        return self.values[name]

    def _convert(self, index: int, proto: onnx.NodeProto) -> None:
        """One node, converted exactly as the importer converts the main graph's."""
        from tessel.frontend.onnx.importer import _GraphImporter  # the importer imports us

        if proto.domain not in ("", "ai.onnx"):
            raise self.parent.error(f"its subgraph uses {proto.op_type} of domain {proto.domain}")
        from tessel.frontend.onnx.table import lookup

        if lookup(proto.op_type, proto.domain, self.opsets.get("", 0)) is None:
            raise self.parent.error(
                f"its subgraph uses {proto.op_type}, which Tessel does not "
                f"import at opset {self.opsets.get('', 0)}"
            )
        _GraphImporter._convert(self, index, proto)  # type: ignore[arg-type]  # duck-typed

    def _value(self, name: str, reader: str) -> Value:
        if name not in self.values:
            raise self.parent.error(
                f"{reader} in its subgraph reads `{name}`, which nothing defines"
            )
        return self.values[name]
