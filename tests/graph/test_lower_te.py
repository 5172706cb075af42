"""LowerTE: primitive functions and unfused operator calls become PrimFuncs called through
call_lowered; Before/Expected in the text format, sharing, names, tuples, constants, and the
kernels run against the NumPy evaluator."""

import numpy as np
import pytest
from graph_models import COLUMNS, assert_close

from tessel.driver import build
from tessel.graph import Constant, TupleGetItem, TupleType, astext, evaluate, parse
from tessel.graph.call_lowered import is_call_lowered
from tessel.graph.passes.infer_type import InferType
from tessel.graph.passes.lower_te import LowerTE
from tessel.graph.traversal import post_order_exprs
from tessel.ir.module import IRModule
from tessel.ir.structural import assert_structural_equal
from tessel.support.frozen_map import FrozenMap
from tessel.tir.function import PrimFunc
from tessel.transform.errors import LoweringError

TWO_OPS = """#[version = "0.0.5"]
def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(2, 3), float32]) {
  %0 = add(%x, %y);
  nn.relu(%0)
}
"""

TWO_OPS_LOWERED = """#[version = "0.0.5"]
def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(2, 3), float32]) {
  %0 = @fused_add(%x, %y, call_lowered=1);
  @fused_nn_relu(%0, call_lowered=1)
}
"""

FUSED = """#[version = "0.0.5"]
def @main(%x: Tensor[(2, 8), float32], %w: Tensor[(4, 8), float32], %b: Tensor[(4), float32]) {
  %0 = fn (%p0: Tensor[(2, 8), float32], %p1: Tensor[(4, 8), float32], %p2: Tensor[(4), float32], Primitive=1) {
    %1 = nn.dense(%p0, %p1, units=4);
    %2 = nn.bias_add(%1, %p2);
    nn.relu(%2)
  };
  %3 = %0(%x, %w, %b);
  %4 = fn (%q0: Tensor[(2, 4), float32], Primitive=1) { nn.relu(%q0) };
  %5 = fn (%r0: Tensor[(2, 4), float32], Primitive=1) { nn.relu(%r0) };
  %6 = %4(%3);
  %5(%6)
}
"""


def lower(text: str, **options) -> tuple[IRModule, IRModule]:
    before = InferType()(parse(text))
    return before, LowerTE(**options)(before)


def kernels(mod: IRModule) -> dict[str, PrimFunc]:
    return {gv.name_hint: f for gv, f in mod.items() if isinstance(f, PrimFunc)}


def run_lowered(mod: IRModule, *args: np.ndarray) -> np.ndarray:
    """Run a lowered main of kernel calls by hand (independent of the executor)."""
    library = build(
        IRModule(FrozenMap({gv: f for gv, f in mod.items() if isinstance(f, PrimFunc)}))
    )
    main = mod["main"]
    values = dict(zip((id(p) for p in main.params), args, strict=True))
    for node in post_order_exprs(main.body):
        if isinstance(node, Constant):
            values[id(node)] = node.data
        elif isinstance(node, TupleGetItem):
            values[id(node)] = values[id(node.tuple_value)][node.index]
        elif is_call_lowered(node):
            ty = node.checked_type
            types = ty.fields if isinstance(ty, TupleType) else (ty,)
            outs = [np.empty(t.shape, t.dtype) for t in types]
            library[node.op.name_hint](*(values[id(a)] for a in node.args), *outs)
            values[id(node)] = tuple(outs) if isinstance(ty, TupleType) else outs[0]
    return values[id(main.body)]


def test_two_ops_become_two_call_lowered():
    _, after = lower(TWO_OPS)
    expected = parse(TWO_OPS_LOWERED, init_module=after)
    assert_structural_equal(after["main"], expected["main"])
    assert after.names() == ["main", "fused_add", "fused_nn_relu"]
    assert astext(after["main"]).count("call_lowered=1") == 2


def test_lowered_main_keeps_its_types():
    before, after = lower(TWO_OPS)
    assert after["main"].body.checked_type.shape == (2, 3)
    assert after["main"].body.args[0].checked_type.dtype == "float32"
    assert after["main"].checked_type is before["main"].checked_type


def test_primitive_functions_lower_to_one_kernel_each_and_equal_ones_share():
    before, after = lower(FUSED)
    assert sorted(kernels(after)) == ["fused_nn_dense_nn_bias_add_nn_relu", "fused_nn_relu"]
    calls = [after["main"].body, after["main"].body.args[0]]
    assert all(c.op.name_hint == "fused_nn_relu" for c in calls)
    rng = np.random.default_rng(0)
    args = [rng.normal(size=s).astype("float32") for s in [(2, 8), (4, 8), (4,)]]
    assert_close(run_lowered(after, *args), evaluate(before, *args))


def test_unfused_calls_with_equal_signatures_share_a_kernel_and_names_stay_unique():
    _, after = lower("""#[version = "0.0.5"]
def @main(%x: Tensor[(4), float32], %y: Tensor[(2, 2), float32]) {
  %0 = nn.relu(%x);
  %1 = nn.relu(%0);
  %2 = nn.relu(%y);
  %3 = reshape(%2, newshape=[4]);
  add(%1, %3)
}
""")
    assert sorted(kernels(after)) == [
        "fused_add",
        "fused_nn_relu",
        "fused_nn_relu_1",
        "fused_reshape",
    ]


def test_tuple_outputs_and_tuple_arguments():
    before, after = lower("""#[version = "0.0.5"]
def @main(%x: Tensor[(2, 6), float32]) {
  %0 = split(%x, indices_or_sections=3, axis=1);
  %1 = add(%0.0, %0.2);
  concatenate((%1, %0.1), axis=1)
}
""")
    split = kernels(after)["fused_split"]
    assert len(split.params) == 4  # one input, three outputs
    concat = after["main"].body
    assert len(concat.args) == 2  # the tuple argument spread into its fields
    x = np.arange(12, dtype="float32").reshape(2, 6)
    assert_close(run_lowered(after, x), evaluate(before, x))


def test_fused_batch_norm_returns_a_tuple():
    before, after = lower("""#[version = "0.0.5"]
def @main(%x: Tensor[(1, 2, 3, 3), float32], %g: Tensor[(2), float32], %b: Tensor[(2), float32],
          %m: Tensor[(2), float32], %v: Tensor[(2), float32]) {
  %0 = fn (%p0: Tensor[(1, 2, 3, 3), float32], %p1: Tensor[(2), float32], %p2: Tensor[(2), float32],
           %p3: Tensor[(2), float32], %p4: Tensor[(2), float32], Primitive=1) {
    nn.batch_norm(%p0, %p1, %p2, %p3, %p4)
  };
  %1 = %0(%x, %g, %b, %m, %v);
  %1.0
}
""")
    (kernel,) = kernels(after).values()
    assert len(kernel.params) == 5 + 3  # batch_norm's three results are outputs
    assert after["main"].body.checked_type.shape == (1, 2, 3, 3)


def test_constants_are_lifted_to_kernel_arguments():
    before, after = lower("""#[version = "0.0.5"]
def @main(%x: Tensor[(3), float32]) {
  %0 = fn (%p0: Tensor[(3), float32], Primitive=1) { multiply(add(%p0, 1f), 2f) };
  %1 = %0(%x);
  add(%1, 3f)
}
""")
    outer = after["main"].body
    inner = outer.args[0]
    assert [type(a).__name__ for a in inner.args] == ["Var", "Constant", "Constant"]
    assert [type(a).__name__ for a in outer.args] == ["Call", "Constant"]
    x = np.array([1, 2, 3], "float32")
    assert_close(run_lowered(after, x), evaluate(before, x))


def test_default_schedule_parallelizes_and_vectorizes():
    _, after = lower("""#[version = "0.0.5"]
def @main(%x: Tensor[(4, 64), float32], %w: Tensor[(32, 64), float32]) {
  %0 = nn.dense(%x, %w, units=32);
  nn.relu(%0)
}
""")
    dense, relu = (str(f) for f in kernels(after).values())
    # the GEMM rule (tessel.schedule.rules.gemm): 4 x COLUMNS tiles, the tile loops fused in
    # parallel
    assert f"T.parallel({32 // COLUMNS})" in dense
    assert "T.vectorized(16)" in dense
    assert "T.parallel(4)" in relu and "T.vectorized(32)" in relu
    _, naive = lower(
        """#[version = "0.0.5"]
def @main(%x: Tensor[(4, 64), float32]) { nn.relu(%x) }
""",
        schedule=False,
    )
    assert "T.parallel" not in str(next(iter(kernels(naive).values())))


def test_calls_of_functions_that_are_not_primitive_are_refused():
    mod = InferType()(
        parse("""#[version = "0.0.5"]
def @helper(%a: Tensor[(3), float32]) { nn.relu(%a) }
def @main(%x: Tensor[(3), float32]) { @helper(%x) }
""")
    )
    with pytest.raises(LoweringError, match="not primitive") as info:
        LowerTE()(mod)
    assert info.value.rule == "lower_te.non-primitive-call"


def test_lowering_is_idempotent():
    _, once = lower(TWO_OPS)
    twice = LowerTE()(once)
    assert_structural_equal(twice["main"], once["main"])
    assert twice.names() == once.names()
