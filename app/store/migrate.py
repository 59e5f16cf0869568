"""``python -m app.store.migrate``: create or upgrade the database named by APP_DATABASE_URL."""

from __future__ import annotations

from app.settings import Settings
from app.store.db import init_db, make_engine


def main() -> None:
    settings = Settings()
    init_db(make_engine(settings.database_url))
    print(f"database ready: {settings.database_url}")


if __name__ == "__main__":
    main()
