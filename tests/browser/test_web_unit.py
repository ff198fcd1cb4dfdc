"""The browser's totals rule (web/src/totals.ts) and the server's (simulator/totals.py) on the same fixture.

web/tests/fixtures/totals_expected.json is written by the TypeScript implementation (`UPDATE_FIXTURES=1 npm test`);
here Python must reproduce every number exactly, and `npm test` (vitest) must pass.
"""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path


WEB = Path(__file__).resolve().parents[2] / "web"
FIXTURES = WEB / "tests" / "fixtures"


def test_python_totals_equal_typescript_totals_to_the_last_digit() -> None:
    from simulator.totals import totals

    expected = json.loads((FIXTURES / "totals_expected.json").read_text())
    assert len(expected["states"]) >= 10
    # option_table_ep.json (an EP target) has states whose overrides move ops between units
    assert sum(s.get("fixture") == "option_table_ep.json" and bool(s["state"]["overrides"])
               for s in expected["states"]) >= 5
    for s in expected["states"]:
        fx = json.loads((FIXTURES / s.get("fixture", "option_table_small.json")).read_text())
        got = totals(fx["table"], fx["per_op"], s["state"]["model_wide"], s["state"]["overrides"])
        for key, want in s["totals"].items():
            assert got[key] == want, f"{s['name']}: {key} {got[key]!r} != {want!r}"


def test_npm_unit_tests_pass() -> None:
    assert shutil.which("npm") and (WEB / "node_modules").exists(), "web/node_modules not installed: run `make web`"
    r = subprocess.run(["npm", "test", "--silent"], cwd=WEB, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
