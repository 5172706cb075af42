"""ONNX's string operators against onnxruntime (whose RegexFullMatch is RE2): StringConcat,
Equal, RegexFullMatch and StringNormalizer compiled to C; StringSplit and StringNormalizer's
stopwords computed at import from constant inputs."""

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx_testing import check_against_onnxruntime, make_model, run_onnxruntime

from tessel.frontend.onnx import from_onnx
from tessel.frontend.onnx.backend import TesselBackendRep
from tessel.frontend.onnx.errors import ValueNeededError
from tessel.graph.executor import compile as compile_graph

TEXTS = [
    "", "a", "cat", "Cat", "CAT", "www.google.com", "www.bbc.co.uk", "me@gmail.com",
    "x@yahoo.com ", " x@gmail.com", "a.b-c_d@gmail.com", "中文", "Ünïcödé", "ß", "ıi",
    "tab\there", "line\nbreak", "42", "3.14", "-7", "a1b2", "__init__", "..", "a+b", "(x)",
]  # fmt: skip

PATTERNS = [
    r"www\.[\w.-]+\.\bcom\b",
    r"(\W|^)[\w.\-]{0,25}@(yahoo|gmail)\.com(\W|$)",
    r"\d+(\.\d+)?",
    r"-?\d+",
    r"[a-z]+",
    r"[^a-z]*",
    r"(?i)cat",
    r"c.t",
    r".*",
    r".+",
    r"a\+b",
    r"\(x\)",
    r"[[:alpha:]]+[[:digit:]]?",
    r"(?:a1|b2)+",
    r"_+\w+?_+",
    r"\s*\S+\s*",
    r"x{1,3}@(gmail|yahoo)\.com\s?",
    r"[.]{2}",
    r"line.break",
    r"[中文]+",
]


def _model(op, inputs, outputs, opset, **attrs):
    node = helper.make_node(op, [n for n, _ in inputs], [n for n, _ in outputs], **attrs)
    return make_model(
        [node],
        [helper.make_tensor_value_info(n, t, s) for (n, (t, s)) in inputs],
        [helper.make_tensor_value_info(n, t, None) for (n, t) in outputs],
        opset=opset,
    )


def _strings(values, shape=None):
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out if shape is None else out.reshape(shape)


@pytest.mark.parametrize("pattern", PATTERNS)
def test_regex_full_match_agrees_with_onnxruntime_re2(pattern):
    x = _strings(TEXTS)
    model = _model(
        "RegexFullMatch",
        [("x", (TensorProto.STRING, [len(TEXTS)]))],
        [("y", TensorProto.BOOL)],
        20,
        pattern=pattern,
    )
    check_against_onnxruntime(model, inputs={"x": x}, compiled=True)


@pytest.mark.parametrize(
    ("a_shape", "b_shape"), [((2, 3), (3,)), ((), ()), ((4, 1), (1, 5)), ((0, 2), (2,))]
)
def test_string_concat_broadcasts_as_onnxruntime(a_shape, b_shape):
    rng = np.random.default_rng(1)
    a = _strings(rng.choice(TEXTS, int(np.prod(a_shape))).tolist(), a_shape)
    b = _strings(rng.choice(TEXTS, int(np.prod(b_shape))).tolist(), b_shape)
    model = _model(
        "StringConcat",
        [("a", (TensorProto.STRING, list(a_shape))), ("b", (TensorProto.STRING, list(b_shape)))],
        [("y", TensorProto.STRING)],
        20,
    )
    check_against_onnxruntime(model, inputs={"a": a, "b": b}, compiled=True)


def test_equal_on_strings_matches_onnxruntime():
    a = _strings(TEXTS[:10] * 2, (4, 5))
    b = _strings(TEXTS[5:10])
    model = _model(
        "Equal",
        [("a", (TensorProto.STRING, [4, 5])), ("b", (TensorProto.STRING, [5]))],
        [("y", TensorProto.BOOL)],
        19,
    )
    check_against_onnxruntime(model, inputs={"a": a, "b": b}, compiled=True)


@pytest.mark.parametrize("action", ["UPPER", "LOWER", "NONE"])
def test_string_normalizer_case_runs_compiled(action):
    # Without stopwords the shape stays: the case change runs in C. onnxruntime changes case
    # with the model's locale (en_US.UTF-8 by default, which this machine lacks): C.UTF-8 here,
    # whose tables the compiled code uses whatever the attribute says.
    words = ["monday", "Tuesday", "WEDNESDAY", "a1-b2", ""]
    x = _strings(words)
    model = _model(
        "StringNormalizer",
        [("x", (TensorProto.STRING, [len(words)]))],
        [("y", TensorProto.STRING)],
        10,
        case_change_action=action,
        locale="C.UTF-8",
    )
    check_against_onnxruntime(model, inputs={"x": x}, compiled=True)
    unicode = _strings(["straße", "ÇA", "ıİ", "Ωmega", "ǅ中"])
    want = run_onnxruntime(model, {"x": unicode})[0]
    mod, _ = from_onnx(model)
    assert compile_graph(mod)(x=unicode).tolist() == want.tolist()


def test_string_split_and_stopwords_need_their_input_at_import():
    model = _model(
        "StringSplit",
        [("x", (TensorProto.STRING, [2]))],
        [("y", TensorProto.STRING), ("n", TensorProto.INT64)],
        20,
        delimiter=".",
    )
    with pytest.raises(ValueNeededError, match="StringSplit node .* depends on graph inputs"):
        from_onnx(model)


@pytest.mark.parametrize(
    ("delimiter", "maxsplit"), [(None, None), (" ", None), ("-", 1), ("ab", 2), (None, 1)]
)
def test_string_split_of_a_constant_folds_as_onnxruntime(delimiter, maxsplit):
    texts = ["a b  c", "", " lead", "x-y--z", "abcabab", "no_delim"]
    attrs = {k: v for k, v in (("delimiter", delimiter), ("maxsplit", maxsplit)) if v is not None}
    model = _model(
        "StringSplit",
        [("x", (TensorProto.STRING, [len(texts)]))],
        [("y", TensorProto.STRING), ("n", TensorProto.INT64)],
        20,
        **attrs,
    )
    expected = run_onnxruntime(model, {"x": _strings(texts)})
    folded = _fold_with_input(model, "x", _strings(texts))
    for got, want in zip(folded, expected, strict=True):
        assert got.shape == want.shape and got.tolist() == want.tolist()


def _fold_with_input(model, name, value):
    """The model's outputs run by Tessel's ONNX backend, which binds input `name` (needed at
    import) to `value`, so the split is computed at import."""
    rep = TesselBackendRep(model)
    outputs = list(rep.run({name: value}))
    assert rep.value_inputs == (name,)
    return outputs
