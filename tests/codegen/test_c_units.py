"""A module cut into C translation units (tessel.codegen.c_units) builds one library that runs
as the single-unit build does: the kernels in other units share the first unit's error
message, workspace allocator and thread pool, `main` calls across units, and what needs the
first unit (linked constants, callers) stays there."""

import ctypes

import numpy as np
import pytest

from tessel.codegen import generate
from tessel.codegen.c_units import MIN_UNIT_BYTES, UNIT_BYTES, unit_bytes_for
from tessel.ir.target import Target
from tessel.runtime import Module, RuntimeCallError, compile_units
from tessel.script import parse
from tessel.transform import lower

# main calls a parallel kernel with a workspace buffer, a plain one and one that asserts.
MODEL = """
@I.ir_module
class Module:
    @T.prim_func
    def main(x: T.Buffer((64, 16), "float32"), y: T.Buffer((64, 16), "float32"), n: T.int32):
        arena = T.allocate([4096], "uint8", "global.workspace")
        tmp = T.decl_buffer((64, 16), "float32", data=arena.data)
        Module.scale_rows(x.data, T.address_of(tmp[0, 0]))
        Module.shift(T.address_of(tmp[0, 0]), y.data)
        Module.positive(n)

    @T.prim_func
    def scale_rows(a: T.Buffer((64, 16), "float32"), b: T.Buffer((64, 16), "float32")):
        for i in T.parallel(64):
            row = T.allocate([16], "float32", "global")
            R = T.decl_buffer((16,), "float32", data=row)
            for j in range(16):
                R[j] = a[i, j] * T.float32(2)
            for j in range(16):
                b[i, j] = R[j] + T.float32(i)

    @T.prim_func
    def shift(a: T.Buffer((64, 16), "float32"), b: T.Buffer((64, 16), "float32")):
        for i, j in T.grid(64, 16):
            b[i, j] = a[i, j] - T.float32(1)

    @T.prim_func
    def positive(n: T.int32):
        assert n > 0, "n must be positive"
"""

# Every allocation on the heap, so the kernels' row buffers reach the workspace allocator.
NO_STACK = Target(max_stack_alloca_size=0)


def _expected(x):
    return x * 2 + np.arange(64, dtype="float32")[:, None] - 1


def _build(text, tmp_path, unit_bytes, target=NO_STACK):
    """The module built from `text` with its kernels cut at `unit_bytes`, and its C."""
    lowered = lower(parse(text), target)
    c_source = generate(lowered, target, unit_bytes=unit_bytes)
    library = compile_units(
        c_source.units, cache_dir=tmp_path, data_files=c_source.data_files, jobs=2
    )
    constants = lowered.attrs.get("constants", ())
    module = Module(
        library,
        list(c_source.entries),
        c_source.source,
        constants=constants if c_source.constants else (),
        constant_specs=c_source.constants,
    )
    return module, c_source


def test_each_kernel_gets_its_own_unit_and_main_stays_in_the_first(tmp_path):
    _, c_source = _build(MODEL, tmp_path, unit_bytes=1)
    first, *others = c_source.units
    assert len(others) == 3
    # The state is defined once, in the first unit; the others declare it.
    assert "TESSEL_INTERNAL _Thread_local char tessel_error_message[1024];" in first
    assert "tessel_get_last_error(void) {" in first
    assert "TESSEL_INTERNAL void tessel_parallel_for(" in first
    assert "TESSEL_EXPORT int32_t v_main(" in first  # `main` is not a C identifier to reuse
    for unit in others:
        assert "extern TESSEL_INTERNAL _Thread_local char tessel_error_message" in unit
        assert "tessel_get_last_error" not in unit
        assert "tessel_workspace_cache" not in unit
    (pool_user,) = [u for u in others if "tessel_parallel_for(" in u]
    assert "tessel_pool" not in pool_user  # declared, the pool itself is the first unit's
    # A called function is hidden, not static, and declared in every unit.
    for unit in c_source.units:
        assert "TESSEL_INTERNAL int32_t scale_rows_impl(" in unit
        assert "static int32_t scale_rows_impl" not in unit


def test_a_module_under_the_unit_size_is_one_unit_with_static_callees(tmp_path):
    _, c_source = _build(MODEL, tmp_path, unit_bytes=1_000_000)
    (unit,) = c_source.units
    assert "static int32_t scale_rows_impl(" in unit
    assert "extern TESSEL_INTERNAL _Thread_local char tessel_error_message" in unit


@pytest.mark.parametrize("unit_bytes", [1, 1_000_000])
def test_units_run_as_one_library_matching_numpy(tmp_path, unit_bytes):
    module, _ = _build(MODEL, tmp_path, unit_bytes)
    x = np.random.default_rng(0).standard_normal((64, 16)).astype("float32")
    y = np.zeros((64, 16), "float32")
    module["main"](x, y, 1)
    np.testing.assert_allclose(y, _expected(x), rtol=1e-6)
    direct = np.zeros((64, 16), "float32")
    module["scale_rows"](x, direct)  # the exported wrapper in the kernel's unit
    np.testing.assert_allclose(direct, _expected(x) + 1, rtol=1e-6)
    library = ctypes.CDLL(str(module.library_path))
    assert hasattr(library, "tessel_get_last_error")
    for hidden in ("tessel_parallel_for", "tessel_error_message", "scale_rows_impl"):
        assert not hasattr(library, hidden), hidden  # the units share it, nobody else sees it


def test_an_error_raised_in_another_unit_reaches_the_caller(tmp_path):
    module, _ = _build(MODEL, tmp_path, unit_bytes=1)
    x, y = np.ones((64, 16), "float32"), np.zeros((64, 16), "float32")
    with pytest.raises(RuntimeCallError, match="n must be positive"):
        module["main"](x, y, 0)


def test_the_hosts_workspace_allocator_serves_kernels_in_every_unit(tmp_path):
    module, _ = _build(MODEL, tmp_path, unit_bytes=1)
    requests = []

    def alloc(nbytes, alignment):
        requests.append(nbytes)
        block = np.empty(nbytes + alignment, np.uint8)
        blocks[block.ctypes.data + (-block.ctypes.data) % alignment] = block
        return block.ctypes.data + (-block.ctypes.data) % alignment

    blocks = {}
    x, y = np.ones((64, 16), "float32"), np.zeros((64, 16), "float32")
    with module.workspace_allocator(alloc, lambda address: blocks.pop(address)):
        module["main"](x, y, 1)
    # main's arena (first unit) and the 64 row buffers of scale_rows (its own unit).
    assert sorted(set(requests)) == [64, 4096] and requests.count(64) == 64
    assert not blocks


LINKED = """
@I.ir_module
class Module:
    @T.prim_func
    def main(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        Module.add_bias(A.data, B.data)
        Module.twice(B.data)

    @T.prim_func
    def add_bias(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        bias = T.allocate_const([1.0, 2.0, 3.0, 4.0], "float32", [4])
        Bias = T.decl_buffer((4,), "float32", data=bias)
        for i in range(4):
            B[i] = A[i] + Bias[i]

    @T.prim_func
    def twice(B: T.Buffer((4,), "float32")):
        for i in range(4):
            B[i] = B[i] * T.float32(2)
"""


@pytest.mark.parametrize("link_params", [False, True])
def test_module_constants_work_from_any_unit(tmp_path, link_params):
    target = Target(link_params=link_params)
    module, c_source = _build(LINKED, tmp_path, unit_bytes=1, target=target)
    a, b = np.arange(4, dtype="float32"), np.zeros(4, "float32")
    module["main"](a, b)
    np.testing.assert_array_equal(b, (a + [1, 2, 3, 4]) * 2)
    assert len(c_source.units) == 1 + (1 if link_params else 2)
    if link_params:  # the kernel reading a linked constant stays beside the blob
        assert "TESSEL_INTERNAL int32_t add_bias_impl(float* restrict" in c_source.units[0]


def test_more_compiler_processes_get_smaller_units_down_to_a_floor():
    sizes = [unit_bytes_for(jobs) for jobs in (1, 2, 3, 4, 64)]
    assert sizes[0] == UNIT_BYTES and sizes[1] == UNIT_BYTES // 2
    assert sizes == sorted(sizes, reverse=True) and sizes[-1] == MIN_UNIT_BYTES
