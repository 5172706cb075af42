"""`build`: lower a TensorIR function or module, generate C, compile and load it;
`generate_c_source`: the C text `build` compiles.

The only module that joins transform, codegen and runtime (docs/architecture.md §1).

What a module lowers to is cached beside the shared objects, keyed by the module's structural
digest (not its script: two distinct variables may print with one name), the target and
Tessel's own source (`source_fingerprint`): a second compile of a model skips the TensorIR
pipeline and code generation (most of a warm compile), as the object cache skips the C
compiler.
"""

from __future__ import annotations

import hashlib
import pickle
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from tessel.codegen import CodegenError, CSource, generate
from tessel.codegen.c_units import unit_bytes_for
from tessel.ir.module import IRModule
from tessel.ir.structural import structural_digest
from tessel.ir.target import Target
from tessel.ir.transform import Pass, PassInstrument
from tessel.runtime import BuildError, Module, compile_units, read_artifact, write_artifact
from tessel.schedule.rules import default_schedule
from tessel.support.errors import UserError
from tessel.support.fingerprint import source_fingerprint
from tessel.support.frozen_map import FrozenMap
from tessel.support.progress import NO_PROGRESS, Progress
from tessel.support.worker_processes import compile_jobs
from tessel.tir.function import PrimFunc
from tessel.transform import default_passes, lower


def build(
    func_or_mod: PrimFunc | IRModule,
    target: Target | str = "c",
    *,
    schedule: str | None = None,
    cache_dir: str | Path | None = None,
    progress: Progress = NO_PROGRESS,
    extra_source: Callable[[CSource], str] | None = None,
    support_units: Sequence[str] = (),
    jobs: int | None = None,
) -> Module:
    """Compile a PrimFunc or IRModule to native code and load it as a runtime Module;
    `schedule="default"` first applies the default schedule rules (tessel.schedule.rules) to
    every function, for code that nobody scheduled by hand, with tiles sized for `target`
    (`Target.detect()` describes this machine; the plain "c" target, a modest AVX2 core).
    `progress` hears of the stages: lowering (pass by pass, or function by function when
    several run at once), generating C, compiling C. `extra_source` makes C text from the
    generated source, compiled into the same library after its first translation unit (an AOT
    model's C API, which calls the entry `main`); `support_units` are units of fixed C linked
    in too (the C API's weights reader), built once per machine. The functions of a module go
    through the TensorIR passes in up to `jobs` processes (None: the cores this process may
    use), and its C translation units through the compiler as many at once."""
    target = Target.of(target)
    jobs = compile_jobs(jobs)
    if schedule is not None:
        func_or_mod = _scheduled(func_or_mod, schedule, target)
    constants, c_source = _lower_and_generate(func_or_mod, target, cache_dir, progress, jobs)
    progress.stage("compiling and linking C")
    if extra_source is not None:  # it may use anything the first unit defines
        first, *others = c_source.units
        c_source = replace(c_source, units=(first + extra_source(c_source), *others))
    library = compile_units(
        c_source.units,
        cache_dir=cache_dir,
        sanitize=target.sanitize,
        fp_contract=target.fp_contract,
        data_files=c_source.data_files,  # with link_params: the blob of constants
        jobs=jobs,
        support_units=support_units,
    )
    # Without link_params the library holds no constant data: the Module is handed it here.
    return Module(
        library,
        list(c_source.entries),
        c_source.source,
        constants=constants if c_source.constants else (),
        constant_specs=c_source.constants,
    )


SCHEDULES = ("default",)


def _scheduled(
    func_or_mod: PrimFunc | IRModule, schedule: str, target: Target
) -> PrimFunc | IRModule:
    if schedule not in SCHEDULES:
        raise UserError(
            f"unknown schedule {schedule!r}; choose one of {list(SCHEDULES)} or None",
            rule="build.schedule",
        )
    if isinstance(func_or_mod, PrimFunc):
        return default_schedule(func_or_mod, target).func
    functions = {
        gv: default_schedule(f, target).func if isinstance(f, PrimFunc) else f
        for gv, f in func_or_mod.items()
    }
    return IRModule(FrozenMap(functions), func_or_mod.attrs)


def generate_c_source(func_or_mod: PrimFunc | IRModule, target: Target | str = "c") -> str:
    """The C source that `build` compiles for a PrimFunc or IRModule (lowered first)."""
    return _lower_and_generate(func_or_mod, Target.of(target))[1].source


def _lower_and_generate(
    func_or_mod: PrimFunc | IRModule,
    target: Target,
    cache_dir: str | Path | None = None,
    progress: Progress = NO_PROGRESS,
    jobs: int = 1,
) -> tuple[tuple[Any, ...], CSource]:
    """The lowered module's constants and its C, from the cache when this module was lowered
    for this target before; a code generation failure becomes a BuildError."""
    key = _lowering_key(func_or_mod, target)
    version = source_fingerprint()
    cached = read_artifact(LOWERED_KIND, version, key, cache_dir) if key is not None else None
    if cached is not None:
        try:
            return pickle.loads(cached)  # our own cache, beside the objects we load anyway
        except Exception:  # a damaged or outdated entry is recomputed and overwritten
            pass
    functions = len(func_or_mod.functions) if isinstance(func_or_mod, IRModule) else 1
    if jobs > 1 and functions > 1:
        # Progress by function: the worker processes run each one through every pass.
        progress.stage("lowering TensorIR passes", total=functions)
        lowered = lower(func_or_mod, target, jobs=jobs, on_function_done=progress.advance)
    else:
        progress.stage("lowering TensorIR passes", total=len(default_passes(target)))
        lowered = lower(func_or_mod, target, instruments=(_PassProgress(progress),))
    progress.stage("generating C")
    try:
        c_source = generate(lowered, target, unit_bytes=unit_bytes_for(jobs))
    except CodegenError as err:
        raise BuildError(err.message, rule=err.rule, hint=err.hint) from err
    result = (tuple(lowered.attrs.get("constants", ())), c_source)
    if key is not None:
        write_artifact(LOWERED_KIND, version, key, pickle.dumps(result), cache_dir)
    return result


LOWERED_KIND = "lowered"


class _PassProgress(PassInstrument):
    """Advances `progress` once per pass of the pipeline (not for passes a pass runs itself)."""

    def __init__(self, progress: Progress) -> None:
        self.progress, self.depth = progress, 0

    def before_pass(self, pass_: Pass, mod: IRModule) -> None:
        self.depth += 1

    def after_pass(self, pass_: Pass, mod: IRModule) -> None:
        self.depth -= 1
        if self.depth == 0:
            self.progress.advance()


def _lowering_key(func_or_mod: PrimFunc | IRModule, target: Target) -> str | None:
    """sha256 of what lowering reads: the module (its structural digest: every field, names,
    which variables are the same one, constants' bytes), the target and Tessel's source; None
    for a module holding a value with no exact digest (it is then never cached)."""
    try:
        module = structural_digest(func_or_mod)
    except TypeError:
        return None
    parts = (source_fingerprint(), repr(target), module)
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()
