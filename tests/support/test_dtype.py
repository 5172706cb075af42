"""DataType: parsing TVM's spellings, lanes, NumPy interop, and errors with rule ids."""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tessel.support.dtype import DataType
from tessel.support.errors import UserError

SCALARS = [
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "bool",
]  # fmt: skip


@pytest.mark.parametrize(
    ("text", "code", "bits", "lanes"),
    [
        ("int32", "int", 32, 1),
        ("uint8", "uint", 8, 1),
        ("float16", "float", 16, 1),
        ("bool", "bool", 1, 1),
        ("handle", "handle", 64, 1),
        ("float32x4", "float", 32, 4),
        ("int8x16", "int", 8, 16),
        ("bfloat16", "bfloat", 16, 1),
        ("bfloat16x8", "bfloat", 16, 8),
    ],
)
def test_parse_gives_code_bits_and_lanes(text, code, bits, lanes):
    dtype = DataType.of(text)
    assert (dtype.code, dtype.bits, dtype.lanes) == (code, bits, lanes)


@given(text=st.sampled_from([*SCALARS, "bfloat16", "handle"]), lanes=st.integers(1, 64))
def test_printing_round_trips(text, lanes):
    dtype = DataType.of(text).with_lanes(lanes)
    assert DataType.of(str(dtype)) == dtype


def test_vector_lanes_and_element():
    vec = DataType.of("float32x4")
    assert vec.is_vector
    assert vec.element == DataType.of("float32")
    assert not vec.element.is_vector
    assert vec.element.with_lanes(4) == vec
    assert str(vec) == "float32x4"
    assert str(DataType.of("int8").with_lanes(1)) == "int8"


@pytest.mark.parametrize("text", SCALARS)
def test_numpy_dtypes_convert_both_ways(text):
    dtype = DataType.of(text)
    assert DataType.of(dtype.numpy) == dtype
    assert DataType.of(np.dtype(text).type) == dtype
    assert dtype.itemsize == np.dtype(text).itemsize


@pytest.mark.parametrize("text", [t for t in SCALARS if t != "bool"])
def test_value_range_matches_numpy(text):
    dtype = DataType.of(text)
    info = np.finfo(text) if dtype.is_float else np.iinfo(text)
    assert dtype.min_value() == info.min
    assert dtype.max_value() == info.max


def test_bfloat16_is_a_float_whose_numpy_dtype_is_ml_dtypes():
    dtype = DataType.of("bfloat16")
    assert dtype.is_float
    assert dtype.is_bfloat16
    assert not DataType.of("float16").is_bfloat16
    assert dtype.numpy == np.dtype(ml_dtypes.bfloat16)
    assert dtype.itemsize == 2
    assert DataType.of(dtype.numpy) == dtype
    assert DataType.of(ml_dtypes.bfloat16) == dtype
    assert DataType.of(np.dtype("bfloat16")) == dtype  # ml_dtypes names it once imported
    info = ml_dtypes.finfo(ml_dtypes.bfloat16)
    assert (dtype.min_value(), dtype.max_value()) == (float(info.min), float(info.max))


def test_kind_predicates():
    assert DataType.of("int32").is_int and DataType.of("int32").is_integer
    assert DataType.of("uint8").is_uint and DataType.of("uint8").is_integer
    assert not DataType.of("bool").is_integer and DataType.of("bool").is_bool
    assert DataType.of("float64").is_float
    assert DataType.of("handle").is_handle


def test_datatype_passes_through_of_unchanged():
    dtype = DataType.of("float32")
    assert DataType.of(dtype) is dtype


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("float8", "dtype.bits"),
        ("bfloat32", "dtype.bits"),
        ("int7", "dtype.bits"),
        ("uint1", "dtype.bits"),
        ("int", "dtype.unknown"),
        ("bool8", "dtype.unknown"),
        ("handle32", "dtype.unknown"),
        ("complex64", "dtype.unknown"),
        ("float32x0", "dtype.lanes"),
        ("", "dtype.unknown"),
    ],
)
def test_invalid_spellings_raise_with_a_rule_id(text, rule):
    with pytest.raises(UserError) as err:
        DataType.of(text)
    assert err.value.rule == rule


def test_unknown_dtype_error_quotes_the_text_and_hints_valid_spellings():
    with pytest.raises(UserError, match="'floot32'") as err:
        DataType.of("floot32")
    assert "float32" in err.value.hint


def test_missing_bit_width_suggests_one():
    with pytest.raises(UserError, match="int32"):
        DataType.of("int")


def test_unknown_code_in_constructor_has_a_rule_id():
    with pytest.raises(UserError) as err:
        DataType("complex", 64)
    assert err.value.rule == "dtype.unknown"


def test_handle_has_no_numpy_dtype():
    with pytest.raises(UserError, match="handle"):
        _ = DataType.of("handle").numpy
