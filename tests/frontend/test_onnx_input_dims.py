"""from_onnx(..., dims=) and `--dim`: sizes for named dynamic dimensions (ONNX's dim_param), one
size per name in every input naming it, as onnxruntime's free dimension overrides."""

import numpy as np
import onnx
import pytest
from onnx import helper
from onnx_testing import make_model, random_inputs, run_onnxruntime, tensor

from tessel import cli
from tessel.frontend.onnx import OnnxImportError, from_onnx
from tessel.graph import compile as compile_graph


def _two_inputs():
    """y = x * m + x, both inputs [batch, seq], the output [batch, seq]."""
    nodes = [
        helper.make_node("Mul", ["x", "m"], ["p"]),
        helper.make_node("Add", ["p", "x"], ["y"]),
    ]
    dims = ("batch", "seq")
    return make_model(nodes, [tensor("x", dims), tensor("m", dims)], [tensor("y", dims)])


def test_a_named_dimension_gets_its_size_in_every_input_and_matches_onnxruntime():
    model = _two_inputs()
    mod, params = from_onnx(model, dims={"batch": 3, "seq": 5})
    assert [p.type_annotation.shape for p in mod["main"].params] == [(3, 5), (3, 5)]
    inputs = random_inputs(model, {"x": (3, 5), "m": (3, 5)})
    np.testing.assert_allclose(
        compile_graph(mod, params)(**inputs), run_onnxruntime(model, inputs)[0], rtol=1e-6
    )


def test_a_shape_given_for_an_input_takes_precedence_over_the_names():
    mod, _ = from_onnx(_two_inputs(), shape={"x": (2, 5), "m": (2, 5)}, dims={"batch": 3})
    assert [p.type_annotation.shape for p in mod["main"].params] == [(2, 5), (2, 5)]


def test_a_dimension_left_dynamic_is_named_with_both_ways_to_give_it():
    with pytest.raises(OnnxImportError, match=r"`x` has dynamic dimension 1 \(`seq`\)") as info:
        from_onnx(_two_inputs(), dims={"batch": 2})
    assert info.value.hint == (
        "Tessel compiles static shapes; give them: from_onnx(model, shape={'x': (2, 1)}), "
        "or by dimension name for every input: dims={'seq': 1}; or keep them symbolic "
        "(tessel.graph.evaluate runs any size): dims={'seq': None}"
    )


@pytest.mark.parametrize(
    ("dims", "message"),
    [
        ({"time": 2}, r"dimensions \['time'\], which no graph input names; .* `batch`, `seq`"),
        ({"batch": 0}, r"dimension `batch`: expected a whole number of at least 1, .*got 0"),
        ({"batch": 2.5}, r"dimension `batch`: expected a whole number of at least 1, .*got 2.5"),
        ({"batch": (4, 2)}, r"dimension `batch`: .* or bounds \(min, max\), got \(4, 2\)"),
    ],
)
def test_a_bad_dimension_name_or_size_is_an_import_error(dims, message):
    with pytest.raises(OnnxImportError, match=message):
        from_onnx(_two_inputs(), dims=dims)


def test_the_command_line_takes_dims_by_name(tmp_path, capsys):
    path = tmp_path / "two.onnx"
    onnx.save(_two_inputs(), path)
    assert cli.main(["compile", str(path), "--dim", "batch=2", "--dim", "seq=7", "-q"]) == 0
    assert "inputs: x: [2, 7] float32, m: [2, 7] float32" in capsys.readouterr().out
    assert cli.main(["compile", str(path), "--dim", "batch=2", "-q"]) == 1
    err = capsys.readouterr().err
    assert "hint: Tessel compiles static shapes; give them: --shape x=2x1, or by dimension " in err
    assert "name for every input: --dim seq=1" in err
    assert cli.main(["compile", str(path), "--dim", "batch=two", "-q"]) == 1
    assert "--dim 'batch=two': expected NAME=N with a whole number N" in capsys.readouterr().err


def test_the_command_line_keeps_bounded_dimensions_symbolic_for_show(tmp_path, capsys):
    path = tmp_path / "two.onnx"
    onnx.save(_two_inputs(), path)
    assert cli.main(["show", str(path), "--dim", "batch=1..8", "--dim", "seq=1..", "-q"]) == 0
    out = capsys.readouterr().out
    assert "%x: Tensor[(batch, seq), float32]" in out
    # the command compiles a library of static shapes: the error names the symbolic inputs
    assert cli.main(["compile", str(path), "--dim", "batch=1..8", "--dim", "seq=4", "-q"]) == 1
    assert "inputs ['x', 'm'] have symbolic dimensions" in capsys.readouterr().err
    assert cli.main(["show", str(path), "--dim", "batch=8..1", "-q"]) == 1
    assert "dimension `batch`" in capsys.readouterr().err
