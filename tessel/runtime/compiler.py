"""The C compiler driver: find a compiler, compile a shared object, cache it by content.

A library of several translation units (tessel.codegen.c_units) is compiled unit by unit, up to
`jobs` compiler processes at once, each unit's object cached by its own key, then linked.

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
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path

from tessel.runtime.artifact_cache import (
    default_cache_dir,
    read_artifact,
    temporary_path,
    write_artifact,
    write_atomically,
)
from tessel.runtime.errors import BuildError
from tessel.support.abi import DataFile

# -fwrapv: the IR's integer arithmetic wraps (as constant folding does), so C's must too.
# -fno-math-errno: no kernel reads errno, and it lets gcc vectorize calls of libm functions.
# -ffp-contract=off: `a * b + c` rounds twice, as in the interpreter. gcc's ISO C mode already
# does so; clang would fuse it into one fma by default and differ in the last bit.
# -Werror=implicit-function-declaration: a call of a function the unit does not declare is a
# code generation bug (a function in another unit, undeclared), never a guess at its type.
BASE_FLAGS = (
    "-O3", "-shared", "-fPIC", "-std=c11", "-fwrapv", "-fno-math-errno", "-ffp-contract=off",
    "-Werror=implicit-function-declaration",
)  # fmt: skip
# Dropped (each separately) only if the compiler rejects them; detected once per compiler.
# -fno-tree-loop-if-convert: gcc 12.2 miscompiles a loop it vectorizes with a group of three
# if-converted (masked) loads, applying the first load's mask to all three (an outer loop of a
# padded copy over an inner loop of 3; fuzz seed 3, case 858, tests/runtime/test_compiler.py).
# Tessel vectorizes its kernels itself and writes its selects branch-free, so little is lost.
OPTIONAL_FLAGS = ("-march=native", "-fopenmp", "-fno-tree-loop-if-convert")
LINK_FLAGS = ("-lm",)
# Units of fixed support code (the C API's weights reader) are cold, and gcc builds them at -O2
# in half its time at -O3.
SUPPORT_OPTIMIZATION = "-O2"
# Added for a sanitized build; the frame pointer keeps the sanitizer's stack traces readable.
SANITIZER_FLAGS = {"address": ("-fsanitize=address", "-fno-omit-frame-pointer")}
_CANDIDATES = ("cc", "gcc", "clang")
_PROBE_SOURCE = "int tessel_probe(void) { return 0; }\n"
_FLAGS_KIND, _FLAGS_VERSION = "compiler_flags", "1"  # the probes' answers, by compiler


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
    """BASE_FLAGS plus each optional flag the compiler accepts (probed once per compiler and
    kept in the artifact cache: a probe builds a library, 0.1-0.15 s, a tenth of a warm
    compile)."""
    identity = compiler_identity(compiler)  # a clear error if the compiler cannot run at all
    key = hashlib.sha256("\n".join((identity, *BASE_FLAGS, *OPTIONAL_FLAGS)).encode()).hexdigest()
    stored = read_artifact(_FLAGS_KIND, _FLAGS_VERSION, key)
    if stored is not None:
        accepted = stored.decode().split()
        if set(accepted) <= set(OPTIONAL_FLAGS):
            return (*BASE_FLAGS, *accepted)
    # Most compilers take every optional flag: one probe of them all, then one a flag if not.
    if _accepts(compiler, OPTIONAL_FLAGS):
        accepted = list(OPTIONAL_FLAGS)
    else:
        accepted = [flag for flag in OPTIONAL_FLAGS if _accepts(compiler, (flag,))]
    write_artifact(_FLAGS_KIND, _FLAGS_VERSION, key, " ".join(accepted).encode())
    return (*BASE_FLAGS, *accepted)


def _accepts(compiler: tuple[str, ...], flags: tuple[str, ...]) -> bool:
    with tempfile.TemporaryDirectory(prefix="tessel-probe-") as scratch:
        source = Path(scratch) / "probe.c"
        source.write_text(_PROBE_SOURCE)
        output = str(Path(scratch) / "probe.so")
        command = [*compiler, *BASE_FLAGS, *flags, "-o", output, str(source)]
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
    return compile_units(
        (source,),
        cache_dir=cache_dir,
        sanitize=sanitize,
        data_files=data_files,
        fp_contract=fp_contract,
    )


def compile_units(
    units: Sequence[str],
    *,
    cache_dir: str | Path | None = None,
    sanitize: str | None = None,
    data_files: Sequence[DataFile] = (),
    fp_contract: bool = False,
    jobs: int = 1,
    support_units: Sequence[str] = (),
) -> Path:
    """The path of a shared object built from the C translation `units` (as compile_source
    does for one; the first unit is the one including the data files) and the `support_units`
    (fixed code, built at SUPPORT_OPTIMIZATION), compiling each unit that is not cached, up to
    `jobs` at once, then linking; a unit's object is cached by its content, so units another
    build shared (a support unit: every such build) are not compiled again."""
    if not units:
        raise BuildError("no C translation unit to compile", rule="build.compile")
    compiler = find_compiler()
    flags = _build_flags(compiler, sanitize, fp_contract)
    directory = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    data_key = _data_key(data_files)
    if len(units) == 1 and not support_units:
        key = _cache_key(compiler, flags, units[0], data_key)
        library = directory / f"{key}.so"
        if not library.exists():
            _build(compiler, flags, units[0], key, library, directory, data_files)
        return library
    object_flags = tuple(f for f in flags if f != "-shared") + ("-c",)
    support_flags = tuple(SUPPORT_OPTIMIZATION if f == "-O3" else f for f in object_flags)
    # Only the first unit includes the data files (tessel.codegen.c_units).
    sources = [(unit, object_flags, data_key if i == 0 else "") for i, unit in enumerate(units)]
    sources += [(unit, support_flags, "") for unit in support_units]
    keys = [_cache_key(compiler, f, unit, data) for unit, f, data in sources]
    library = directory / f"{_cache_key(compiler, flags, chr(0).join(keys), '')}.so"
    if library.exists():
        return library
    objects = [directory / f"{key}.o" for key in keys]
    missing = [i for i, path in enumerate(objects) if not path.exists()]
    missing.sort(key=lambda i: -len(sources[i][0]))  # the longest first: the others fill in

    def build_object(i: int) -> None:
        unit, unit_flags, _ = sources[i]
        data = data_files if i == 0 else ()
        _build(compiler, unit_flags, unit, keys[i], objects[i], directory, data)

    if jobs > 1 and len(missing) > 1:
        with ThreadPoolExecutor(max_workers=min(jobs, len(missing))) as pool:
            list(pool.map(build_object, missing))  # raises the first failure
    else:
        for i in missing:
            build_object(i)
    _link(compiler, flags, objects, library)
    return library


def _build_flags(
    compiler: tuple[str, ...], sanitize: str | None, fp_contract: bool
) -> tuple[str, ...]:
    """The compiler's flags for a build with these options."""
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
    return flags


def _build(
    compiler: tuple[str, ...],
    flags: tuple[str, ...],
    source: str,
    key: str,
    output: Path,
    directory: Path,
    data_files: Sequence[DataFile],
) -> None:
    """Compile `source` to `output` (a library, or an object with -c), keeping the C file
    beside it for inspection; with data files, in a scratch directory that holds them."""
    source_path = directory / f"{key}.c"
    write_atomically(source_path, source.encode())  # kept for inspection
    if not data_files:
        _compile(compiler, flags, source_path, output)
        return
    with tempfile.TemporaryDirectory(dir=directory, prefix=f".{key}.") as scratch:
        work = Path(scratch)
        (work / source_path.name).write_bytes(source.encode())
        for data_file in data_files:
            (work / data_file.name).write_bytes(data_file.data)
        _compile(compiler, flags, work / source_path.name, output, cwd=work)


def _data_key(data_files: Sequence[DataFile]) -> str:
    """What identifies the data files (names and digests of their bytes) in a cache key."""
    return "\n".join(
        f"{f.name} {hashlib.sha256(f.data).hexdigest()}"
        for f in sorted(data_files, key=lambda f: f.name)
    )


def _cache_key(compiler: tuple[str, ...], flags: tuple[str, ...], source: str, data: str) -> str:
    digest = hashlib.sha256()
    parts = [compiler_identity(compiler), " ".join(flags + LINK_FLAGS), source]
    if data:
        parts.append(data)
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
    link = () if "-c" in flags else LINK_FLAGS
    _run_into(output, [*compiler, *flags], [str(source), *link], f"on {source}", cwd)


def _link(
    compiler: tuple[str, ...], flags: tuple[str, ...], objects: list[Path], output: Path
) -> None:
    """Link the units' objects into the shared object `output`."""
    inputs = [str(path) for path in objects]
    _run_into(output, [*compiler, *flags], [*inputs, *LINK_FLAGS], "linking the units")


def _run_into(
    output: Path, command: list[str], inputs: list[str], what: str, cwd: Path | None = None
) -> None:
    """Run the compiler writing a temporary file moved to `output` once complete."""
    temporary = temporary_path(output)
    try:
        result = _run_compiler([*command, "-o", str(temporary), *inputs], cwd)
        if result.returncode != 0:
            raise BuildError(
                f"the C compiler failed (exit status {result.returncode}) {what}",
                stderr=result.stderr,
                rule="build.compile",
                hint="this is usually a Tessel bug in code generation; please report it",
            )
        os.replace(temporary, output)
    finally:
        temporary.unlink(missing_ok=True)
