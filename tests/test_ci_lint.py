"""CI's lint step (.ci/lint, run by .ci/run before the tests): this checkout passes it, and a
lint error fails it, naming the file and the rule."""

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINT = ROOT / ".ci" / "lint"


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(LINT), str(root)], capture_output=True, text=True, check=False, timeout=300
    )


def test_ci_runs_the_lint_step_before_the_tests():
    script = (ROOT / ".ci" / "run").read_text()
    assert script.index(".ci/lint") < script.index("pytest")


def test_this_checkout_passes_the_lint_step():
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "All checks passed" in result.stdout
    assert "Contracts: 1 kept, 0 broken" in result.stdout


def test_a_lint_error_fails_the_lint_step(tmp_path):
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    for folder in ("tessel", "tests", "benchmarks", "tools"):
        (tmp_path / folder).mkdir()
    (tmp_path / "tessel" / "careless.py").write_text("import os\n\n\ndef f():\n    return 1\n")
    result = _lint(tmp_path)
    assert result.returncode != 0
    assert "F401" in result.stdout and "careless.py" in result.stdout
    assert "Contracts" not in result.stdout  # the first failure ends the step
