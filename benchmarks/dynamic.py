"""One model compiled once for symbolic shapes against the same model compiled for each static
shape (issue 29): compile times, and latency at each size, the outputs checked against
onnxruntime first.

Run as `python benchmarks/dynamic.py [--sizes 1x7,4x11,8x128,3x384] [--runs 5] [--threads 1]`.
The model is all-MiniLM-L6-v2 from its packaged weights, imported with `dims={"batch": (1, 64),
"seq": (1, 512)}` for the dynamic compile and with each size for the static ones. Each compile
runs in this process with the kernel cache on (what a user's second model sees); the table has
the compile times, the median latency of each model at each size over --runs calls, and the
dynamic model's latency over the static one's (issue 29's bar: at most 1.1).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def _inputs(batch: int, seq: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    mask = np.ones((batch, seq), "int64")
    mask[0, seq // 2 :] = 0  # one padded sentence
    return {
        "input_ids": rng.integers(0, 30000, (batch, seq)).astype("int64"),
        "attention_mask": mask,
        "token_type_ids": np.zeros((batch, seq), "int64"),
    }


def _median_ms(model, feeds: dict[str, np.ndarray], runs: int) -> float:
    model(*feeds.values())  # warm up
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        model(*feeds.values())
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1x7,4x11,8x128,3x384")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    sizes = [tuple(int(x) for x in item.split("x")) for item in args.sizes.split(",")]

    import onnxruntime as ort

    from tessel.cli import minilm
    from tessel.frontend.onnx import from_onnx
    from tessel.graph import compile as compile_graph

    proto = minilm.load_encoder(minilm.model_dir())
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)

    mod, _ = from_onnx(proto, dims={"batch": (1, 64), "seq": (1, 512)})
    start = time.perf_counter()
    dynamic = compile_graph(mod, threads=args.threads)
    dynamic_compile = time.perf_counter() - start

    rows = []
    for batch, seq in sizes:
        feeds = _inputs(batch, seq, rng)
        (expected,) = session.run(None, feeds)
        mod, _ = from_onnx(proto, dims={"batch": batch, "seq": seq})
        start = time.perf_counter()
        static = compile_graph(mod, threads=args.threads)
        static_compile = time.perf_counter() - start
        for name, model in (("dynamic", dynamic), ("static", static)):
            error = float(np.max(np.abs(model(*feeds.values()) - expected)))
            assert error < 1e-4, f"{name} model at {batch}x{seq}: error {error}"
        static_ms = _median_ms(static, feeds, args.runs)
        dynamic_ms = _median_ms(dynamic, feeds, args.runs)
        rows.append((batch, seq, static_compile, static_ms, dynamic_ms))

    print(f"all-MiniLM-L6-v2, {args.threads} thread(s), median of {args.runs} runs")
    print(f"dynamic compile (once): {dynamic_compile:.2f} s")
    print("| size | static compile s | static ms | dynamic ms | dynamic / static |")
    print("|---|---|---|---|---|")
    for batch, seq, static_compile, static_ms, dynamic_ms in rows:
        print(
            f"| {batch}x{seq} | {static_compile:.2f} | {static_ms:.2f} | {dynamic_ms:.2f} | "
            f"{dynamic_ms / static_ms:.2f} |"
        )
    static_total = sum(r[2] for r in rows)
    print(
        f"dynamic compile / static compile: {dynamic_compile / (static_total / len(rows)):.2f} "
        f"(one static compile on average; {len(rows)} of them: {static_total:.2f} s)"
    )


if __name__ == "__main__":
    main()
