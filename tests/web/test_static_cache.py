"""Static files and npm packages are gzipped once and then answered from memory, unchanged."""

from __future__ import annotations

from fastapi.testclient import TestClient

from app.settings import Settings


def test_static_files_are_gzipped_once_and_revalidate(client: TestClient) -> None:
    """Repeated GETs of a static file get the same gzipped bytes (decoding to the file), with
    an hour of browser caching; a revalidation with its ETag is a 304."""
    path = Settings().root / "static" / "css" / "app.css"
    first = client.get("/static/css/app.css", headers={"accept-encoding": "gzip"})
    again = client.get("/static/css/app.css", headers={"accept-encoding": "gzip"})
    assert first.status_code == again.status_code == 200
    assert (
        first.headers["content-encoding"] == "gzip"
        and "max-age=3600" in first.headers["cache-control"]
    )
    assert first.content == again.content == path.read_bytes()  # httpx decodes the gzip
    etag = first.headers["etag"]
    assert (
        client.get(
            "/static/css/app.css", headers={"accept-encoding": "gzip", "if-none-match": etag}
        ).status_code
        == 304
    )
    assert client.get("/static/../app/main.py").status_code == 404
