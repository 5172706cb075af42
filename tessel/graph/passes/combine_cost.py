"""The cost model CombineParallelDense chooses by: a prediction where it settles the choice, the
measured time of each strategy's kernels where it does not.

Which strategy wins depends on the shapes and the machine (in the TVM thread behind it, one
wide GEMM beat a strided-batched one for three small products on a GPU; on a CPU the stack
copies of the batch strategy cost memory traffic that a wide dense does not).

The prediction. When the weights are constants, combining them is folded at compile time, so
the concatenated product does the arithmetic of the separate ones, reads the data once instead
of N times and copies nothing, in one kernel instead of N; batching adds N copies of the data.
What the separate products can win back is each kernel's fixed cost (a parallel loop's
dispatch and join, its operands reaching the cache), which the tile rules do not see. The
prediction settles a group when N - 1 such costs (`KERNEL_SECONDS`) are under `MARGIN` of the
group's time at the target's cores, estimated at `PRODUCT_FLOPS` a thread: then no strategy is
expected to beat the concatenated product by more than the margin the measurements are read
with. Both constants are conservative (the cost high, the rate low: this machine's products
run at 100-250 GFLOP/s a core), so an unsure group is measured. On two cores MiniLM's and
DistilBERT's Q/K/V projections (0.1-0.5 GFLOP) are settled (on 16, MiniLM's are measured); a
GRU's gates (8 rows) and groups whose weights are computed at run time (the combined forms then
copy them) are measured.

The measurement. For each unsettled group's signature (the operator, data shape, widths,
dtypes) the candidates (the products kept separate, one concatenated product, one batched
product) are compiled with the default schedules and timed, interleaved, on random data, at
one thread and at all of them. The fastest round of each is kept in a small on-disk table (the
artifact cache, `~/.cache/tessel/combine_parallel_dense/`), so a signature is measured once per
machine and target. A combined strategy is chosen only when its time relative to keeping the
products separate (geometric mean over the thread counts) is below 1 - `MARGIN`, so that noise
does not rewrite graphs for nothing.

`PassContext(config={MEASURE: ...})` says when to measure: True (the default) for the groups
the prediction leaves open, False never (a compile that must not spend the time: every group
gets the concatenated product), "always" for every group (how the benchmark checks the
prediction, `benchmarks/combine_parallel_dense.py`).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tessel.arith.dims import is_static
from tessel.graph.expr import Call, Constant, Function, Tuple, Var
from tessel.graph.passes.parallel_branches import BATCH, CONCAT, SEPARATE, Product, tensor_type
from tessel.graph.ty import TensorType
from tessel.ir.expr import GlobalVar, Op
from tessel.ir.module import IRModule
from tessel.ir.target import Target
from tessel.ir.transform import PassContext
from tessel.runtime import read_artifact, write_artifact
from tessel.runtime.compiler import compiler_flags, find_compiler
from tessel.runtime.threads import current_threads, set_threads
from tessel.support.errors import UserError
from tessel.support.frozen_map import FrozenMap
from tessel.support.worker_processes import compile_jobs, map_in_workers

MEASURE = "combine_parallel_dense.measure"
MEASUREMENTS_KIND = "combine_parallel_dense"
TABLE_VERSION = "2"  # bump when the candidates' kernels change enough to outdate old times
MARGIN = 0.03
ROUNDS = 15
# A kernel's fixed cost and a product's rate a thread, as the prediction bounds them (see above).
KERNEL_SECONDS = 5e-6
PRODUCT_FLOPS = 50e9


@dataclass(frozen=True)
class Signature:
    """What a group's cost depends on."""

    op: str
    data_shape: tuple[int, ...]
    widths: tuple[int, ...]
    dtype: str
    weight_dtype: str
    transpose_b: bool
    out_dtype: str
    constant_weights: bool = True  # weights known at compile time: combining them is free

    @staticmethod
    def of(products: Sequence[Product]) -> Signature:
        """The signature of a group of parallel products."""
        first = products[0]
        data, weight = tensor_type(first.data), tensor_type(first.weight)
        assert data is not None
        assert weight is not None
        return Signature(
            first.call.op.name,  # type: ignore[union-attr]  # a product's op is an Op (as_product)
            data.shape,
            tuple(p.width for p in products),
            data.dtype,
            weight.dtype,
            first.transpose_b,
            str(first.call.attrs.get("out_dtype", "") or ""),
            all(isinstance(p.weight, Constant) for p in products),
        )

    @property
    def flops(self) -> int:
        """Multiplies and adds of the group's products."""
        rows = int(np.prod(self.data_shape[:-1], dtype=np.int64))
        return 2 * rows * self.data_shape[-1] * sum(self.widths)

    @property
    def batchable(self) -> bool:
        """Whether the batch strategy applies (2-D data, equal widths)."""
        return len(self.data_shape) == 2 and len(set(self.widths)) == 1

    def key(self, target: Target) -> str:
        """The table key: the signature and the target, hashed."""
        text = repr((self, target))
        return hashlib.sha256(text.encode()).hexdigest()[:32]


def _weight_shape(sig: Signature, width: int) -> tuple[int, int]:
    k = sig.data_shape[-1]
    return (width, k) if sig.transpose_b else (k, width)


def candidate(sig: Signature, strategy: str) -> IRModule:
    """A module computing the group's products by `strategy`: `main(x)` with random constant
    weights, or `main(x, w0, w1, ...)` when the group's weights are not constants."""
    rng = np.random.default_rng(0)
    data = Var("x", TensorType(sig.data_shape, sig.dtype))
    params = [data]
    weights: list = []
    for k, width in enumerate(sig.widths):
        shape = _weight_shape(sig, width)
        if sig.constant_weights:
            weights.append(Constant(rng.standard_normal(shape).astype(sig.weight_dtype)))
        else:
            weights.append(Var(f"w{k}", TensorType(shape, sig.weight_dtype)))
            params.append(weights[-1])
    attrs = {"out_dtype": sig.out_dtype} if sig.out_dtype else {}
    if sig.op == "nn.matmul":
        attrs["transpose_b"] = sig.transpose_b
    if strategy == SEPARATE:
        body = Tuple(tuple(Call(Op(sig.op), (data, w), attrs) for w in weights))
    elif strategy == CONCAT:
        weight = Call(
            Op("concatenate"), (Tuple(tuple(weights)),), {"axis": 0 if sig.transpose_b else 1}
        )
        body = Call(Op(sig.op), (data, weight), attrs)
    else:
        stacked = Call(Op("stack"), (Tuple((data,) * len(weights)),), {"axis": 0})
        weight = Call(Op("stack"), (Tuple(tuple(weights)),), {"axis": 0})
        batch_attrs = {k: v for k, v in attrs.items() if k == "out_dtype"}
        batch_attrs["transpose_b"] = sig.transpose_b
        body = Call(Op("nn.batch_matmul"), (stacked, weight), batch_attrs)
    return IRModule(FrozenMap({GlobalVar("main"): Function(tuple(params), body)}))


def candidate_inputs(sig: Signature) -> list[np.ndarray]:
    """Random arguments for a candidate's `main`."""
    rng = np.random.default_rng(1)
    inputs = [rng.standard_normal(sig.data_shape).astype(sig.dtype)]
    if not sig.constant_weights:
        inputs += [
            rng.standard_normal(_weight_shape(sig, w)).astype(sig.weight_dtype) for w in sig.widths
        ]
    return inputs


def measure(
    sig: Signature, target: Target | None, jobs: int | None = None
) -> dict[int, dict[str, float]]:
    """Seconds of each applicable strategy's compiled module (the fastest of ROUNDS rounds,
    timed interleaved), at one thread and at every thread OpenMP would use (by count); the
    candidates are compiled in up to `jobs` processes (None: the cores this process may use)."""
    strategies = [SEPARATE, CONCAT] + ([BATCH] if sig.batchable else [])
    models = _compiled_candidates(sig, strategies, target, compile_jobs(jobs))
    inputs = candidate_inputs(sig)
    most = current_threads()
    result: dict[int, dict[str, float]] = {}
    try:
        for count in sorted({1, most}):
            set_threads(count)
            result[count] = _timed(models, inputs)
    finally:
        set_threads(most)
    return result


def _compiled_candidates(
    sig: Signature, strategies: list[str], target: Target | None, jobs: int
) -> dict[str, Any]:
    """Each strategy's candidate, compiled. Compiling them is most of a first measurement, so
    with `jobs` > 1 worker processes compile them first, each one whole (its kernels are too few
    to share out), and leave the scheduled kernels, lowered modules and libraries in the caches;
    the compiles here then read them (timing needs the models in this process)."""
    from tessel.graph.executor import compile as compile_graph
    from tessel.graph.passes.pipeline import default_pipeline

    passes = [p for p in default_pipeline(target) if type(p).__name__ != "CombineParallelDense"]

    def compiled(i: int) -> Any:
        mod = candidate(sig, strategies[i])
        return compile_graph(mod, target=target or "c", passes=passes, jobs=1)

    if jobs > 1:
        compiler_flags(find_compiler())  # probed once, here: the workers inherit the answer
        map_in_workers(lambda i: compiled(i) is not None, len(strategies), jobs)
    return {s: compiled(i) for i, s in enumerate(strategies)}


def _timed(models: dict, inputs: list[np.ndarray]) -> dict[str, float]:
    for model in models.values():
        model(*inputs)  # page the weights in, start the thread pool
    calls = max(1, int(2e-3 / max(_once(models[SEPARATE], inputs), 1e-7)))  # ~2 ms a timing
    times: dict[str, list[float]] = {s: [] for s in models}
    for _ in range(ROUNDS):
        for strategy, model in models.items():
            start = time.perf_counter()
            for _ in range(calls):
                model(*inputs)
            times[strategy].append((time.perf_counter() - start) / calls)
    # The fastest round, not the median: on a shared machine the other rounds measure the
    # neighbours (a busy core stalls a 2-thread kernel by milliseconds), and a choice made
    # from them would be kept in the table for good.
    return {s: float(np.min(t)) for s, t in times.items()}


def _once(model, inputs: list[np.ndarray]) -> float:
    start = time.perf_counter()
    model(*inputs)
    return time.perf_counter() - start


def measured_times(
    sig: Signature,
    target: Target | None,
    cache_dir: str | Path | None = None,
    jobs: int | None = None,
) -> dict[int, dict[str, float]]:
    """The table's times for `sig` on `target` (by thread count), measured now (compiling in
    up to `jobs` processes) when the table (in `cache_dir`, the artifact cache by default) has
    none."""
    key = sig.key(target or _host())
    stored = read_artifact(MEASUREMENTS_KIND, TABLE_VERSION, key, cache_dir)
    if stored is not None:
        try:
            entry = json.loads(stored)
            times = {
                int(count): {str(k): float(v) for k, v in seconds.items()}
                for count, seconds in entry["seconds"].items()
            }
            if times and all(_complete(t, sig) for t in times.values()):
                return times
        except (ValueError, KeyError, TypeError, AttributeError):
            pass  # a damaged entry is measured again and overwritten
    seconds = measure(sig, target, jobs)
    record = {"signature": repr(sig), "target": repr(target or _host()), "seconds": seconds}
    write_artifact(MEASUREMENTS_KIND, TABLE_VERSION, key, json.dumps(record).encode(), cache_dir)
    return seconds


def _complete(seconds: dict[str, float], sig: Signature) -> bool:
    """Whether a stored thread count's times cover every strategy `sig` has, all positive."""
    expected = {SEPARATE, CONCAT} | ({BATCH} if sig.batchable else set())
    return set(seconds) == expected and all(v > 0 for v in seconds.values())


def _host() -> Target:
    from tessel.schedule.rules.default import host_target

    return host_target()


def choose(times: dict[int, dict[str, float]]) -> str:
    """The strategy with the least time relative to keeping the products separate (geometric
    mean over the thread counts measured); a combined one only when it beats separate by more
    than MARGIN."""
    scores = {
        strategy: float(
            np.exp(
                np.mean(
                    [
                        np.log(by_strategy[strategy] / by_strategy[SEPARATE])
                        for by_strategy in times.values()
                    ]
                )
            )
        )
        for strategy in next(iter(times.values()))
    }
    best = min(scores, key=scores.__getitem__)
    return best if best != SEPARATE and scores[best] < 1 - MARGIN else SEPARATE


def predicted(sig: Signature) -> str:
    """The choice without measurements: the concatenated product (see the module's note)."""
    return CONCAT


def settled(sig: Signature, target: Target | None) -> bool:
    """Whether the prediction settles the group's choice: constant weights, and the separate
    products' extra kernels cost under MARGIN of the group's time on the target's cores."""
    if not sig.constant_weights:
        return False
    threads = (target or _host()).cores
    seconds = sig.flops / (PRODUCT_FLOPS * threads)
    return (len(sig.widths) - 1) * KERNEL_SECONDS < MARGIN * seconds


def measured_chooser(ctx: PassContext, target: Target | None = None, jobs: int | None = None):
    """The strategy chooser CombineParallelDense uses by default: predicted where that settles
    the choice, else measured (compiling in up to `jobs` processes), as the context's MEASURE
    says."""
    mode = ctx.config.get(MEASURE, True)
    if not (isinstance(mode, bool) or mode == "always"):
        raise UserError(
            f"{MEASURE} is {mode!r}; it takes True, False or 'always'", rule=f"config.{MEASURE}"
        )
    memo: dict[Signature, str] = {}

    def chooser(products: Sequence[Product]) -> str:
        sig = Signature.of(products)
        if sig not in memo and not is_static(sig.data_shape):
            # Rows known at run time only: nothing to measure at. The concatenated product of
            # constant weights reads the data once and copies nothing, at every row count;
            # weights computed at run time would be copied at every call: left alone.
            memo[sig] = predicted(sig) if sig.constant_weights else SEPARATE
        if sig not in memo:
            measure_now = mode == "always" or (mode is True and not settled(sig, target))
            memo[sig] = (
                choose(measured_times(sig, target, jobs=jobs)) if measure_now else predicted(sig)
            )
        return memo[sig]

    return chooser


__all__ = [
    "MEASURE",
    "MEASUREMENTS_KIND",
    "Signature",
    "candidate",
    "candidate_inputs",
    "choose",
    "measure",
    "measured_chooser",
    "measured_times",
    "predicted",
    "settled",
]
