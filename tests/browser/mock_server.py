"""Moved to testkit/mock_server.py (the browser tests and benchmarks/ui.py both use it); this path still runs it:
`python tests/browser/mock_server.py --port 8765 --dist web/dist`."""

import runpy
import sys
from pathlib import Path

if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    runpy.run_module("testkit.mock_server", run_name="__main__")
