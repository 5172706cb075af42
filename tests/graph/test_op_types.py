"""Type relations of every graph operator: the result type on two shapes (equal to what the
TOPI lowering produces), and a bad call whose error names the operator and the argument."""

import pytest
from graph_lowering import lower
from graph_op_cases import CASES, T

from tessel.graph import TensorType, TupleType
from tessel.graph.op import OpPattern, OpTypeError, UnknownOperatorError, get_op, list_ops
from tessel.graph.type_util import type_equal, type_str
from tessel.support.errors import UserError


def _lowered_type(op, types, attrs):
    _, outputs = lower(op, types, attrs)
    return tuple(TensorType(t.const_shape(), t.dtype) for t in outputs)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_relation_gives_the_expected_type(case):
    result = get_op(case.op).infer_type(case.args, case.attrs)
    assert type_equal(result, case.expected), type_str(result)


@pytest.mark.parametrize("shapes", ["first", "alt"])
@pytest.mark.parametrize("case", [c for c in CASES if c.lowers], ids=lambda c: c.id)
def test_relation_agrees_with_topi(case, shapes):
    types, attrs = (case.args, case.attrs) if shapes == "first" else case.alt
    result = get_op(case.op).infer_type(types, attrs)
    lowered = _lowered_type(case.op, types, attrs)
    expected = result.fields if isinstance(result, TupleType) else (result,)
    assert len(lowered) == len(expected)
    for got, want in zip(lowered, expected, strict=True):
        assert type_equal(got, want), f"TOPI gives {type_str(got)}, the relation {type_str(want)}"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_bad_call_names_the_argument(case):
    types, attrs, name = case.bad
    with pytest.raises(OpTypeError) as info:
        get_op(case.op).infer_type(types, attrs)
    assert info.value.message.startswith(f"{case.op}: ")
    assert f"`{name}`" in info.value.message


def test_every_operator_has_a_case():
    covered = {c.op for c in CASES}
    assert sorted(set(list_ops()) - covered) == []


def test_dense_error_message():
    with pytest.raises(
        OpTypeError, match=r"nn.dense: argument `weight` has 3 input features but `data` has 4"
    ):
        get_op("nn.dense").infer_type((T(2, 4), T(5, 3)), {})


def test_unknown_operator_is_a_clear_error():
    with pytest.raises(UnknownOperatorError, match="unknown operator `nn.conv3x`") as info:
        get_op("nn.conv3x")
    assert "nn.conv2d" in info.value.hint


def test_attribute_errors():
    conv = get_op("nn.conv2d")
    with pytest.raises(OpTypeError, match="unknown attribute `stride`"):
        conv.normalize_attrs({"stride": (1, 1)})
    with pytest.raises(OpTypeError, match="attribute `groups` must be an integer"):
        conv.normalize_attrs({"groups": "two"})
    with pytest.raises(OpTypeError, match="attribute `newshape` is required"):
        get_op("reshape").normalize_attrs({})


def test_arity_error():
    with pytest.raises(OpTypeError, match=r"add: expects 2 argument\(s\) \(lhs, rhs\), got 1"):
        get_op("add").infer_type((T(2),), {})


def test_attributes_fill_defaults_and_read_as_fields():
    attrs = get_op("nn.conv2d").normalize_attrs({"strides": [2, 2]})
    assert attrs.strides == (2, 2) and attrs.padding == (0, 0) and attrs.groups == 1
    assert attrs.out_dtype == "" and attrs.channels is None


def test_pattern_kinds_follow_relay():
    assert get_op("add").pattern is OpPattern.BROADCAST
    assert get_op("exp").pattern is OpPattern.ELEMWISE
    assert get_op("nn.conv2d").pattern is OpPattern.OUT_ELEMWISE_FUSABLE
    assert get_op("reshape").pattern is OpPattern.INJECTIVE
    assert get_op("sum").pattern is OpPattern.COMM_REDUCE
    assert get_op("nn.softmax").pattern is OpPattern.OPAQUE
    assert int(OpPattern.OPAQUE) == 8


def test_errors_are_user_errors():
    assert issubclass(OpTypeError, UserError) and issubclass(UnknownOperatorError, UserError)
