"""CombineParallelDense's strategies against each other, and the one its cost model chooses.

Run as `python benchmarks/combine_parallel_dense.py [--runs 20] [--cases qkv,gru,minilm]`.
Each case is compiled four times with `tessel.graph.compile` (default schedules): with every
group of parallel products kept separate, batched (`nn.batch_matmul` of stacked operands),
concatenated (one wider `nn.dense`), and as the default pipeline chooses (predicted where the
cost model settles it, as for MiniLM's projections; else measured on this machine, the first
run measuring and storing the times, later runs reading them). The table gives
each one's median latency at 1 and 2 threads, which strategy was chosen (the "chosen" model is
that strategy's graph: the two columns differ by the machine's noise only) and its ratio to the
fastest of the three; the acceptance bar is that "chosen" is never more than 5% above the
fastest. The four take turns (timing.interleaved_medians), so a burst of load on the shared
machine slows them alike.

Cases:
- qkv: MiniLM-L6's Q/K/V projections of one layer: [128, 384] by three 384x384 weights, each
  with its bias and the head split (reshape to [1, 128, 12, 32], transpose) after it.
- gru: a GRU cell's gate group: [8, 256] by three 256x256 weights with biases, then sigmoid,
  sigmoid and tanh (different activations: only the products and biases combine).
- minilm: the whole all-MiniLM-L6-v2 encoder (tessel demo's, batch 1, sequence 128).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "20")  # see benchmarks/models.py

import argparse
import ctypes
import ctypes.util
import sys
import time

import numpy as np
from timing import model_medians_by_threads

from tessel.graph import compile as compile_graph
from tessel.graph import parse
from tessel.graph.passes.combine_parallel_dense import STRATEGY_CHOOSER
from tessel.graph.passes.parallel_branches import BATCH, CONCAT, SEPARATE
from tessel.ir.transform import PassContext

sys.path.insert(0, os.path.dirname(__file__))


def _projections(rows: int, width: int, tail: list[str]) -> str:
    """Three products of %x with biases, each followed by its `tail` expression (`{}` is the
    biased product)."""
    params = ", ".join(
        f"%w{k}: Tensor[({width}, {width}), float32], %b{k}: Tensor[({width}), float32]"
        for k in range(3)
    )
    outputs = ", ".join(tail[k].format(f"add(nn.dense(%x, %w{k}), %b{k})") for k in range(3))
    return f"def @main(%x: Tensor[({rows}, {width}), float32], {params}) {{ ({outputs}) }}"


def qkv_case():
    head_split = "transpose(reshape({}, newshape=[1, 128, 12, 32]), axes=[0, 2, 1, 3])"
    return _graph_case(_projections(128, 384, [head_split] * 3), 128, 384)


def gru_case():
    return _graph_case(_projections(8, 256, ["sigmoid({})", "sigmoid({})", "tanh({})"]), 8, 256)


def _graph_case(text: str, rows: int, width: int):
    rng = np.random.default_rng(0)
    params = {}
    for k in range(3):
        params[f"w{k}"] = (rng.standard_normal((width, width)) / np.sqrt(width)).astype("float32")
        params[f"b{k}"] = rng.standard_normal(width).astype("float32")
    feed = {"x": rng.standard_normal((rows, width)).astype("float32")}
    return parse(text), params, feed


def minilm_case():
    from tessel.cli import minilm
    from tessel.frontend.onnx import from_onnx

    directory = minilm.model_dir()
    tokens = minilm.tokenize(["A man is eating food."], directory)
    feed = {}
    for name, value in tokens.items():
        padded = np.zeros((1, 128), value.dtype)
        padded[:, : value.shape[1]] = value
        feed[name] = padded
    mod, params = from_onnx(
        minilm.load_encoder(directory), shape={k: v.shape for k, v in feed.items()}
    )
    return mod, params, feed


CASES = {"qkv": qkv_case, "gru": gru_case, "minilm": minilm_case}


def _forced(strategy: str) -> PassContext:
    def choose(products):
        widths = {p.width for p in products}
        batchable = len(widths) == 1 and products[0].data.checked_type.ndim == 2
        return SEPARATE if strategy == BATCH and not batchable else strategy

    return PassContext(config={STRATEGY_CHOOSER: choose})


def _choice(mod, params) -> str:
    """Which strategy the default pipeline chose (from the graph after the pass)."""
    from tessel.graph.executor import bind_params
    from tessel.graph.passes import pipeline_until

    text = str(pipeline_until("CombineParallelDense")(bind_params(mod, params)))
    before = str(pipeline_until("SimplifyExpr")(bind_params(mod, params)))
    if text.count("nn.batch_matmul") > before.count("nn.batch_matmul"):
        return BATCH
    return CONCAT if text.count("nn.dense") < before.count("nn.dense") else SEPARATE


def _openmp_threads():
    name = ctypes.util.find_library("gomp")
    library = ctypes.CDLL(name) if name else None
    return (lambda n: library.omp_set_num_threads(n)) if library else (lambda n: None)


def run_case(label: str, case, runs: int, set_threads) -> list[str]:
    """Table rows for one case: each strategy's median at 1 and 2 threads."""
    mod, params, feed = case()
    models = {}
    for strategy in (SEPARATE, BATCH, CONCAT):
        models[strategy] = compile_graph(mod, params, ctx=_forced(strategy))
    start = time.perf_counter()
    models["chosen"] = compile_graph(mod, params)  # the default pipeline's choice
    chosen_compile = time.perf_counter() - start
    choice = _choice(mod, params)
    reference = models[SEPARATE](**feed)
    reference = reference if isinstance(reference, tuple) else (reference,)
    for name, model in models.items():
        got = model(**feed)
        for want, have in zip(reference, got if isinstance(got, tuple) else (got,), strict=True):
            np.testing.assert_allclose(have, want, rtol=1e-4, atol=1e-4, err_msg=name)
    rows = []
    for threads, medians in model_medians_by_threads(models, feed, runs, set_threads).items():
        best = min(medians[s] for s in (SEPARATE, BATCH, CONCAT))
        cells = " | ".join(f"{medians[s] * 1e3:.3f}" for s in models)
        rows.append(
            f"| {label} | {threads} | {cells} | {choice} | "
            f"{medians['chosen'] / best:.3f} | {chosen_compile:.1f} |"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--cases", default=",".join(CASES))
    args = parser.parse_args()
    set_threads = _openmp_threads()
    print(
        "| case | threads | separate ms | batch ms | concat ms | chosen ms | chosen | "
        "chosen / best | chosen compile s |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for key in args.cases.split(","):
        for row in run_case(key, CASES[key], args.runs, set_threads):
            print(row, flush=True)


if __name__ == "__main__":
    main()
