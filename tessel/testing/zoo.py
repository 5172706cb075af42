"""A zoo of the architectures users deploy, built with random weights from torchvision, timm and
transformers and exported to ONNX by both of PyTorch's exporters (TorchScript and dynamo).

Tests build the small configurations (few layers, narrow, small images) so CI stays fast;
`benchmarks/zoo.py` builds the full-size ones. Nothing is downloaded: every model is built from
its config with random weights. torch, torchvision, timm and transformers are imported inside
the functions (they are test and benchmark dependencies, not Tessel's).
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

EXPORTERS = ("torchscript", "dynamo")


@dataclass(frozen=True)
class ZooModel:
    """One architecture: how to build it (small or full size) and the inputs it is called with."""

    name: str
    family: str  # "cnn", "vit" or "nlp": what the tests compare (top-1 for classifiers)
    build: Callable[[bool], Any]  # full_size -> torch.nn.Module in eval mode
    inputs: Callable[[bool], dict[str, np.ndarray]]  # full_size -> named example inputs
    output_names: tuple[str, ...] = ("logits",)


def import_torchvision() -> Any:
    """Import torchvision's models beside the CPU torch wheel.

    PyPI's torchvision wheel registers fake kernels for its C++ operators (`torchvision::nms`,
    `torchvision::qnms`) at import, and fails where its extension does not load against this
    torch; building models never calls them, so declaring their schemas first is enough."""
    import torch

    if not _KEEP_ALIVE and not _torchvision_extension_loads():
        library = torch.library.Library("torchvision", "DEF")
        for schema in _TORCHVISION_SCHEMAS:
            library.define(schema)
        _KEEP_ALIVE.append(library)  # the schemas live as long as the library object
    import torchvision.models

    return torchvision.models


def _torchvision_extension_loads() -> bool:
    import glob
    import importlib.util
    import os

    import torch

    spec = importlib.util.find_spec("torchvision")
    if spec is None or spec.origin is None:
        return True  # not installed: let the import say so
    for path in glob.glob(os.path.join(os.path.dirname(spec.origin), "_C*")):
        try:
            torch.ops.load_library(path)
        except OSError:
            return False
    return True


_KEEP_ALIVE: list[Any] = []
_TORCHVISION_SCHEMAS = (
    "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
)


def _seeded(build: Callable[[bool], Any]) -> Callable[[bool], Any]:
    """Build with a fixed seed, in eval mode, so a model's weights are the same every run."""

    def seeded_build(full_size: bool) -> Any:
        import torch

        torch.manual_seed(0)
        model = build(full_size)
        model.eval()
        _randomise_norm_statistics(model)
        return model

    return seeded_build


def _randomise_norm_statistics(model: Any) -> None:
    """Give batch norms non-trivial running statistics, as trained weights have (fresh ones are
    the identity, which would hide a wrong folding of the normalisation)."""
    import torch

    generator = torch.Generator().manual_seed(1)
    for module in model.modules():
        if isinstance(module, torch.nn.modules.batchnorm._BatchNorm) and module.track_running_stats:
            with torch.no_grad():
                size = module.running_mean.shape
                module.running_mean.copy_(torch.randn(size, generator=generator) * 0.1)
                module.running_var.copy_(torch.rand(size, generator=generator) * 0.5 + 0.75)


def _image(size_small: int, size_full: int = 224) -> Callable[[bool], dict[str, np.ndarray]]:
    def inputs(full_size: bool) -> dict[str, np.ndarray]:
        side = size_full if full_size else size_small
        rng = np.random.default_rng(0)
        return {"pixel_values": rng.standard_normal((1, 3, side, side)).astype(np.float32)}

    return inputs


def _tokens(vocab: int, seq_small: int, seq_full: int = 128) -> Callable[[bool], dict]:
    """Two sentences of random token ids, the second padded (its attention mask ends in 0s)."""

    def inputs(full_size: bool) -> dict[str, np.ndarray]:
        seq = seq_full if full_size else seq_small
        rng = np.random.default_rng(0)
        attention = np.ones((2, seq), np.int64)
        attention[1, seq - seq // 3 :] = 0  # the second sentence is padded
        return {
            "input_ids": rng.integers(0, vocab, (2, seq), dtype=np.int64),
            "attention_mask": attention,
        }

    return inputs


def _tv(name: str, **small: Any) -> Callable[[bool], Any]:
    def build(full_size: bool) -> Any:
        models = import_torchvision()
        return getattr(models, name)(**({} if full_size else small))

    return build


def _tv_resnet(full_size: bool) -> Any:
    models = import_torchvision()
    if full_size:
        return models.resnet50()
    return models.resnet.ResNet(models.resnet.Bottleneck, [1, 1, 1, 1], num_classes=10)


def _tv_densenet(full_size: bool) -> Any:
    models = import_torchvision()
    if full_size:
        return models.densenet121()
    return models.DenseNet(
        growth_rate=8, block_config=(2, 2), num_init_features=16, bn_size=2, num_classes=10
    )


def _tv_googlenet(full_size: bool) -> Any:
    models = import_torchvision()
    return models.googlenet(
        aux_logits=False, init_weights=True, num_classes=1000 if full_size else 10
    )


def _timm(name: str, **small: Any) -> Callable[[bool], Any]:
    def build(full_size: bool) -> Any:
        import_torchvision()  # timm imports torchvision
        import timm

        kwargs = {} if full_size else small
        return timm.create_model(name, pretrained=False, **kwargs)

    return build


def _timm_efficientnet(full_size: bool) -> Any:
    if full_size:
        return _timm("efficientnet_b0")(True)
    import_torchvision()
    from timm.models import efficientnet  # the variant's generator takes the multipliers

    return efficientnet._gen_efficientnet(
        "efficientnet_b0",
        channel_multiplier=0.25,
        depth_multiplier=0.25,
        pretrained=False,
        num_classes=10,
    )


def _hf(kind: str) -> Callable[[bool], Any]:
    def build(full_size: bool) -> Any:
        import_torchvision()  # transformers imports torchvision when it is installed
        import transformers

        config_cls, model_cls, small = _HF_MODELS[kind]
        config = getattr(transformers, config_cls)(**({} if full_size else small))
        model = getattr(transformers, model_cls)(config)
        return _LogitsOnly(model)

    return build


def _logits_only_class() -> type:
    import torch

    class LogitsOnly(torch.nn.Module):
        """The model's first output (logits or last hidden state), so exports have one output."""

        def __init__(self, model: Any) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:  # _tokens' inputs
            out = self.model(input_ids, attention_mask=attention_mask)
            return out[0] if isinstance(out, tuple) else next(iter(out.values()))

    return LogitsOnly


def _LogitsOnly(model: Any) -> Any:  # noqa: N802 - builds the module class lazily (torch)
    return _logits_only_class()(model)


_HF_SMALL = dict(
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=64,
    vocab_size=100,
    max_position_embeddings=64,
)
_HF_MODELS = {
    "bert": ("BertConfig", "BertForSequenceClassification", _HF_SMALL),
    "distilbert": ("DistilBertConfig", "DistilBertForSequenceClassification",
                   dict(dim=32, n_layers=2, n_heads=2, hidden_dim=64, vocab_size=100,
                        max_position_embeddings=64)),
    "gpt2": ("GPT2Config", "GPT2LMHeadModel",
             dict(n_embd=32, n_layer=2, n_head=2, vocab_size=100, n_positions=64,
                  use_cache=False)),
}  # fmt: skip

ZOO: tuple[ZooModel, ...] = (
    ZooModel("resnet", "cnn", _seeded(_tv_resnet), _image(32)),
    ZooModel("densenet", "cnn", _seeded(_tv_densenet), _image(32)),
    ZooModel("mobilenet_v3", "cnn",
             _seeded(_tv("mobilenet_v3_large", width_mult=0.25, num_classes=10)), _image(32)),
    ZooModel("efficientnet", "cnn",
             _seeded(_timm_efficientnet), _image(32)),
    ZooModel("regnet", "cnn",
             _seeded(_tv("regnet_y_400mf", num_classes=10)), _image(32)),
    ZooModel("shufflenet", "cnn",
             _seeded(_tv("shufflenet_v2_x0_5", num_classes=10)), _image(32)),
    ZooModel("squeezenet", "cnn", _seeded(_tv("squeezenet1_1", num_classes=10)), _image(48)),
    ZooModel("googlenet", "cnn", _seeded(_tv_googlenet), _image(32)),
    ZooModel("convnext", "cnn",
             _seeded(_timm("convnext_atto", num_classes=10, depths=(1, 1, 1, 1),
                           dims=(16, 32, 48, 64))), _image(32)),
    ZooModel("vit", "vit",
             _seeded(_timm("vit_tiny_patch16_224", num_classes=10, img_size=32, patch_size=8,
                           depth=2, embed_dim=32, num_heads=2)), _image(32)),
    ZooModel("swin", "vit",
             _seeded(_timm("swin_tiny_patch4_window7_224", num_classes=10, img_size=56,
                           depths=(1, 1), num_heads=(2, 4), embed_dim=16, window_size=7)),
             _image(56)),
    ZooModel("mobilevit", "vit",
             _seeded(_timm("mobilevit_xxs", num_classes=10)), _image(64, 256)),
    ZooModel("bert", "nlp", _seeded(_hf("bert")), _tokens(100, 16)),  # no token_type_ids
    ZooModel("distilbert", "nlp", _seeded(_hf("distilbert")), _tokens(100, 16)),
    ZooModel("gpt2", "nlp", _seeded(_hf("gpt2")), _tokens(100, 16)),
)  # fmt: skip

BY_NAME = {model.name: model for model in ZOO}


def export(model: ZooModel, exporter: str, full_size: bool = False, dynamic: bool = False) -> bytes:
    """The model exported to ONNX by `exporter` ("torchscript" or "dynamo"), as bytes; with
    `dynamic`, its inputs' batch (and a token input's sequence) axes are named dynamic
    dimensions, `batch` and `seq` (docs/dynamic_shapes.md)."""
    import torch

    if exporter not in EXPORTERS:
        raise ValueError(f"unknown exporter {exporter!r}; choose one of {EXPORTERS}")
    module = model.build(full_size)
    named = model.inputs(full_size)
    if dynamic:  # torch.export fixes an axis its example gives as 1: trace a batch of 2
        named = {name: np.concatenate([value, value]) for name, value in named.items()}
    args = tuple(torch.from_numpy(value) for value in named.values())
    buffer = io.BytesIO()
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        if exporter == "dynamo":
            program = torch.onnx.export(
                module,
                args,
                input_names=list(named),
                output_names=list(model.output_names),
                dynamo=True,
                verbose=False,
                dynamic_shapes=_dynamic_shapes(named, model.family) if dynamic else None,
            )
            program.optimize()
            return program.model_proto.SerializeToString()
        torch.onnx.export(
            module,
            args,
            buffer,
            input_names=list(named),
            output_names=list(model.output_names),
            dynamo=False,
            opset_version=17,
            dynamic_axes=_dynamic_axes(named, model.family) if dynamic else None,
        )
    return buffer.getvalue()


def _dynamic_axes(named: dict[str, np.ndarray], family: str) -> dict[str, dict[int, str]]:
    """The TorchScript exporter's dynamic axes: batch, and seq for a language model's tokens."""
    axes = {0: "batch", 1: "seq"} if family == "nlp" else {0: "batch"}
    return {name: axes for name in named}


def _dynamic_shapes(named: dict[str, np.ndarray], family: str) -> tuple[dict[int, Any], ...]:
    """The dynamo exporter's dynamic shapes, by position: the same axes as `_dynamic_axes`,
    one Dim per name."""
    import torch

    dims = {"batch": torch.export.Dim("batch", max=64), "seq": torch.export.Dim("seq", max=512)}
    return tuple(
        {axis: dims[label] for axis, label in axes.items()}
        for axes in _dynamic_axes(named, family).values()
    )
