"""Time te.gradient: building the backward of an MLP and a small CNN, compiling it, and running
it (default lowering, no schedule), against PyTorch autograd on the same inputs.

Run as `python benchmarks/gradient.py [--runs 20] [--batch 32]`. The MLP is 784-256-10 (relu,
log_softmax, summed); the CNN is conv 3x3 (3->16, 32x32, pad 1) -> relu -> max pool 2x2 -> dense
to 10 -> sum of squares. Each row gives the median time of one forward+backward call of the
compiled Tessel function (forward and all gradients in one PrimFunc) and of PyTorch's
`loss.backward()` after its forward, at 1 and 2 threads (torch.set_num_threads; Tessel's
unscheduled code runs on one thread either way), and their ratio. Results are checked against
PyTorch first. Scheduling the backward is the default-schedule issue's work: the ratio here is
what the unscheduled gradient costs.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
import torch.nn.functional as F
from timing import median_seconds

import tessel
from tessel import te, topi


def mlp(batch: int):
    x = te.placeholder((batch, 784), name="x")
    w1, b1 = te.placeholder((256, 784), name="w1"), te.placeholder((256,), name="b1")
    w2, b2 = te.placeholder((10, 256), name="w2"), te.placeholder((10,), name="b2")
    logits = topi.nn.dense(topi.nn.relu(topi.nn.dense(x, w1, b1)), w2, b2)
    loss = topi.sum(topi.nn.log_softmax(logits))

    def reference(a, p, q, r, s):
        return F.log_softmax(F.linear(F.relu(F.linear(a, p, q)), r, s), -1).sum()

    return [x, w1, b1, w2, b2], loss, reference


def cnn(batch: int):
    x = te.placeholder((batch, 3, 32, 32), name="x")
    w = te.placeholder((16, 3, 3, 3), name="w")
    wd, bd = te.placeholder((10, 16 * 16 * 16), name="wd"), te.placeholder((10,), name="bd")
    conv = topi.nn.conv2d_nchw(x, w, 1, 1, 1)
    pooled = topi.nn.pool2d(topi.nn.relu(conv), (2, 2), (2, 2), (1, 1), (0, 0, 0, 0), "max")
    out = topi.nn.dense(topi.nn.flatten(pooled), wd, bd)
    loss = topi.sum(topi.multiply(out, out))

    def reference(a, k, p, q):
        h = F.max_pool2d(F.relu(F.conv2d(a, k, padding=1)), 2)
        return F.linear(h.flatten(1), p, q).square().sum()

    return [x, w, wd, bd], loss, reference


def measure(name: str, model, runs: int) -> list[str]:
    inputs, loss, reference = model
    start = time.perf_counter()
    grads = te.gradient(loss, inputs)
    func = te.create_prim_func([*inputs, loss, *grads])
    built = time.perf_counter()
    module = tessel.build(func)
    compiled = time.perf_counter()
    rng = np.random.default_rng(0)
    values = [rng.standard_normal(t.const_shape()).astype("float32") * 0.1 for t in inputs]
    outputs = [np.zeros(t.const_shape(), "float32") for t in (loss, *grads)]
    params = [torch.tensor(v, requires_grad=True) for v in values]

    def run_torch():
        for p in params:
            p.grad = None
        reference(*params).backward()

    module(*values, *outputs)
    run_torch()
    for ours, theirs in zip(outputs[1:], params, strict=True):
        np.testing.assert_allclose(ours, theirs.grad.numpy(), rtol=1e-3, atol=1e-4)
    ours = median_seconds(lambda: module(*values, *outputs), runs)
    rows = []
    for threads in (1, 2):
        torch.set_num_threads(threads)
        theirs = median_seconds(run_torch, runs)
        rows.append(
            f"| {name} | {threads} | {built - start:.2f} | {compiled - built:.2f} | "
            f"{ours * 1e3:.2f} | {theirs * 1e3:.2f} | {ours / theirs:.1f} |"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--batch", type=int, default=32)
    args = parser.parse_args()
    print(
        "| model | threads | te.gradient + create_prim_func s | C build s | Tessel ms | "
        "PyTorch ms | Tessel / PyTorch |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, model in (
        ("MLP 784-256-10", mlp(args.batch)),
        ("CNN conv-relu-pool-dense", cnn(args.batch)),
    ):
        for row in measure(name, model, args.runs):
            print(row)


if __name__ == "__main__":
    main()
