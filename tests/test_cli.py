"""The `tessel` command: demo, print and build on real scripts."""

import pytest

from tessel import cli, driver

ADD_ONE = """
@T.prim_func
def add_one(A: T.Buffer((4,), "int32"), B: T.Buffer((4,), "int32")):
    for i in range(4):
        with T.block("B"):
            vi = T.axis.spatial(4, i)
            B[vi] = A[vi] + 1
"""


def test_demo_checks_the_seed_matmul_against_numpy_and_reports_each_step(capsys):
    assert cli.main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "T.grid(127, 127, 127)" in out
    for step in (
        "parse script",
        "reference interpreter",
        "compiled C run",
        "default-scheduled C run",
        "NumPy a @ b",
    ):
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


BROKEN = """
@T.prim_func
def broken(A: T.Buffer((4,), "int32")):
    A[0] = A[nosuch]
"""


@pytest.mark.parametrize("command", ["print", "build"])
def test_parse_errors_are_printed_as_messages_with_exit_status_one(tmp_path, capsys, command):
    path = tmp_path / "broken.py"
    path.write_text(BROKEN)
    assert cli.main([command, str(path)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"tessel: {path}:4:14: error: name `nosuch` is not defined" in captured.err
    assert "Traceback" not in captured.err


def test_build_errors_are_printed_as_messages(tmp_path, capsys):
    path = tmp_path / "vector.py"
    path.write_text(VECTOR)
    assert cli.main(["build", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("tessel: ") and "not supported by the C backend" in err


def test_missing_file_is_reported_without_a_traceback(tmp_path, capsys):
    assert cli.main(["print", str(tmp_path / "nope.py")]) == 1
    assert "No such file" in capsys.readouterr().err


def test_build_goes_through_the_driver(tmp_path, capsys, monkeypatch):
    calls = []
    monkeypatch.setattr(driver, "generate_c_source", lambda func: calls.append(func) or "/* C */")
    path = tmp_path / "add_one.py"
    path.write_text(ADD_ONE)
    assert cli.main(["build", str(path)]) == 0
    assert capsys.readouterr().out == "/* C */\n" and len(calls) == 1


VECTOR = """
@T.prim_func
def vector(A: T.Buffer((8,), "float32")):
    A[T.Ramp(0, 1, 3)] = T.Broadcast(T.float32(1), 3)
"""
