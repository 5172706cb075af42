"""ONNX's conformance suite (the node tests of onnx.backend.test) run by Tessel and onnxruntime.

Run as `python benchmarks/onnx_conformance.py [--backends tessel,onnxruntime] [--jobs 2]
[--filter REGEX] [--json PATH]`. Each test (a one-node model with inputs and expected outputs,
1,884 with onnx 1.23) is prepared and run by each backend and compared with ONNX's own rule
(`onnx.backend.test.runner.Runner.assert_similar_outputs`: shape, dtype, the test's rtol and
atol). An outcome is one of:
- pass;
- wrong: the backend ran and its result differs (a wrong result: the worst outcome);
- random: the same for a model that draws random numbers, whose expected outputs are the test
  generator's draws (no backend can match them but by chance);
- refused: a clean error (Tessel's UserError, onnxruntime's NOT_IMPLEMENTED or INVALID_GRAPH
  and the like), naming what is not supported;
- crash: any other exception, or the process died;
- timeout.
Tests run in worker processes (`--jobs`), so a crash ends one test, not the run. The table gives
per operator the tests and each backend's passes, and the totals; `--json` writes every outcome
with its message.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

BACKENDS = ("tessel", "onnxruntime")
TIMEOUT_S = 120


def _tests(pattern: str | None):
    """The node tests, in the loader's order, those whose name matches `pattern`."""
    import warnings

    from onnx.backend.test.loader import load_model_tests

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tests = load_model_tests(kind="node")
    regex = re.compile(pattern) if pattern else None
    return [t for t in tests if regex is None or regex.search(t.name)]


def operator_of(test_name: str, model) -> str:
    """The operator a test is about: its one node's type, or for a multi-node test (a function
    expanded into primitive ops) the ONNX operator whose name starts its name."""
    nodes = list(model.graph.node)
    if len(nodes) == 1:
        return nodes[0].op_type
    key = test_name.removeprefix("test_").replace("_", "").lower()
    names = _schema_names()
    best = max((n for n in names if key.startswith(n.lower())), key=len, default=None)
    return best or nodes[-1].op_type


_SCHEMAS: list[str] = []


def _schema_names() -> list[str]:
    if not _SCHEMAS:
        import onnx

        _SCHEMAS.extend({s.name for s in onnx.defs.get_all_schemas_with_history() if not s.domain})
    return _SCHEMAS


def _run_tessel(model, inputs):
    from tessel.frontend.onnx.backend import TesselBackend

    return TesselBackend.prepare(model, "CPU").run(inputs)


def _run_onnxruntime(model, inputs):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    names = [i.name for i in session.get_inputs()]
    return session.run(None, dict(zip(names, inputs, strict=False)))


def _classify_error(backend: str, err: BaseException) -> str:
    if backend == "tessel":
        from tessel.support.errors import UserError

        return "refused" if isinstance(err, UserError) else "crash"
    text = str(err)
    clean = ("NOT_IMPLEMENTED", "INVALID_GRAPH", "INVALID_ARGUMENT", "NO_SUCHFILE", "FAIL")
    return (
        "refused"
        if any(f"[ONNXRuntimeError] : {c}" in text or c in text[:80] for c in clean)
        else "crash"
    )


def _run_one(backend: str, test) -> tuple[str, str]:
    """(outcome, message) of one test on one backend."""
    import numpy as np
    from onnx.backend.test.runner import Runner, _normalize_tensor

    run = _run_tessel if backend == "tessel" else _run_onnxruntime
    try:
        for inputs, ref_outputs in test.data_sets:
            # A 0-d input comes as a NumPy scalar, which onnxruntime's Python API refuses.
            inputs = [_as_array(_normalize_tensor(x)) for x in inputs]
            ref_outputs = [_normalize_tensor(x) for x in ref_outputs]
            outputs = run(test.model, inputs)
            try:
                with np.errstate(all="ignore"):
                    Runner.assert_similar_outputs(
                        ref_outputs, list(outputs), rtol=test.rtol, atol=test.atol
                    )
            except (AssertionError, TypeError, ValueError) as err:
                # Random draws differ from the test's (NumPy's) by generator, not by error.
                return ("random" if _draws_random(test.model) else "wrong"), _first_line(err)
    except Exception as err:  # noqa: BLE001 - every failure is an outcome to report
        return _classify_error(backend, err), _first_line(err)
    return "pass", ""


RANDOM_OPS = {
    "Bernoulli", "Multinomial", "RandomNormal", "RandomNormalLike", "RandomUniform",
    "RandomUniformLike",
}  # fmt: skip


def _draws_random(model) -> bool:
    """Whether the test's model draws random numbers (a random operator, or Dropout given its
    training_mode input)."""
    nodes = list(model.graph.node)
    for node in nodes:
        for attr in node.attribute:
            nodes += list(attr.g.node) if attr.g is not None else []
    return any(
        n.op_type in RANDOM_OPS or (n.op_type == "Dropout" and len(n.input) > 2) for n in nodes
    )


def _as_array(value):
    import numpy as np

    return np.asarray(value) if isinstance(value, np.generic) else value


def _first_line(err: BaseException) -> str:
    lines = [line for line in str(err).strip().splitlines() if line.strip()]
    return f"{type(err).__name__}: {lines[0] if lines else ''}"[:300]


def _worker(backend: str, shard: int, shards: int, pattern: str | None) -> None:
    """Run every `shards`-th test from `shard`, printing a JSON line before and after each."""
    import signal

    def on_alarm(signum, frame):
        raise TimeoutError(f"over {TIMEOUT_S} s")

    signal.signal(signal.SIGALRM, on_alarm)
    skip = int(os.environ.get("CONFORMANCE_SKIP", "0"))  # tests this shard already reported
    for index, test in enumerate(_tests(pattern)):
        if index % shards != shard or index // shards < skip:
            continue
        print(json.dumps({"begin": test.name}), flush=True)
        start = time.perf_counter()
        signal.alarm(TIMEOUT_S)
        try:
            outcome, message = _run_one(backend, test)
        except TimeoutError as err:
            outcome, message = "timeout", str(err)
        finally:
            signal.alarm(0)
        record = {"name": test.name, "op": operator_of(test.name, test.model), "outcome": outcome,
                  "message": message, "seconds": round(time.perf_counter() - start, 3)}  # fmt: skip
        print(json.dumps(record), flush=True)


def _run_shard(backend: str, shard: int, shards: int, pattern: str | None) -> list[dict]:
    """One shard's records, restarting its worker after a test that kills it."""
    records: list[dict] = []
    env = dict(os.environ, OMP_NUM_THREADS="1", TESSEL_NUM_THREADS="1")
    while True:
        env["CONFORMANCE_SKIP"] = str(len(records))
        command = [
            sys.executable,
            __file__,
            "--worker",
            backend,
            "--shard",
            str(shard),
            "--shards",
            str(shards),
        ] + (["--filter", pattern] if pattern else [])
        proc = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env
        )
        current = None
        assert proc.stdout is not None
        for line in proc.stdout:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # a kernel's or library's own print
            if "begin" in record:
                current = record["begin"]
            else:
                records.append(record)
                current = None
        code = proc.wait()
        if current is None:
            return records
        records.append(
            {
                "name": current,
                "op": "?",
                "outcome": "crash",
                "message": f"the process died (exit {code})",
                "seconds": 0.0,
            }
        )


def run_backend(backend: str, jobs: int, pattern: str | None) -> dict[str, dict]:
    """Every test's record on `backend`, by test name."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(jobs) as pool:
        shards = list(pool.map(lambda s: _run_shard(backend, s, jobs, pattern), range(jobs)))
    return {r["name"]: r for shard in shards for r in shard}


def table(results: dict[str, dict[str, dict]], tests) -> str:
    """Per operator: tests, each backend's passes; then the totals of every outcome."""
    backends = list(results)
    ops: dict[str, list[str]] = defaultdict(list)
    for test in tests:
        ops[operator_of(test.name, test.model)].append(test.name)
    header = ["operator", "tests", *(f"{b} pass" for b in backends)]
    rows = [header]
    for op in sorted(ops):
        names = ops[op]
        passes = [
            sum(results[b].get(n, {}).get("outcome") == "pass" for n in names) for b in backends
        ]
        rows.append([op, str(len(names)), *map(str, passes)])
    total = len(tests)
    lines = ["| " + " | ".join(r) + " |" for r in rows]
    lines.insert(1, "|" + "---|" * len(header))
    lines.append("")
    for b in backends:
        counts = Counter(r["outcome"] for r in results[b].values())
        summary = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
        lines.append(
            f"{b}: {counts['pass']}/{total} pass ({100 * counts['pass'] / total:.1f}%); {summary}"
        )
    if "tessel" in results and "onnxruntime" in results:
        ort_pass = {n for n, r in results["onnxruntime"].items() if r["outcome"] == "pass"}
        both = sum(results["tessel"].get(n, {}).get("outcome") == "pass" for n in ort_pass)
        lines.append(
            f"tessel passes {both} of the {len(ort_pass)} tests onnxruntime passes "
            f"({100 * both / max(len(ort_pass), 1):.1f}%)"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--filter", default=None, help="a regex the test names must match")
    parser.add_argument("--json", type=Path, default=None, help="write every outcome here")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--shard", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--shards", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        _worker(args.worker, args.shard, args.shards, args.filter)
        return 0
    tests = _tests(args.filter)
    results = {}
    for backend in args.backends.split(","):
        start = time.perf_counter()
        results[backend] = run_backend(backend, args.jobs, args.filter)
        print(
            f"{backend}: {len(tests)} tests in {time.perf_counter() - start:.0f} s", file=sys.stderr
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    print(table(results, tests))
    return 0


if __name__ == "__main__":
    sys.exit(main())
