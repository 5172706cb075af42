"""String tensors through the whole compiler: each string operator compiled to C against its
reference on random strings, string constants in a model's weights, strings moved by the
data-movement operators, the text format, and the clear refusals (arithmetic on strings, the
python executor, export)."""

import threading

import numpy as np
import pytest
from graph_op_cases import CASES
from graph_op_cases_strings import ATOMS, QUANTIFIERS, random_strings

from tessel import graph
from tessel.frontend.onnx.relay import call
from tessel.graph import TensorType
from tessel.graph.evaluate import evaluate
from tessel.graph.expr import Constant, Function, Tuple, Var
from tessel.graph.op import OpTypeError, get_op
from tessel.graph.text import astext, parse
from tessel.ir.module import IRModule
from tessel.ir.structural import assert_structural_equal
from tessel.support.errors import UserError

STRING_CASES = [c for c in CASES if c.op.startswith("string.")]


def _module(op: str, types, attrs) -> IRModule:
    params = [Var(f"x{k}", t) for k, t in enumerate(types)]
    return IRModule.from_func(Function(tuple(params), call(op, *params, **attrs)), "main")


def _assert_same(got, want):
    assert got.shape == want.shape
    assert got.dtype == want.dtype or (got.dtype == object and want.dtype == object)
    assert got.tolist() == want.tolist()


@pytest.mark.parametrize("shapes", ["first", "alt"])
@pytest.mark.parametrize("case", STRING_CASES, ids=lambda c: c.id)
def test_string_operator_compiled_matches_its_reference(case, shapes):
    types, attrs = (case.args, case.attrs) if shapes == "first" else case.alt
    rng = np.random.default_rng(7)
    values = case.values(rng, types)
    want = get_op(case.op).evaluate(values, attrs)
    model = graph.compile(_module(case.op, types, attrs))
    _assert_same(model(*values), want)


def test_strings_flow_through_data_movement_and_constants():
    src = """#[version = "0.0.5"]
def @main(%a: Tensor[(2, 3), string]) {
  %0 = transpose(%a, axes=[1, 0]);
  %1 = reshape(%0, newshape=[6]);
  %2 = strided_slice(%1, begin=[1], end=[6], strides=[2]);
  %3 = string.concat(%2, meta[relay.Constant][0]);
  %4 = take(%3, meta[relay.Constant][1], axis=0);
  (%4, string.equal(%3, %2))
}"""
    suffix = np.array(["!", "?", ""], dtype=object)
    mod = parse(src, init_meta_table={"relay.Constant": [suffix, np.array([2, 0, 1, 1])]})
    a = random_strings(np.random.default_rng(3), (2, 3))
    got = graph.compile(mod)(a)
    want = evaluate(mod, a)
    for g, w in zip(got, want, strict=True):
        _assert_same(g, w)
    flat = a.T.reshape(6)[1:6:2]
    joined = np.array([s + t for s, t in zip(flat, suffix, strict=True)], dtype=object)
    assert got[0].tolist() == joined[[2, 0, 1, 1]].tolist()


def test_results_are_read_before_the_next_call_and_calls_reuse_the_heap():
    mod = _module("string.concat", (TensorType((64,), "string"),) * 2, {})
    model = graph.compile(mod)
    rng = np.random.default_rng(0)
    results = []
    for _ in range(50):  # each call empties the heap; earlier results stay Python strings
        a, b = random_strings(rng, (64,)), random_strings(rng, (64,))
        results.append((model(a, b), a, b))
    for got, a, b in results:
        assert got.tolist() == [x + y for x, y in zip(a, b, strict=True)]


def test_calls_on_several_threads_keep_their_own_strings():
    mod = _module("string.change_case", (TensorType((200,), "string"),), {"action": "UPPER"})
    model = graph.compile(mod)
    errors = []

    def work(seed):
        rng = np.random.default_rng(seed)
        for _ in range(20):
            a = random_strings(rng, (200,))
            got = model(a)
            if got.tolist() != [s.upper() if s != "ß" else s for s in a]:
                errors.append(seed)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_bytes_and_numpy_unicode_inputs_are_strings():
    model = graph.compile(_module("string.concat", (TensorType((2,), "string"),) * 2, {}))
    got = model(np.array([b"ab", b"\xc3\xa9"], dtype=object), np.array(["x", "y"]))
    assert got.tolist() == ["abx", "éy"]


def test_a_string_input_must_be_strings():
    model = graph.compile(_module("string.concat", (TensorType((2,), "string"),) * 2, {}))
    with pytest.raises(UserError, match="input `x0`: expected an array of strings"):
        model(np.zeros(2, np.float32), np.array(["x", "y"]))
    with pytest.raises(UserError, match="element 1 is a int"):
        model(np.array(["a", 3], dtype=object), np.array(["x", "y"]))


def test_arithmetic_on_strings_is_refused_naming_the_operator():
    with pytest.raises(OpTypeError, match="add: argument `lhs` is a string tensor"):
        graph.compile(_module("add", (TensorType((2,), "string"),) * 2, {}))


def test_python_executor_and_export_refuse_string_models(tmp_path):
    mod = _module("string.concat", (TensorType((2,), "string"),) * 2, {})
    with pytest.raises(UserError) as err:
        graph.compile(mod, executor="python")
    assert err.value.rule == "executor.python-strings"
    with pytest.raises(UserError) as err:
        graph.compile(mod).export(tmp_path)
    assert err.value.rule == "export.strings"


def test_string_constants_print_and_parse_back():
    x = Var("x", TensorType((2,), "string"))
    constant = Constant(np.array(["中", "a\nb"], dtype=object))
    mod = IRModule.from_func(Function((x,), call("string.equal", x, constant)), "main")
    text = astext(mod)
    assert '"dtype": "string"' in text and '["\\u4e2d", "a\\nb"]' in text  # JSON, ASCII
    assert_structural_equal(parse(text), mod)


def test_a_pattern_beyond_the_supported_syntax_is_refused_at_type_inference():
    with pytest.raises(OpTypeError, match=r"attribute `pattern`.*\\p"):
        get_op("string.regex_full_match").infer_type(
            (TensorType((2,), "string"),), {"pattern": r"\p{Greek}"}
        )


def test_regex_in_c_matches_the_reference_for_many_patterns():
    # One model, one string.regex_full_match per pattern: glibc's POSIX matching of each
    # translation against Python's matching of the same parse, on random short texts.
    rng = np.random.default_rng(11)
    patterns = []
    for _ in range(70):  # more than the 64 patterns the runtime keeps compiled
        pieces = rng.integers(0, len(ATOMS), rng.integers(1, 4))
        body = "".join(ATOMS[k] + QUANTIFIERS[rng.integers(0, len(QUANTIFIERS))] for k in pieces)
        patterns.append(body if rng.random() < 0.7 else f"(?:{body}|b)")
    texts = np.empty(300, dtype=object)
    alphabet = list("ab1 ._é\n")
    texts[:] = ["".join(rng.choice(alphabet, rng.integers(0, 6))) for _ in range(300)]
    x = Var("x", TensorType((300,), "string"))
    body = Tuple(tuple(call("string.regex_full_match", x, pattern=p) for p in patterns))
    mod = IRModule.from_func(Function((x,), body), "main")
    got = graph.compile(mod)(texts)
    for pattern, result in zip(patterns, got, strict=True):
        want = get_op("string.regex_full_match").evaluate([texts], {"pattern": pattern})
        assert result.tolist() == want.tolist(), pattern


def test_every_operator_named_as_taking_strings_exists():
    from tessel.graph.op import list_ops
    from tessel.graph.op.op_def import STRING_OPERATORS

    assert sorted(STRING_OPERATORS - set(list_ops())) == []


def test_the_reference_reads_bytes_as_utf8_like_the_compiled_model():
    mod = _module("string.concat", (TensorType((2,), "string"),) * 2, {})
    a = np.array([b"\xc3\xa9", b"x"], dtype=object)
    b = np.array(["!", "?"], dtype=object)
    assert evaluate(mod, a, b).tolist() == graph.compile(mod)(a, b).tolist() == ["é!", "x?"]


def test_strings_with_a_nul_byte_keep_it_in_c():
    param = Var("x", TensorType((3,), "string"))
    body = Tuple(
        (
            call("string.regex_full_match", param, pattern="a.b"),
            call("string.change_case", param, action="UPPER"),
            call("string.concat", param, param),
        )
    )
    mod = IRModule.from_func(Function((param,), body), "main")
    texts = np.array(["a\0b", "\0", "ab"], dtype=object)
    got = graph.compile(mod)(texts)
    want = evaluate(mod, texts)
    for g, w in zip(got, want, strict=True):
        assert g.tolist() == w.tolist()
    assert got[0].tolist() == [True, False, False]
