"""Computes of ONNX's random operators: every element an independent draw of the Philox
generator (tessel/codegen/c_random.py, tessel/support/philox.py), from its stream's key and the
model's random state, a uint64 pair (nonce, call number) the executor gives each call.

A seeded operator's key is fixed (its seed and stream), so a model draws the same sequence of
calls from its first call on; an unseeded one mixes the nonce into its key, which the executor
draws when it loads the model.
"""

from __future__ import annotations

from typing import Any

from tessel import te
from tessel.ir import builders
from tessel.ir.expr import PrimExpr
from tessel.te.tensor import Tensor
from tessel.tir.builtin import bitwise, call_extern
from tessel.topi.transform import ravel
from tessel.topi.utils import expect_tensor, op_error


def _key(state: Tensor, key: int, seeded: bool) -> PrimExpr:
    constant = builders.const(key, "uint64")
    return constant if seeded else bitwise("bitwise_xor", state[0], constant)


def _flat(shape: tuple[Any, ...], indices: tuple[Any, ...]) -> PrimExpr:
    """The row-major number of the element at `indices`, as int64."""
    return builders.cast(ravel(indices, [int(e) for e in shape]), "int64")


def _state(op: str, state: Any) -> Tensor:
    state = expect_tensor(op, "state", state)
    if state.dtype != "uint64" or tuple(int(e) for e in state.shape) != (2,):
        raise op_error(op, "state", "must be the model's random state, a uint64 tensor of 2")
    return state


def _draw(state: Tensor, key: int, seeded: bool, index: PrimExpr, which: int) -> PrimExpr:
    return call_extern(
        "float64",
        "tessel_random_uniform",
        _key(state, key, seeded),
        state[1],
        index,
        which,
        pure=True,
    )


def random_uniform(
    state: Any, shape: tuple[int, ...], dtype: str, low: float, high: float, key: int, seeded: bool
) -> Tensor:
    """Uniform values in [low, high) of `shape` and `dtype`."""
    state = _state("random_uniform", state)

    def element(*indices: Any) -> PrimExpr:
        u = _draw(state, key, seeded, _flat(shape, indices), 0)
        return builders.cast(builders.const(low, "float64") + (high - low) * u, dtype)

    return te.compute(shape, element, name="T_random_uniform", tag="random")


def random_normal(
    state: Any,
    shape: tuple[int, ...],
    dtype: str,
    mean: float,
    scale: float,
    key: int,
    seeded: bool,
) -> Tensor:
    """Normal values of `mean` and standard deviation `scale`, of `shape` and `dtype`."""
    state = _state("random_normal", state)

    def element(*indices: Any) -> PrimExpr:
        z = call_extern(
            "float64",
            "tessel_random_normal",
            _key(state, key, seeded),
            state[1],
            _flat(shape, indices),
            pure=True,
        )
        return builders.cast(builders.const(mean, "float64") + scale * z, dtype)

    return te.compute(shape, element, name="T_random_normal", tag="random")


def bernoulli(state: Any, probs: Any, dtype: str, key: int, seeded: bool) -> Tensor:
    """1 where a uniform draw falls below the element's probability, else 0, in `dtype`."""
    state = _state("bernoulli", state)
    probs = expect_tensor("bernoulli", "probs", probs)
    shape = tuple(int(e) for e in probs.shape)

    def element(*indices: Any) -> PrimExpr:
        u = _draw(state, key, seeded, _flat(shape, indices), 0)
        below = builders.lt(u, builders.cast(probs(*indices), "float64"))
        return builders.cast(below, dtype)

    return te.compute(shape, element, name="T_bernoulli", tag="random")


def multinomial(
    state: Any, logits: Any, sample_size: int, dtype: str, key: int, seeded: bool
) -> Tensor:
    """[batch, sample_size] class indices drawn from each row's unnormalized log-probabilities:
    the number of cumulative weights at or below a uniform draw times the row's total."""
    state = _state("multinomial", state)
    logits = expect_tensor("multinomial", "logits", logits)
    batch, classes = (int(e) for e in logits.shape)
    k = te.reduce_axis((0, classes), name="k")
    peak = te.compute(
        (batch,), lambda b: te.max(builders.cast(logits[b, k], "float64"), axis=k), name="T_peak"
    )
    weight = te.compute(
        (batch, classes),
        lambda b, c: te.exp(builders.cast(logits[b, c], "float64") - peak[b]),
        name="T_weight",
    )
    j = te.reduce_axis((0, classes), name="j")
    cdf = te.compute(
        (batch, classes),
        lambda b, c: te.sum(builders.select(j <= c, weight[b, j], 0.0), axis=j),
        name="T_cdf",
    )
    m = te.reduce_axis((0, classes), name="m")

    def sample(b: Any, s: Any) -> PrimExpr:
        u = _draw(state, key, seeded, builders.cast(b, "int64") * sample_size + s, 0)
        target = u * cdf[b, classes - 1]
        return te.sum(builders.cast(cdf[b, m] <= target, dtype), axis=m)

    counted = te.compute((batch, sample_size), sample, name="T_counted")
    return te.compute(
        (batch, sample_size),
        lambda b, s: builders.min_value(counted[b, s], builders.const(classes - 1, dtype)),
        name="T_multinomial",
        tag="random",
    )
