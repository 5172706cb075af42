"""InferType after LowerTE: a call_lowered takes its type from its kernel's buffers (inputs,
then outputs), so a lowered module is checked and verified like any other."""

import pytest
from graph_models import INPUTS, load, random_weights

import tessel.graph as graph
from tessel.graph import InferType, TensorType, TupleType, parse
from tessel.graph.passes import TypeInferenceError
from tessel.graph.type_util import type_equal
from tessel.graph.verify import verify_module
from tessel.ir.module import IRModule
from tessel.ir.structural import assert_structural_equal
from tessel.script import tir as T  # noqa: N812


@T.prim_func
def add_kernel(
    a: T.Buffer((2, 3), "float32"), b: T.Buffer((2, 3), "float32"), out: T.Buffer((2, 3), "float32")
):
    for i, j in T.grid(2, 3):
        with T.block("add"):
            vi, vj = T.axis.remap("SS", [i, j])
            out[vi, vj] = a[vi, vj] + b[vi, vj]


@T.prim_func
def split_kernel(
    a: T.Buffer((2, 6), "float32"),
    left: T.Buffer((2, 3), "float32"),
    right: T.Buffer((2, 3), "int32"),
):
    for i, j in T.grid(2, 3):
        with T.block("split"):
            vi, vj = T.axis.remap("SS", [i, j])
            left[vi, vj] = a[vi, vj]
            right[vi, vj] = T.Cast("int32", a[vi, vj + 3])


KERNELS = IRModule.from_dict({"fused_add": add_kernel, "fused_split": split_kernel})


def lowered(body: str, params: str = "%x: Tensor[(2, 3), float32], %y: Tensor[(2, 3), float32]"):
    return parse(f'#[version = "0.0.5"]\ndef @main({params}) {{\n{body}\n}}\n', init_module=KERNELS)


def test_call_lowered_has_its_kernels_output_type():
    mod = InferType()(
        lowered("  %0 = @fused_add(%x, %y, call_lowered=1);\n  @fused_add(%0, %x, call_lowered=1)")
    )
    body = mod["main"].body
    assert type_equal(body.checked_type, TensorType((2, 3), "float32"))
    assert type_equal(mod["main"].checked_type.ret_type, TensorType((2, 3), "float32"))
    verify_module(mod)


def test_kernel_with_several_outputs_returns_a_tuple():
    mod = InferType()(
        lowered("  %0 = @fused_split(%x, call_lowered=1);\n  %0.1", "%x: Tensor[(2, 6), float32]")
    )
    call = mod["main"].body.tuple_value
    assert type_equal(
        call.checked_type,
        TupleType((TensorType((2, 3), "float32"), TensorType((2, 3), "int32"))),
    )
    assert type_equal(mod["main"].body.checked_type, TensorType((2, 3), "int32"))


def test_argument_of_the_wrong_shape_is_named():
    mod = lowered(
        "  @fused_add(%x, %y, call_lowered=1)",
        "%x: Tensor[(2, 3), float32], %y: Tensor[(3, 2), float32]",
    )
    with pytest.raises(TypeInferenceError, match="argument `b` has type") as info:
        InferType()(mod)
    assert info.value.rule == "graph.call-arg"
    assert "Tensor[(2, 3), float32]" in info.value.message


def test_call_lowered_that_leaves_no_output_is_refused():
    mod = lowered("  @fused_add(%x, %y, %x, call_lowered=1)")
    with pytest.raises(TypeInferenceError, match="cannot take 3 input") as info:
        InferType()(mod)
    assert info.value.rule == "graph.call-arity"


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_compiled_models_lowered_main_is_well_typed_and_infer_type_is_idempotent(name):
    mod = load(name)
    model = graph.compile(mod, params=random_weights(mod, INPUTS[name]), executor="python")
    verify_module(model.lowered)  # types kept by LowerTE and LayoutRewrite agree with the kernels
    again = InferType()(model.lowered)
    assert_structural_equal(again["main"], model.lowered["main"])
    verify_module(again)
