"""The README's and the docs' examples run as written (they are the first code a user copies)."""

import re
import runpy
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
README = ROOT / "README.md"
# The pages whose Python blocks are whole programs; docs/dialect.md's blocks are syntax sketches.
RUNNABLE_PAGES = ["README.md", "docs/compiling.md", "docs/te.md"]


def python_blocks(page: str) -> list[str]:
    """The ```python blocks of a page, in order."""
    return re.findall(r"```python\n(.*?)```", (ROOT / page).read_text(), flags=re.DOTALL)


@pytest.mark.parametrize("page", RUNNABLE_PAGES)
def test_page_python_examples_run(page, tmp_path, monkeypatch):
    blocks = python_blocks(page)
    assert blocks, f"{page} has no Python example"
    monkeypatch.chdir(tmp_path)  # examples that export write relative paths
    for number, block in enumerate(blocks):
        # A file, not exec(): @T.prim_func reads the function's source, as in a user's script.
        path = tmp_path / f"example_{number}.py"
        path.write_text(block)
        runpy.run_path(str(path), run_name="__main__")


def test_readme_opens_with_the_install_and_test_commands():
    first_block = re.search(r"```bash\n(.*?)```", README.read_text(), flags=re.DOTALL).group(1)
    assert "tessel demo" in first_block
    assert "pytest" in first_block and ".[test]" in first_block


def test_readme_test_command_is_the_one_ci_runs():
    ci_script = (ROOT / ".ci" / "run").read_text()
    first_block = re.search(r"```bash\n(.*?)```", README.read_text(), flags=re.DOTALL).group(1)
    test_line = next(line for line in first_block.splitlines() if "pytest" in line)
    command = test_line.split("#")[0].strip()
    assert command.replace("pip install -e", "pip install --quiet -e") in ci_script


def test_no_python_example_was_lost_in_the_move_to_docs():
    # Each script the README used to hold now runs from one of the runnable pages.
    examples = "\n".join(block for page in RUNNABLE_PAGES for block in python_blocks(page))
    for marker in (
        "def add_one",
        "def scale",
        "def two_stage",
        'graph.parse("""',
        "te.gradient(loss, [w1, b1, w2, b2])",
    ):
        assert marker in examples, marker
