"""The OpenAPI document (server/openapi.json, served at /api/openapi.json) against the routes the app registers:
every route and method is documented and every documented one is served, each path parameter is declared, every
operation says what it answers and every `$ref` resolves. The app is built without a database (nothing is
served): only its URL map is read."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from edgescope.config import Settings
from server.openapi import spec

METHODS = {"get", "post", "put", "patch", "delete"}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> set[tuple[str, str]]:
    from server.app import create_app

    data = tmp_path_factory.mktemp("openapi") / "data"
    app = create_app(Settings.from_env(env={}, data_dir=data, calibration_dir=data / "calibration"),
                     check_schema=False)
    routes = set()
    for rule in app.url_map.iter_rules():
        if rule.rule.startswith("/api/"):
            path = re.sub(r"<(?:[a-z]+:)?([a-z_]+)>", r"{\1}", rule.rule)
            routes |= {(path, m) for m in rule.methods - {"HEAD", "OPTIONS"}}
    return routes


def operations() -> list[tuple[str, str, dict[str, Any], dict[str, Any]]]:
    return [(path, method, item, op) for path, item in spec()["paths"].items()
            for method, op in item.items() if method in METHODS]


def test_every_route_is_documented_and_every_documented_route_is_served(served: set[tuple[str, str]]) -> None:
    documented = {(path, method.upper()) for path, method, _, _ in operations()}
    assert sorted(served - documented) == [], "served but not in server/openapi.json"
    assert sorted(documented - served) == [], "in server/openapi.json but not served"
    assert not {m for item in spec()["paths"].values() for m in item} - METHODS - {"parameters"}, "unknown keys"


def test_path_parameters_are_declared() -> None:
    wrong = []
    for path, method, item, op in operations():
        declared = {p["name"] for p in item.get("parameters", []) + op.get("parameters", []) if p["in"] == "path"}
        if declared != set(re.findall(r"{(\w+)}", path)):
            wrong.append(f"{method.upper()} {path}: declares {sorted(declared)}")
    assert not wrong


def test_every_operation_answers_and_every_reference_resolves() -> None:
    silent = [f"{m.upper()} {p}" for p, m, _, op in operations()
              if not any(code.startswith(("2", "3")) for code in op.get("responses", {}))]
    assert not silent, "operations with no success response"

    def refs(node: Any) -> list[str]:
        if isinstance(node, dict):
            return ([node["$ref"]] if "$ref" in node else []) + [r for v in node.values() for r in refs(v)]
        return [r for v in node for r in refs(v)] if isinstance(node, list) else []

    def resolves(ref: str) -> bool:
        node: Any = spec()
        for part in ref.removeprefix("#/").split("/"):
            if not isinstance(node, dict) or part not in node:
                return False
            node = node[part]
        return True

    found = refs(spec())
    assert found and [r for r in found if not resolves(r)] == []


def test_the_served_document_is_the_file() -> None:
    import json

    assert spec() == json.loads((Path(__file__).resolve().parents[2] / "server" / "openapi.json").read_text())
