"""FuseOps's multi-anchor fusion against none, and the chains its cost model chooses.

Run as `python benchmarks/multi_anchor.py [--runs 20]
[--cases attention,mlp,conv-chain,inverted-residual,minilm,resnet]`. Each case is compiled three
times with `tessel.graph.compile` (default schedules): "unfused", every anchor (dense, matmul,
batch_matmul, conv2d) in a kernel of its own (the `fuse_ops.max_anchors` config at 1);
"fused", every chain of anchors fused into one kernel (the default pipeline with
`FuseOps(max_anchors=3)` in place of its FuseOps: no cost model); and "default", the default
pipeline (`FuseOps(max_anchors=3, by_cost=True)`: each chain fused where `fuse_cost.chain_pays`
says one kernel pays). Fused and default are checked against unfused before timing. The table
gives each one's median latency at 1 and 2 threads, how many multi-anchor kernels the default
pipeline made out of those the fused model has ("k of n"), and default's ratio to the faster
of unfused and fused; the bar is that default is never more than 5% above it. The three take
turns (timing.interleaved_medians), so a burst of load on the shared machine slows them alike.

Cases:
- attention: MiniLM-style attention core, 12 heads, 128 tokens, head dim 32: QK^T, scale and
  mask, softmax, PV (softmax counts as an anchor of the chain).
- mlp: [128, 384] by a 384x1536 dense with relu, then a dense back to 384.
- conv-chain: conv3x3, relu, conv3x3, relu on [1, 64, 56, 56], 64 channels, padding 1.
- inverted-residual: a MobileNetV2 block on [1, 32, 28, 28]: 1x1 expand to 192, clip 0..6,
  depthwise 3x3, clip, 1x1 project to 32, add the input.
- minilm: the whole all-MiniLM-L6-v2 encoder (tessel demo's, batch 1, sequence 128).
- resnet: benchmarks/models.py's ResNet-18-style CNN (1x3x112x112).
Weights are bound as parameters (Constants), as `tessel.graph.compile` binds a model's.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "20")  # see benchmarks/models.py

import argparse
import sys

import numpy as np
from combine_parallel_dense import minilm_case
from timing import model_medians_by_threads

from tessel.graph import Call, Function, parse
from tessel.graph import compile as compile_graph
from tessel.graph.executor import bind_params
from tessel.graph.passes import FuseOps, default_pipeline
from tessel.graph.passes.fuse_ops import MAX_ANCHORS
from tessel.graph.passes.rewriter import is_primitive
from tessel.graph.traversal import post_order_exprs
from tessel.ir.transform import PassContext, Sequential
from tessel.runtime.threads import set_threads

sys.path.insert(0, os.path.dirname(__file__))

ATTENTION = """
def @main(%q: Tensor[(12, 128, 32), float32], %k: Tensor[(12, 128, 32), float32],
          %v: Tensor[(12, 128, 32), float32], %mask: Tensor[(1, 1, 128), float32]) {
  %0 = nn.batch_matmul(%q, %k, transpose_b=True);
  %1 = add(multiply(%0, 0.17f), %mask);
  %2 = nn.softmax(%1);
  nn.batch_matmul(%2, %v, transpose_b=False)
}"""

MLP = """
def @main(%x: Tensor[(128, 384), float32], %w0: Tensor[(1536, 384), float32],
          %b0: Tensor[(1536), float32], %w1: Tensor[(384, 1536), float32],
          %b1: Tensor[(384), float32]) {
  %0 = nn.relu(add(nn.dense(%x, %w0), %b0));
  add(nn.dense(%0, %w1), %b1)
}"""

CONV_CHAIN = """
def @main(%x: Tensor[(1, 64, 56, 56), float32], %w0: Tensor[(64, 64, 3, 3), float32],
          %w1: Tensor[(64, 64, 3, 3), float32]) {
  %0 = nn.relu(nn.conv2d(%x, %w0, padding=[1, 1, 1, 1]));
  nn.relu(nn.conv2d(%0, %w1, padding=[1, 1, 1, 1]))
}"""

INVERTED_RESIDUAL = """
def @main(%x: Tensor[(1, 32, 28, 28), float32], %w0: Tensor[(192, 32, 1, 1), float32],
          %w1: Tensor[(192, 1, 3, 3), float32], %w2: Tensor[(32, 192, 1, 1), float32]) {
  %0 = clip(nn.conv2d(%x, %w0), a_min=0f, a_max=6f);
  %1 = clip(nn.conv2d(%0, %w1, padding=[1, 1, 1, 1], groups=192), a_min=0f, a_max=6f);
  add(nn.conv2d(%1, %w2), %x)
}"""


def _text_case(text: str, inputs: tuple[str, ...]):
    """(module, params, feed) of a graph in text form: the parameters named in `inputs` are fed
    at each call, the others bound as weights (random, scaled by their fan-in)."""
    rng = np.random.default_rng(0)
    mod = parse(text)
    params, feed = {}, {}
    for param in mod["main"].params:
        shape = tuple(int(d) for d in param.type_annotation.shape)
        value = rng.standard_normal(shape).astype("float32")
        if param.name_hint in inputs:
            feed[param.name_hint] = value
        else:
            fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
            params[param.name_hint] = value / np.float32(np.sqrt(fan_in))
    return mod, params, feed


def resnet_case():
    from models import _torch_case, resnet

    from tessel.frontend.onnx import from_onnx

    model_proto, feed, _ = _torch_case(resnet)
    mod, params = from_onnx(model_proto, shape={k: v.shape for k, v in feed.items()})
    return mod, params, feed


CASES = {
    "attention": lambda: _text_case(ATTENTION, ("q", "k", "v", "mask")),
    "mlp": lambda: _text_case(MLP, ("x",)),
    "conv-chain": lambda: _text_case(CONV_CHAIN, ("x",)),
    "inverted-residual": lambda: _text_case(INVERTED_RESIDUAL, ("x",)),
    "minilm": minilm_case,
    "resnet": resnet_case,
}


def _fuse_every_chain() -> list:
    """The default pipeline with FuseOps fusing every chain of anchors (no cost model)."""
    return [FuseOps(max_anchors=3) if isinstance(p, FuseOps) else p for p in default_pipeline()]


def _is_anchor(name: str) -> bool:
    return "dense" in name or "matmul" in name or "conv2d" in name


def _multi_anchor_kernels(mod, params, passes) -> int:
    """How many Primitive functions of `main` hold two or more anchors after `passes`."""
    fused = Sequential(tuple(passes))(bind_params(mod, params))
    count = 0
    for expr in post_order_exprs(fused["main"]):
        if isinstance(expr, Function) and is_primitive(expr):
            names = [e.op.name for e in post_order_exprs(expr.body) if isinstance(e, Call)]
            count += sum(_is_anchor(n) for n in names) > 1
    return count


def _outputs(result) -> tuple:
    return result if isinstance(result, tuple) else (result,)


def run_case(label: str, case, runs: int) -> list[str]:
    """Table rows for one case: each model's median at 1 and 2 threads."""
    mod, params, feed = case()
    models = {
        "unfused": compile_graph(mod, params, ctx=PassContext(config={MAX_ANCHORS: 1})),
        "fused": compile_graph(mod, params, passes=_fuse_every_chain()),
        "default": compile_graph(mod, params),
    }
    chosen = _multi_anchor_kernels(mod, params, default_pipeline())
    possible = _multi_anchor_kernels(mod, params, _fuse_every_chain())
    reference = _outputs(models["unfused"](**feed))
    for name in ("fused", "default"):
        got = _outputs(models[name](**feed))
        for want, have in zip(reference, got, strict=True):
            np.testing.assert_allclose(have, want, rtol=1e-4, atol=1e-4, err_msg=f"{label} {name}")
    rows = []
    for threads, medians in model_medians_by_threads(models, feed, runs, set_threads).items():
        best = min(medians["unfused"], medians["fused"])
        cells = " | ".join(f"{medians[s] * 1e3:.3f}" for s in models)
        rows.append(
            f"| {label} | {threads} | {cells} | {chosen} of {possible} | "
            f"{medians['default'] / best:.3f} |"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--cases", default=",".join(CASES))
    args = parser.parse_args()
    print(
        "| case | threads | unfused ms | fused ms | default ms | default fuses | default / best |"
    )
    print("|---|---|---|---|---|---|---|")
    for key in args.cases.split(","):
        for row in run_case(key, CASES[key], args.runs):
            print(row, flush=True)


if __name__ == "__main__":
    main()
