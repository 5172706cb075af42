"""The converter table: each entry's opsets are ONNX's, and every graph operator a converter can
emit exists with a lowering, so nothing the importer accepts is refused at compile."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil

import onnx
import pytest

from tessel.frontend.onnx import converters, relay
from tessel.frontend.onnx.errors import OnnxImportError
from tessel.frontend.onnx.opsets import FIRST_OPSET, LAST_OPSET
from tessel.frontend.onnx.table import _MODULES, CONVERTERS, lookup
from tessel.graph.op import get_op, list_ops
from tessel.support.errors import InternalError


def test_last_opset_is_the_pinned_onnx_releases_newest():
    # A newer onnx brings a newer opset: review what changed in it, then raise LAST_OPSET.
    assert onnx.defs.onnx_opset_version() == LAST_OPSET


@pytest.mark.parametrize("op_type", sorted(CONVERTERS))
def test_entries_are_ordered_disjoint_opset_ranges_of_an_onnx_operator(op_type):
    assert onnx.defs.has(op_type, ""), f"{op_type} is not an ONNX operator"
    entries = CONVERTERS[op_type]
    assert entries
    previous_last = 0
    for first, last, converter in entries:
        assert 1 <= first <= last <= LAST_OPSET
        if first < FIRST_OPSET:  # only for an operator unchanged since `first` (Not, opset 1)
            assert onnx.defs.get_schema(op_type, FIRST_OPSET, "").since_version <= first
        assert first > previous_last, f"{op_type}: overlapping opset ranges"
        assert callable(converter)
        previous_last = last


def _emitted_literals(module) -> set[str]:
    """The operator names a converter module passes to `call` as string literals."""
    names = set()
    for node in ast.walk(ast.parse(inspect.getsource(module))):
        is_call = isinstance(node, ast.Call) and getattr(node.func, "id", None) == "call"
        if is_call and node.args and isinstance(node.args[0], ast.Constant):
            names.add(node.args[0].value)
    return names


def _converter_modules() -> list:
    """Every module of the converters package, those with a TABLE and their helpers."""
    package = converters.__path__[0]
    names = [f"{converters.__name__}.{m.name}" for m in pkgutil.iter_modules([package])]
    return [importlib.import_module(name) for name in sorted(names)]


@pytest.mark.parametrize(
    "module", _converter_modules(), ids=lambda m: m.__name__.rsplit(".", 1)[-1]
)
def test_every_operator_a_converter_calls_by_name_is_registered_with_a_lowering(module):
    registered = set(list_ops())
    for name in _emitted_literals(module):
        assert name in registered, f"{module.__name__} emits unknown graph operator {name!r}"
        assert callable(get_op(name).lower)


def test_every_converter_module_with_a_table_is_joined():
    # Modules without a TABLE are shared helpers of the others.
    with_table = {m.__name__ for m in _converter_modules() if hasattr(m, "TABLE")}
    assert with_table <= {m.__name__ for m in _MODULES}


def test_an_unregistered_operator_is_caught_at_import():
    with pytest.raises(InternalError, match="not registered"):
        relay.call("nn.conv7d")


def test_an_opset_newer_than_the_table_is_refused_naming_op_and_opset():
    assert lookup("Relu", "", LAST_OPSET + 1) is None
    node = onnx.helper.make_node("Relu", ["x"], ["y"])
    graph = onnx.helper.make_graph(
        [node],
        "g",
        [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2])],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2])],
    )
    model = onnx.helper.make_model(
        graph, opset_imports=[onnx.helper.make_opsetid("", LAST_OPSET + 1)]
    )
    from tessel.frontend.onnx import from_onnx

    with pytest.raises(OnnxImportError, match=rf"Relu \(opset {LAST_OPSET + 1}"):
        from_onnx(model)
