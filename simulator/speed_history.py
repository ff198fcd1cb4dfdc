"""The speed probes this machine has taken (compiler.speed_probe), kept beside its host calibration, so that a
prediction made without a profile stands for the CPU's typical speed rather than the one moment its rates were timed.

A shared VM's core runs at different speeds for minutes at a time at the same load, and calibration's figures carry
the speed of the minutes they were timed in: on an Emerald Rapids (2026-12-06) two calibrations 45 minutes apart,
probes 162-178 and 193-195 GFLOP/s, fitted a median efficiency 1.19x apart and predicted the same 13 real models
within ±10% of thread CPU time 5/13 and 0/13 (README, "The corpus on an Emerald Rapids, session 51"). Every profile
already takes a probe before and after its rounds; kept here, the probes of many runs over hours say what speed a
prediction should assume: their median (`typical`), held against the speed the rates stand for
(HardwareProfile.speed_gflops) by simulator.measured.typical_factor.

One JSON line per probe figure ({"t": unix time, "gflops", "machine", "source"}), appended in one write (O_APPEND:
workers appending at once do not interleave lines); a probe of another machine (a VM moved to another CPU, which
makes the calibration stale too) is not read.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Iterable
from pathlib import Path

KEEP = 200  # the newest probes read: ~100 profiles, hours to days of a busy service
# Only the file's tail is read, and a file grown past MAX_BYTES is cut back to its tail: a service that profiles
# for months reads and keeps kilobytes, not a line per profile it ever ran (~150 bytes a line, KEEP of them ~30 KB).
TAIL_BYTES = 64 * 1024
MAX_BYTES = 1024 * 1024
# Fewer probes than this say no more than the calibration's own two: no typical speed yet (predictions as timed).
MIN_PROBES = 6


def history_path(calibration_path: str | os.PathLike[str]) -> Path:
    """`<name>.speeds.jsonl` beside the calibration cache `<name>.json` (its LiteRT half shares it: one CPU)."""
    p = Path(calibration_path)
    return p.with_name(f"{p.stem}.speeds.jsonl")


def record(calibration_path: str | os.PathLike[str] | None, gflops: Iterable[float], source: str) -> None:
    """Append probe figures (GFLOP/s; zeros and non-figures skipped) to the history beside `calibration_path`. A
    history that cannot be written (read-only folder, full disk) loses these probes, never the caller's work."""
    if calibration_path is None:
        return
    from simulator.calibration_timing import machine

    now, cpu = round(time.time(), 1), machine()
    lines = "".join(json.dumps({"t": now, "gflops": round(float(g), 1), "machine": cpu, "source": source}) + "\n"
                    for g in gflops if isinstance(g, (int, float)) and g > 0)
    if not lines:
        return
    p = history_path(calibration_path)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(p, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, lines.encode())
            size = os.fstat(fd).st_size
        finally:
            os.close(fd)
        if size > MAX_BYTES:
            tmp = p.with_name(f"{p.name}.{os.getpid()}.tmp")
            tmp.write_text(_tail(p))
            tmp.replace(p)  # atomic; a probe another process appends meanwhile may be lost, never the file
    except OSError:
        pass


def _tail(p: Path) -> str:
    """The file's last TAIL_BYTES, from its first whole line on."""
    with p.open("rb") as f:
        f.seek(0, os.SEEK_END)
        start = max(0, f.tell() - TAIL_BYTES)
        f.seek(start)
        data = f.read()
    if start > 0:
        data = data[data.find(b"\n") + 1:]
    return data.decode(errors="replace")


def probes(calibration_path: str | os.PathLike[str] | None, keep: int = KEEP) -> list[float]:
    """The newest `keep` probe figures of this machine in the history beside `calibration_path` (oldest first);
    unreadable lines are skipped."""
    if calibration_path is None:
        return []
    try:
        text = _tail(history_path(calibration_path))
    except OSError:
        return []
    from simulator.calibration_timing import machine

    cpu, out = machine(), []
    for line in text.splitlines():
        try:
            d = json.loads(line)
            if d.get("machine") == cpu and float(d["gflops"]) > 0:
                out.append(float(d["gflops"]))
        except (ValueError, TypeError, KeyError, AttributeError):
            continue
    return out[-keep:]


def typical(calibration_path: str | os.PathLike[str] | None) -> float | None:
    """This machine's typical speed (GFLOP/s): the median of its newest probes, or None with fewer than
    MIN_PROBES."""
    got = probes(calibration_path)
    return statistics.median(got) if len(got) >= MIN_PROBES else None
