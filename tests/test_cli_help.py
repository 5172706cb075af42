"""The `tessel` command's help and start-up: `--help` imports no compiler, every option says what
it does (`show --after` lists the passes and its default), the bench table labels its ratio,
and `tessel show ... | head -1` ends quietly."""

import json
import subprocess
import sys

import pytest
from onnx import TensorProto, helper, save

from tessel import cli
from tessel.cli.arguments import SHOW_DEFAULT, SHOW_PASSES

MAIN = "import sys; from tessel.cli import main; sys.exit(main())"


def _help(capsys, *command):
    with pytest.raises(SystemExit) as exit_info:
        cli.main([*command, "--help"])
    assert exit_info.value.code == 0
    return " ".join(capsys.readouterr().out.split())  # argparse's line breaks undone


def test_help_imports_neither_the_compiler_nor_numpy():
    code = (
        "import json, sys\nfrom tessel.cli import main\ntry:\n    main(['--help'])\n"
        "except SystemExit:\n    pass\n"
        "print(json.dumps(sorted(sys.modules)), file=sys.stderr)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert "usage: tessel" in result.stdout
    modules = set(json.loads(result.stderr))
    tessel = sorted(m for m in modules if m.startswith("tessel"))
    assert tessel == [
        "tessel",
        "tessel.cli",
        "tessel.cli.arguments",
        "tessel.support",
        "tessel.support.printer_slot",
    ]
    assert not {"numpy", "islpy", "onnx", "google.protobuf", "rich"} & modules


def test_the_passes_show_lists_are_the_pipeline():
    from tessel.graph.passes.pipeline import default_pipeline

    assert list(SHOW_PASSES) == [type(p).__name__ for p in default_pipeline()] + ["LowerTE"]
    assert SHOW_DEFAULT in SHOW_PASSES


def test_show_help_lists_the_passes_and_says_what_the_default_shows(capsys):
    text = _help(capsys, "show")
    assert ", ".join(SHOW_PASSES) in text
    assert f"Default: {SHOW_DEFAULT}, the end of the graph pipeline" in text
    assert "Without --after: the whole pipeline before LowerTE" in text
    assert "InferType runs twice: PASS names its last run" in text
    assert "the last pass to run first" not in text


def test_run_and_bench_options_say_what_they_do(capsys):
    run_text = _help(capsys, "run")
    assert "--input NAME=FILE.npy the value of the model's input NAME, a NumPy .npy" in run_text
    bench_text = _help(capsys, "bench")
    assert "--runs N timed runs of each runtime, after one untimed warm-up run" in bench_text
    assert "(default: 20)" in bench_text
    assert "`time vs tessel`, is each runtime's median divided by tessel's" in bench_text


def test_runs_must_be_at_least_one(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["bench", "model.onnx", "--runs", "0"])
    assert exit_info.value.code == 2
    assert "expected a whole number of at least 1, got '0'" in capsys.readouterr().err


def _chain(path, length):
    """An ONNX model of `length` Relus in a row: its text is longer than a pipe holds."""
    nodes = [helper.make_node("Relu", [f"v{i}"], [f"v{i + 1}"]) for i in range(length)]
    graph = helper.make_graph(
        nodes,
        "chain",
        [helper.make_tensor_value_info("v0", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info(f"v{length}", TensorProto.FLOAT, [2, 8])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    save(model, path)


def test_an_unknown_pass_is_refused_before_the_import(tmp_path, capsys):
    _chain(tmp_path / "chain.onnx", 2)
    assert cli.main(["show", str(tmp_path / "chain.onnx"), "--after", "Nope"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("tessel: no graph pass called 'Nope'; the pipeline is ['InferType',")
    assert "importing" not in err


def test_show_piped_into_head_ends_quietly(tmp_path):
    _chain(tmp_path / "chain.onnx", 2000)  # about 120 KB of text: more than a pipe holds
    show = subprocess.Popen(
        [
            sys.executable,
            "-c",
            MAIN,
            "show",
            str(tmp_path / "chain.onnx"),
            "-q",
            "--after",
            "ToGraphNormalForm",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    head = subprocess.Popen(["head", "-1"], stdin=show.stdout, stdout=subprocess.PIPE)
    show.stdout.close()  # head alone reads it now
    first, _ = head.communicate(timeout=300)
    err = show.stderr.read()
    show.stderr.close()
    assert show.wait(timeout=300) == 141  # as a program that SIGPIPE ends
    assert first == b'#[version = "0.0.5"]\n'
    assert err == b"", err.decode()
