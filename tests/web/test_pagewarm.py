"""Every worker renders the preset pages before visitors ask (app.web.pagewarm)."""

from __future__ import annotations

import time
from pathlib import Path

from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from app.web import i18n
from app.web.pagecache import page_key


def _key(host: str, path: str, lang: str) -> tuple[str, ...]:
    return page_key({"headers": [(b"host", host.encode())], "path": path}, lang)


def test_the_first_request_of_a_host_has_every_preset_page_rendered_in_every_language(
    tmp_path: Path,
) -> None:
    """After a worker's first request of a host, /api/v1/health answers 503 "warming" until the
    presets are stored and the home page, each explainer's page and each preset's are kept for
    that host in English and Chinese; then 200, and those pages come from memory as a visitor
    asks for them. Another host is warmed on its own first request, not before."""
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'warm.db'}", warm_presets=True)
    with TestClient(create_app(settings)) as client:
        site = client.app.state.site  # type: ignore[attr-defined]
        warmer = client.app.state.page_warmer  # type: ignore[attr-defined]
        every = site.warm_paths()
        presets = [(p.name, x.slug) for p in site.plugins for x in p.sim.presets]
        assert every[0] == "/" and len(every) == 1 + len(site.plugins) + len(presets)
        assert all(f"/explainers/{n}/presets/{slug}" in every for n, slug in presets)
        # Four of them here (all 50-odd take 30 s of CPU): the home page, an explainer's
        # page, and two presets of different explainers.
        paths = ["/", "/explainers/cwnd", "/explainers/cwnd/presets/cubic-lfn"]
        paths.append("/explainers/tcp/presets/handshake")
        assert set(paths) <= set(every)
        warmer.paths = paths  # before the first request starts the warm-up
        first = client.get("/api/v1/health")
        assert first.status_code == 503 and first.json()["status"] == "warming"
        deadline = time.monotonic() + 240
        while client.get("/api/v1/health").status_code != 200:
            assert time.monotonic() < deadline, client.get("/api/v1/health").json()
            time.sleep(0.2)
        body = client.get("/api/v1/health").json()
        assert body["pages"] == {"rendered": len(paths) * 2, "total": len(paths) * 2}
        assert warmer.failed == 0
        for lang in i18n.LANGUAGES:
            for path in paths:
                assert site.pages.lookup(_key("testserver", path, lang)) is not None, (path, lang)
        # A kept page is what a visitor gets (same ETag as the warm render kept).
        kept = site.pages.lookup(_key("testserver", paths[-1], "zh-CN"))
        page = client.get(paths[-1], headers={"accept-language": "zh-CN"})
        assert page.status_code == 200 and page.headers["etag"] == kept.etag
        assert page.text == kept.body.decode()
        assert site.pages.lookup(_key("127.0.0.1", "/", "en")) is None
        assert warmer.done_for("127.0.0.1") is None


def test_made_up_hosts_are_not_warmed_past_a_few(tmp_path: Path) -> None:
    from app.web.pagewarm import MAX_HOSTS, PageWarmer

    warmer = PageWarmer([], ["en"])
    started = []
    for i in range(MAX_HOSTS + 5):
        scope = {"headers": [(b"host", f"h{i}.example".encode())]}
        warmer.see(lambda *a: None, scope, None)  # type: ignore[arg-type]
        started.append(warmer.done_for(f"h{i}.example"))
    time.sleep(0.2)
    assert started.count(None) == 5
    assert all(warmer.done_for(f"h{i}.example") for i in range(MAX_HOSTS))
