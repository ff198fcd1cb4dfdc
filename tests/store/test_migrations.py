"""Alembic: empty -> head -> base on SQLite and PostgreSQL; the app refuses an old schema."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import inspect

from edgescope.config import Settings
from store.db import SchemaOutOfDate, check_at_head, downgrade, make_engine, upgrade

TABLES = {"models", "jobs", "artifacts", "alembic_version"}


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
