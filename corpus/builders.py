"""Build a corpus entry (`corpus.models.Entry`) as an eval-mode torch module with random weights and
an example input of the entry's shape. torchvision with `weights=None`, timm with `pretrained=False`,
transformers from a config (`corpus.hf_models`): nothing is downloaded. Seeded, so a rebuild gives the same weights.

Every module is wrapped so its forward takes one positional `input` and returns a tensor or a tuple
of tensors, the form both ONNX exporters and `torch.export` take.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import corpus  # noqa: F401  (torchvision importable beside CPU torch; before torchvision and timm)
from corpus.models import Entry

import torch
from torch import nn


@dataclass
class Built:
    module: nn.Module
    args: tuple[torch.Tensor, ...]
    input_names: list[str]
    output_names: list[str]
    dynamic_dims: dict[str, list[int]]  # input -> dims an export may make dynamic
    script: bool = False  # the TorchScript exporter gets torch.jit.script(module): Python loops become ONNX Loop


class _Logits(nn.Module):
    def __init__(self, m: nn.Module) -> None:
        super().__init__()
        self.m = m

    def forward(self, input: torch.Tensor):  # type: ignore[no-untyped-def]
        return self.m(input)


class _Seg(_Logits):
    def forward(self, input: torch.Tensor):  # type: ignore[no-untyped-def]
        return self.m(input)["out"]


class _Detector(_Logits):
    """The whole torchvision detector (resize, backbone, head, decoding, NMS) on a batch of one image."""

    def forward(self, input: torch.Tensor):  # type: ignore[no-untyped-def]
        d = self.m(list(input))[0]
        return d["boxes"], d["scores"], d["labels"]


class _DetHead(_Logits):
    """SSD / RetinaNet backbone + head: raw class logits and box deltas per anchor."""

    def forward(self, input: torch.Tensor):  # type: ignore[no-untyped-def]
        feats = self.m.backbone(input)
        feats = list(feats.values()) if isinstance(feats, dict) else feats
        out = self.m.head(feats)
        return out["cls_logits"], out["bbox_regression"]


class _Rpn(_Logits):
    """Faster R-CNN backbone (FPN) + RPN head: objectness and box deltas per level."""

    def forward(self, input: torch.Tensor):  # type: ignore[no-untyped-def]
        feats = list(self.m.backbone(input).values())
        objectness, deltas = self.m.rpn.head(feats)
        return (*objectness, *deltas)


_WRAPS: dict[str, type[_Logits]] = {"logits": _Logits, "seg": _Seg, "det": _Detector, "det-head": _DetHead,
                                    "rpn": _Rpn}


class _Recurrent(nn.Module):
    """A keyword spotter / speech encoder: stacked LSTM or GRU over feature frames, then a classifier."""

    def __init__(self, cell: str, features: int, hidden: int, layers: int, classes: int = 0) -> None:
        super().__init__()
        rnn = nn.LSTM if cell == "lstm" else nn.GRU
        self.rnn = rnn(features, hidden, layers, batch_first=True, bidirectional=cell == "gru")
        width = hidden * (2 if cell == "gru" else 1)
        self.head = nn.Linear(width, classes or width)

    def forward(self, input: torch.Tensor):  # type: ignore[no-untyped-def]
        out, _ = self.rnn(input)
        return self.head(out)


class _TextEncoder(nn.Module):
    """A small BERT-style text encoder: token and position embeddings, nn.TransformerEncoder, mean pool."""

    def __init__(self, vocab: int, dim: int, heads: int, layers: int, max_len: int = 512) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(max_len, dim)
        layer = nn.TransformerEncoderLayer(dim, heads, dim * 4, dropout=0.0, batch_first=True, activation="gelu")
        self.enc = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)

    def forward(self, input: torch.Tensor):  # type: ignore[no-untyped-def]
        positions = torch.arange(input.shape[1], device=input.device).unsqueeze(0)
        return self.norm(self.enc(self.tok(input) + self.pos(positions))).mean(1)


class _CausalDecoder(nn.Module):
    """A GPT-style decoder as people write it with torch.nn: nn.TransformerDecoder under a causal mask, its
    cross-attention over the token embeddings. Fresh layers are deep copies, so the TorchScript exporter writes
    their equal weights once and reads them through Identity (as it does for tied or shared layers)."""

    def __init__(self, vocab: int, dim: int, heads: int, layers: int) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        layer = nn.TransformerDecoderLayer(dim, heads, dim * 4, dropout=0.0, batch_first=True)
        self.dec = nn.TransformerDecoder(layer, layers)
        self.out = nn.Linear(dim, vocab)

    def forward(self, input: torch.Tensor):  # type: ignore[no-untyped-def]
        x = self.tok(input)
        # generate_square_subsequent_mask with tgt_is_causal: a mask built from torch.triu fails torch.export
        # (the decoder's causal-mask detection guards on its data).
        mask = nn.Transformer.generate_square_subsequent_mask(input.shape[1])
        return self.out(self.dec(x, x, tgt_mask=mask, tgt_is_causal=True))


class _EinsumAttention(nn.Module):
    """Self-attention written with torch.einsum, as research code and many ports write it: both exporters
    keep ONNX Einsum ops (two per layer)."""

    def __init__(self, dim: int, heads: int, layers: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.ModuleList([nn.Linear(dim, 3 * dim) for _ in range(layers)])
        self.o = nn.ModuleList([nn.Linear(dim, dim) for _ in range(layers)])
        self.n = nn.ModuleList([nn.LayerNorm(dim) for _ in range(layers)])

    def forward(self, input: torch.Tensor):  # type: ignore[no-untyped-def]
        x = input
        for qkv, o, n in zip(self.qkv, self.o, self.n):
            b, t, d = x.shape
            q, k, v = qkv(n(x)).reshape(b, t, 3, self.heads, d // self.heads).unbind(2)
            a = torch.einsum("bqhd,bkhd->bhqk", q, k).mul(q.shape[-1] ** -0.5).softmax(-1)
            x = x + o(torch.einsum("bhqk,bkhd->bqhd", a, v).reshape(b, t, d))
        return x


class _GreedyDecoder(nn.Module):
    """A recurrent greedy decoder (as in OCR / speech decoders): each step reads one encoder frame and feeds
    back its own argmax token. Scripted for the TorchScript exporter, the step loop over the frames is an
    ONNX Loop whose trip count comes from the input's length."""

    def __init__(self, vocab: int, dim: int) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        # A GRU step written out: nn.GRUCell's input check (`dim() not in (1, 2)`) does not export when scripted.
        self.wx = nn.Linear(dim, 3 * dim)
        self.wh = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, vocab)

    def forward(self, input: torch.Tensor):  # type: ignore[no-untyped-def]
        h = input[:, 0] * 0
        tok = self.out(h).argmax(-1)
        out = self.out(h).unsqueeze(1)[:, :0]
        for t in range(input.size(1)):
            xr, xz, xn = self.wx(input[:, t] + self.emb(tok)).chunk(3, -1)
            hr, hz, hn = self.wh(h).chunk(3, -1)
            r, z = torch.sigmoid(xr + hr), torch.sigmoid(xz + hz)
            h = (1 - z) * torch.tanh(xn + r * hn) + z * h
            logits = self.out(h)
            tok = logits.argmax(-1)
            out = torch.cat([out, logits.unsqueeze(1)], 1)
        return out


class _Gated(nn.Module):
    """A data-dependent branch (torch.cond: an ONNX If through the dynamo exporter), as early-exit and
    mixture models use: a heavy or a light conv block depending on the input's mean."""

    def __init__(self, c: int = 32) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, c, 3, 2, 1)
        self.heavy = nn.Sequential(nn.Conv2d(c, c, 3, 1, 1), nn.ReLU(), nn.Conv2d(c, c, 3, 1, 1), nn.ReLU())
        self.light = nn.Sequential(nn.Conv2d(c, c, 1), nn.ReLU())
        self.head = nn.Linear(c, 10)

    def forward(self, input: torch.Tensor):  # type: ignore[no-untyped-def]
        x = self.stem(input)
        x = torch.cond(x.mean() > 0, lambda t: self.heavy(t), lambda t: self.light(t), (x,))
        return self.head(x.mean((2, 3)))


class _CondWhile(nn.Module):
    """torch.cond and a while_loop through torch.export (the dynamo exporter: ONNX If and Loop): a data-dependent
    branch, then a block refined a fixed number of times by a loop-carried counter (its trip count is the data's to
    ONNX: the bound is read in the body). Both bodies read weights of the outer model; dynamo writes its debug
    records (stack traces) on the body nodes too."""

    def __init__(self, c: int = 32, steps: int = 4) -> None:
        super().__init__()
        self.steps = steps
        self.stem = nn.Conv2d(3, c, 3, 2, 1)
        self.a, self.b, self.step = nn.Conv2d(c, c, 1), nn.Conv2d(c, c, 3, 1, 1), nn.Conv2d(c, c, 3, 1, 1)
        self.head = nn.Linear(c, 10)

    def forward(self, input: torch.Tensor):  # type: ignore[no-untyped-def]
        from torch._higher_order_ops.while_loop import while_loop

        x = self.stem(input)
        x = torch.cond(x.mean() > 0, lambda t: torch.relu(self.a(t)), lambda t: torch.relu(self.b(t)), (x,))
        _, x = while_loop(lambda i, t: i < self.steps, lambda i, t: (i + 1, torch.relu(self.step(t)) + t),
                          (torch.zeros((), dtype=torch.int64), x))
        return self.head(x.mean((2, 3)))


class _IndexOps(nn.Module):
    """int64 index ops as point-cloud and voxel models use them: a point MLP, features summed into a 32x32 grid
    (ScatterElements with reduction add), read back per point (GatherElements), the top-k cells (TopK + Gather),
    an occupancy mask written with index_put (ScatterND)."""

    def __init__(self, c: int = 64, side: int = 32, k: int = 64) -> None:
        super().__init__()
        self.side, self.k = side, k
        self.mlp = nn.Sequential(nn.Linear(3, c), nn.ReLU(), nn.Linear(c, c))
        self.head = nn.Linear(c, 10)

    def forward(self, input: torch.Tensor):  # type: ignore[no-untyped-def]
        f = self.mlp(input)  # N, P, C; points in [0, 1)
        s = self.side
        cell = (input[..., 0] * s).long().clamp(0, s - 1) * s + (input[..., 1] * s).long().clamp(0, s - 1)
        grid = torch.zeros(f.shape[0], s * s, f.shape[2]).scatter_add(1, cell.unsqueeze(-1).expand_as(f), f)
        back = torch.gather(grid, 1, cell.unsqueeze(-1).expand_as(f))
        top = torch.topk(back.norm(dim=-1), self.k, dim=1).indices
        sel = torch.gather(back, 1, top.unsqueeze(-1).expand(-1, -1, f.shape[2]))
        occupied = torch.zeros(f.shape[0], s * s).index_put(
            (torch.zeros_like(cell[0]), cell[0]), torch.ones_like(cell[0], dtype=torch.float32))
        return self.head(sel.mean(1)) + occupied.sum(1, keepdim=True)


class _AudioEncoder(nn.Module):
    """A Whisper-like encoder: two Conv1d (the second stride 2) over log-mel frames [batch, mels, frames], sinusoidal
    positions, pre-LayerNorm attention blocks (nn.MultiheadAttention) and a final LayerNorm."""

    def __init__(self, mels: int, dim: int, heads: int, layers: int) -> None:
        super().__init__()
        self.c1 = nn.Conv1d(mels, dim, 3, padding=1)
        self.c2 = nn.Conv1d(dim, dim, 3, stride=2, padding=1)
        self.blocks = nn.ModuleList(nn.TransformerEncoderLayer(dim, heads, 4 * dim, 0.0, "gelu", batch_first=True,
                                                               norm_first=True) for _ in range(layers))
        self.ln = nn.LayerNorm(dim)
        self.dim = dim

    def forward(self, input: torch.Tensor):  # type: ignore[no-untyped-def]
        x = nn.functional.gelu(self.c2(nn.functional.gelu(self.c1(input)))).transpose(1, 2)
        pos = torch.arange(x.shape[1], dtype=torch.float32).unsqueeze(1)
        inv = torch.exp(torch.arange(0, self.dim, 2, dtype=torch.float32) * (-9.2103 / self.dim))  # 10000^(-2i/d)
        x = x + torch.cat([torch.sin(pos * inv), torch.cos(pos * inv)], 1)
        for b in self.blocks:
            x = b(x)
        return self.ln(x)


class _KVDecoder(nn.Module):
    """One step of a GPT-2-like decoder with its KV cache as inputs: ids [batch, 1], past keys and values stacked
    [layers, batch, heads, past, head_dim]; returns the logits (tied embedding) and the caches with this step's."""

    def __init__(self, vocab: int, dim: int, heads: int, layers: int) -> None:
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, dim), nn.Embedding(1024, dim)
        self.heads, self.layers = heads, layers
        self.ln = nn.ModuleList(nn.LayerNorm(dim) for _ in range(2 * layers + 1))
        self.qkv = nn.ModuleList(nn.Linear(dim, 3 * dim) for _ in range(layers))
        self.proj = nn.ModuleList(nn.Linear(dim, dim) for _ in range(layers))
        self.mlp = nn.ModuleList(nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(approximate="tanh"),
                                               nn.Linear(4 * dim, dim)) for _ in range(layers))

    def forward(self, input_ids: torch.Tensor, past_key: torch.Tensor,  # type: ignore[no-untyped-def]
                past_value: torch.Tensor):
        b, t = input_ids.shape
        past = past_key.shape[3]
        x = self.wte(input_ids) + self.wpe(torch.arange(past, past + t).unsqueeze(0))
        keys, values = [], []
        for i in range(self.layers):
            q, k, v = self.qkv[i](self.ln[2 * i](x)).view(b, t, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
            keys.append(torch.cat([past_key[i], k], 2))
            values.append(torch.cat([past_value[i], v], 2))
            a = nn.functional.scaled_dot_product_attention(q, keys[-1], values[-1])
            x = x + self.proj[i](a.transpose(1, 2).reshape(b, t, -1))
            x = x + self.mlp[i](self.ln[2 * i + 1](x))
        return self.ln[-1](x) @ self.wte.weight.t(), torch.stack(keys), torch.stack(values)


def _kv_built(e: Entry) -> Built:
    """The KV decoder with its three inputs (the only multi-input entry): batch and past length dynamic."""
    k = e.kwargs
    m = _KVDecoder(k["vocab"], k["dim"], k["heads"], k["layers"]).eval()
    ids = torch.randint(0, k["vocab"], e.shape, dtype=torch.int64)
    cache = torch.randn(k["layers"], e.shape[0], k["heads"], k["past"], k["dim"] // k["heads"])
    return Built(m, (ids, cache, cache.clone()), ["input_ids", "past_key", "past_value"],
                 ["logits", "present_key", "present_value"],
                 {"input_ids": [0], "past_key": [1, 3], "past_value": [1, 3]})


class _GraphNet(nn.Module):
    """Message passing over an edge list: node features x [nodes, F], edge_index [2, edges] (source, target rows);
    each layer gathers both ends, and adds the messages into the targets (index_put accumulate: ONNX ScatterND add)."""

    def __init__(self, features: int, dim: int, layers: int) -> None:
        super().__init__()
        self.inp = nn.Linear(features, dim)
        self.msg = nn.ModuleList(nn.Linear(2 * dim, dim) for _ in range(layers))
        self.upd = nn.ModuleList(nn.Linear(2 * dim, dim) for _ in range(layers))

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor):  # type: ignore[no-untyped-def]
        h = torch.relu(self.inp(x))
        src, dst = edge_index[0], edge_index[1]
        for m, u in zip(self.msg, self.upd):
            msg = torch.relu(m(torch.cat([h[src], h[dst]], 1)))
            agg = torch.zeros_like(h).index_put((dst,), msg, accumulate=True)
            h = torch.relu(u(torch.cat([h, agg], 1)))
        return h.mean(0, keepdim=True)


def _gnn_built(e: Entry) -> Built:
    """The graph net with its two inputs: node and edge counts dynamic."""
    k = e.kwargs
    nodes, features = e.shape
    edges = torch.randint(0, nodes, (2, k["edges"]), dtype=torch.int64)
    return Built(_GraphNet(features, k["dim"], k["layers"]).eval(), (torch.randn(nodes, features), edges),
                 ["x", "edge_index"], ["output"], {"x": [0], "edge_index": [1]})


class _MelKWS(nn.Module):
    """A keyword spotter with its front end in the graph: STFT (n_fft 400, hop 160: ONNX STFT through the dynamo
    exporter; the TorchScript exporter cannot export a complex STFT), power, a mel matrix, log, a small CNN."""

    def __init__(self, mels: int = 40, classes: int = 12) -> None:
        super().__init__()
        self.register_buffer("window", torch.hann_window(400))
        self.register_buffer("fb", torch.rand(mels, 201))
        self.cnn = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
                                 nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
                                 nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                 nn.Linear(64, classes))

    def forward(self, input: torch.Tensor):  # type: ignore[no-untyped-def]
        spec = torch.stft(input, 400, 160, window=self.window, center=False, return_complex=True)
        mel = torch.log(self.fb @ (spec.real ** 2 + spec.imag ** 2) + 1e-6)
        return self.cnn(mel.unsqueeze(1))


class _SpatialTransformer(nn.Module):
    """A spatial transformer: a localisation CNN regresses an affine theta, affine_grid + grid_sample warp the image
    (ONNX GridSample; dynamo decomposes affine_grid into a broadcast Mul and a ReduceSum over blocks of 2; the
    TorchScript exporter needs opset 20 for it), then a classifier."""

    def __init__(self) -> None:
        super().__init__()
        self.loc = nn.Sequential(nn.Conv2d(3, 16, 7, 2, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 5, 2, 2),
                                 nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(512, 6))
        self.cls = nn.Sequential(nn.Conv2d(3, 32, 3, 2, 1), nn.ReLU(), nn.Conv2d(32, 64, 3, 2, 1), nn.ReLU(),
                                 nn.Conv2d(64, 128, 3, 2, 1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                 nn.Linear(128, 10))

    def forward(self, input: torch.Tensor):  # type: ignore[no-untyped-def]
        theta = self.loc(input).view(-1, 2, 3) + torch.tensor([[1.0, 0, 0], [0, 1.0, 0]])
        grid = nn.functional.affine_grid(theta, list(input.shape), align_corners=False)
        return self.cls(nn.functional.grid_sample(input, grid, align_corners=False))


def _cbr(i: int, o: int, k: int = 3, s: int | tuple[int, int] = 1, g: int = 1, act: type[nn.Module] = nn.ReLU
         ) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(i, o, k, s, k // 2, groups=g, bias=False), nn.BatchNorm2d(o), act())


class _SelfieSeg(nn.Module):
    """A selfie-segmentation-like encoder-decoder: stride-2 depthwise blocks with hard-swish, bilinear upsampling with
    skip adds, a 2x2 stride-2 ConvTranspose to one channel (LiteRT runs it as XNNPACK's Subconv2D deconvolution,
    which pays a cost per output pixel: predicted at the conv rate, 0.03 ms against 1.1-2.3 profiled)."""

    def __init__(self) -> None:
        super().__init__()
        hs = nn.Hardswish
        self.stem = _cbr(3, 16, 3, 2, act=hs)
        self.e1 = nn.Sequential(_cbr(16, 16, 3, 2, 16, hs), _cbr(16, 16, 1))
        self.e2 = nn.Sequential(_cbr(16, 72, 1), _cbr(72, 72, 3, 2, 72, hs), _cbr(72, 24, 1))
        self.e3 = nn.Sequential(_cbr(24, 96, 1), _cbr(96, 96, 5, 2, 96, hs), _cbr(96, 48, 1))
        self.d3, self.d2, self.d1 = _cbr(48, 24, 1), _cbr(24, 16, 1), _cbr(16, 16, 1)
        self.up = nn.ConvTranspose2d(16, 1, 2, 2)

    def forward(self, input: torch.Tensor):  # type: ignore[no-untyped-def]
        s = self.stem(input)
        a = self.e1(s)
        b = self.e2(a)
        x = self.e3(b)
        for d, skip in ((self.d3, b), (self.d2, a), (self.d1, s)):
            x = nn.functional.interpolate(d(x), scale_factor=2.0, mode="bilinear", align_corners=False) + skip
        return torch.sigmoid(self.up(x))


class _Crnn48(nn.Module):
    """A height-48 text recognizer (PP-OCR-like): a depthwise conv stack down to height 1, a 2-layer bidirectional
    LSTM (batch first) and a Linear over 6625 classes, at dynamic width. Its TorchScript export reads the LSTM input
    through a Transpose of its own beside the permute, whose output only a Shape reads: that permute's output was
    sized as an initializer of the exports (int8-dynamic +1.8% at width 320, +3.7% at 640)."""

    def __init__(self, classes: int = 6625) -> None:
        super().__init__()
        hs = nn.Hardswish
        self.convs = nn.Sequential(_cbr(3, 32, 3, 2, act=hs), _cbr(32, 32, 3, 1, 32, hs), _cbr(32, 64, 1),
                                   _cbr(64, 64, 3, (2, 1), 64, hs), _cbr(64, 128, 1),
                                   _cbr(128, 128, 3, (2, 1), 128, hs), _cbr(128, 256, 1),
                                   _cbr(256, 256, 3, 2, 256, hs), _cbr(256, 512, 1), nn.MaxPool2d((3, 2), (3, 2)))
        self.rnn = nn.LSTM(512, 96, 2, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(192, classes)

    def forward(self, input: torch.Tensor):  # type: ignore[no-untyped-def]
        y, _ = self.rnn(self.convs(input).squeeze(2).permute(0, 2, 1))
        return self.fc(y).softmax(-1)


def _torch_model(e: Entry) -> tuple[nn.Module, torch.Tensor]:
    k = e.kwargs
    if e.name in ("lstm", "gru"):
        return _Recurrent(e.name, e.shape[-1], k["hidden"], k["layers"], k.get("classes", 0)), torch.randn(*e.shape)
    if e.name == "greedy-decoder":
        return _GreedyDecoder(k["vocab"], k["dim"]), torch.randn(*e.shape)
    if e.name == "gated":
        return _Gated(), torch.randn(*e.shape)
    if e.name == "cond-while":
        return _CondWhile(), torch.randn(*e.shape)
    if e.name == "index-ops":
        return _IndexOps(), torch.rand(*e.shape)
    if e.name == "mel-kws":
        return _MelKWS(), torch.randn(*e.shape)
    if e.name == "stn":
        return _SpatialTransformer(), torch.randn(*e.shape)
    if e.name in ("dbnet-det", "blazeface"):
        from corpus.lookalikes import model

        return model(e.name), torch.randn(*e.shape)
    if e.name in ("selfie-seg", "crnn48"):
        return (_SelfieSeg() if e.name == "selfie-seg" else _Crnn48()), torch.randn(*e.shape)
    if e.name == "audio-encoder":
        return _AudioEncoder(e.shape[1], k["dim"], k["heads"], k["layers"]), torch.randn(*e.shape)
    if e.name == "einsum-attention":
        return _EinsumAttention(k["dim"], k["heads"], k["layers"]), torch.randn(*e.shape)
    if e.name == "causal-decoder":
        m = _CausalDecoder(k["vocab"], k["dim"], k["heads"], k["layers"])
        return m, torch.randint(0, k["vocab"], e.shape, dtype=torch.int64)
    if e.name == "transformer":
        m = _TextEncoder(k["vocab"], k["dim"], k["heads"], k["layers"])
        return m, torch.randint(0, k["vocab"], e.shape, dtype=torch.int64)
    raise ValueError(f"unknown torch builder {e.name!r}")


def randomise_zero_weights(m: nn.Module, std: float = 0.02) -> int:
    """Give every floating parameter that is exactly zero at initialisation (more than one value) small random
    values; returns how many. Zero-initialised branches (timm's bn_weight_init=0 closing LeViT's residual branches,
    zero_init_last BatchNorms, zero attention-bias tables, torchvision ViT's zero head) make a branch exactly zero
    with fresh weights, and converters fold it away: litert-torch wrote LeViT-128S as 74 TFLite operators, 334 with
    these weights. Trained weights are never exactly zero; neither are these."""
    n = 0
    with torch.no_grad():
        for p in m.parameters():
            if p.is_floating_point() and p.numel() > 1 and not p.any():
                p.normal_(0.0, std)
                n += 1
    return n


def build(e: Entry) -> Built:
    torch.manual_seed(0)
    if e.name in ("kv-decoder", "gnn"):  # the entries of several inputs
        return _kv_built(e) if e.name == "kv-decoder" else _gnn_built(e)
    if e.name == "vad-if":  # input, state and sample rate; scripted for the TorchScript exporter (ONNX If)
        from corpus.lookalikes import model, vad_inputs

        return Built(model(e.name).eval(), vad_inputs(e.shape[1]), ["input", "state", "sr"], ["output", "stateN"],
                     {"input": [1]}, script=True)
    if e.source == "torchvision":
        import torchvision

        m: nn.Module = torchvision.models.get_model(e.name, weights=None, weights_backbone=None, **e.kwargs) \
            if e.wrap != "logits" else torchvision.models.get_model(e.name, weights=None, **e.kwargs)
        x = torch.randn(*e.shape)
    elif e.source == "timm":
        import timm

        m = timm.create_model(e.name, pretrained=False, **e.kwargs)
        if e.reparam:
            from timm.utils.model import reparameterize_model

            m = reparameterize_model(m.eval())
        x = torch.randn(*e.shape)
    elif e.source == "transformers":  # Hugging Face transformers, from a config in code (corpus/hf_models.py)
        from corpus.hf_models import build as build_hf

        m, x = build_hf(e.name), torch.randn(*e.shape)
    elif e.source == "torch":
        m, x = _torch_model(e)
    else:
        raise ValueError(f"unknown source {e.source!r}")
    module = _WRAPS[e.wrap](m.eval()).eval()
    with torch.no_grad():
        out = module(x)
    n_out = len(out) if isinstance(out, tuple) else 1
    names = ["output"] if n_out == 1 else [f"output_{i}" for i in range(n_out)]
    # batch and H/W of images and of video clips (N, C, T, H, W); batch and length of sequences
    dims = {4: [0, 2, 3], 5: [0, 3, 4]}.get(x.dim(), [0, 1])
    return Built(module, (x,), ["input"], names, {"input": dims}, script=e.name == "greedy-decoder")


def describe(e: Entry) -> dict[str, Any]:
    """The entry as JSON-able data (part of the cache key)."""
    return {"id": e.id, "family": e.family, "source": e.source, "name": e.name, "shape": list(e.shape),
            "wrap": e.wrap, "kwargs": e.kwargs, "reparam": e.reparam}
