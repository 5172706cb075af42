"""The README's example runs as written (it is the first code a user copies)."""

import re
import runpy
from pathlib import Path

README = Path(__file__).parent.parent / "README.md"


def test_readme_python_example_runs(tmp_path):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)
    assert blocks, "the README has no Python example"
    for number, block in enumerate(blocks):
        # A file, not exec(): @T.prim_func reads the function's source, as in a user's script.
        path = tmp_path / f"readme_example_{number}.py"
        path.write_text(block)
        runpy.run_path(str(path), run_name="__main__")


def test_readme_opens_with_the_install_and_test_commands():
    first_block = re.search(r"```bash\n(.*?)```", README.read_text(), flags=re.DOTALL).group(1)
    assert "tessel demo" in first_block
    assert "pytest" in first_block and ".[test]" in first_block
