"""Alembic: empty -> head -> base on SQLite and PostgreSQL; the app refuses an old schema."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import inspect

from edgescope.config import Settings
from store.db import SchemaOutOfDate, check_at_head, downgrade, make_engine, upgrade

TABLES = {"models", "jobs", "artifacts", "users", "web_sessions", "api_tokens", "login_attempts", "groups",
          "group_members", "shares", "analyses", "alembic_version"}


def _roundtrip(url: str) -> None:
    upgrade(url)
    engine = make_engine(url)
    assert TABLES <= set(inspect(engine).get_table_names())
    check_at_head(engine)
    downgrade(url, "base")
    assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
    with pytest.raises(SchemaOutOfDate, match="edgescope db upgrade"):
        check_at_head(engine)
    upgrade(url)
    check_at_head(engine)
    engine.dispose()


def test_sqlite_upgrade_downgrade(tmp_path: Path) -> None:
    _roundtrip(f"sqlite:///{tmp_path / 'm.db'}")


@pytest.mark.postgres
def test_postgres_upgrade_downgrade(postgres_url: str) -> None:
    _roundtrip(postgres_url)


def test_app_refuses_old_schema(tmp_path: Path) -> None:
    from server.app import create_app

    settings = Settings.from_env(env={}, data_dir=tmp_path)
    engine = make_engine(settings.database_url)
    engine.connect().close()  # an existing but empty database
    with pytest.raises(SchemaOutOfDate, match="Run: edgescope db upgrade"):
        create_app(settings)


def test_cli_serve_refuses_old_schema(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from edgescope.cli import main

    url = f"sqlite:///{tmp_path / 'old.db'}"
    upgrade(url)
    downgrade(url, "base")  # tables gone, version table left: an old schema, not a fresh file
    result = CliRunner().invoke(main, ["serve", "--port", "0"],
                                env={"EDGESCOPE_DATABASE_URL": url, "EDGESCOPE_DATA_DIR": str(tmp_path)})
    assert result.exit_code != 0
    assert "edgescope db upgrade" in result.output


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_accounts_migration_keeps_existing_models(backend: str, tmp_path: Path) -> None:
    """Models uploaded before accounts survive 0001 -> 0002 with no owner and link sharing off."""
    import contextlib

    from sqlalchemy import text

    from tests.conftest import fresh_postgres_db

    with contextlib.ExitStack() as stack:
        url = stack.enter_context(fresh_postgres_db()) if backend == "postgres" else f"sqlite:///{tmp_path / 'm.db'}"
        upgrade(url, "0001")
        engine = make_engine(url)
        with engine.begin() as c:
            c.execute(text("INSERT INTO models (id, name, filename, format, size_bytes, sha256, input_shapes, "
                           "input_values, targets, created_at) VALUES ('m1', 'old', 'old.onnx', 'onnx', 1, 'x', "
                           "'{}', '{}', '[]', CURRENT_TIMESTAMP)"))
        upgrade(url)
        with engine.connect() as c:
            row = c.execute(text("SELECT name, owner_id, link_sharing FROM models")).one()
        assert row[0] == "old" and row[1] is None and not row[2]
        downgrade(url, "0001")
        with engine.connect() as c:
            assert c.execute(text("SELECT name FROM models")).scalar_one() == "old"
        engine.dispose()
