"""Run untrusted-model work in a child process, so a crash never takes the caller down.

`run(target, payload)` starts `python -m compiler.sandbox_child <target> <in.json> <out.json>` with
`subprocess` (Celery prefork workers are daemonic and may not fork multiprocessing children).
`python` picks another interpreter (a converter's own venv, e.g. litert-torch's): the child finds
`compiler` through PYTHONPATH, so modules it runs import only what that venv has (numpy, stdlib).
Limits: RLIMIT_AS (address space; ORT + numpy map ~1 GB before any model, so keep caps above
that), RLIMIT_CPU (timeout + margin) and a wall-clock timeout that kills the child's process
group. The child gets a minimal environment: no credentials from the worker leak into code that
parses untrusted files. The child dies with the thread that started it (PR_SET_PDEATHSIG), so a
killed worker leaves no orphan; it runs in a folder under `scratch()` (the job's own temp folder when
the worker set one with `scratch_in`) with TMPDIR pointing there, so whatever it writes is removed with
the job. Results come back as JSON files; any failure becomes a `SandboxError`
(crash, memory, time) or the child's own user-facing error (`ModelRunError`, `InputSpecError`,
`ModelFormatError`), re-raised here with the child's message.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from compiler.errors import InputSpecError, ModelRunError, SandboxError
from compiler.graph import ModelFormatError
from compiler.timing_lock import LOCK_ENV, lock_path

DEFAULT_MEMORY_LIMIT = 8 * 1024**3
IN_CHILD = "EDGESCOPE_SANDBOX_CHILD"  # set in a sandbox child's environment
_ROOT = str(Path(__file__).resolve().parent.parent)  # directory holding the `compiler` package
_PASSED_ERRORS: dict[str, type[Exception]] = {
    "ModelRunError": ModelRunError, "InputSpecError": InputSpecError, "ModelFormatError": ModelFormatError,
}
_ENV_KEEP = ("PATH", "LANG", "LC_ALL", "HOME", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
_PR_SET_PDEATHSIG = 1  # linux/prctl.h
# The process's own symbols (libc's prctl among them): find_library("c") would run /sbin/ldconfig at every import.
_LIBC = ctypes.CDLL(None, use_errno=True)
# Where sandbox folders go in this thread (a job's temp folder); None = the system temp folder.
_SCRATCH: ContextVar[Path | None] = ContextVar("edgescope_sandbox_scratch", default=None)


@contextlib.contextmanager
def scratch_in(folder: Path) -> Iterator[Path]:
    """Create sandbox folders (and the children's TMPDIR) under `folder` in this thread while in the block."""
    token = _SCRATCH.set(folder)
    try:
        yield folder
    finally:
        _SCRATCH.reset(token)


def scratch() -> str | None:
    folder = _SCRATCH.get()
    return str(folder) if folder is not None else None


def die_with_parent(parent_pid: int) -> None:
    """In a freshly forked child: be killed when the parent thread dies (and exit if it already has)."""
    _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent_pid:
        os._exit(1)


@dataclass(frozen=True, slots=True)
class Limits:
    timeout_s: float = 600.0
    memory_limit_bytes: int | None = DEFAULT_MEMORY_LIMIT
    what: str = "the model run"  # for messages: "profiling", "compiling for ort-cpu/host"


def _child_env(tmp: str) -> dict[str, str]:
    env = {k: os.environ[k] for k in _ENV_KEEP if k in os.environ}
    env["PYTHONPATH"] = _ROOT
    env[IN_CHILD] = "1"  # work inside a child needs no child of its own (compiler.optimize.onnx_verify)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["TMPDIR"] = tmp  # the child's temporary files live and die with its folder
    env[LOCK_ENV] = str(lock_path())  # the host's timing lock, not one in the child's own TMPDIR
    return env


def _limit(memory: int | None, cpu_s: int) -> Any:
    parent = os.getpid()

    def apply() -> None:  # runs in the child between fork and exec
        die_with_parent(parent)
        if memory:
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 5))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core dumps of user models on disk
    return apply


def run(target: str, payload: dict[str, Any], limits: Limits = Limits(), python: str | None = None) -> Any:
    """Call `target` ("package.module:function", taking the payload dict, returning JSON-able data)
    in a child process (of `python`, default this interpreter) and return its result. The child
    runs in a temporary directory: paths in the payload must be absolute."""
    with tempfile.TemporaryDirectory(prefix="edgescope-sandbox-", dir=scratch()) as tmp:
        inp, out = Path(tmp, "in.json"), Path(tmp, "out.json")
        inp.write_text(json.dumps(payload))
        # CPU seconds across all threads; generous so the wall clock is the limit users see.
        cpu = int(limits.timeout_s * max(1, os.cpu_count() or 1)) + 10
        proc = subprocess.Popen(
            [python or sys.executable, "-m", "compiler.sandbox_child", target, str(inp), str(out)],
            cwd=tmp, env=_child_env(tmp), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, start_new_session=True,
            preexec_fn=_limit(limits.memory_limit_bytes, cpu),
        )
        try:
            _, err = proc.communicate(timeout=limits.timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise SandboxError(f"{limits.what} exceeded the {limits.timeout_s:g} s limit") from None
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        result = _read(out)
        if result is not None and result.get("ok"):
            return result["result"]
        if result is not None:
            kind, message = result.get("error_type", ""), result.get("message", "")
            if kind in _PASSED_ERRORS:
                raise _PASSED_ERRORS[kind](message)
            if kind == "MemoryError" or "bad_alloc" in message or "bad allocation" in message:
                raise SandboxError(_oom(limits))
            raise SandboxError(f"{limits.what} failed: {kind}: {message}")
        raise SandboxError(_died(proc.returncode, err.decode("utf-8", "replace"), limits))


def _read(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _oom(limits: Limits) -> str:
    cap = f" ({limits.memory_limit_bytes / 2**30:.1f} GiB cap)" if limits.memory_limit_bytes else ""
    return f"{limits.what} ran out of memory{cap}"


def _died(code: int, stderr: str, limits: Limits) -> str:
    if code < 0:
        sig = -code
        if sig == signal.SIGXCPU or (sig == signal.SIGKILL and "MemoryError" not in stderr):
            # SIGKILL without our timeout: the CPU hard limit or the kernel's OOM killer.
            return f"{limits.what} was killed by the system (signal {sig}: {signal.Signals(sig).name}); " \
                   "it ran out of CPU time or memory"
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        # the runtime of whatever child this was (ONNX Runtime, LiteRT, coremltools, torch): named by the stage
        return f"the runtime crashed while running the model ({limits.what}; signal {sig}: {name})"
    tail = stderr.strip().splitlines()[-1:] or ["no output"]
    if "MemoryError" in stderr or "bad_alloc" in stderr:
        return _oom(limits)
    return f"{limits.what} stopped with exit code {code}: {tail[0][:300]}"
