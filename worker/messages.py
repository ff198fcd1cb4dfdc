"""What a user may read of an error: no internal paths, no C++ source lines, no Python stacks.

Runtimes put their build tree in messages (`/onnxruntime_src/onnxruntime/core/graph/model.cc:180
onnxruntime::Model::Model(...) Unsupported model IR version`) and ours name temporary files. The job's
error keeps the sentence and drops the rest; the full text goes to the worker's log.
"""

from __future__ import annotations

import re

MAX_CHARS = 600
# `path/file.cc:180 ns::Class::method(args) const` (a C++ source location and the function it is in).
_CPP_LOCATION = re.compile(
    r"(?:[\w./+-]*/)?[\w+-]+\.(?:cc|cpp|cxx|c|h|hpp|cu|mm)(?::\d+)+"
    r"(?:\s+[\w:~<>,*& ]+?\((?:[^()]|\([^()]*\))*\)(?:\s*const)?)?")
_PY_FRAME = re.compile(r'File "[^"]*", line \d+(?:, in [\w<>.]+)?')
# Absolute paths of two or more components: /tmp/edgescope-sandbox-x/blob.onnx -> blob.onnx
_ABS_PATH = re.compile(r"(?<![\w.:/])(?:/[\w.@+=-]+){2,}/?")


def public_message(text: str) -> str:
    """`text` without source locations, stack frames or absolute paths, one paragraph, at most MAX_CHARS."""
    text = text.split("Traceback (most recent call last)", 1)[0]
    text = _CPP_LOCATION.sub("", text)
    text = _PY_FRAME.sub("", text)
    text = _ABS_PATH.sub(lambda m: m.group(0).rstrip("/").rsplit("/", 1)[-1], text)
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(r"\s+([:,;])(?=\s|$)", r"\1", text)  # "failed :" left where a location was cut
    if len(text) > MAX_CHARS:
        head = text[:MAX_CHARS - 1]  # at a word boundary: a cut word reads as a typo
        text = (head[: head.rfind(" ")] if " " in head else head).rstrip(" .,;:(") + " …"
    return text
