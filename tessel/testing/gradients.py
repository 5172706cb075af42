"""Gradient checks against finite differences: `tvm.testing.check_numerical_grads` and the
differentiable-TE RFC's forward/backward checker ("Gradient checking between forward && backward
ops"; docs/te.md).

Pure NumPy on purpose: these check the output of `te.gradient` and of hand-written backward
operators, so they must not depend on the code they check.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

Inputs = Mapping[str, np.ndarray] | Sequence[np.ndarray]

_MAX_LISTED_POSITIONS = 5


@dataclass(frozen=True)
class _Input:
    """One checked input: how the error message names it and how the function receives it."""

    label: str  # "'x'" for keyword inputs, "#0" for positional ones
    key: str | int  # the dict key or the list position


def _function_value(function: Callable[..., object], values: dict, positional: bool) -> float:
    """Call `function` on `values` and insist on a scalar result, as TVM's checker assumes."""
    result = function(*values.values()) if positional else function(**values)
    array = np.asarray(result)
    if array.size != 1:
        raise ValueError(
            f"the checked function must return a scalar, but it returned shape {array.shape}; "
            "reduce the output first (check_gradient does this with a random head)"
        )
    return float(array.reshape(()))


def _as_float_array(value: object, label: str) -> np.ndarray:
    array = np.array(value, copy=True)
    if not np.issubdtype(array.dtype, np.floating):
        raise TypeError(
            f"input {label} has dtype {array.dtype}; finite differences need a floating-point "
            "input (cast it with .astype('float64'))"
        )
    return array


def _normalise(input_values: Inputs, grad_values: Inputs) -> tuple[dict, dict, list[_Input], bool]:
    """Both structures as dicts keyed alike, plus which inputs to check, in order."""
    if isinstance(input_values, Mapping):
        if not isinstance(grad_values, Mapping):
            raise TypeError("input_values is a dict, so grad_values must be a dict too")
        unknown = sorted(set(grad_values) - set(input_values))
        if unknown:
            raise KeyError(f"grad_values names inputs that input_values lacks: {unknown}")
        checked = [_Input(f"'{name}'", name) for name in grad_values]
        inputs = {k: _as_float_array(v, f"'{k}'") for k, v in input_values.items()}
        return inputs, dict(grad_values), checked, False
    if isinstance(grad_values, Mapping) or len(grad_values) != len(input_values):
        raise TypeError("input_values is a list, so grad_values must be a list of the same length")
    inputs = {i: _as_float_array(v, f"#{i}") for i, v in enumerate(input_values)}
    checked = [_Input(f"#{i}", i) for i in range(len(input_values))]
    return inputs, dict(enumerate(grad_values)), checked, True


class _FiniteDifferences:
    """Partial derivatives of a scalar function by perturbing one input element at a time."""

    def __init__(self, function: Callable[..., object], values: dict, positional: bool) -> None:
        self.function = function
        self.values = values
        self.positional = positional

    def central(self, key: str | int, flat_index: int, delta: float) -> float:
        """(f(x + d) - f(x - d)) / 2d, with the step actually taken in the input's dtype."""
        original = self.values[key]
        flat = original.reshape(-1)
        x = flat[flat_index]
        plus, minus = x + original.dtype.type(delta), x - original.dtype.type(delta)
        f_plus = self._at(key, flat_index, plus)
        f_minus = self._at(key, flat_index, minus)
        return (f_plus - f_minus) / (float(plus) - float(minus))

    def refined(self, key: str | int, flat_index: int, delta: float, coarse: float) -> float:
        """Richardson extrapolation of two central differences: error O(d^4) instead of O(d^2)."""
        fine = self.central(key, flat_index, delta / 2)
        return (4.0 * fine - coarse) / 3.0

    def _at(self, key: str | int, flat_index: int, element: object) -> float:
        perturbed = self.values[key].copy()
        perturbed.reshape(-1)[flat_index] = element
        values = {**self.values, key: perturbed}
        return _function_value(self.function, values, self.positional)


def _numerical_gradient(
    diffs: _FiniteDifferences, key: str | int, analytical: np.ndarray, tolerances: tuple
) -> np.ndarray:
    """The numerical gradient wrt one input; elements that disagree are re-estimated more finely."""
    delta, atol, rtol = tolerances
    numerical = np.zeros(analytical.shape, dtype=np.float64)
    flat_numerical, flat_analytical = numerical.reshape(-1), analytical.reshape(-1)
    for j in range(analytical.size):
        estimate = diffs.central(key, j, delta)
        # Refine only on disagreement (as TVM does): curvature, not the gradient, may be at fault.
        if abs(estimate - flat_analytical[j]) >= atol + rtol * abs(estimate):
            estimate = diffs.refined(key, j, delta, estimate)
        flat_numerical[j] = estimate
    return numerical


def _mismatch_message(
    label: str, numerical: np.ndarray, analytical: np.ndarray, bound: tuple
) -> str:
    """Say which input is wrong, where it is worst, and the numbers behind the verdict."""
    atol, rtol, sqrt_n, numerical_norm, distance = bound
    difference = np.abs(numerical - analytical)
    worst = np.unravel_index(int(np.argmax(difference)), numerical.shape)
    wrong = np.argwhere(difference >= atol + rtol * np.abs(numerical))
    listed = ", ".join(str(tuple(int(i) for i in w)) for w in wrong[:_MAX_LISTED_POSITIONS])
    more = " ..." if len(wrong) > _MAX_LISTED_POSITIONS else ""
    worst_index = tuple(int(i) for i in worst)
    return (
        f"analytical and numerical gradients wrt input {label} differ too much\n"
        f"  worst element {label}{list(worst_index)}: numerical {numerical[worst]:.6g}, "
        f"analytical {analytical[worst]:.6g}\n"
        f"  {len(wrong)} of {numerical.size} elements differ: {listed}{more}\n"
        f"  rule: ||numerical - analytical|| <= atol*sqrt(n) + rtol*||numerical||, but "
        f"{distance:.6g} > {atol}*{sqrt_n:.6g} + {rtol}*{numerical_norm:.6g}"
    )


def _compare(label: str, numerical: np.ndarray, analytical: np.ndarray, atol: float, rtol: float):
    distance = float(np.linalg.norm((numerical - analytical).reshape(-1)))
    numerical_norm = float(np.linalg.norm(numerical.reshape(-1)))
    if not (np.isfinite(distance) and np.isfinite(numerical_norm)):
        raise ValueError(
            f"NaN or infinity while checking the gradient wrt input {label}\n"
            f"  analytical = {analytical}\n  numerical = {numerical}"
        )
    sqrt_n = float(np.sqrt(numerical.size))
    if distance > atol * sqrt_n + rtol * numerical_norm:
        bound = (atol, rtol, sqrt_n, numerical_norm, distance)
        raise AssertionError(_mismatch_message(label, numerical, analytical, bound))


def check_numerical_grads(
    function: Callable[..., object],
    input_values: Inputs,
    grad_values: Inputs,
    function_value: float | None = None,
    delta: float = 1e-3,
    atol: float = 1e-2,
    rtol: float = 0.1,
) -> None:
    """Check claimed gradients of a scalar `function` against central finite differences.

    `function` takes the inputs by keyword when `input_values` is a dict, positionally when it
    is a list, and returns a scalar. `grad_values` has the same structure (a dict may cover only
    some inputs). Every element is estimated by (f(x+d) - f(x-d)) / 2d; an element that then
    disagrees with its claimed value is re-estimated by Richardson extrapolation with d/2.

    The tolerance rule is TVM's, applied per input of n elements with the L2 norm:
        ||numerical - analytical|| <= atol * sqrt(n) + rtol * ||numerical||
    so `atol` is a per-element allowance (scaled by sqrt(n) to be size-independent) and `rtol`
    is relative to the whole gradient, not to each element. A violation raises AssertionError
    naming the input, its worst element, and both values there; NaN or infinity raises ValueError.
    `function_value` is accepted for TVM compatibility; central differences do not need f(x).
    """
    del function_value  # only a forward difference would use f(x)
    values, grads, checked, positional = _normalise(input_values, grad_values)
    _function_value(function, values, positional)  # fail early on a non-scalar function
    diffs = _FiniteDifferences(function, values, positional)
    for item in checked:
        analytical = np.asarray(grads[item.key], dtype=np.float64)
        if analytical.shape != values[item.key].shape:
            raise AssertionError(
                f"gradient wrt input {item.label} has shape {analytical.shape}, "
                f"but the input has shape {values[item.key].shape}"
            )
        numerical = _numerical_gradient(diffs, item.key, analytical, (delta, atol, rtol))
        _compare(item.label, numerical, analytical, atol, rtol)


def check_gradient(
    forward: Callable[..., np.ndarray],
    backward: Callable[..., Sequence[np.ndarray]],
    inputs: Sequence[np.ndarray],
    head: np.ndarray | None = None,
    delta: float = 1e-3,
    atol: float = 1e-2,
    rtol: float = 0.1,
    seed: int = 0,
) -> None:
    """Check a hand-written `backward` against finite differences of `forward` (the TE RFC).

    `forward(*inputs)` returns the output array; `backward(*inputs, head)` returns one gradient
    per input: the vector-Jacobian product with `head` (random normal of the output's shape,
    drawn from `seed`, when None). This is check_numerical_grads on the scalar function
    sum(forward(*x) * head), with the same tolerance rule; inputs are named "#0", "#1", ...
    """
    inputs = [np.asarray(x) for x in inputs]
    output = np.asarray(forward(*inputs))
    if head is None:
        head = np.random.default_rng(seed).standard_normal(output.shape)
    head = np.asarray(head, dtype=np.float64)
    if head.shape != output.shape:
        raise ValueError(f"head has shape {head.shape}, but forward returns shape {output.shape}")
    grads = list(backward(*inputs, head))
    if len(grads) != len(inputs):
        raise AssertionError(f"backward returned {len(grads)} gradients for {len(inputs)} inputs")

    def loss(*xs: np.ndarray) -> float:
        return float(np.sum(np.asarray(forward(*xs), dtype=np.float64) * head))

    check_numerical_grads(loss, inputs, grads, delta=delta, atol=atol, rtol=rtol)
