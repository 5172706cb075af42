"""Symbolic import: named dimensions kept as shape symbols (`dims={"batch": None, "seq": (1,
16)}`), so one imported graph runs at every size. Each model is imported once and evaluated at
several sizes against onnxruntime on the same inputs."""

import io
import warnings

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tessel.cli.minilm import EncoderConfig, build_encoder
from tessel.frontend.onnx import OnnxImportError, from_onnx
from tessel.graph import astext
from tessel.graph.evaluate import evaluate

ort = pytest.importorskip("onnxruntime")

TINY_BERT = EncoderConfig(hidden=16, heads=2, layers=2, intermediate=32, layer_norm_eps=1e-12)
VOCAB, POSITIONS = 50, 16


def _tiny_bert_weights(cfg: EncoderConfig) -> dict[str, np.ndarray]:
    """Random weights under the Hugging Face BERT names that build_encoder reads."""
    rng = np.random.default_rng(0)
    h, inner = cfg.hidden, cfg.intermediate
    shapes = {
        "embeddings.word_embeddings.weight": (VOCAB, h),
        "embeddings.position_embeddings.weight": (POSITIONS, h),
        "embeddings.token_type_embeddings.weight": (2, h),
    }
    norms = ["embeddings.LayerNorm"]
    for k in range(cfg.layers):
        layer = f"encoder.layer.{k}"
        for name in ("query", "key", "value"):
            shapes[f"{layer}.attention.self.{name}.weight"] = (h, h)
            shapes[f"{layer}.attention.self.{name}.bias"] = (h,)
        shapes[f"{layer}.attention.output.dense.weight"] = (h, h)
        shapes[f"{layer}.attention.output.dense.bias"] = (h,)
        shapes[f"{layer}.intermediate.dense.weight"] = (inner, h)
        shapes[f"{layer}.intermediate.dense.bias"] = (inner,)
        shapes[f"{layer}.output.dense.weight"] = (h, inner)
        shapes[f"{layer}.output.dense.bias"] = (h,)
        norms += [f"{layer}.attention.output.LayerNorm", f"{layer}.output.LayerNorm"]
    weights = {k: (rng.standard_normal(s) * 0.3).astype("float32") for k, s in shapes.items()}
    for norm in norms:
        weights[f"{norm}.weight"] = (1 + rng.standard_normal(h) * 0.1).astype("float32")
        weights[f"{norm}.bias"] = (rng.standard_normal(h) * 0.1).astype("float32")
    return weights


@pytest.fixture(scope="module")
def tiny_bert() -> onnx.ModelProto:
    return build_encoder(_tiny_bert_weights(TINY_BERT), TINY_BERT)


def _bert_inputs(batch: int, seq: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    mask = np.ones((batch, seq), "int64")
    mask[0, seq // 2 :] = 0  # padding in the first sentence
    return {
        "input_ids": rng.integers(0, VOCAB, (batch, seq)).astype("int64"),
        "attention_mask": mask,
        "token_type_ids": rng.integers(0, 2, (batch, seq)).astype("int64"),
    }


def _matches_onnxruntime(model: onnx.ModelProto, mod, feeds: dict[str, np.ndarray]) -> None:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = session.run(None, feeds)
    got = evaluate(mod, *feeds.values())
    got = got if isinstance(got, tuple) else (got,)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def test_bert_with_dynamic_batch_and_sequence_imports_once_and_runs_every_size(tiny_bert):
    mod, _ = from_onnx(tiny_bert, dims={"batch": None, "seq": (1, POSITIONS)})
    params = mod["main"].params
    assert astext(params[0].type_annotation) == "Tensor[(batch, seq), int64]"
    assert astext(mod["main"].ret_type) == "Tensor[(batch, 16), float32]"
    for seed, (batch, seq) in enumerate([(1, 7), (4, 11), (3, POSITIONS), (2, 1)]):
        _matches_onnxruntime(tiny_bert, mod, _bert_inputs(batch, seq, seed))


def test_a_sequence_without_the_bound_the_position_table_needs_is_refused_by_node(tiny_bert):
    # positions[0:seq] has min(seq, 16) rows: without seq <= 16 the sum with the (batch, seq)
    # embeddings is not proved to broadcast, and the error names the node and the fix.
    with pytest.raises(OnnxImportError, match=r"Add node .*min\(seq, 16\)") as info:
        from_onnx(tiny_bert, dims={"batch": None, "seq": None})
    assert "dims={'seq': (1, 512)}" in info.value.hint


def test_a_size_outside_the_bounds_names_the_input_axis_and_bound(tiny_bert):
    mod, _ = from_onnx(tiny_bert, dims={"batch": (1, 8), "seq": (1, POSITIONS)})
    feeds = _bert_inputs(2, POSITIONS + 1, 0)
    with pytest.raises(ValueError, match=r"`input_ids`: axis 1 is `seq`, which takes sizes 1..16"):
        evaluate(mod, *feeds.values())
    feeds = _bert_inputs(9, 4, 0)
    with pytest.raises(ValueError, match=r"axis 0 is `batch`, which takes sizes 1..8, but got 9"):
        evaluate(mod, *feeds.values())


def test_a_fixed_and_a_symbolic_dimension_mix(tiny_bert):
    mod, _ = from_onnx(tiny_bert, dims={"batch": 2, "seq": (1, POSITIONS)})
    assert astext(mod["main"].ret_type) == "Tensor[(2, 16), float32]"
    _matches_onnxruntime(tiny_bert, mod, _bert_inputs(2, 5, 1))


torch = pytest.importorskip("torch")


def _export(module, example, dynamic_axes):
    torch.manual_seed(0)
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module.eval(),
            example,
            buffer,
            dynamo=False,
            opset_version=17,
            input_names=["x"],
            output_names=["y"],
            dynamic_axes=dynamic_axes,
        )
    return onnx.load_from_string(buffer.getvalue())


class _SmallCnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.norm = torch.nn.BatchNorm2d(8)
        self.conv = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.head = torch.nn.Linear(8 * 4 * 4, 10)

    def forward(self, x):
        y = torch.relu(self.norm(self.stem(x)))
        y = torch.nn.functional.max_pool2d(y, 2)
        y = y + torch.relu(self.conv(y))
        y = torch.nn.functional.adaptive_avg_pool2d(y, 4)
        return torch.softmax(self.head(torch.flatten(y, 1)), -1)


def test_a_cnn_with_a_dynamic_batch_runs_at_1_3_and_16():
    torch.manual_seed(0)
    model = _export(_SmallCnn(), torch.randn(2, 3, 16, 16), {"x": {0: "batch"}, "y": {0: "batch"}})
    mod, _ = from_onnx(model, dims={"batch": None})
    assert astext(mod["main"].ret_type) == "Tensor[(batch, 10), float32]"
    for batch in (1, 3, 16):
        x = np.random.default_rng(batch).standard_normal((batch, 3, 16, 16)).astype("float32")
        _matches_onnxruntime(model, mod, {"x": x})


class _Attention(torch.nn.Module):
    """view/reshape by sizes read from the input: the exporter writes Shape -> Gather ->
    Unsqueeze -> Concat -> Reshape, which folds into a reshape over the symbols."""

    def __init__(self):
        super().__init__()
        self.project = torch.nn.Linear(16, 16)

    def forward(self, x):
        batch, seq, _ = x.shape
        heads = self.project(x).view(batch, seq, 4, 4).transpose(1, 2)
        scores = torch.softmax(heads @ heads.transpose(-1, -2) / 2.0, -1)
        return (scores @ heads).transpose(1, 2).reshape(batch, seq, 16).mean(1)


def test_reshapes_to_sizes_read_from_the_input_fold_over_the_symbols():
    torch.manual_seed(0)
    model = _export(_Attention(), torch.randn(2, 5, 16), {"x": {0: "b", 1: "s"}, "y": {0: "b"}})
    assert "Concat" in [n.op_type for n in model.graph.node]
    mod, _ = from_onnx(model, dims={"b": None, "s": None})
    for batch, seq in [(1, 7), (3, 2)]:
        x = np.random.default_rng(seq).standard_normal((batch, seq, 16)).astype("float32")
        _matches_onnxruntime(model, mod, {"x": x})


# --- what is not supported yet is refused by name -----------------------------------------------


def _shape_model(nodes, initializers, extra_inputs=(), out_type=TensorProto.FLOAT):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])
    y = helper.make_tensor_value_info("y", out_type, None)
    graph = helper.make_graph(nodes, "g", [x, *extra_inputs], [y], initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_a_dimension_cast_to_data_is_computed_when_the_graph_runs():
    # Cast(batch) to float cannot fold into a shape: the graph computes it (shape_to_tensor).
    model = _shape_model(
        [
            helper.make_node("Shape", ["x"], ["shape"]),
            helper.make_node("Gather", ["shape", "zero"], ["batch"], axis=0),
            helper.make_node("Cast", ["batch"], ["batch_f"], to=TensorProto.FLOAT),
            helper.make_node("Mul", ["x", "batch_f"], ["y"]),
        ],
        [numpy_helper.from_array(np.array(0, "int64"), "zero")],
    )
    mod, _ = from_onnx(model, dims={"batch": None})
    assert "shape_to_tensor(sizes=[batch]" in astext(mod, show_meta_data=False)
    for batch in (1, 4):
        x = np.random.default_rng(batch).standard_normal((batch, 3)).astype("float32")
        _matches_onnxruntime(model, mod, {"x": x})


def test_a_shape_added_to_a_tensor_is_computed_when_the_graph_runs():
    offsets = helper.make_tensor_value_info("offsets", TensorProto.INT64, [2])
    model = _shape_model(
        [
            helper.make_node("Shape", ["x"], ["shape"]),
            helper.make_node("Add", ["shape", "offsets"], ["y"]),
        ],
        [],
        [offsets],
        TensorProto.INT64,
    )
    mod, _ = from_onnx(model, dims={"batch": None})
    for batch in (2, 5):
        feeds = {"x": np.zeros((batch, 3), "float32"), "offsets": np.array([10, 20], "int64")}
        _matches_onnxruntime(model, mod, feeds)


def test_a_shape_computation_that_folds_to_numbers_stays_a_constant():
    # Shape(x)[1] is 3 whatever the batch: the reshape target folds to plain integers.
    model = _shape_model(
        [
            helper.make_node("Shape", ["x"], ["shape"]),
            helper.make_node("Gather", ["shape", "one"], ["width"], axis=0),
            helper.make_node("Unsqueeze", ["width", "axes"], ["width_1"]),
            helper.make_node("Concat", ["minus_one", "width_1"], ["target"], axis=0),
            helper.make_node("Reshape", ["x", "target"], ["y"]),
        ],
        [
            numpy_helper.from_array(np.array(1, "int64"), "one"),
            numpy_helper.from_array(np.array([0], "int64"), "axes"),
            numpy_helper.from_array(np.array([-1], "int64"), "minus_one"),
        ],
    )
    mod, _ = from_onnx(model, dims={"batch": None})
    assert astext(mod["main"].ret_type) == "Tensor[(batch, 3), float32]"
    x = np.arange(12, dtype="float32").reshape(4, 3)
    np.testing.assert_array_equal(evaluate(mod, x), x)


# --- the graph passes keep a symbolic graph's meaning ------------------------------------------


def _after_graph_passes(mod):
    from tessel.graph.passes.pipeline import default_pipeline
    from tessel.ir.transform import PassContext

    ctx = PassContext()
    for graph_pass in default_pipeline(None, 1):
        mod = graph_pass(mod, ctx)
    return mod


def test_the_graph_pipeline_keeps_a_symbolic_bert_exact_at_every_size(tiny_bert):
    # FoldConstant leaves the slice of the position table to `seq` rows for run time, FuseOps
    # groups symbolic kernels: the fused graph evaluates to the imported graph's values.
    mod, _ = from_onnx(tiny_bert, dims={"batch": None, "seq": (1, POSITIONS)})
    fused = _after_graph_passes(mod)
    assert "Primitive=1" in astext(fused, show_meta_data=False)
    for seed, (batch, seq) in enumerate([(1, 5), (3, 12)]):
        feeds = list(_bert_inputs(batch, seq, seed).values())
        np.testing.assert_array_equal(evaluate(fused, *feeds), evaluate(mod, *feeds))


def test_the_graph_pipeline_leaves_symbolic_convolutions_in_nchw():
    torch.manual_seed(0)
    model = _export(_SmallCnn(), torch.randn(2, 3, 16, 16), {"x": {0: "batch"}, "y": {0: "batch"}})
    mod, _ = from_onnx(model, dims={"batch": None})
    fused = _after_graph_passes(mod)
    text = astext(fused, show_meta_data=False)
    assert "nn.conv2d(" in text and "NCHWc" not in text  # the blocked operators take static shapes
    for batch in (1, 3):
        x = np.random.default_rng(batch).standard_normal((batch, 3, 16, 16)).astype("float32")
        np.testing.assert_allclose(evaluate(fused, x), evaluate(mod, x), rtol=1e-6, atol=1e-7)


# --- the shape computations exporters write around a transformer -------------------------------

HIDDEN, HEADS, TABLE = 16, 2, 24


class _HfStyleEncoder(torch.nn.Module):
    """A BERT layer as Hugging Face's code writes it: positions from arange(seq) expanded to the
    batch, token types from zeros_like, the extended mask and view/permute by sizes read from
    the input (Range, Expand, ConstantOfShape, Cast/Equal/Where of shapes in the export)."""

    def __init__(self):
        super().__init__()
        self.words = torch.nn.Embedding(40, HIDDEN)
        self.positions = torch.nn.Embedding(TABLE, HIDDEN)
        self.types = torch.nn.Embedding(2, HIDDEN)
        self.qkv = torch.nn.ModuleList(torch.nn.Linear(HIDDEN, HIDDEN) for _ in range(3))
        self.norm = torch.nn.LayerNorm(HIDDEN)

    def _heads(self, x):
        batch, seq, _ = x.size()
        return x.view(batch, seq, HEADS, HIDDEN // HEADS).permute(0, 2, 1, 3)

    def forward(self, ids, mask):
        batch, seq = ids.shape
        positions = torch.arange(seq, dtype=torch.long).unsqueeze(0).expand(batch, -1)
        x = self.words(ids) + self.positions(positions) + self.types(torch.zeros_like(ids))
        bias = (1.0 - mask[:, None, None, :].to(torch.float32)) * -10000.0
        q, k, v = (self._heads(layer(x)) for layer in self.qkv)
        scores = torch.softmax(q @ k.transpose(-1, -2) / 2.0 + bias, -1)
        context = (scores @ v).permute(0, 2, 1, 3).contiguous()
        x = self.norm(x + context.view(context.size()[:-2] + (HIDDEN,)))
        weights = mask.unsqueeze(-1).to(x.dtype)
        return (x * weights).sum(1) / weights.sum(1).clamp(min=1e-9)


def _hf_style_model():
    torch.manual_seed(0)
    ids, mask = torch.randint(0, 40, (2, 5)), torch.ones(2, 5, dtype=torch.long)
    axes = {"ids": {0: "batch", 1: "seq"}, "mask": {0: "batch", 1: "seq"}}
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            _HfStyleEncoder().eval(),
            (ids, mask),
            buffer,
            dynamo=False,
            opset_version=17,
            input_names=["ids", "mask"],
            output_names=["y"],
            dynamic_axes=axes,
        )
    return onnx.load_from_string(buffer.getvalue())


def test_an_exported_hugging_face_style_encoder_imports_once_and_runs_every_size():
    model = _hf_style_model()
    ops = {n.op_type for n in model.graph.node}
    assert {"Range", "Expand", "ConstantOfShape", "Shape"} <= ops
    mod, _ = from_onnx(model, dims={"batch": (1, 64), "seq": (1, TABLE)})
    assert astext(mod["main"].ret_type) == f"Tensor[(batch, {HIDDEN}), float32]"
    for batch, seq in [(1, 7), (4, 11), (3, TABLE)]:
        rng = np.random.default_rng(seq)
        mask = np.ones((batch, seq), "int64")
        mask[0, seq // 2 :] = 0
        feeds = {"ids": rng.integers(0, 40, (batch, seq)).astype("int64"), "mask": mask}
        _matches_onnxruntime(model, mod, feeds)


def test_a_range_to_an_unbounded_symbol_asks_for_bounds():
    with pytest.raises(OnnxImportError, match=r"Range .* has no upper bound") as info:
        from_onnx(_hf_style_model(), dims={"batch": (1, 64), "seq": None})
    assert "--dim seq=1..512" in info.value.hint


def test_comparisons_of_dimensions_fold_only_when_the_bounds_decide_them():
    from tessel.arith.dims import symbol
    from tessel.frontend.onnx.symbolic import fold_elementwise

    seq = symbol("seq", 1, 64)
    dims = np.array([seq, 4], dtype=object)
    np.testing.assert_array_equal(fold_elementwise("equal", dims, np.array(-1)), [False, False])
    np.testing.assert_array_equal(fold_elementwise("less", dims, np.array(65)), [True, True])
    with pytest.raises(TypeError, match="seq == 1 depends on the sizes"):
        fold_elementwise("equal", dims, np.array(1))
    assert fold_elementwise("multiply", dims, np.array(2))[1] == 8
    assert astext_dim(fold_elementwise("divide", dims * 4, np.array(4))[0]) == "seq"


def astext_dim(dim):
    from tessel.arith.dims import dim_text

    return dim_text(dim)
