"""Look-alikes of shipped edge models, built in code from their public architecture descriptions (papers and READMEs,
never the shipped files): a DBNet-style text detector (PP-OCR's det model: MobileNetV3-Large, DB-FPN, DB head), a
voice-activity model (Silero-VAD-like: input, state and sample-rate inputs, a branch per rate), a BlazeFace-like face
detector (the BlazeFace paper's front model). Random weights, seeded by `corpus.builders.build`.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


def _cbr(i: int, o: int, k: int = 3, s: int = 1, g: int = 1, act: bool = True) -> nn.Sequential:
    layers: list[nn.Module] = [nn.Conv2d(i, o, k, s, k // 2, groups=g, bias=False), nn.BatchNorm2d(o)]
    return nn.Sequential(*layers, nn.ReLU()) if act else nn.Sequential(*layers)


class DBNet(nn.Module):
    """A DBNet-style text detector: torchvision's MobileNetV3-Large features at strides 4, 8, 16, 32, a DB-FPN (1x1
    laterals to 96 channels, a top-down path of nearest x2 upsampling, 3x3 convs to 24, nearest x8 / x4 / x2 to
    stride 4, concat to 96), and two DB heads (probability, threshold): a 3x3 conv 96 -> 24 at stride 4, two 2x2
    stride-2 ConvTransposes back to the input's size, sigmoid. Exported at dynamic H x W."""

    TAPS = (3, 6, 12, 16)  # the feature blocks ending strides 4, 8, 16, 32 (24, 40, 112, 960 channels)

    def __init__(self, ch: int = 96) -> None:
        super().__init__()
        import torchvision

        self.features = torchvision.models.mobilenet_v3_large(weights=None).features
        self.lateral = nn.ModuleList(nn.Conv2d(c, ch, 1, bias=False) for c in (24, 40, 112, 960))
        self.smooth = nn.ModuleList(nn.Conv2d(ch, ch // 4, 3, padding=1, bias=False) for _ in range(4))
        self.heads = nn.ModuleList(nn.Sequential(
            _cbr(ch, ch // 4), nn.ConvTranspose2d(ch // 4, ch // 4, 2, 2), nn.BatchNorm2d(ch // 4), nn.ReLU(),
            nn.ConvTranspose2d(ch // 4, 1, 2, 2), nn.Sigmoid()) for _ in range(2))

    def forward(self, input: torch.Tensor):  # type: ignore[no-untyped-def]
        taps, x = [], input
        for i, f in enumerate(self.features):
            x = f(x)
            if i in self.TAPS:
                taps.append(x)
        lat = [conv(t) for conv, t in zip(self.lateral, taps)]
        for i in (2, 1, 0):  # top-down: each level plus its coarser neighbour upsampled
            lat[i] = lat[i] + F.interpolate(lat[i + 1], scale_factor=2.0, mode="nearest")
        outs = [F.interpolate(s(t), scale_factor=float(2 ** i), mode="nearest") if i else s(t)
                for i, (s, t) in enumerate(zip(self.smooth, lat))]
        fuse = torch.cat(outs[::-1], 1)
        return torch.cat([h(fuse) for h in self.heads], 1)


class _VadBranch(nn.Module):
    """One sample rate's network: an STFT as a Conv1d of a fixed basis (real and imaginary rows), magnitude, four
    Conv1d + ReLU down to one frame, an LSTM cell carrying the state, a 1x1 Conv1d and sigmoid."""

    def __init__(self, n_fft: int, hop: int, hidden: int = 128) -> None:
        super().__init__()
        self.pad, self.bins = n_fft // 4, n_fft // 2 + 1
        self.stft = nn.Conv1d(1, 2 * self.bins, n_fft, hop, bias=False)
        self.encoder = nn.Sequential(
            nn.Conv1d(self.bins, hidden, 3, 1, 1), nn.ReLU(), nn.Conv1d(hidden, 64, 3, 2, 1), nn.ReLU(),
            nn.Conv1d(64, 64, 3, 2, 1), nn.ReLU(), nn.Conv1d(64, hidden, 3, 1, 1), nn.ReLU())
        self.cell = nn.LSTMCell(hidden, hidden)
        self.decoder = nn.Conv1d(hidden, 1, 1)

    def forward(self, input: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = F.pad(input.unsqueeze(1), (0, self.pad), mode="reflect")
        spec = self.stft(x)
        mag = torch.sqrt(spec[:, :self.bins] ** 2 + spec[:, self.bins:] ** 2)
        y = self.encoder(mag)[:, :, -1]
        h, c = self.cell(y, (state[0], state[1]))
        out = torch.sigmoid(self.decoder(torch.relu(h).unsqueeze(-1))).squeeze(-1)
        return out, torch.stack([h, c])


class VadLike(nn.Module):
    """A Silero-VAD-like model: `input` [1, samples], `state` [2, 1, 128], `sr` a scalar; `if sr == 16000` picks the
    16 kHz branch (n_fft 256, hop 128) or the 8 kHz one (128, 64). Scripted for the TorchScript exporter (an ONNX
    If), `torch.cond` through torch.export (dynamo: an ONNX If whose branches are functions)."""

    def __init__(self) -> None:
        super().__init__()
        self.b16, self.b8 = _VadBranch(256, 128), _VadBranch(128, 64)

    def forward(self, input: torch.Tensor, state: torch.Tensor,
                sr: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if torch.jit.is_scripting():
            if bool(sr == 16000):
                return self.b16(input, state)
            return self.b8(input, state)
        return self._cond(input, state, sr)

    @torch.jit.unused
    def _cond(self, input: torch.Tensor, state: torch.Tensor, sr: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.cond(sr == 16000, self.b16, self.b8, (input, state))  # type: ignore[no-any-return]


class _BlazeBlock(nn.Module):
    """BlazeFace's block: a 5x5 depthwise conv (stride 2 padded as TFLite's SAME) and a 1x1 conv, the skip path
    max-pooled at stride 2 and zero-padded to the wider channel count."""

    def __init__(self, i: int, o: int, s: int = 1) -> None:
        super().__init__()
        self.s, self.extra = s, o - i
        self.dw = nn.Conv2d(i, i, 5, s, 0 if s == 2 else 2, groups=i)
        self.pw = nn.Conv2d(i, o, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.pad(x, (1, 2, 1, 2)) if self.s == 2 else x
        skip = F.max_pool2d(x, 2, 2) if self.s == 2 else x
        if self.extra:
            skip = F.pad(skip, (0, 0, 0, 0, 0, self.extra))
        return torch.relu(self.pw(self.dw(h)) + skip)


class BlazeFaceLike(nn.Module):
    """A BlazeFace-like front-camera face detector at 128 x 128: a 5x5 stride-2 stem, single BlazeBlocks to 88
    channels at 16 x 16 and 96 at 8 x 8, heads of 2 + 6 anchors a cell (896 anchors: a score, a box and 6
    keypoints each), decoded against the anchors in the graph."""

    def __init__(self) -> None:
        super().__init__()
        chans = [(24, 24, 1), (24, 28, 1), (28, 32, 2), (32, 36, 1), (36, 42, 1), (42, 48, 2), (48, 56, 1),
                 (56, 64, 1), (64, 72, 1), (72, 80, 1), (80, 88, 1)]
        self.stem = nn.Sequential(nn.Conv2d(3, 24, 5, 2, 2), nn.ReLU())
        self.b16 = nn.Sequential(*(_BlazeBlock(*c) for c in chans))
        self.b8 = nn.Sequential(_BlazeBlock(88, 96, 2), *(_BlazeBlock(96, 96) for _ in range(4)))
        self.cls16, self.cls8 = nn.Conv2d(88, 2, 1), nn.Conv2d(96, 6, 1)
        self.reg16, self.reg8 = nn.Conv2d(88, 32, 1), nn.Conv2d(96, 96, 1)
        g16 = (torch.arange(16).float() + 0.5) / 16
        g8 = (torch.arange(8).float() + 0.5) / 8
        a16 = torch.stack(torch.meshgrid(g16, g16, indexing="xy"), -1).reshape(-1, 1, 2).expand(-1, 2, 2)
        a8 = torch.stack(torch.meshgrid(g8, g8, indexing="xy"), -1).reshape(-1, 1, 2).expand(-1, 6, 2)
        self.register_buffer("anchors", torch.cat([a16.reshape(-1, 2), a8.reshape(-1, 2)]))  # [896, 2] centres

    def forward(self, input: torch.Tensor):  # type: ignore[no-untyped-def]
        x16 = self.b16(self.stem(input))
        x8 = self.b8(x16)
        score = torch.cat([self.cls16(x16).permute(0, 2, 3, 1).reshape(1, -1, 1),
                           self.cls8(x8).permute(0, 2, 3, 1).reshape(1, -1, 1)], 1)
        raw = torch.cat([self.reg16(x16).permute(0, 2, 3, 1).reshape(1, -1, 16),
                         self.reg8(x8).permute(0, 2, 3, 1).reshape(1, -1, 16)], 1)
        pts = raw.reshape(1, -1, 8, 2) / 128.0 + self.anchors.unsqueeze(1)  # centre, size and keypoints per anchor
        boxes = torch.cat([pts[:, :, :1], raw.reshape(1, -1, 8, 2)[:, :, 1:2] / 128.0, pts[:, :, 2:]], 2)
        return boxes.reshape(1, -1, 16), torch.sigmoid(score.clamp(-100.0, 100.0))


def vad_inputs(samples: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The VAD's example inputs: a chunk of audio, a zero state, the 16 kHz rate."""
    return torch.randn(1, samples), torch.zeros(2, 1, 128), torch.tensor(16000, dtype=torch.int64)


def model(name: str) -> nn.Module:
    """The look-alike named by a corpus entry (`torch` source)."""
    builders = {"dbnet-det": DBNet, "blazeface": BlazeFaceLike, "vad-if": VadLike}
    if name not in builders:
        raise ValueError(f"unknown look-alike {name!r}")
    return builders[name]()
