"""The README stays true: every setting, command, endpoint, target and hardware profile is documented."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import click

from edgescope.cli import main
from edgescope.config import PREFIX, Settings

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def test_every_setting_documented() -> None:
    missing = [PREFIX + f.name.upper() for f in dataclasses.fields(Settings) if PREFIX + f.name.upper() not in README]
    assert not missing, f"settings not in README: {missing}"


def _commands(group: click.Group, prefix: str) -> list[str]:
    names = []
    for name, cmd in group.commands.items():
        names.append(f"{prefix} {name}")
        if isinstance(cmd, click.Group):
            names += _commands(cmd, f"{prefix} {name}")
    return names


def test_every_cli_command_documented() -> None:
    missing = [c for c in _commands(main, "edgescope") if f"`{c}" not in README]
    assert not missing, f"commands not in README: {missing}"


def test_every_api_route_documented(app) -> None:  # type: ignore[no-untyped-def]
    missing = []
    for rule in app.url_map.iter_rules():
        if not rule.rule.startswith("/api/"):
            continue
        path = re.sub(r"<(?:[a-z]+:)?([a-z_]+)>", lambda m: "<" + {"model_id": "id", "op_id": "op"}.get(m.group(1), m.group(1)) + ">", rule.rule)
        for method in sorted(rule.methods - {"HEAD", "OPTIONS"}):
            if f"{method} {path}" not in README:
                missing.append(f"{method} {path}")
    assert not missing, f"endpoints not in README: {missing}"


def test_every_target_and_hardware_profile_documented() -> None:
    from compiler.vocabulary.targets import list_targets

    profiles = [p.stem for p in (ROOT / "simulator" / "hardware").glob("*.yaml")]
    missing = [f"`{t}`" for t in list_targets() + profiles if f"`{t}`" not in README]
    assert not missing, f"not in README: {missing}"
