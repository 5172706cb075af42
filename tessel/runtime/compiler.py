"""The C compiler driver: find a compiler, compile a shared object, cache it by content.

The cache key is the sha256 of the compiler's identity, the flags, the source and the data files
it includes (name and bytes: the blob of linked constants), so a cached object is reused only
for exactly the same build. Objects are written to a temporary file in the cache directory and
moved into place with `os.replace`, so a reader never sees half a file, even with several
processes building at once. A build with data files compiles in a private scratch directory
holding the C file and, next to it, the files its `.incbin` directives name (the assembler looks
them up relative to its working directory); the library carries their bytes, so the scratch
directory goes once the object is in place.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from tessel.runtime.artifact_cache import default_cache_dir, temporary_path, write_atomically
from tessel.runtime.errors import BuildError
from tessel.support.abi import DataFile

# -fwrapv: the IR's integer arithmetic wraps (as constant folding does), so C's must too.
# -fno-math-errno: no kernel reads errno, and it lets gcc vectorize calls of libm functions.
# -ffp-contract=off: `a * b + c` rounds twice, as in the interpreter. gcc's ISO C mode already
# does so; clang would fuse it into one fma by default and differ in the last bit.
BASE_FLAGS = (
    "-O3", "-shared", "-fPIC", "-std=c11", "-fwrapv", "-fno-math-errno", "-ffp-contract=off",
)  # fmt: skip
# Dropped (each separately) only if the compiler rejects them; detected once per compiler.
# -fno-tree-loop-if-convert: gcc 12.2 miscompiles a loop it vectorizes with a group of three
# if-converted (masked) loads, applying the first load's mask to all three (an outer loop of a
# padded copy over an inner loop of 3; fuzz seed 3, case 858, tests/runtime/test_compiler.py).
# Tessel vectorizes its kernels itself and writes its selects branch-free, so little is lost.
OPTIONAL_FLAGS = ("-march=native", "-fopenmp", "-fno-tree-loop-if-convert")
LINK_FLAGS = ("-lm",)
# Added for a sanitized build; the frame pointer keeps the sanitizer's stack traces readable.
SANITIZER_FLAGS = {"address": ("-fsanitize=address", "-fno-omit-frame-pointer")}
_CANDIDATES = ("cc", "gcc", "clang")
_PROBE_SOURCE = "int tessel_probe(void) { return 0; }\n"


def find_compiler() -> tuple[str, ...]:
    """The compiler command: `$CC` (which may carry arguments), else cc, gcc or clang."""
    from_env = os.environ.get("CC", "").strip()
    if from_env:
        return tuple(shlex.split(from_env))
    for candidate in _CANDIDATES:
        path = shutil.which(candidate)
        if path is not None:
            return (path,)
    raise BuildError(
        "no C compiler found: $CC is unset and none of cc, gcc, clang is on PATH",
        rule="build.no-compiler",
        hint="install gcc or clang, or set CC to a C compiler",
    )


def _run_compiler(command: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run one compiler command (the single place a compiler process starts)."""
    return subprocess.run(
        command, capture_output=True, text=True, check=False, cwd=cwd, env=_compiler_environment()
    )


def _compiler_environment() -> dict[str, str] | None:
    """This process's environment without a preloaded sanitizer runtime: a process running
    under AddressSanitizer (the fuzzer's workers) would otherwise start every compiler pass
    under it too, which made each build of a small case about twice as slow."""
    preload = os.environ.get("LD_PRELOAD")
    if not preload:
        return None
    kept = [
        p for p in preload.split() if not Path(p).name.startswith(("libasan", "libclang_rt.asan"))
    ]
    env = dict(os.environ)
    if kept:
        env["LD_PRELOAD"] = " ".join(kept)
    else:
        del env["LD_PRELOAD"]
    return env


@cache
def compiler_identity(compiler: tuple[str, ...]) -> str:
    """The command and its `--version` banner: part of the cache key."""
    try:
        result = _run_compiler([*compiler, "--version"])
    except OSError as err:
        raise BuildError(
            f"cannot run the C compiler {compiler}: {err}", rule="build.no-compiler"
        ) from err
    banner = result.stdout.splitlines()[0] if result.stdout else ""
    return f"{' '.join(compiler)}\n{banner}"


@cache
def compiler_flags(compiler: tuple[str, ...]) -> tuple[str, ...]:
    """BASE_FLAGS plus each optional flag the compiler accepts (probed once per compiler)."""
    compiler_identity(compiler)  # a clear error if the compiler cannot run at all
    accepted = [flag for flag in OPTIONAL_FLAGS if _accepts(compiler, flag)]
    return (*BASE_FLAGS, *accepted)


def _accepts(compiler: tuple[str, ...], flag: str) -> bool:
    with tempfile.TemporaryDirectory(prefix="tessel-probe-") as scratch:
        source = Path(scratch) / "probe.c"
        source.write_text(_PROBE_SOURCE)
        command = [*compiler, *BASE_FLAGS, flag, "-o", str(Path(scratch) / "probe.so"), str(source)]
        return _run_compiler(command).returncode == 0


def compile_source(
    source: str,
    *,
    cache_dir: str | Path | None = None,
    sanitize: str | None = None,
    data_files: Sequence[DataFile] = (),
    fp_contract: bool = False,
) -> Path:
    """The path of a shared object built from C `source`, compiling only on a cache miss;
    `sanitize` ("address") adds that sanitizer's flags (and so gives another cache key);
    `data_files` are the binary files the source includes with `.incbin`; `fp_contract` lets
    the compiler fuse `a * b + c` into one multiply-add (ISO C mode keeps them apart)."""
    compiler = find_compiler()
    flags = compiler_flags(compiler)
    if fp_contract:
        flags = (*flags, "-ffp-contract=fast")
    if sanitize is not None:
        if sanitize not in SANITIZER_FLAGS:
            raise BuildError(
                f"unknown sanitizer {sanitize!r}",
                rule="build.sanitize",
                hint=f"use one of {sorted(SANITIZER_FLAGS)}",
            )
        flags = (*flags, *SANITIZER_FLAGS[sanitize])
    directory = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    key = _cache_key(compiler, flags, source, data_files)
    library = directory / f"{key}.so"
    if library.exists():
        return library
    source_path = directory / f"{key}.c"
    write_atomically(source_path, source.encode())  # kept for inspection
    if not data_files:
        _compile(compiler, flags, source_path, library)
        return library
    with tempfile.TemporaryDirectory(dir=directory, prefix=f".{key}.") as scratch:
        work = Path(scratch)
        (work / source_path.name).write_bytes(source.encode())
        for data_file in data_files:
            (work / data_file.name).write_bytes(data_file.data)
        _compile(compiler, flags, work / source_path.name, library, cwd=work)
    return library


def _cache_key(
    compiler: tuple[str, ...],
    flags: tuple[str, ...],
    source: str,
    data_files: Sequence[DataFile],
) -> str:
    digest = hashlib.sha256()
    parts = [compiler_identity(compiler), " ".join(flags + LINK_FLAGS), source]
    for data_file in sorted(data_files, key=lambda f: f.name):
        parts.append(f"{data_file.name} {hashlib.sha256(data_file.data).hexdigest()}")
    for part in parts:
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()


def _compile(
    compiler: tuple[str, ...],
    flags: tuple[str, ...],
    source: Path,
    output: Path,
    cwd: Path | None = None,
) -> None:
    temporary = temporary_path(output)
    try:
        command = [*compiler, *flags, "-o", str(temporary), str(source), *LINK_FLAGS]
        result = _run_compiler(command, cwd)
        if result.returncode != 0:
            raise BuildError(
                f"the C compiler failed (exit status {result.returncode}) on {source}",
                stderr=result.stderr,
                rule="build.compile",
                hint="this is usually a Tessel bug in code generation; please report it",
            )
        os.replace(temporary, output)
    finally:
        temporary.unlink(missing_ok=True)
