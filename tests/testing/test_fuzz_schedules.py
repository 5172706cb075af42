"""The schedule fuzzer (issue 12): a fixed-seed profile in the suite, the fuzzer's own parts,
and a few cases under AddressSanitizer in worker processes.

The profile checks every case in the interpreter and as C (a compiled case costs ~0.1 s, and
the C cache makes a second run cheaper); ~300 cases take about 25 s on one core.
"""

from __future__ import annotations

import random
import subprocess
import sys
import textwrap

import pytest

from tessel.ir.target import Target
from tessel.schedule import Schedule, ScheduleError
from tessel.testing.fuzz.campaign import Counts, run_in_process, run_range
from tessel.testing.fuzz.case import (
    CaseFailureError,
    Failure,
    Options,
    refused_unchanged,
    run_steps,
)
from tessel.testing.fuzz.ops import random_program
from tessel.testing.fuzz.render import build_program
from tessel.testing.fuzz.repro import repro_script
from tessel.testing.fuzz.sanitizer import asan_runtime, sanitizer_env
from tessel.testing.fuzz.shrink import shrink
from tessel.testing.fuzz.steps import Ref, Step

SEED = 0
CHUNKS = [range(0, 100), range(100, 200), range(200, 300)]

# Cases of campaign seed 0 that fail today, each a schedule bug reported with a shrunk
# reproduction (issue 12). A fix makes the case pass; a new failure fails the test.
# Scripts: python tools/fuzz_schedules.py --cases 300 --seed 0 (written to /tmp/fuzz_repros/).
KNOWN_FAILURES: dict[int, str] = {}


@pytest.mark.parametrize("indices", CHUNKS, ids=lambda r: f"cases{r.start}-{r.stop - 1}")
def test_fuzz_profile(indices: range) -> None:
    records = run_in_process(SEED, indices, Options())
    counts = Counts()
    for record in records:
        counts.add(record.result)
    assert counts.cases == len(indices)
    assert counts.scheduled > len(indices) * 2 // 3  # most cases really change the function
    unexpected = {
        r.index: r.result.failure
        for r in records
        if r.result.failure is not None and r.index not in KNOWN_FAILURES
    }
    assert not unexpected, (
        f"new fuzz failures (python tools/fuzz_schedules.py reproduces them): {unexpected}"
    )


def test_programs_build_and_run_unscheduled() -> None:
    for k in range(40):
        program = random_program(random.Random(k))
        assert program.is_valid()
        build_program(program)  # te source -> PrimFunc; the reference run happens in every case


def test_a_refusal_that_changes_the_function_is_a_failure() -> None:
    sch = Schedule(build_program(random_program(random.Random(1))))
    changed = build_program(random_program(random.Random(2)))

    def forgetful_primitive() -> None:  # changes the function, then refuses
        sch._func = changed
        raise ScheduleError("split", "test", "refused")

    with pytest.raises(CaseFailureError) as err, refused_unchanged(sch):
        forgetful_primitive()
    assert err.value.failure.kind == "refusal-changed"


def test_a_refusal_that_keeps_the_function_passes() -> None:
    program = random_program(random.Random(1))
    block = next(t.name for t in program.tensors if t.kind != "input")
    sch = Schedule(build_program(program))
    before = sch.func
    with refused_unchanged(sch):
        sch.split(sch.get_loops(sch.get_block(block))[0], [None, None])  # two unknown factors
    assert sch.func is before


def _split_step(block: str) -> Step:
    return Step("split", (Ref(block, 0),), "sch.split({0}, [None, 2])")


def test_shrinking_keeps_the_failure_and_drops_the_rest() -> None:
    program = random_program(random.Random(3))
    block = next(t.name for t in program.tensors if t.kind != "input")
    noise = Step("annotate", (Ref(block),), "sch.annotate({0}, 'fuzz_note', 'x')")
    steps = [noise, _split_step(block), noise]
    failure = Failure("internal", "step split", "ValueError", "boom")

    def reproduce(candidate, candidate_steps):  # fails while a split remains
        found = any(s.primitive == "split" for s in candidate_steps)
        return (failure if found else None), ["applied"] * len(candidate_steps)

    shrunk = shrink(program, steps, failure, reproduce)
    assert [s.primitive for s in shrunk.steps] == ["split"]
    assert all(value <= 1 for _, value in shrunk.program.sizes)


def test_shrinking_keeps_the_step_that_fails() -> None:
    """A step that raises has no outcome; the shrunk case must still end with it (it was
    dropped, leaving repro scripts that pass: seed 0, case 106)."""
    program = random_program(random.Random(3))
    block = next(t.name for t in program.tensors if t.kind != "input")
    noise = Step("annotate", (Ref(block),), "sch.annotate({0}, 'fuzz_note', 'x')")
    steps = [noise, noise, _split_step(block)]
    failure = Failure("internal", "step split", "AssertionError", "")

    def reproduce(candidate, candidate_steps):  # the split fails; the steps before it apply
        if not any(s.primitive == "split" for s in candidate_steps):
            return None, ["applied"] * len(candidate_steps)
        position = next(k for k, s in enumerate(candidate_steps) if s.primitive == "split")
        return failure, ["applied"] * position

    shrunk = shrink(program, steps, failure, reproduce)
    assert [s.primitive for s in shrunk.steps] == ["split"]


def test_the_reproduction_script_runs(tmp_path) -> None:
    program = random_program(random.Random(4))
    block = next(t.name for t in program.tensors if t.kind != "input")
    steps = [_split_step(block)]
    assert run_steps(program, steps, Options()).failure is None
    script = tmp_path / "repro.py"
    script.write_text(repro_script(program, steps, Failure("mismatch", "c", "AssertionError", "x")))
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("passed")


# ---------------------------------------------------------------------- AddressSanitizer
def _asan_usable() -> bool:
    if asan_runtime() is None:
        return False
    probe = (
        "import tessel.runtime.compiler as c\n"
        "c.compile_source('int f(void) { return 0; }', sanitize='address')"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        env=sanitizer_env("address"),
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


asan = pytest.mark.skipif(not _asan_usable(), reason="AddressSanitizer is not available here")

OUT_OF_BOUNDS = textwrap.dedent("""
    import numpy as np
    from tessel import te
    from tessel.driver import build
    from tessel.ir.target import Target
    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[i + 1], name="B")  # reads one past the end
    module = build(te.create_prim_func([A, B]), Target(sanitize="address"))
    module(np.zeros(64, "float32"), np.zeros(64, "float32"))
""")


@asan
def test_asan_build_reports_an_out_of_bounds_read() -> None:
    done = subprocess.run(
        [sys.executable, "-c", OUT_OF_BOUNDS],
        env=sanitizer_env("address"),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0
    assert "AddressSanitizer: heap-buffer-overflow" in done.stderr


@asan
def test_a_few_cases_under_asan() -> None:
    records = run_range(SEED, 0, 8, Options(target=Target(sanitize="address")))
    assert [r.index for r in records] == list(range(8))
    failures = {r.index: r.result.failure for r in records if r.result.failure is not None}
    assert set(failures) <= set(KNOWN_FAILURES), failures


@asan
def test_a_masked_load_under_asan_reports_nothing_seed_21_case_19027() -> None:
    """A padded output vectorized by 2: the all-lanes test took the mask's address, and gcc -O3
    then misplaced the mask's scope marks; AddressSanitizer reported stack-use-after-scope."""
    records = run_range(21, 19027, 19028, Options(target=Target(sanitize="address")))
    assert records[0].result.scheduled and records[0].result.failure is None
