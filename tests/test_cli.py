"""The `tessel` command: demo, print and build on real scripts."""

import pytest

from tessel import cli

ADD_ONE = '''
@T.prim_func
def add_one(A: T.Buffer((4,), "int32"), B: T.Buffer((4,), "int32")):
    for i in range(4):
        with T.block("B"):
            vi = T.axis.spatial(4, i)
            B[vi] = A[vi] + 1
'''


def test_demo_checks_the_seed_matmul_against_numpy_and_reports_each_step(capsys):
    assert cli.main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "T.grid(127, 127, 127)" in out
    for step in ("parse script", "reference interpreter", "compiled C run", "NumPy a @ b"):
        assert step in out
    assert "result: OK" in out


def test_print_parses_a_file_and_prints_the_same_dialect(tmp_path, capsys):
    path = tmp_path / "add_one.py"
    path.write_text(ADD_ONE)
    assert cli.main(["print", str(path)]) == 0
    out = capsys.readouterr().out
    assert "def add_one(" in out
    assert 'with T.block("B"):' in out


def test_build_prints_c_source_with_the_entry_function(tmp_path, capsys):
    path = tmp_path / "add_one.py"
    path.write_text(ADD_ONE)
    assert cli.main(["build", str(path)]) == 0
    out = capsys.readouterr().out
    assert "add_one" in out
    assert "+ 1" in out


def test_unknown_command_is_rejected_by_the_argument_parser():
    with pytest.raises(SystemExit):
        cli.main(["frobnicate"])
