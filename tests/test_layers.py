"""The dependency direction of docs/architecture.md §1, enforced by import-linter's contract."""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_packages_import_only_from_layers_below_them():
    command = shutil.which("lint-imports") or f"{sys.executable} -m importlinter.cli"
    result = subprocess.run(
        [*command.split(), "--config", str(ROOT / "pyproject.toml")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 1 kept, 0 broken" in result.stdout
