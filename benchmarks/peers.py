"""The systems Tessel is measured against, onnxruntime and OpenVINO, each in a process of its own.

Each peer runs in a persistent worker process: two runtimes' thread pools in one process would
take cores from each other (an OpenMP team spinning after Tessel's call slows the ORT call that
follows). The parent drives all contenders in turns (timing.interleaved_turns), so a burst of
load on a shared machine slows every one alike. OpenVINO runs with the settings a latency user
picks: f32 inference precision, the latency hint, one stream and the thread count asked for.
"""

from __future__ import annotations

import contextlib
import multiprocessing
from collections.abc import Callable

import numpy as np
from timing import timed_calls

PEERS = ("onnxruntime", "openvino")


def available(peer: str) -> bool:
    """Whether `peer`'s Python package is installed (OpenVINO is in the `bench` extra)."""
    try:
        __import__(peer)
    except ImportError:
        return False
    return True


def _open_onnxruntime(onnx_path: str, threads: int) -> Callable[[dict], list[np.ndarray]]:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = onnxruntime.InferenceSession(onnx_path, options, providers=["CPUExecutionProvider"])
    return lambda feed: session.run(None, feed)


def _open_openvino(onnx_path: str, threads: int) -> Callable[[dict], list[np.ndarray]]:
    import openvino

    core = openvino.Core()
    config = {
        "PERFORMANCE_HINT": "LATENCY",
        "INFERENCE_PRECISION_HINT": "f32",
        "NUM_STREAMS": "1",
        "INFERENCE_NUM_THREADS": str(threads),
    }
    compiled = core.compile_model(core.read_model(onnx_path), "CPU", config)
    request = compiled.create_infer_request()
    names = [port.get_any_name() for port in compiled.inputs]

    def run(feed: dict) -> list[np.ndarray]:
        request.infer({name: feed[name] for name in names})
        return [np.array(request.get_output_tensor(k).data) for k in range(len(compiled.outputs))]

    return run


_OPENERS = {"onnxruntime": _open_onnxruntime, "openvino": _open_openvino}


def _serve(connection, peer: str, onnx_path: str, threads: int, feed: dict) -> None:
    """The worker's loop: ("check",) answers the outputs, ("turn", n) the warm-up and the wall
    times of n calls (timing.timed_calls), ("stop",) ends it. A failure is answered as
    ("error", text)."""
    try:
        run = _OPENERS[peer](onnx_path, threads)
    except Exception as err:  # noqa: BLE001  (the parent reports the peer as failed)
        connection.send(("error", f"{type(err).__name__}: {err}"))
        return
    connection.send(("ready",))
    while True:
        command = connection.recv()
        if command[0] == "stop":
            return
        try:
            if command[0] == "check":
                connection.send(("outputs", run(feed)))
                continue
            connection.send(("times", timed_calls(lambda: run(feed), command[1])))
        except Exception as err:  # noqa: BLE001
            connection.send(("error", f"{type(err).__name__}: {err}"))


class PeerError(RuntimeError):
    """A peer failed to load or run the model."""


class PeerWorker:
    """One peer runtime in its own process, loaded with one model at one thread count."""

    def __init__(self, peer: str, onnx_path: str, threads: int, feed: dict) -> None:
        self.peer = peer
        # spawn, not fork: the parent has Tessel's OpenMP runtime loaded already.
        context = multiprocessing.get_context("spawn")
        self._connection, child = context.Pipe()
        self._process = context.Process(
            target=_serve, args=(child, peer, onnx_path, threads, feed), daemon=True
        )
        self._process.start()
        self._expect("ready")

    def _expect(self, kind: str):
        reply = self._connection.recv()
        if reply[0] == "error":
            self.close()
            raise PeerError(f"{self.peer}: {reply[1]}")
        assert reply[0] == kind, reply
        return reply[1] if len(reply) > 1 else None

    def outputs(self) -> list[np.ndarray]:
        """The peer's outputs for the feed (checked before timing)."""
        self._connection.send(("check",))
        return self._expect("outputs")

    def turn(self, runs: int) -> list[float]:
        """The untimed warm-up, then the wall times of `runs` calls (timing.timed_calls)."""
        self._connection.send(("turn", runs))
        return self._expect("times")

    def close(self) -> None:
        """Stop the worker."""
        if self._process.is_alive():
            with contextlib.suppress(BrokenPipeError, OSError):
                self._connection.send(("stop",))
            self._process.join(timeout=10)
        if self._process.is_alive():
            self._process.kill()


def relative_error(ours: np.ndarray, reference: np.ndarray) -> float:
    """max|a - b| / max|b|: the error measure of every benchmark table."""
    scale = max(float(np.max(np.abs(reference))), 1e-30) if reference.size else 1.0
    return float(np.max(np.abs(ours - reference)) / scale) if reference.size else 0.0
