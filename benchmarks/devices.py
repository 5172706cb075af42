"""What running across two devices costs: a model split between the host and the ext_dev
stand-in against the same model on the host alone (issue 27).

Run as `python benchmarks/devices.py [--runs 50] [--cases mlp,cnn]`. Each case is compiled twice
with `tessel.graph.compile`: "host", the graph as written without device annotations, and
"split", the same graph with part of it annotated `on_device(..., ext_dev)`. The split model
makes the planned `device_copy`s each call (the runtime checks both sides and counts them) and
checks every pointer a kernel gets; the ext_dev runs the same C code, so the difference is the
price of the copies and the checks. Outputs are compared before timing; the two take turns
(timing.interleaved_medians). The table gives both medians at 1 and 2 threads, the copies and
bytes one call moves, and split / host.

Cases:
- mlp: [64, 384] by a 384x1536 dense with relu on the ext_dev, then a dense back to 384 and a
  softmax on the host.
- cnn: conv3x3, relu, conv3x3, relu on [1, 32, 56, 56] on the ext_dev, global average pooling
  and a 32->10 dense on the host.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "20")  # see benchmarks/models.py

import argparse

import numpy as np
from timing import model_medians_by_threads

from tessel.graph import compile as compile_graph
from tessel.graph import parse
from tessel.ir import VirtualDevice
from tessel.runtime.threads import set_threads

HEADER = '#[version = "0.0.5"]\n'
EXT = "virtual_device=meta[VirtualDevice][0]"
CASES = {
    "mlp": (
        """def @main(%x: Tensor[(64, 384), float32], %w0: Tensor[(1536, 384), float32],
              %w1: Tensor[(384, 1536), float32]) {
          %0 = ON(nn.relu(nn.dense(%x, %w0)));
          nn.softmax(nn.dense(%0, %w1))
        }""",
        "x",
    ),
    "cnn": (
        """def @main(%x: Tensor[(1, 32, 56, 56), float32], %k0: Tensor[(32, 32, 3, 3), float32],
              %k1: Tensor[(32, 32, 3, 3), float32], %w: Tensor[(10, 32), float32]) {
          %0 = nn.relu(nn.conv2d(%x, %k0, padding=[1, 1, 1, 1]));
          %1 = ON(nn.relu(nn.conv2d(%0, %k1, padding=[1, 1, 1, 1])));
          nn.dense(nn.batch_flatten(nn.global_avg_pool2d(%1)), %w)
        }""",
        "x",
    ),
}


def _models(text: str, input_name: str):
    """The host-only and split models of one case, their weights bound, and the feed."""
    split_text = _annotate(HEADER + text)
    host_text = HEADER + _strip(text)
    split = parse(split_text, {"VirtualDevice": [VirtualDevice("ext_dev", 0)]})
    host = parse(host_text)
    rng = np.random.default_rng(0)
    params = {}
    feed = {}
    for p in host["main"].params:
        value = rng.standard_normal(p.type_annotation.shape).astype("float32") * 0.1
        if p.name_hint == input_name:
            feed[p.name_hint] = value
        else:
            params[p.name_hint] = value
    return compile_graph(host, params), compile_graph(split, params), feed


def _annotate(text: str) -> str:
    """`ON(e)` written as `on_device(e, virtual_device=...)`: the argument ends at its match."""
    out, rest = [], text
    while "ON(" in rest:
        head, rest = rest.split("ON(", 1)
        depth, k = 1, 0
        while depth:
            depth += {"(": 1, ")": -1}.get(rest[k], 0)
            k += 1
        out.append(f"{head}on_device({rest[: k - 1]}, {EXT})")
        rest = rest[k:]
    return "".join(out) + rest


def _strip(text: str) -> str:
    """`ON(e)` written as `(e)`: the same graph on one device."""
    return text.replace("ON(", "(")


def run_case(label: str, runs: int) -> list[str]:
    """Table rows for one case: both models' medians at 1 and 2 threads."""
    host, split, feed = _models(*CASES[label])
    np.testing.assert_allclose(split(**feed), host(**feed), rtol=1e-4, atol=1e-5)
    moved = sum(split.plan.tensors[c.source].nbytes for c in split.plan.copies)
    models = {"host": host, "split": split}
    rows = []
    for threads, medians in model_medians_by_threads(models, feed, runs, set_threads).items():
        rows.append(
            f"| {label} | {threads} | {medians['host'] * 1e3:.3f} | {medians['split'] * 1e3:.3f}"
            f" | {split.device_copies} ({moved} B) | {medians['split'] / medians['host']:.3f} |"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--cases", default=",".join(CASES))
    args = parser.parse_args()
    print("| case | threads | host ms | split ms | copies per call | split / host |")
    print("|---|---|---|---|---|---|")
    for key in args.cases.split(","):
        for row in run_case(key, args.runs):
            print(row, flush=True)


if __name__ == "__main__":
    main()
