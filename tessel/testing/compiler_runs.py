"""Recording the C compiler's runs in a test: how many builds a cache saved, how many flag
probes a compile made."""

from __future__ import annotations

from typing import Any

from tessel.runtime import compiler


def record_compiler_runs(monkeypatch: Any, building: str = ".c") -> list[list[str]]:
    """The commands of the compiler runs made in this process from now on that build a file
    whose name ends in `building` (".c": every build, probes included; "probe.c": the flag
    probes), appended as they run; `monkeypatch` (pytest's) undoes the recording."""
    runs: list[list[str]] = []
    real = compiler._run_compiler

    def recording(command: list[str], cwd: Any = None) -> Any:
        if any(part.endswith(building) for part in command):
            runs.append(command)
        return real(command, cwd)

    monkeypatch.setattr(compiler, "_run_compiler", recording)
    return runs


__all__ = ["record_compiler_runs"]
