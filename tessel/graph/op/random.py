"""ONNX's random operators as graph operators: `random.uniform`, `random.normal`,
`random.bernoulli` and `random.multinomial` (Relay has none). Each takes the model's random
state, a uint64 pair (nonce, call number) that the executor passes to every call, so an operator
is a pure function of its arguments: FoldConstant cannot fold it, and two calls differ only by
the state. `stream` tells operators apart; `seed` (optional) fixes a stream's key, so a seeded
model draws the same sequence from its first call on (tessel/topi/random.py).
"""

from __future__ import annotations

import struct

import numpy as np

from tessel.graph.op.op_def import Args, Attr, Attrs, OpDef, OpPattern
from tessel.graph.ty import TensorType, Type
from tessel.support import philox
from tessel.topi.random import bernoulli, multinomial, random_normal, random_uniform

RANDOM_STATE = "tessel_random_state"  # main's parameter holding the state, by this name
STATE_TYPE = TensorType((2,), "uint64")


def stream_key(seed: float | None, stream: int) -> tuple[int, bool]:
    """A stream's key, and whether it is seeded (else the nonce is mixed in at run time)."""
    bits = 0 if seed is None else struct.unpack("<Q", struct.pack("<d", float(seed)))[0]
    return philox.mix_key(bits, stream), seed is not None


def _state(args: Args) -> None:
    ty = args.tensor("state")
    if ty.shape != (2,) or ty.dtype != "uint64":
        raise args.error("state", f"must be the random state, Tensor[(2), uint64]; got {ty}")


def _float_dtype(args: Args, dtype: str) -> None:
    if dtype not in ("float16", "float32", "float64"):
        raise args.error("dtype", f"is {dtype!r}; random values are float16, float32 or float64")


def _sized_rel(args: Args, attrs: Attrs) -> Type:
    _state(args)
    _float_dtype(args, attrs.dtype)
    if any(d < 0 for d in attrs.shape):
        raise args.error("shape", f"{list(attrs.shape)} has a negative extent")
    return TensorType(tuple(attrs.shape), attrs.dtype)


def _bernoulli_rel(args: Args, attrs: Attrs) -> Type:
    _state(args)
    probs = args.tensor("probs")
    if not probs.dtype.startswith("float"):
        raise args.error("probs", f"must hold float probabilities, got {probs.dtype}")
    return TensorType(probs.shape, attrs.dtype or probs.dtype)


def _multinomial_rel(args: Args, attrs: Attrs) -> Type:
    _state(args)
    logits = args.tensor("logits", ndim=2)
    if not logits.dtype.startswith("float"):
        raise args.error("logits", f"must hold float log-probabilities, got {logits.dtype}")
    if attrs.dtype not in ("int32", "int64"):
        raise args.error("dtype", f"is {attrs.dtype!r}; class indices are int32 or int64")
    if attrs.sample_size < 1 or logits.shape[1] < 1:
        raise args.error("sample_size", "must be positive, over at least one class")
    return TensorType((logits.shape[0], attrs.sample_size), attrs.dtype)


def _key_and_call(state: np.ndarray, attrs: Attrs) -> tuple[int, int]:
    """The stream's key this call (the nonce mixed in unless seeded) and the call's number."""
    key, seeded = stream_key(attrs.seed, attrs.stream)
    nonce, call = (int(v) for v in np.asarray(state, np.uint64))
    return (key if seeded else key ^ nonce), call


def _draws(state: np.ndarray, attrs: Attrs, count: int) -> np.ndarray:
    return philox.uniform(*_key_and_call(state, attrs), np.arange(count))


def _uniform_ref(state: np.ndarray, *, attrs: Attrs) -> np.ndarray:
    u = _draws(state, attrs, int(np.prod(attrs.shape, dtype=np.int64)))
    return (attrs.low + (attrs.high - attrs.low) * u).astype(attrs.dtype).reshape(attrs.shape)


def _normal_ref(state: np.ndarray, *, attrs: Attrs) -> np.ndarray:
    count = int(np.prod(attrs.shape, dtype=np.int64))
    z = philox.normal(*_key_and_call(state, attrs), np.arange(count))
    return (attrs.mean + attrs.scale * z).astype(attrs.dtype).reshape(attrs.shape)


def _bernoulli_ref(state: np.ndarray, probs: np.ndarray, *, attrs: Attrs) -> np.ndarray:
    u = _draws(state, attrs, probs.size).reshape(probs.shape)
    return (u < probs.astype(np.float64)).astype(attrs.dtype or probs.dtype)


def _multinomial_ref(state: np.ndarray, logits: np.ndarray, *, attrs: Attrs) -> np.ndarray:
    batch, classes = logits.shape
    wide = logits.astype(np.float64)
    cdf = np.cumsum(np.exp(wide - wide.max(axis=1, keepdims=True)), axis=1)
    u = _draws(state, attrs, batch * attrs.sample_size).reshape(batch, attrs.sample_size)
    target = u * cdf[:, -1:]
    counts = (cdf[:, None, :] <= target[:, :, None]).sum(axis=2)
    return np.minimum(counts, classes - 1).astype(attrs.dtype)


def _lower(compute):
    def lower(*tensors, attrs: Attrs):
        key, seeded = stream_key(attrs.seed, attrs.stream)
        return compute(*tensors, attrs, key, seeded)

    return lower


_SEED = (Attr("seed", "float", None, optional=True), Attr("stream", "int", 0))

OPERATORS = (
    OpDef(
        "random.uniform",
        ("state",),
        (
            Attr("shape", "ints"),
            Attr("dtype", "dtype", "float32"),
            Attr("low", "float", 0.0),
            Attr("high", "float", 1.0),
            *_SEED,
        ),
        _sized_rel,
        _lower(
            lambda s, a, key, seeded: random_uniform(
                s, tuple(a.shape), a.dtype, a.low, a.high, key, seeded
            )
        ),
        _uniform_ref,
        OpPattern.OPAQUE,
        "Uniform values in [low, high) (ONNX RandomUniform, RandomUniformLike).",
    ),
    OpDef(
        "random.normal",
        ("state",),
        (
            Attr("shape", "ints"),
            Attr("dtype", "dtype", "float32"),
            Attr("mean", "float", 0.0),
            Attr("scale", "float", 1.0),
            *_SEED,
        ),
        _sized_rel,
        _lower(
            lambda s, a, key, seeded: random_normal(
                s, tuple(a.shape), a.dtype, a.mean, a.scale, key, seeded
            )
        ),
        _normal_ref,
        OpPattern.OPAQUE,
        "Normal values of `mean` and deviation `scale` (ONNX RandomNormal, RandomNormalLike).",
    ),
    OpDef(
        "random.bernoulli",
        ("state", "probs"),
        (Attr("dtype", "dtype", ""), *_SEED),
        _bernoulli_rel,
        _lower(lambda s, p, a, key, seeded: bernoulli(s, p, a.dtype or p.dtype, key, seeded)),
        _bernoulli_ref,
        OpPattern.OPAQUE,
        "1 with each element's probability, else 0 (ONNX Bernoulli).",
    ),
    OpDef(
        "random.multinomial",
        ("state", "logits"),
        (Attr("sample_size", "int", 1), Attr("dtype", "dtype", "int32"), *_SEED),
        _multinomial_rel,
        _lower(lambda s, x, a, key, seeded: multinomial(s, x, a.sample_size, a.dtype, key, seeded)),
        _multinomial_ref,
        OpPattern.OPAQUE,
        "Class indices drawn from each row's unnormalized log-probabilities (ONNX Multinomial).",
    ),
)
