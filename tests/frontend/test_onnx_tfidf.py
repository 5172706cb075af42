"""TfIdfVectorizer on integer tokens (pool_int64s) and strings (pool_strings): imported, evaluated and compiled to C, and
compared exactly with onnx's reference implementation and with onnxruntime on random inputs
(TF, IDF and TFIDF; [C] and [N, C] inputs; skips; unigrams to trigrams; several n-grams in one
column; duplicate pool n-grams); string tokens against a pool of strings; and the clean
refusals of inconsistent attributes."""

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator
from onnx_testing import calls, make_model, run_onnxruntime, tensor

from tessel.frontend.onnx import from_onnx
from tessel.graph.executor import compile as compile_graph
from tessel.support.errors import UserError

# 4 unigrams, 3 bigrams and 2 trigrams of tokens 0..5
POOL = dict(
    ngram_counts=[0, 4, 10],
    pool_int64s=[2, 3, 5, 4, 5, 1, 0, 2, 3, 3, 1, 2, 3, 0, 0, 1],
)
NINE = list(range(9))


def _model(shape, elem=TensorProto.INT64, out=None, **attrs):
    """A TfIdfVectorizer of graph input x; Y's shape by ONNX's inference unless `out` gives it."""
    node = helper.make_node("TfIdfVectorizer", ["x"], ["y"], name="tfidf", **attrs)
    y = helper.make_empty_tensor_value_info("y") if out is None else tensor("y", out)
    return make_model([node], [tensor("x", list(shape), elem)], [y], opset=9)


def _tessel(model, x, compiled=True):
    """Y by the graph evaluator and, with `compiled`, by the model compiled to C (checked equal)."""
    from onnx_testing import evaluate_main

    mod, params = from_onnx(model)
    (y,) = evaluate_main(mod, {"x": x, **params})
    if compiled:
        np.testing.assert_array_equal(compile_graph(mod, params)(x=x), y)
    return y


def _check(model, x, reference=True, onnxruntime=True):
    """Tessel's Y equals the reference's and onnxruntime's exactly (shape, dtype and values)."""
    y = _tessel(model, x)
    assert y.dtype == np.float32
    if reference:
        (expected,) = ReferenceEvaluator(model).run(None, {"x": x})
        assert y.shape == expected.shape
        np.testing.assert_array_equal(y, expected)
    if onnxruntime:
        (expected,) = run_onnxruntime(model, {"x": x})
        assert y.shape == expected.shape
        np.testing.assert_array_equal(y, expected)
    return y


def _tokens(shape, dtype=np.int64, seed=0, high=6):
    return np.random.default_rng(seed).integers(0, high, size=shape).astype(dtype)


# dyadic, so that onnxruntime's sum of a weight per occurrence is exact too
WEIGHTS = [0.5, 1.25, -2.0, 3.0, 0.125, 7.5, -0.375, 2.25, 0.0625]

CASES = {
    # (input shape, input dtype, attributes)
    "tf_uni_to_tri_skip2": (
        (3, 17),
        np.int64,
        dict(mode="TF", min_gram_length=1, max_gram_length=3, max_skip_count=2),
    ),
    "tf_bigrams_skip0_1d_int32": (
        (23,),
        np.int32,
        dict(mode="TF", min_gram_length=2, max_gram_length=2, max_skip_count=0),
    ),
    "tf_bi_and_trigrams_skip4": (
        (2, 12),
        np.int32,
        dict(mode="TF", min_gram_length=2, max_gram_length=3, max_skip_count=4),
    ),
    "tf_unigrams_only_skips_ignored": (
        (4, 9),
        np.int64,
        dict(mode="TF", min_gram_length=1, max_gram_length=1, max_skip_count=3),
    ),
    "idf_weights": (
        (3, 15),
        np.int64,
        dict(mode="IDF", min_gram_length=1, max_gram_length=3, max_skip_count=1, weights=WEIGHTS),
    ),
    "tfidf_weights_1d": (
        (20,),
        np.int32,
        dict(mode="TFIDF", min_gram_length=1, max_gram_length=2, max_skip_count=3, weights=WEIGHTS),
    ),
    "tfidf_weights_trigrams_only": (
        (2, 11),
        np.int64,
        dict(mode="TFIDF", min_gram_length=3, max_gram_length=3, max_skip_count=2, weights=WEIGHTS),
    ),
    "longer_skips_than_the_input_fits": (
        (2, 4),
        np.int64,
        dict(mode="TF", min_gram_length=2, max_gram_length=3, max_skip_count=5),
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_matches_the_reference_and_onnxruntime(case):
    shape, dtype, attrs = CASES[case]
    elem = TensorProto.INT32 if dtype == np.int32 else TensorProto.INT64
    model = _model(shape, elem, ngram_indexes=NINE, **POOL, **attrs)
    for seed in range(3):
        y = _check(model, _tokens(shape, dtype, seed))
        assert y.shape == (*shape[:-1], 9)
    assert "equal" in calls(from_onnx(model)[0])  # computed at run time, not folded


@pytest.mark.parametrize("mode", ["IDF", "TFIDF"])
def test_idf_and_tfidf_without_weights_match_onnxruntime(mode):
    """Without weights IDF marks the n-grams present with 1 and TFIDF is TF (onnx's reference
    fails on the missing weights: onnxruntime only)."""
    model = _model(
        (3, 14),
        ngram_indexes=NINE,
        mode=mode,
        min_gram_length=1,
        max_gram_length=3,
        max_skip_count=2,
        **POOL,
    )
    for seed in range(3):
        _check(model, _tokens((3, 14), seed=seed), reference=False)


def test_columns_permuted_and_with_gaps():
    """ngram_indexes a permutation with unused columns: the output is max(ngram_indexes) + 1 wide
    and the columns no n-gram names stay zero."""
    indexes = [11, 0, 4, 7, 2, 9, 5, 1, 12]
    model = _model(
        (2, 16),
        ngram_indexes=indexes,
        mode="TF",
        min_gram_length=1,
        max_gram_length=3,
        max_skip_count=1,
        **POOL,
    )
    for seed in range(3):
        y = _check(model, _tokens((2, 16), seed=seed))
        assert y.shape == (2, 13)
        assert not y[:, [3, 6, 8, 10]].any()


@pytest.mark.parametrize("mode", ["TF", "IDF", "TFIDF"])
def test_several_ngrams_in_one_column_add_up(mode):
    """The weights are those of the output columns, as in onnx's reference (onnxruntime 1.32
    weights each n-gram by its own entry: the two agree when ngram_indexes is 0, 1, 2, ...; here
    they do not, so onnxruntime checks TF only)."""
    indexes = [0, 1, 0, 2, 1, 1, 3, 2, 0]
    weights = [2.0, -1.5, 0.25, 4.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    model = _model(
        (3, 13),
        ngram_indexes=indexes,
        mode=mode,
        min_gram_length=1,
        max_gram_length=3,
        max_skip_count=2,
        weights=weights,
        **POOL,
    )
    for seed in range(2):
        y = _check(model, _tokens((3, 13), seed=seed), onnxruntime=mode == "TF")
        if mode == "IDF":
            assert set(y.reshape(-1).tolist()) <= {0.0, *weights[:4]}


def test_tfidf_rounds_count_times_weight_once():
    """TFIDF is float32(count * weight), rounded once, as in onnx's reference (onnxruntime adds the
    float32 weight once per occurrence, which rounds at each step)."""
    weights = [0.3, 0.1, -0.3, 0.7, 1 / 3, 0.2, 0.9, 1.1, 0.6]
    model = _model(
        (2, 30),
        ngram_indexes=NINE,
        mode="TFIDF",
        min_gram_length=1,
        max_gram_length=2,
        max_skip_count=2,
        weights=weights,
        **POOL,
    )
    tf = _model(
        (2, 30),
        ngram_indexes=NINE,
        mode="TF",
        min_gram_length=1,
        max_gram_length=2,
        max_skip_count=2,
        **POOL,
    )
    x = _tokens((2, 30), seed=3)
    y = _check(model, x, onnxruntime=False)
    counts = _tessel(tf, x, compiled=False).astype(np.float64)
    exact = (counts * np.float32(weights).astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(y, exact)


def test_lengths_outside_the_range_keep_their_ids():
    """min_gram_length 2 skips the unigrams, but the ids of the bigrams still count them: the
    bigrams' columns are ngram_indexes[4:7], not [0:3]."""
    indexes = [8, 7, 6, 5, 4, 3, 2, 1, 0]
    model = _model(
        (20,),
        ngram_indexes=indexes,
        mode="TF",
        min_gram_length=2,
        max_gram_length=2,
        max_skip_count=1,
        **POOL,
    )
    x = np.array([5, 1, 0, 2, 3, 3, 1, 5, 1, 0, 2, 9, 3, 2, 3, 3, 1, 2, 2, 4])
    y = _check(model, x)
    assert not y[[0, 1, 5, 6, 7, 8]].any()
    assert y[[4, 3, 2]].all()


def test_an_empty_unigram_level():
    """ngram_counts [0, 0]: no unigrams, the pool holds bigrams only (the conformance test
    tfidfvectorizer_tf_onlybigrams_levelempty)."""
    model = _model(
        (12,),
        TensorProto.INT32,
        mode="TF",
        min_gram_length=2,
        max_gram_length=2,
        max_skip_count=0,
        ngram_counts=[0, 0],
        ngram_indexes=[0, 1, 2],
        pool_int64s=[5, 6, 7, 8, 6, 7],
    )
    x = np.array([1, 1, 3, 3, 3, 7, 8, 6, 7, 5, 6, 8], np.int32)
    np.testing.assert_array_equal(_check(model, x), [1, 1, 1])


def test_a_pool_ngram_listed_twice_counts_in_its_last_column():
    """onnx's reference keeps the last id of a repeated n-gram (onnxruntime refuses the pool)."""
    model = _model(
        (2, 10),
        mode="TF",
        min_gram_length=1,
        max_gram_length=2,
        max_skip_count=1,
        ngram_counts=[0, 3],
        ngram_indexes=[0, 1, 2, 3, 4, 5],
        pool_int64s=[1, 2, 1, 1, 2, 0, 1, 1, 2],
    )
    for seed in range(3):
        y = _check(model, _tokens((2, 10), seed=seed, high=3), onnxruntime=False)
        assert not y[:, [0, 3]].any()


def test_pool_tokens_an_int32_input_cannot_hold_never_match():
    big = 2**40
    model = _model(
        (2, 9),
        TensorProto.INT32,
        mode="TF",
        min_gram_length=1,
        max_gram_length=2,
        max_skip_count=1,
        ngram_counts=[0, 3],
        ngram_indexes=[0, 1, 2, 3, 4],
        pool_int64s=[1, big, 2, 1, 2, big + 1, 2],
    )
    for seed in range(3):
        y = _check(model, _tokens((2, 9), np.int32, seed=seed, high=3))
        assert not y[:, [1, 4]].any()


def test_inputs_shorter_than_every_ngram_give_zeros():
    model = _model(
        (2, 2),
        mode="TF",
        min_gram_length=3,
        max_gram_length=3,
        max_skip_count=2,
        ngram_indexes=NINE,
        **POOL,
    )
    np.testing.assert_array_equal(_check(model, _tokens((2, 2))), np.zeros((2, 9), np.float32))


def test_empty_input_gives_zeros():
    model = _model(
        (0,),
        mode="TFIDF",
        min_gram_length=1,
        max_gram_length=2,
        max_skip_count=1,
        ngram_indexes=NINE,
        weights=WEIGHTS,
        **POOL,
    )
    y = _tessel(model, np.zeros((0,), np.int64))
    (expected,) = ReferenceEvaluator(model).run(None, {"x": np.zeros((0,), np.int64)})
    np.testing.assert_array_equal(y, expected)
    assert y.shape == (9,)
    assert not y.any()


WORDS = ["the", "cat", "sat", "on", "mat", "中文"]
STRING_POOL = dict(  # 3 unigrams, 2 bigrams of WORDS
    ngram_counts=[0, 3],
    pool_strings=["cat", "mat", "中文", "the", "cat", "cat", "sat"],
)


@pytest.mark.parametrize(("shape", "mode", "skips"), [((7,), "TF", 0), ((3, 6), "TFIDF", 1)])
def test_string_pools_count_string_tokens_as_the_reference_and_onnxruntime(shape, mode, skips):
    model = _model(
        shape,
        TensorProto.STRING,
        mode=mode,
        min_gram_length=1,
        max_gram_length=2,
        max_skip_count=skips,
        ngram_indexes=[0, 1, 2, 3, 4],  # onnxruntime weights by n-gram id: ids = columns
        weights=[0.5, 1.5, 2.0, 0.25, 3.0],
        **STRING_POOL,
    )
    rng = np.random.default_rng(4)
    x = np.empty(int(np.prod(shape)), dtype=object)
    x[:] = [WORDS[k] for k in rng.integers(0, len(WORDS), x.size)]
    x = x.reshape(shape)
    mod, _ = from_onnx(model)
    assert "string.equal" in calls(mod)
    _check(model, x)


def test_a_string_pool_needs_string_tokens():
    model = _model(
        (2, 3),
        mode="TF",
        min_gram_length=1,
        max_gram_length=1,
        max_skip_count=0,
        ngram_counts=[0],
        ngram_indexes=[0, 1],
        pool_strings=["a", "b"],
    )
    with pytest.raises(UserError, match=r"TfIdfVectorizer node `tfidf`: X has dtype int64; a pool"):
        from_onnx(model)


BASE = dict(mode="TF", min_gram_length=1, max_gram_length=2, max_skip_count=1)
INVALID = {
    "counts_run_backwards": (
        dict(ngram_counts=[0, 5, 3], ngram_indexes=NINE),
        "ngram_counts .* inconsistent",
    ),
    "counts_past_the_pool": (
        dict(ngram_counts=[0, 17], ngram_indexes=NINE),
        "ngram_counts .* inconsistent",
    ),
    "no_whole_bigrams": (
        dict(ngram_counts=[0, 3, 10], ngram_indexes=NINE),
        "do not make whole 2-grams",
    ),
    "too_few_indexes": (
        dict(ngram_counts=[0, 4, 10], ngram_indexes=[0, 1, 2, 3, 4]),
        "ngram_indexes has 5 entries",
    ),
    "negative_index": (
        dict(ngram_counts=[0, 4, 10], ngram_indexes=[0, -1, *range(2, 9)], out=[2, 9]),
        "negative",
    ),
    "weights_of_the_wrong_length": (
        dict(ngram_counts=[0, 4, 10], ngram_indexes=NINE, mode="IDF", weights=[1.0, 2.0]),
        "weights has 2 entries",
    ),
    "unknown_mode": (dict(ngram_counts=[0, 4, 10], ngram_indexes=NINE, mode="BM25"), "mode 'BM25'"),
    "lengths_reversed": (
        dict(ngram_counts=[0, 4, 10], ngram_indexes=NINE, min_gram_length=3),
        "min_gram_length 3 and max_gram_length 2",
    ),
}


@pytest.mark.parametrize("case", INVALID)
def test_inconsistent_attributes_are_refused_naming_the_op(case):
    attrs, message = INVALID[case]
    pool = {"pool_int64s": POOL["pool_int64s"]}
    model = _model((2, 6), **{**BASE, **pool, **attrs})
    with pytest.raises(UserError, match=rf"TfIdfVectorizer node `tfidf`: .*{message}"):
        from_onnx(model)
