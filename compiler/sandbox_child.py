"""Child side of `compiler.sandbox`: `python -m compiler.sandbox_child module:function in.json out.json`.

Writes `{"ok": true, "result": ...}` or `{"ok": false, "error_type": ..., "message": ...}`.
A crash writes nothing; the parent reads the exit signal instead.
"""

from __future__ import annotations

import faulthandler
import gc
import importlib
import json
import sys
import traceback

from compiler.heap import ANALYSIS_THRESHOLDS


def main(argv: list[str]) -> int:
    target, inp, out = argv
    faulthandler.enable()  # a native crash prints the Python stack to stderr for the logs
    # A child lives for one call that builds large acyclic structures (compiler.heap says why).
    gc.set_threshold(*ANALYSIS_THRESHOLDS)
    module_name, _, func_name = target.partition(":")
    try:
        payload = json.loads(open(inp).read())
        func = getattr(importlib.import_module(module_name), func_name)
        result = {"ok": True, "result": func(payload)}
    except MemoryError:
        result = {"ok": False, "error_type": "MemoryError", "message": "out of memory"}
    except Exception as e:  # every failure goes back to the parent as data
        traceback.print_exc()
        result = {"ok": False, "error_type": type(e).__name__, "message": str(e)}
    with open(out, "w") as fh:
        json.dump(result, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
