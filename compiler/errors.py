"""User-facing errors of the compiler stage. Every message is a sentence an uploader can act on.

`ModelFormatError` (the file is not a readable model) lives in `compiler.graph`, next to the IR.
"""

from __future__ import annotations


class ModelRunError(RuntimeError):
    """The runtime could not load or run a well-formed model (unsupported op, bad input, ...)."""


class InputSpecError(ValueError):
    """An input override (shape or value) does not fit the model's declared inputs."""


class SandboxError(RuntimeError):
    """The child process running an untrusted model died: crash, out of memory, or time limit."""
