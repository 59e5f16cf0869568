"""``python -m app.store.migrate``: create or upgrade the database named by APP_DATABASE_URL,
then delete expired anonymous sessions.

``scripts/serve`` runs this once before starting the workers; it is idempotent, so a cron job
may also run it (e.g. daily) to keep expiring idle sessions.
"""

from __future__ import annotations

from datetime import timedelta

from app.settings import Settings
from app.store import repo
from app.store.db import init_db, make_engine


def main() -> None:
    settings = Settings()
    engine = make_engine(settings.database_url)
    init_db(engine)
    with repo.session_for(engine) as db:
        gone = repo.expire_sessions(db=db, idle=timedelta(days=settings.session_idle_days))
    url = engine.url.render_as_string(hide_password=True)
    print(f"database ready: {url} ({gone} idle sessions expired)")


if __name__ == "__main__":
    main()
