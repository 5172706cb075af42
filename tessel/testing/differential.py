"""Differential checks: run two versions of a program on the same random inputs and compare."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tessel.driver import build
from tessel.ir.module import IRModule
from tessel.ir.target import Target
from tessel.testing.random_inputs import random_arguments
from tessel.tir import interpreter
from tessel.tir.function import PrimFunc

BACKENDS = ("interpreter", "c")


def _function_name(func_or_mod: PrimFunc | IRModule, name: str | None) -> str | None:
    """The module function to run: `name`, or the only one (None for a PrimFunc)."""
    if isinstance(func_or_mod, PrimFunc) or name is not None:
        return name
    if len(func_or_mod.functions) != 1:
        raise ValueError(f"the module has several functions {func_or_mod.names()}; pass name=")
    return func_or_mod.names()[0]


def _as_func(func_or_mod: PrimFunc | IRModule, name: str | None) -> PrimFunc:
    if isinstance(func_or_mod, PrimFunc):
        return func_or_mod
    return func_or_mod[_function_name(func_or_mod, name)]


def run_with(
    backend: str,
    program: PrimFunc | IRModule,
    args: Sequence[Any],
    name: str | None = None,
    target: Target | str = "c",
) -> list[Any]:
    """Run `program` (a PrimFunc, or function `name` of a module, which keeps the module's
    "constants") on copies of `args` with a backend (C built for `target`); return the
    arguments after the call."""
    copies = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
    name = _function_name(program, name)
    if backend == "interpreter":
        interpreter.run(program, *copies, name=name)
    elif backend == "c":
        module = build(program, target)
        (module[name] if isinstance(program, IRModule) else module)(*copies)
    else:
        raise ValueError(f"unknown backend {backend!r}; expected one of {BACKENDS}")
    return copies


def assert_arguments_close(
    expected: Sequence[Any],
    actual: Sequence[Any],
    func: PrimFunc,
    label: str,
    rtol: float,
    atol: float,
) -> None:
    """Compare every buffer argument after two runs; the message names the parameter."""
    for param, want, got in zip(func.params, expected, actual, strict=True):
        if not isinstance(want, np.ndarray):
            continue
        np.testing.assert_allclose(
            got, want, rtol=rtol, atol=atol, err_msg=f"{label}: parameter `{param.name}` differs"
        )


def check_same_results(
    before: PrimFunc | IRModule,
    after: PrimFunc | IRModule,
    *,
    name: str | None = None,
    shape_vars: Mapping[str, int] | None = None,
    scalars: Mapping[str, Any] | None = None,
    backends: Sequence[str] = BACKENDS,
    seed: int = 0,
    rtol: float = 1e-5,
    atol: float = 1e-5,
) -> None:
    """Run `before` in the reference interpreter and `after` in every backend on the same random
    inputs; every buffer argument must agree afterwards. Modules run whole, so a function whose
    constants were extracted into the module's "constants" still finds them."""
    reference_func, candidate = _as_func(before, name), _as_func(after, name)
    args = random_arguments(reference_func, np.random.default_rng(seed), shape_vars, scalars)
    reference = run_with("interpreter", before, args, name)
    for backend in backends:
        result = run_with(backend, after, args, name)
        assert_arguments_close(
            reference, result, candidate, f"{backend} vs interpreter", rtol, atol
        )
