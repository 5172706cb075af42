"""A deployed model needs only the runtime: `import tessel.runtime`, and loading and running an
exported model with `tessel.runtime.load_model`, import tessel.support, tessel.runtime and NumPy
(with ml_dtypes, for DataType), never the compiler (islpy, the IR, the schedules, the graph);
`import tessel` itself imports none of its subpackages until they are used (PEP 562)."""

import json
import subprocess
import sys

import numpy as np
import pytest

from tessel import graph

# What `tessel.runtime` may bring in of tessel; anything else of tessel is the compiler.
ALLOWED_PREFIXES = ("tessel.runtime", "tessel.support")
# Heavy third-party packages the runtime must not load (islpy: the compiler's integer sets).
FORBIDDEN = ("islpy", "onnx", "safetensors", "google.protobuf", "rich", "torch", "onnxruntime")

MLP = """#[version = "0.0.5"]
def @main(%x: Tensor[(2, 8), float32], %w: Tensor[(4, 8), float32], %b: Tensor[(4), float32]) {
  %0 = nn.dense(%x, %w, units=4);
  %1 = nn.bias_add(%0, %b);
  (nn.relu(%1), %1)
}
"""


def _modules_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running `code` (which prints nothing)."""
    script = f"import json, sys\n{code}\nprint(json.dumps(sorted(sys.modules)))\n"
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stderr
    return set(json.loads(result.stdout.splitlines()[-1]))


def _assert_lean(modules: set[str]) -> None:
    compiler = sorted(
        m for m in modules if m.startswith("tessel.") and not m.startswith(ALLOWED_PREFIXES)
    )
    assert compiler == [], f"the runtime imported the compiler: {compiler}"
    heavy = sorted(m for m in modules if m.split(".")[0] in FORBIDDEN or m in FORBIDDEN)
    assert heavy == [], f"the runtime imported {heavy}"
    assert "islpy" not in modules


def test_import_tessel_runtime_imports_no_compiler():
    modules = _modules_after("import tessel.runtime")
    _assert_lean(modules)
    assert "tessel.runtime.module" in modules
    assert "numpy" in modules


def test_import_tessel_imports_no_subpackage_until_used():
    modules = _modules_after("import tessel")
    assert sorted(m for m in modules if m.startswith("tessel")) == [
        "tessel",
        "tessel.support",
        "tessel.support.printer_slot",
    ]
    assert "numpy" not in modules
    assert "islpy" not in modules


def test_every_name_tessel_exposed_still_works():
    code = (
        "import tessel\n"
        "names = ['arith', 'build', 'codegen', 'driver', 'graph', 'install_printer', 'ir',\n"
        "         'lower', 'runtime', 'schedule', 'script', 'support', 'te', 'tir', 'topi',\n"
        "         'transform', 'frontend', 'testing', 'cli']\n"
        "assert all(getattr(tessel, n) is not None for n in names)\n"
        "assert set(names) <= set(dir(tessel))\n"
        "from tessel import build, lower\n"
        "from tessel.driver import build as driver_build\n"
        "assert build is driver_build and tessel.graph.compile\n"
        "from tessel.ir import IntImm\n"
        "assert str(IntImm('int32', 3)) == '3'  # the printer slot is filled\n"
        "try:\n"
        "    tessel.nosuch\n"
        "except AttributeError as err:\n"
        "    assert 'nosuch' in str(err)\n"
        "else:\n"
        "    raise AssertionError('tessel.nosuch')\n"
    )
    assert "tessel.graph.executor" in _modules_after(code)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """A tiny compiled graph exported, an input and the compiled model's outputs on it."""
    out = tmp_path_factory.mktemp("lean")
    rng = np.random.default_rng(0)
    weights = {
        "w": rng.standard_normal((4, 8)).astype("float32"),
        "b": rng.standard_normal(4).astype("float32"),
    }
    model = graph.compile(graph.parse(MLP), params=weights)
    model.export(out / "model")
    x = rng.standard_normal((2, 8)).astype("float32")
    np.save(out / "x.npy", x)
    for k, value in enumerate(model(x)):
        np.save(out / f"expected_{k}.npy", value)
    return out


def test_an_exported_model_loads_and_runs_with_only_the_runtime(exported):
    code = (
        "import numpy as np\n"
        "import tessel.runtime\n"
        f"out = {str(exported)!r}\n"
        "model = tessel.runtime.load_model(out + '/model')\n"
        "got = model(np.load(out + '/x.npy'))\n"
        "for k, value in enumerate(got):\n"
        "    np.testing.assert_allclose(value, np.load(f'{out}/expected_{k}.npy'), rtol=1e-6)\n"
        "assert [s.name for s in model.inputs] == ['x'] and len(model.outputs) == 2\n"
    )
    _assert_lean(_modules_after(code))
