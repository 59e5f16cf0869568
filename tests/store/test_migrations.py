"""Schema upgrades keep saved data: a database made by the first schema still opens its links."""

from __future__ import annotations

import json

from fastapi.testclient import TestClient
from sqlalchemy import inspect, text

from app.main import create_app
from app.settings import Settings
from app.store.db import init_db, make_engine

RAW = {"ops": [{"op": "alloc_skb", "size": 1500}, {"op": "skb_reserve", "len": 64}]}


def test_upgrade_from_0001_keeps_scenarios_and_they_open(db_url: str) -> None:
    """A scenario saved by schema 0001 survives the upgrade to head and opens at /s/{id}."""
    url = db_url
    engine = make_engine(url)
    init_db(engine, "0001")
    assert "progress" not in inspect(engine).get_table_names()
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO scenario (id, explainer, params_json, sim_version, title, created_at, "
                "forked_from) VALUES (:id, 'skb', :p, 'skb-0', 'From the old schema', "
                "'2025-01-02 03:04:05', NULL)"
            ),
            {"id": "OldSchema_0001x", "p": json.dumps(RAW)},
        )
    engine.dispose()

    app = create_app(Settings(database_url=url))
    assert "progress" not in inspect(app.state.engine).get_table_names()  # importing does nothing
    with TestClient(app) as client:  # upgrades to head on start
        tables = inspect(app.state.engine).get_table_names()
        assert {"scenario", "visitor_session", "progress"} <= set(tables)
        record = client.get("/api/v1/scenarios/OldSchema_0001x").json()
        assert record["params"] == RAW and record["title"] == "From the old schema"
        page = client.get("/s/OldSchema_0001x?step=1")
        assert page.status_code == 200
        assert 'data-step="1"' in page.text and 'data-count="2"' in page.text
        # saved under another sim_version: re-run, with a note that the simulation changed
        assert 'id="sim-changed"' in page.text


def test_upgrade_is_repeatable(db_url: str) -> None:
    """Upgrading an up-to-date database again changes nothing and loses nothing."""
    url = db_url
    engine = make_engine(url)
    init_db(engine)
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO visitor_session (id, created_at, last_seen) VALUES "
                "('v0123456789abcdef01234567', '2025-01-01 00:00:00', '2025-01-01 00:00:00')"
            )
        )
    init_db(engine)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM visitor_session")).scalar_one() == 1


def test_downgrade_and_upgrade_again(db_url: str) -> None:
    """Every migration downgrades cleanly to the first and upgrades back to head (0003 adds the
    quota table and the last_seen index)."""
    engine = make_engine(db_url)
    init_db(engine)
    assert "rate_limit" in inspect(engine).get_table_names()
    indexes = {i["name"] for i in inspect(engine).get_indexes("visitor_session")}
    assert "ix_visitor_session_last_seen" in indexes
    from alembic import command

    from app.store.db import alembic_config

    with engine.begin() as conn:
        cfg = alembic_config(engine)
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "0001")
    assert "rate_limit" not in inspect(engine).get_table_names()
    init_db(engine)
    assert {"rate_limit", "progress"} <= set(inspect(engine).get_table_names())
    engine.dispose()
