"""The OpenAPI document names every API route and method the app serves, and only those."""

from __future__ import annotations

import re


def test_every_route_is_documented(app) -> None:  # type: ignore[no-untyped-def]
    spec = app.test_client().get("/api/openapi.json").get_json()
    documented = {(path, m.upper()) for path, item in spec["paths"].items() for m in item if m != "parameters"}
    served = set()
    for rule in app.url_map.iter_rules():
        if not rule.rule.startswith("/api/"):
            continue
        path = re.sub(r"<(?:[a-z]+:)?([a-z_]+)>", r"{\1}", rule.rule)
        for method in rule.methods - {"HEAD", "OPTIONS"}:
            served.add((path, method))
    assert served == documented
