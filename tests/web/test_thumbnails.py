"""The home page's thumbnails: pictures made inert and id-unique, drawn from the run cache, and a
home page that goes through the page cache in both languages."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from app.web.thumbnails import inert_picture


def test_inert_picture_keeps_the_drawing_but_no_link_button_or_tab_stop() -> None:
    """Links become <span> in HTML and <g> inside SVG (a <span> there would end the SVG when
    parsed), buttons lose their role as controls, tabindex/href/handlers go, the drawing stays."""
    html = (
        '<div id="a" tabindex="0"><a href="/x" class="l">go</a><button onclick="f()">b</button>'
        '<svg id="s"><defs><marker id="m"/></defs><a href="/y"><text>t</text></a>'
        '<path marker-end="url(#m)"/><use href="#m"/></svg><label for="a">l</label></div>'
    )
    out = inert_picture(html, "p-")
    assert "<a" not in out and "<button" not in out and "tabindex" not in out
    assert "onclick" not in out and 'href="/x"' not in out and 'href="/y"' not in out
    assert '<span class="l">go</span>' in out
    assert "<g><text>t</text></g>" in out  # the SVG link's content, still inside the SVG
    assert re.findall(r'id="([^"]+)"', out) == ["p-a", "p-s", "p-m"]
    assert 'marker-end="url(#p-m)"' in out and '<use href="#p-m"/>' in out
    assert 'for="p-a"' in out


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'home.db'}")
    with TestClient(create_app(settings)) as c:
        yield c


def test_home_is_cached_and_revalidates_per_language(client: TestClient) -> None:
    """The home page with its thumbnails is a public, revalidated page: the second ask with its
    ETag is a 304, and the Chinese page is a different body (its narrations are Chinese)."""
    en = client.get("/")
    assert en.status_code == 200 and "public" in en.headers["cache-control"]
    again = client.get("/", headers={"If-None-Match": en.headers["etag"]})
    assert again.status_code == 304
    zh = client.get("/?lang=zh-CN")
    assert zh.headers["etag"] != en.headers["etag"]
    labels = re.findall(r'class="thumb-view" role="img" aria-label="([^"]+)"', zh.text)
    assert labels and all(re.search(r"[\u4e00-\u9fff]", lab) for lab in labels)
