"""The corpus's architectures, as data (like Netron's test/models.json and timm's parametrized model tests).

Each entry names a builder (`corpus.builders`), the input shape people deploy it at, and the exports made
of it (`corpus.exporters`). Every entry is exported through both torch ONNX exporters (`dynamo`, `ts`);
`extra` adds dynamic H/W and batch, an older opset, `.pt2` and `.tflite` (fp32, fp16 weights, int8) for a
slice. Weights are random (`pretrained=False` / `weights=None`): nothing is downloaded.

`wrap` says which output the export keeps: `logits` (the model's tensor), `seg` (a segmenter's
`out`), `det` (a whole detector, post-processing included: boxes, scores, labels of one image),
`det-head` (an SSD / RetinaNet backbone and head, raw class logits and box deltas, as people export
them to run their own post-processing), `rpn` (a Faster R-CNN backbone and RPN head).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

FAMILIES = ("mobile-cnn", "cnn", "vit", "hybrid", "mlp", "detector", "segmenter", "sequence")
BOTH = ("dynamo", "ts")  # every entry: torch.onnx.export with dynamo=True and with the TorchScript exporter


@dataclass(frozen=True)
class Entry:
    id: str  # "<source>/<name>[-variant]"
    family: str
    source: str  # torchvision | timm | transformers (corpus.hf_models) | torch (torch.nn modules in corpus.builders)
    name: str  # the source's model name
    shape: tuple[int, ...]  # the input people feed it (NCHW image; tokens or frames for sequences)
    extra: tuple[str, ...] = ()  # exports beyond BOTH
    wrap: str = "logits"
    kwargs: dict[str, Any] = field(default_factory=dict)
    reparam: bool = False  # timm's reparameterize_model (MobileOne, RepViT, FastViT deploy form)
    plan_defaults: bool = False  # dynamic exports analysed at the input plan's defaults, not at `shape`

    @property
    def exports(self) -> tuple[str, ...]:
        out = BOTH + self.extra
        if any(e.startswith("tflite") for e in out) and "pt2" not in out:
            out += ("pt2",)  # .tflite is converted from the .pt2
        return out


def _tv(name: str, family: str, size: int = 224, extra: tuple[str, ...] = (), **kw: Any) -> Entry:
    return Entry(f"tv/{name}", family, "torchvision", name, (1, 3, size, size), extra, **kw)


def _timm(name: str, family: str, size: int = 224, extra: tuple[str, ...] = (), **kw: Any) -> Entry:
    return Entry(f"timm/{name}", family, "timm", name, (1, 3, size, size), extra, **kw)


DYN = ("dynamo-dyn",)  # dynamic batch, H and W through the dynamo exporter
TS_DYN = ("ts-dyn",)  # the same through the TorchScript exporter (dynamic_axes)
OP12 = ("ts-op12",)  # TorchScript exporter at opset 12
PT2 = ("pt2",)
TFL = ("tflite",)
TFL_Q = ("tflite", "tflite-fp16", "tflite-int8")
CML = ("coreml", "coreml-nn")  # coremltools from a traced module: ML Program (fp16) and NeuralNetwork (fp32)
CML_ALL = CML + ("coreml-ep", "coreml-w8")  # + from torch.export, + int8 weights

ENTRIES: tuple[Entry, ...] = (
    # mobile CNNs
    _tv("mobilenet_v2", "mobile-cnn", extra=DYN + OP12 + TFL_Q + CML_ALL),
    _tv("mobilenet_v3_large", "mobile-cnn", extra=TS_DYN + TFL + CML),
    _tv("mobilenet_v3_small", "mobile-cnn", extra=OP12 + TFL_Q + CML_ALL),
    _tv("efficientnet_b0", "mobile-cnn", extra=DYN + TFL + ("tflite-int8",) + CML),
    _tv("efficientnet_v2_s", "mobile-cnn", 384),
    _tv("mnasnet1_0", "mobile-cnn", extra=OP12),
    _tv("shufflenet_v2_x1_0", "mobile-cnn", extra=OP12 + TFL + CML),
    _tv("squeezenet1_1", "mobile-cnn", extra=DYN + OP12),
    _tv("regnet_y_400mf", "mobile-cnn", extra=PT2),
    _timm("regnetx_002", "mobile-cnn"),
    _timm("ghostnet_100", "mobile-cnn", extra=TS_DYN),
    _timm("ghostnetv2_100", "mobile-cnn"),
    _timm("mobileone_s0", "mobile-cnn", extra=TFL + CML, reparam=True),
    _timm("repvit_m1", "mobile-cnn", reparam=True),
    _timm("fastvit_t8", "mobile-cnn", 256, reparam=True, extra=CML),
    _timm("efficientformer_l1", "mobile-cnn", extra=CML),
    _timm("efficientformerv2_s0", "mobile-cnn"),
    _timm("mobilevit_xs", "mobile-cnn", 256, extra=PT2 + CML),
    _timm("mobilevitv2_050", "mobile-cnn", 256),
    _timm("edgenext_x_small", "mobile-cnn", 256),
    _timm("levit_128s", "mobile-cnn"),
    _timm("tinynet_a", "mobile-cnn", 192),
    _timm("lcnet_050", "mobile-cnn", extra=OP12 + TFL_Q + CML),
    _timm("hardcorenas_a", "mobile-cnn"),
    _timm("mobilenetv4_conv_small", "mobile-cnn", extra=DYN + TFL + CML),
    _timm("mobilenetv4_hybrid_medium", "mobile-cnn", 256),
    _timm("efficientnet_lite0", "mobile-cnn", extra=OP12),
    _timm("mixnet_s", "mobile-cnn"),
    _timm("rexnet_100", "mobile-cnn"),
    _timm("semnasnet_075", "mobile-cnn"),
    _timm("repghostnet_100", "mobile-cnn", reparam=True),
    _timm("starnet_s1", "mobile-cnn"),
    _timm("mobilenetv1_100", "mobile-cnn", extra=TS_DYN),
    _timm("hgnetv2_b0", "mobile-cnn"),
    # classic CNNs
    _tv("resnet18", "cnn", extra=TS_DYN + OP12 + TFL_Q + CML_ALL),
    _tv("resnet50", "cnn", extra=DYN + OP12 + CML),
    _tv("resnext50_32x4d", "cnn"),
    _tv("densenet121", "cnn", extra=PT2 + CML),
    _tv("vgg16", "cnn", extra=OP12 + CML),
    _tv("convnext_tiny", "cnn", extra=DYN + PT2 + CML),
    _tv("inception_v3", "cnn", 299),
    _tv("googlenet", "cnn"),
    _tv("alexnet", "cnn"),
    _timm("convnextv2_atto", "cnn", extra=TFL),
    _timm("cspdarknet53", "cnn", 256),
    _timm("dla34", "cnn"),
    _timm("ese_vovnet19b_dw", "cnn"),
    _timm("inception_next_atto", "cnn"),
    _timm("regnety_016", "cnn"),
    # ViTs and hybrids
    _tv("vit_b_16", "vit", extra=PT2),
    _tv("swin_t", "vit"),
    _tv("maxvit_t", "hybrid"),
    _timm("vit_tiny_patch16_224", "vit", extra=PT2 + TFL_Q + CML_ALL),
    _timm("vit_small_patch16_224", "vit", extra=TS_DYN),
    _timm("deit_tiny_patch16_224", "vit", extra=CML),
    _timm("deit_small_distilled_patch16_224", "vit"),
    _timm("swin_tiny_patch4_window7_224", "vit", extra=CML),
    _timm("xcit_nano_12_p16_224", "vit"),
    _timm("cait_xxs24_224", "vit"),
    _timm("crossvit_tiny_240", "vit", 240),
    _timm("maxvit_pico_rw_256", "hybrid", 256),
    _timm("coat_lite_tiny", "hybrid"),
    _timm("pvt_v2_b0", "hybrid", extra=DYN + CML),
    _timm("efficientvit_b0", "hybrid", extra=TFL + CML),
    _timm("efficientvit_m0", "hybrid"),
    _timm("tiny_vit_5m_224", "hybrid"),
    _timm("poolformer_s12", "hybrid"),
    _timm("mixer_s16_224", "mlp"),
    _timm("resmlp_12_224", "mlp"),
    # detectors and segmenters
    _tv("ssdlite320_mobilenet_v3_large", "detector", 320, wrap="det"),
    Entry("tv/ssdlite320_mobilenet_v3_large-head", "detector", "torchvision", "ssdlite320_mobilenet_v3_large",
          (1, 3, 320, 320), PT2 + TFL, wrap="det-head"),
    Entry("tv/ssd300_vgg16-head", "detector", "torchvision", "ssd300_vgg16", (1, 3, 300, 300), wrap="det-head"),
    Entry("tv/retinanet_resnet50_fpn-head", "detector", "torchvision", "retinanet_resnet50_fpn", (1, 3, 512, 512),
          wrap="det-head"),
    _tv("fasterrcnn_mobilenet_v3_large_320_fpn", "detector", 320, wrap="det"),
    Entry("tv/fasterrcnn_mobilenet_v3_large_320_fpn-rpn", "detector", "torchvision",
          "fasterrcnn_mobilenet_v3_large_320_fpn", (1, 3, 320, 320), DYN, wrap="rpn"),
    _tv("deeplabv3_mobilenet_v3_large", "segmenter", 512, extra=DYN + PT2, wrap="seg"),
    _tv("lraspp_mobilenet_v3_large", "segmenter", 512, extra=PT2 + TFL + CML, wrap="seg"),
    _tv("fcn_resnet50", "segmenter", 320, wrap="seg"),
    # sequences (torch.nn building blocks, as keyword spotters, speech front ends and text encoders use them)
    Entry("torch/lstm-kws", "sequence", "torch", "lstm", (1, 100, 40), PT2 + CML,
          kwargs={"hidden": 128, "layers": 2, "classes": 12}),
    Entry("torch/gru-bi", "sequence", "torch", "gru", (1, 200, 80), CML, kwargs={"hidden": 256, "layers": 2}),
    Entry("torch/transformer-encoder", "sequence", "torch", "transformer", (1, 128), TS_DYN + CML,
          kwargs={"vocab": 8000, "dim": 256, "heads": 4, "layers": 4}),
    # session 37 sweep: a video classifier (3-D convs and pools: ORT runs them 4-6x slower than the host rules say)
    Entry("tv/r3d_18", "cnn", "torchvision", "r3d_18", (1, 3, 16, 112, 112)),
    # session 37 sweep: whole detectors predicted on device targets (NMS shapes depend on the data; RetinaNet's
    # NonZero twins kept by ORT under the later name)
    _tv("ssd300_vgg16", "detector", 300, wrap="det"),
    _tv("retinanet_resnet50_fpn", "detector", 512, wrap="det"),
    # session 37 sweep: shared weights read through Identity (ORT's shape fold merged the twin branches)
    Entry("torch/causal-decoder", "sequence", "torch", "causal-decoder", (1, 64),
          kwargs={"vocab": 4000, "dim": 256, "heads": 4, "layers": 3}),
    # session 37 sweep: attention through torch.einsum (ONNX Einsum was priced as a data move)
    Entry("torch/einsum-attention", "sequence", "torch", "einsum-attention", (1, 128, 256),
          kwargs={"dim": 256, "heads": 8, "layers": 4}),
    # control flow: a scripted step loop (ONNX Loop via the TorchScript exporter) and torch.cond (ONNX If via dynamo)
    Entry("torch/greedy-decoder", "sequence", "torch", "greedy-decoder", (1, 24, 256),
          kwargs={"vocab": 1000, "dim": 256}),
    Entry("torch/gated-cnn", "cnn", "torch", "gated", (1, 3, 224, 224)),
    # session 38 sweep: torchvision's quantized model (quantize=True, weights=None), a QDQ file through the
    # TorchScript exporter with a Cast inside each pair (torch.export cannot trace it: its dynamo export fails)
    _tv("quantized_mobilenet_v2", "mobile-cnn", extra=TS_DYN, kwargs={"quantize": True}),
    # session 38 sweep: torch.cond + while_loop (ONNX If + Loop through dynamo; debug records on body nodes)
    Entry("torch/cond-while", "cnn", "torch", "cond-while", (1, 3, 128, 128), PT2),
    # session 38 sweep: int64 index ops (ScatterElements add, GatherElements, TopK, ScatterND) of a point-cloud MLP
    Entry("torch/index-ops", "mlp", "torch", "index-ops", (1, 2048, 3), OP12 + PT2),
    # session 39 sweep: a decoder step with a stacked KV cache as inputs [layers, batch, heads, past, head_dim] beside
    # ids [batch, 1] (the input plan took the batch for a sequence: 128), analysed at the plan's defaults
    Entry("torch/kv-decoder", "sequence", "torch", "kv-decoder", (1, 1), TS_DYN + DYN + PT2,
          kwargs={"vocab": 2000, "dim": 128, "heads": 4, "layers": 2, "past": 63}, plan_defaults=True),
    # session 39 sweep: a Whisper-like audio encoder; in its int8-static .tflite the attention BATCH_MATMULs of two
    # activations run TFLite's own int8 kernel (predicted at XNNPACK's: 29.6 ms against 71.3)
    # session 39 sweep: a GNN at dynamic node and edge counts (edge_index rows gather node features: the input plan
    # took the node count for a batch of 1 and drew indices from [0, 100)), analysed at the plan's defaults
    Entry("torch/gnn", "mlp", "torch", "gnn", (500, 32), TS_DYN + DYN, kwargs={"dim": 64, "layers": 3, "edges": 4000},
          plan_defaults=True),
    Entry("torch/audio-encoder", "sequence", "torch", "audio-encoder", (1, 80, 1000), TFL,
          kwargs={"dim": 256, "heads": 4, "layers": 3}),
    # session 40 sweep: a keyword spotter computing its spectrogram in the graph (ONNX STFT, a task of no work before:
    # the model 0.31 ms predicted against 3.96 measured) and a spatial transformer (GridSample; affine_grid's short
    # broadcast spans and its ReduceSum over blocks of 2: 1.36 against 5.93). Their TorchScript exports fail in torch.
    Entry("torch/mel-kws", "sequence", "torch", "mel-kws", (1, 16000), PT2),
    Entry("torch/stn", "cnn", "torch", "stn", (1, 3, 192, 192), PT2),
    # session 41 sweep: a selfie-segmentation-like encoder-decoder whose last layer is a 2x2 stride-2 ConvTranspose to
    # one channel (LiteRT's XNNPACK Subconv2D pays a cost per output pixel: its .tflite -45% before), and a height-48
    # text recognizer at dynamic width (the permute before its batch-first LSTM was sized into its exports).
    Entry("torch/selfie-seg", "segmenter", "torch", "selfie-seg", (1, 3, 256, 256), TFL),
    Entry("torch/crnn48", "sequence", "torch", "crnn48", (1, 3, 48, 320), TS_DYN),
    # session 42: look-alikes of shipped edge models from their public descriptions (corpus.lookalikes): a DBNet-style
    # text detector at dynamic H x W (nearest-upsampling FPN, ConvTranspose heads; analysed at 736 x 736), a
    # voice-activity model whose `if sr == 16000` is an ONNX If (scripted TorchScript; torch.cond through dynamo), a
    # BlazeFace-like detector (5x5 depthwise blocks, channel padding, anchor decoding) with its fp16-weight .tflite.
    Entry("torch/dbnet-det", "detector", "torch", "dbnet-det", (1, 3, 736, 736), TS_DYN + TFL),
    Entry("torch/vad-if", "sequence", "torch", "vad-if", (1, 576)),
    Entry("torch/blazeface", "detector", "torch", "blazeface", (1, 3, 128, 128), TFL + ("tflite-fp16",)),
)

BY_ID: dict[str, Entry] = {e.id: e for e in ENTRIES}

# The fast slice tests/corpus runs (entry id, exporter): small models across families and exporters.
TEST_SLICE: tuple[tuple[str, str], ...] = (
    ("tv/mobilenet_v3_small", "ts"),
    ("tv/mobilenet_v3_small", "dynamo"),
    ("tv/squeezenet1_1", "dynamo-dyn"),
    ("timm/lcnet_050", "ts-op12"),
    ("timm/efficientformerv2_s0", "ts"),
    ("timm/deit_tiny_patch16_224", "dynamo"),
    ("torch/lstm-kws", "ts"),
    ("torch/transformer-encoder", "dynamo"),
    ("timm/mobilenetv1_100", "ts-dyn"),
    ("tv/mobilenet_v3_small", "pt2"),
    ("tv/mobilenet_v3_small", "coreml"),
    ("tv/mobilenet_v3_small", "coreml-nn"),
    ("tv/mobilenet_v3_small", "coreml-w8"),
)
SLOW_SLICE: tuple[tuple[str, str], ...] = (
    ("tv/mobilenet_v3_small", "tflite"),
    ("tv/mobilenet_v3_small", "tflite-fp16"),
    ("tv/mobilenet_v3_small", "tflite-int8"),
)


def select(only: list[str] | None = None, families: list[str] | None = None,
           exporters: list[str] | None = None, slice_name: str | None = None) -> list[tuple[Entry, str]]:
    """(entry, exporter) pairs of the corpus, filtered; `only` takes entry ids (or id prefixes ending in '/')."""
    if slice_name is not None:
        pairs = {"test": TEST_SLICE, "slow": SLOW_SLICE}.get(slice_name)
        if pairs is None:
            raise ValueError(f"unknown slice {slice_name!r}; known: test, slow")
        chosen = [(BY_ID[i], x) for i, x in pairs]
    else:
        chosen = [(e, x) for e in ENTRIES for x in e.exports]
    if only:
        chosen = [(e, x) for e, x in chosen if any(e.id == o or (o.endswith("/") and e.id.startswith(o)) for o in only)]
    if families:
        chosen = [(e, x) for e, x in chosen if e.family in families]
    if exporters:
        chosen = [(e, x) for e, x in chosen if x in exporters]
    return chosen
