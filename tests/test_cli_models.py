"""`tessel compile | run | bench | show` on a small ONNX model, and their errors."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tessel import cli


def _mlp(path, batch="batch"):
    rng = np.random.default_rng(0)
    weights = {
        "w1": rng.standard_normal((8, 16)).astype("float32"),
        "b1": rng.standard_normal(16).astype("float32"),
        "w2": rng.standard_normal((16, 4)).astype("float32"),
    }
    nodes = [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["h"]),
        helper.make_node("Relu", ["h"], ["r"]),
        helper.make_node("MatMul", ["r", "w2"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 4])],
        [numpy_helper.from_array(v, k) for k, v in weights.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return model


def _onnxruntime(model, x):
    import onnxruntime

    session = onnxruntime.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    return session.run(None, {"x": x})[0]


def test_run_prints_and_saves_outputs_equal_to_onnxruntime(tmp_path, capsys):
    model = _mlp(tmp_path / "mlp.onnx")
    x = np.random.default_rng(1).standard_normal((3, 8)).astype("float32")
    np.save(tmp_path / "x.npy", x)
    status = cli.main(
        [
            "run",
            str(tmp_path / "mlp.onnx"),
            "--shape",
            "x=3x8",
            "--input",
            f"x={tmp_path / 'x.npy'}",
            "--save",
            str(tmp_path / "out"),
        ]
    )
    assert status == 0
    assert "output 0: shape [3, 4] float32" in capsys.readouterr().out
    np.testing.assert_allclose(
        np.load(tmp_path / "out" / "0.npy"), _onnxruntime(model, x), rtol=1e-4, atol=1e-5
    )


EXPORT_FILES = ["model.h", "model.so", "params.bin", "params.safetensors"]


def test_compile_reports_kernels_and_exports_into_the_output_directory(tmp_path, capsys):
    _mlp(tmp_path / "mlp.onnx")
    out_dir = tmp_path / "build" / "mlp"
    argv = ["compile", str(tmp_path / "mlp.onnx"), "--shape", "x=2x8", "-o", str(out_dir)]
    status = cli.main(argv)
    assert status == 0
    out = capsys.readouterr().out
    assert "kernels:" in out and "arena:" in out and "constants:" in out
    assert f"exported to {out_dir}: {', '.join(EXPORT_FILES)}" in out
    assert sorted(p.name for p in out_dir.iterdir()) == EXPORT_FILES
    assert (out_dir / "model.so").stat().st_size > 0


def test_compile_replaces_a_previous_export_and_keeps_other_files(tmp_path, capsys):
    _mlp(tmp_path / "mlp.onnx")
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    for name in EXPORT_FILES:
        (out_dir / name).write_text("stale")
    (out_dir / "notes.txt").write_text("mine")
    argv = ["compile", str(tmp_path / "mlp.onnx"), "--shape", "x=2x8", "-q", "-o", str(out_dir)]
    assert cli.main(argv) == 0
    assert cli.main(argv) == 0  # twice: a directory holding an export is no error
    for name in EXPORT_FILES:
        assert (out_dir / name).read_bytes() != b"stale"
    assert (out_dir / "notes.txt").read_text() == "mine"
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("output", ["kernels.so", "kernels.so/sub"])
def test_compile_refuses_an_output_that_is_a_file_before_compiling(tmp_path, capsys, output):
    _mlp(tmp_path / "mlp.onnx")
    (tmp_path / "kernels.so").write_text("not a directory")
    target = tmp_path / output
    argv = ["compile", str(tmp_path / "mlp.onnx"), "--shape", "x=2x8", "-o", str(target)]
    status = cli.main(argv)
    assert status == 1
    err = capsys.readouterr().err
    assert err.startswith(f"tessel: -o {target}: {tmp_path / 'kernels.so'} is a file, but -o names")
    assert "Errno" not in err and "importing" not in err  # refused before any work
    assert (tmp_path / "kernels.so").read_text() == "not a directory"


def test_an_export_that_cannot_be_written_is_one_clear_error(tmp_path, capsys):
    _mlp(tmp_path / "mlp.onnx")
    (tmp_path / "out" / "model.so").mkdir(parents=True)  # in the way of the library
    out_dir = tmp_path / "out"
    argv = ["compile", str(tmp_path / "mlp.onnx"), "--shape", "x=2x8", "-q", "-o", str(out_dir)]
    assert cli.main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"tessel: -o {tmp_path / 'out'}: cannot write the export: ")
    assert "Errno" not in err and "Traceback" not in err


def test_show_prints_the_graph_after_a_pass(tmp_path, capsys):
    _mlp(tmp_path / "mlp.onnx")
    assert cli.main(["show", str(tmp_path / "mlp.onnx"), "--shape", "x=2x8"]) == 0
    assert "nn.dense" in capsys.readouterr().out
    assert (
        cli.main(["show", str(tmp_path / "mlp.onnx"), "--shape", "x=2x8", "--after", "FuseOps"])
        == 0
    )
    assert "Primitive=1" in capsys.readouterr().out


def test_show_memory_prints_the_arenas_constants_and_largest_tensors(tmp_path, capsys):
    _mlp(tmp_path / "mlp.onnx")
    assert cli.main(["show", str(tmp_path / "mlp.onnx"), "--shape", "x=2x8", "-q", "--memory"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == "arenas (intermediates, reused by liveness):"
    assert any(line.split()[:1] == ["cpu(0)"] for line in lines[2:4])
    # w1 (8x16) and b1 (16) and w2 (16x4) as float32, possibly packed: at least their bytes
    constants = lines[lines.index(next(x for x in lines if x.startswith("constants"))) + 2]
    assert constants.split()[0] == "cpu(0)" and int(constants.split()[1]) >= (128 + 16 + 64) * 4
    assert "device copies per run: 0 (0 bytes)" in out
    assert "largest tensors" in out


RATIO = "time vs tessel"  # the bench table's ratio column


def test_bench_prints_tessel_and_onnxruntime(tmp_path, capsys):
    _mlp(tmp_path / "mlp.onnx", batch=2)
    assert cli.main(["bench", str(tmp_path / "mlp.onnx"), "--runs", "3"]) == 0
    captured = capsys.readouterr()
    assert "tessel" in captured.out and "onnxruntime (1 thread)" in captured.out
    header, *_, legend = captured.out.splitlines()
    assert header.split() == ["runtime", "median", "ms", *RATIO.split()]
    assert legend == f"({RATIO}: the median divided by tessel's; above 1 is slower than tessel)"
    # the timing loops show progress too: each contender's runs, counted
    assert "timing tessel: 3/3 done" in captured.err
    assert "timing onnxruntime (2 threads): 3/3 done" in captured.err


def test_run_and_bench_take_a_thread_count(tmp_path, capsys):
    from tessel.runtime.threads import current_threads, set_threads

    _mlp(tmp_path / "mlp.onnx", batch=2)
    before = current_threads()
    try:
        assert (
            cli.main(["bench", str(tmp_path / "mlp.onnx"), "--runs", "2", "--threads", "1", "-q"])
            == 0
        )
        assert "tessel (1 thread)" in capsys.readouterr().out
        assert current_threads() == before  # each call's team was the model's own
    finally:
        set_threads(before)
    with pytest.raises(SystemExit):
        cli.main(["bench", str(tmp_path / "mlp.onnx"), "--threads", "0"])
    assert "--threads: expected a whole number of at least 1" in capsys.readouterr().err


def test_compile_takes_a_count_of_processes(tmp_path, capsys, monkeypatch):
    from tessel import graph

    seen = []
    compile_graph = graph.compile
    monkeypatch.setattr(
        graph, "compile", lambda *a, **kw: seen.append(kw["jobs"]) or compile_graph(*a, **kw)
    )
    _mlp(tmp_path / "mlp.onnx", batch=2)
    assert cli.main(["compile", str(tmp_path / "mlp.onnx"), "--jobs", "1", "-q"]) == 0
    assert cli.main(["compile", str(tmp_path / "mlp.onnx"), "-q"]) == 0
    assert seen == [1, None]  # None: the cores this process may use
    with pytest.raises(SystemExit):
        cli.main(["compile", str(tmp_path / "mlp.onnx"), "--jobs", "0"])
    assert "--jobs: expected a whole number of at least 1" in capsys.readouterr().err


def test_a_dynamic_dimension_without_shape_is_one_clear_error(tmp_path, capsys):
    _mlp(tmp_path / "mlp.onnx")
    assert cli.main(["compile", str(tmp_path / "mlp.onnx"), "-q"]) == 1
    err = capsys.readouterr().err
    assert err == (
        f"tessel: {tmp_path / 'mlp.onnx'}: graph input `x` has dynamic dimension 0 (`batch`) in "
        "shape ['batch', 8]\nhint: Tessel compiles static shapes; give them: --shape x=1x8, or by "
        "dimension name for every input: --dim batch=1\n"
    )


def test_an_unsupported_operator_is_one_clear_error(tmp_path, capsys):
    node = helper.make_node("NonMaxSuppression", ["a", "b"], ["c"], name="nms")
    graph = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info("a", TensorProto.FLOAT, [1, 4, 4]),
            helper.make_tensor_value_info("b", TensorProto.FLOAT, [1, 1, 4]),
        ],
        [helper.make_tensor_value_info("c", TensorProto.INT64, [None, 3])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, tmp_path / "nms.onnx")
    assert cli.main(["compile", str(tmp_path / "nms.onnx")]) == 1
    err = capsys.readouterr().err
    assert "NonMaxSuppression" in err and "nms" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--shape", "x=2xa"], "integer dimensions"),
        (["--shape", "x=2x8", "--input", "x"], "NAME=FILE.npy"),
        (["--shape", "x=2x8", "--input", "z=nothing.npy"], "the model's inputs are ['x']"),
    ],
)
def test_bad_arguments_are_clear_errors(tmp_path, capsys, argv, message):
    _mlp(tmp_path / "mlp.onnx")
    np.save(tmp_path / "nothing.npy", np.zeros(1))
    status = cli.main(
        [
            "run",
            str(tmp_path / "mlp.onnx"),
            *[a.replace("nothing.npy", str(tmp_path / "nothing.npy")) for a in argv],
        ]
    )
    assert status == 1
    assert message in capsys.readouterr().err


def test_a_file_that_is_not_onnx_is_a_clear_error(tmp_path, capsys):
    (tmp_path / "bad.onnx").write_bytes(b"\x00not a model")
    assert cli.main(["show", str(tmp_path / "bad.onnx")]) == 1
    assert "Traceback" not in capsys.readouterr().err


def _bad_model(path, kind):
    """A file at `path` that is no usable model, of `kind`."""
    if kind == "empty":
        path.write_bytes(b"")
    elif kind == "not-onnx":
        path.write_text("these are my notes\n")
    elif kind == "no-graph":
        onnx.save(onnx.ModelProto(ir_version=8), path)
    elif kind == "no-outputs":
        model = _mlp(path)
        model.graph.ClearField("output")
        onnx.save(model, path)
    elif kind == "external-data":
        onnx.save(_mlp(path), path, save_as_external_data=True, location="w.bin", size_threshold=0)
        (path.parent / "w.bin").unlink()


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("empty", "is empty (0 bytes), not an ONNX model"),
        ("not-onnx", "is not an ONNX model"),
        ("no-graph", "has no graph"),
        ("no-outputs", ": its graph `mlp` declares no outputs"),
        ("external-data", ": initializer `w1` keeps its data in the external file `w.bin`"),
    ],
)
@pytest.mark.parametrize("command", ["compile", "show"])
def test_a_bad_model_file_is_one_paragraph_naming_it(tmp_path, capsys, kind, message, command):
    path = tmp_path / "bad.onnx"
    _bad_model(path, kind)
    output = ["-o", str(tmp_path / "out")] if command == "compile" else []
    assert cli.main([command, str(path), "--shape", "x=2x8", "-q", *output]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"tessel: {path}{'' if message[0] == ':' else ' '}{message}")
    assert "Traceback" not in captured.err and "Errno" not in captured.err
    assert not (tmp_path / "out").exists()  # nothing exported


def test_progress_goes_to_stderr_as_plain_lines_when_it_is_not_a_terminal(tmp_path, capsys):
    _mlp(tmp_path / "mlp.onnx")
    assert cli.main(["compile", str(tmp_path / "mlp.onnx"), "--shape", "x=2x8"]) == 0
    captured = capsys.readouterr()
    assert "scheduling" not in captured.out  # stdout keeps only the report
    lines = captured.err.splitlines()
    stages = [line.split("] ", 1)[1] for line in lines]
    assert stages[0] == f"importing {tmp_path / 'mlp.onnx'}"
    expected_stages = (
        "graph passes: 0/", "scheduling kernels: 0/2", "scheduling kernels: 2/2 done in",
        "planning memory", "compiling and linking C",
    )  # fmt: skip
    for expected in expected_stages:
        assert any(s.startswith(expected) for s in stages), (expected, stages)
    assert stages[-1] == "done"
    assert all(line.startswith("[") and " s] " in line for line in lines)  # the time elapsed


@pytest.mark.parametrize("command", ["compile", "run", "bench", "show"])
def test_quiet_prints_nothing_on_stderr(tmp_path, capsys, command):
    _mlp(tmp_path / "mlp.onnx", batch=2)
    np.save(tmp_path / "x.npy", np.zeros((2, 8), "float32"))
    extra = {"run": ["--input", f"x={tmp_path / 'x.npy'}"], "bench": ["--runs", "1"]}
    assert cli.main([command, str(tmp_path / "mlp.onnx"), "--quiet", *extra.get(command, [])]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out != ""


def test_compile_timings_lists_every_stage_and_graph_pass_and_a_total(tmp_path, capsys):
    _mlp(tmp_path / "mlp.onnx")
    status = cli.main(["compile", str(tmp_path / "mlp.onnx"), "--shape", "x=2x8", "--timings"])
    assert status == 0
    lines = capsys.readouterr().out.splitlines()
    width = len(lines[0]) - len("   seconds  items")  # the header: stage, seconds, items
    end = next(k for k, line in enumerate(lines) if line.startswith("total"))
    rows = [(line[:width].rstrip(), float(line[width:].split()[0])) for line in lines[1 : end + 1]]
    stages = [(name, seconds) for name, seconds in rows if not name.startswith(" ")]
    names = [name for name, _ in stages]
    assert names[0].startswith("importing ") and names[-1] == "total"
    # lowering and generating C are skipped when the driver's cache holds the C already
    assert {"graph passes", "scheduling kernels", "compiling and linking C"} <= set(names)
    assert "  fuse_ops" in [name for name, _ in rows]  # a graph pass, under its stage
    total = stages[-1][1]
    assert total > 0
    assert abs(sum(seconds for _, seconds in stages[:-1]) - total) < 1e-3 * len(stages)


def test_run_takes_and_prints_strings(tmp_path, capsys):
    node = helper.make_node("StringConcat", ["a", "b"], ["y"])
    graph = helper.make_graph(
        [node],
        "strings",
        [helper.make_tensor_value_info(n, TensorProto.STRING, [2]) for n in "ab"],
        [helper.make_tensor_value_info("y", TensorProto.STRING, [2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    onnx.save(model, tmp_path / "strings.onnx")
    np.save(tmp_path / "a.npy", np.array(["ab", "中"]))  # a NumPy unicode array, no pickle
    np.save(tmp_path / "b.npy", np.array(["!", "?"]))
    inputs = ["--input", f"a={tmp_path / 'a.npy'}", "--input", f"b={tmp_path / 'b.npy'}"]
    assert cli.main(["run", str(tmp_path / "strings.onnx"), *inputs]) == 0
    out = capsys.readouterr().out
    assert "output 0: shape [2] object" in out and "['ab!' '中?']" in out


def test_show_schedules_prints_each_kernels_plans(tmp_path, capsys):
    """`tessel show --schedules`: a paragraph per kernel, with the plan each rule chose (the
    MLP's dense layers: the GEMM rule's tile; the default loops of the other blocks)."""
    _mlp(tmp_path / "mlp.onnx")
    args = ["show", str(tmp_path / "mlp.onnx"), "--shape", "x=2x8", "-q", "--schedules"]
    assert cli.main(args) == 0
    paragraphs = capsys.readouterr().out.strip().split("\n\n")
    assert all(p.startswith("kernel ") for p in paragraphs)
    plans = [line.strip() for p in paragraphs for line in p.splitlines()[1:]]
    assert any(line.startswith("GemmPlan(block=") for line in plans)
    assert all(line.startswith(("GemmPlan(", "LoopsPlan(", "refused ")) for line in plans)
