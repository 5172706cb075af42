"""Target: what code is generated for, and the target-dependent limits lowering reads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tessel.ir.node import Node
from tessel.ir.target_detect import detect_cpu
from tessel.support.errors import UserError
from tessel.support.frozen_map import FrozenMap

_KINDS = ("c",)
_SANITIZERS = ("address",)
_KIB, _MIB = 1 << 10, 1 << 20


@dataclass(frozen=True, slots=True)
class Target:
    """A code-generation target. `max_stack_alloca_size` bounds stack allocations (apache/tvm#9022);
    `vector_bytes` is the width of one vector chunk when a loop is vectorized without a
    `vector_length` (32 bytes: 8 float32 lanes, an AVX2 register). `sanitize` ("address" or
    None) builds the C code with that sanitizer; loading such a library needs the sanitizer's
    runtime preloaded (`LD_PRELOAD`), so it is meant for a separate process (the schedule fuzzer).

    The CPU the code is for: `vector_bytes` is its widest SIMD register (64 with AVX-512F, 32
    with AVX2, 16 with SSE2 or NEON), `vector_registers` how many it has (32 with AVX-512 or
    NEON, 16 otherwise on x86-64), `fma` whether it fuses multiply-add, `l1_bytes` the L1 data
    cache of one core, `l2_bytes` the L2, `l3_bytes` the (shared) L3, 0 for a level the CPU
    lacks, and `cores` the physical cores this process may use. `Target()` describes a modest
    AVX2 x86-64 core and never looks at the machine, so lowering is the same everywhere;
    `Target.detect()` describes this machine, which is what the C compiler's `-march=native`
    builds for (tessel/runtime/compiler.py). `fp_contract` lets the C compiler fuse `a * b + c`
    into one multiply-add: faster, but results then differ from the reference interpreter in
    the last bits, so it is off unless asked for; `graph.compile` asks for it when its target
    is given by kind name ("c"), as TVM's LLVM backend fuses by default."""

    kind: str = "c"
    max_stack_alloca_size: int = 1024
    link_params: bool = False
    vector_bytes: int = 32
    sanitize: str | None = None
    fma: bool = True
    vector_registers: int = 16
    l1_bytes: int = 32 * _KIB
    l2_bytes: int = 256 * _KIB
    l3_bytes: int = 8 * _MIB
    cores: int = 1
    fp_contract: bool = False

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise UserError(
                f"unknown target kind {self.kind!r}",
                rule="target.kind",
                hint=f"use one of {_KINDS}",
            )
        if self.max_stack_alloca_size < 0:
            raise UserError("max_stack_alloca_size must be >= 0", rule="target.stack-size")
        _check_cpu(self)
        if self.sanitize is not None and self.sanitize not in _SANITIZERS:
            raise UserError(
                f"unknown sanitizer {self.sanitize!r}",
                rule="target.sanitize",
                hint=f"use one of {_SANITIZERS}, or None",
            )

    @staticmethod
    def of(value: Target | str) -> Target:
        """A Target from a Target or a kind name such as "c"."""
        return value if isinstance(value, Target) else Target(kind=value)

    @staticmethod
    def detect(**overrides: Any) -> Target:
        """A Target for this machine: the CPU fields from /proc and /sys (`detect_cpu`), then
        `overrides` (any field) on top; a field that cannot be found keeps its default."""
        fields: dict[str, Any] = {**detect_cpu(), **overrides}
        return Target(**fields)

    def describe(self) -> str:
        """One line, e.g. "c: 64-byte vectors, 32 registers, fma, L1 48K L2 1M L3 32M, 2 cores"."""
        caches = " ".join(
            f"L{level} {_size_text(size)}"
            for level, size in enumerate((self.l1_bytes, self.l2_bytes, self.l3_bytes), start=1)
        )
        parts = [
            f"{self.vector_bytes}-byte vectors",
            f"{self.vector_registers} registers",
            "fma" if self.fma else "no fma",
            caches,
            f"{self.cores} core{'s' if self.cores != 1 else ''}",
        ]
        if self.link_params:
            parts.append("link_params")
        if self.sanitize is not None:
            parts.append(f"sanitize={self.sanitize}")
        return f"{self.kind}: {', '.join(parts)}"


def _check_cpu(target: Target) -> None:
    """Check the CPU fields (part of `Target.__post_init__`)."""
    if target.vector_bytes < 2:
        raise UserError("vector_bytes must be at least 2", rule="target.vector-bytes")
    if target.vector_bytes & (target.vector_bytes - 1):
        raise UserError(
            f"vector_bytes must be a power of two, got {target.vector_bytes}",
            rule="target.vector-bytes",
            hint="16 (SSE2, NEON), 32 (AVX2) or 64 (AVX-512)",
        )
    if target.vector_registers < 1:
        raise UserError("vector_registers must be at least 1", rule="target.vector-registers")
    for name in ("l1_bytes", "l2_bytes", "l3_bytes"):
        if getattr(target, name) < 0:
            raise UserError(
                f"{name} must be >= 0 (0: the CPU has no such cache)", rule="target.cache-size"
            )
    if target.cores < 1:
        raise UserError("cores must be at least 1", rule="target.cores")


def _size_text(size: int) -> str:
    """48K, 1M, 32M; "none" for 0."""
    if size == 0:
        return "none"
    for unit, suffix in ((_MIB, "M"), (_KIB, "K")):
        if size % unit == 0:
            return f"{size // unit}{suffix}"
    return f"{size}B"


@dataclass(frozen=True, slots=True, eq=False)
class TargetValue(Node):
    """A target written in a script as an attribute value (`T.target("llvm")`,
    `T.target({"kind": "cuda", "arch": "sm_80"})`), kept as written: TVM scripts carry one in
    `T.func_attr({"target": ...})`. What Tessel compiles for is a `Target`."""

    config: str | FrozenMap
