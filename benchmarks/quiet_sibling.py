"""Keep the other vCPUs quiet while a benchmark lock is held: a team tool for timing on a small shared VM.

While LOCK is held (flock, e.g. `flock /work/notes/measure.lock <timing>`), every process outside the holder's
process tree that used more than BUSY of a CPU over the last tick is stopped (SIGSTOP), and all of them are
continued (SIGCONT) when the lock is released, after MAX_HOLD_S at the latest, or when this tool exits. Why: on a
2-vCPU VM whose vCPUs behave as one core's two hyperthreads, vector work on one halves a timing's speed on the other
(README, "One timing at a time on a machine"); compiler.timing_lock keeps Edgescope's own timings apart, this keeps
a team's builds and test runs away from them. It stops other people's processes: run it only on a machine the team
shares for benchmarks, never beside a service. Wall-clock timeouts of what it stops may trip.

    python benchmarks/quiet_sibling.py /work/notes/measure.lock --log /work/notes/quietd.log &
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, os.fspath(Path(__file__).resolve().parents[1]))
from compiler.timing_lock import lock_path as timing_lock_path  # noqa: E402  (a light module)

TICK_S = 0.25
BUSY = 0.3  # share of one CPU over a tick
MAX_HOLD_S = 20 * 60  # never starve the others
PROTECT = ("process_api", "postgres", "redis", "beam", "epmd", "sshd", "systemd", "dbus", "cron", "quiet_sibling")
CLK = os.sysconf("SC_CLK_TCK")


def lock_holders(lock: Path) -> list[int]:
    """The pids holding (not waiting for) an flock on `lock` (/proc/locks)."""
    try:
        ino = os.stat(lock).st_ino
    except OSError:
        return []
    out = []
    for line in Path("/proc/locks").read_text().splitlines():
        f = line.split()
        try:
            if f[1] == "FLOCK" and "->" not in line and int(f[5].split(":")[2]) == ino:
                out.append(int(f[4]))
        except (IndexError, ValueError):
            continue
    return out


def lock_holder(lock: Path) -> int | None:
    """The pid holding an flock on `lock`, or None."""
    return next(iter(lock_holders(lock)), None)


def processes() -> dict[int, tuple[int, int, str]]:
    """{pid: (parent pid, CPU ticks so far, command line)}."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            stat = Path(f"/proc/{d}/stat").read_text()
            rest = stat[stat.rindex(")") + 2:].split()
            cmd = Path(f"/proc/{d}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            out[int(d)] = (int(rest[1]), int(rest[11]) + int(rest[12]), cmd)
        except (OSError, ValueError, IndexError):
            continue
    return out


def tree(root: int, procs: dict[int, tuple[int, int, str]]) -> set[int]:
    kids: dict[int, list[int]] = {}
    for pid, (parent, _, _) in procs.items():
        kids.setdefault(parent, []).append(pid)
    seen, todo = set(), [root]
    while todo:
        pid = todo.pop()
        if pid not in seen:
            seen.add(pid)
            todo += kids.get(pid, [])
    return seen


class Quieter:
    def __init__(self, lock: Path, log: Path | None) -> None:
        self.lock, self.stopped, self.me = lock, set[int](), os.getpid()
        self.log = open(log, "a", buffering=1) if log else sys.stderr

    def say(self, text: str) -> None:
        self.log.write(f"{time.strftime('%H:%M:%S')} {text}\n")

    def release(self, why: str) -> None:
        for pid in self.stopped:
            try:
                os.kill(pid, signal.SIGCONT)
            except OSError:
                pass
        if self.stopped:
            self.say(f"CONT {len(self.stopped)} ({why})")
        self.stopped.clear()

    def run(self) -> None:
        last: dict[int, int] = {}
        since: float | None = None
        while True:
            procs = processes()
            holder = lock_holder(self.lock)
            if holder is None or holder not in procs:
                since = None
                self.release("released")
            elif time.monotonic() - (since := since or time.monotonic()) > MAX_HOLD_S:
                self.release(f"held over {MAX_HOLD_S} s")
            else:
                # Edgescope's own timing lock (compiler.timing_lock): a process stopped while holding it would stall
                # every profile of the holder's tree until MAX_HOLD_S (seen: a re-prediction's one profile round).
                timing = set(lock_holders(timing_lock_path()))
                for pid in timing & self.stopped:
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGCONT)
                    self.stopped.discard(pid)
                    self.say(f"CONT {pid}: holds the timing lock")
                spared = tree(holder, procs) | timing
                for pid, (_, ticks, cmd) in procs.items():
                    busy = (ticks - last.get(pid, ticks)) / CLK / TICK_S
                    if (busy < BUSY or pid in spared or pid in self.stopped or pid <= 1 or pid == self.me
                            or not cmd.strip() or any(k in cmd for k in PROTECT)):
                        continue
                    try:
                        os.kill(pid, signal.SIGSTOP)
                    except OSError:
                        continue
                    self.stopped.add(pid)
                    self.say(f"STOP {pid} busy {busy:.2f} (holder {holder}): {cmd[:120]}")
            last = {pid: v[1] for pid, v in procs.items()}
            time.sleep(TICK_S)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("lock", type=Path, help="the benchmark lock file (flock) timings hold")
    ap.add_argument("--log", type=Path, default=None)
    a = ap.parse_args()
    a.lock.touch()  # holders may not have made it yet
    q = Quieter(a.lock, a.log)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: sys.exit(0))
    try:
        q.run()
    finally:
        q.release("exit")
    return 0


if __name__ == "__main__":
    sys.exit(main())
