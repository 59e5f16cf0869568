"""Security headers, body limit, trusted hosts and the public base URL, short errors, /docs."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from app.web.security import CSP_EMBED, CSP_PAGE
from app.web.sessions import PROBE_COOKIE

RAW = {"ops": [{"op": "alloc_skb", "size": 1500}, {"op": "skb_reserve", "len": 64}]}
MB = 1_048_576


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    db: Path = tmp_path_factory.mktemp("security") / "test.db"
    with TestClient(
        create_app(Settings(database_url=f"sqlite:///{db}")), raise_server_exceptions=False
    ) as c:
        yield c


def csp(value: str) -> dict[str, str]:
    return {
        part.strip().split(" ", 1)[0]: part.strip().split(" ", 1)[1]
        for part in value.split(";")
        if part.strip()
    }


# --- headers ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    ["/", "/explainers/skb", "/api/v1/explainers", "/static/css/app.css", "/no/such/page", "/docs"],
)
def test_every_response_carries_the_security_headers(client: TestClient, url: str) -> None:
    """CSP (scripts from this origin only, framing by this origin only), nosniff, referrer policy
    and X-Frame-Options: SAMEORIGIN on pages, assets, the API and errors alike."""
    r = client.get(url)
    policy = csp(r.headers["content-security-policy"])
    assert policy["script-src"] == "'self'" and policy["default-src"] == "'self'"
    assert policy["frame-ancestors"] == "'self'"
    assert "unsafe-eval" not in r.headers["content-security-policy"]
    assert policy["img-src"] == "'self' data:"
    assert r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["referrer-policy"] == "strict-origin-when-cross-origin"
    assert r.headers["x-frame-options"] == "SAMEORIGIN"


def test_embeds_may_be_framed_by_any_site(client: TestClient) -> None:
    """/embed/ pages: frame-ancestors * and no X-Frame-Options (it would forbid other sites)."""
    r = client.get("/embed/skb")
    assert r.status_code == 200
    assert r.headers["content-security-policy"] == CSP_EMBED
    assert csp(CSP_EMBED)["frame-ancestors"] == "*"
    assert "x-frame-options" not in r.headers
    assert r.headers["x-content-type-options"] == "nosniff"
    assert client.get("/").headers["content-security-policy"] == CSP_PAGE


# --- body limit ---------------------------------------------------------------------------


def test_announced_body_over_1mb_is_413_json_for_the_api(client: TestClient) -> None:
    """A Content-Length over 1 MB is refused with 413 and a JSON detail under /api/."""
    body = b'{"ops": [' + b" " * (MB + 10) + b"]}"
    r = client.post(
        "/api/v1/explainers/skb/run", content=body, headers={"content-type": "application/json"}
    )
    assert r.status_code == 413
    assert "1 MB" in r.json()["detail"]
    assert r.headers["x-content-type-options"] == "nosniff"


def test_streamed_body_over_1mb_is_413_html_for_pages(client: TestClient) -> None:
    """A chunked body without Content-Length is counted as it arrives: 413 past 1 MB, HTML."""

    def chunks() -> Iterator[bytes]:
        for _ in range(20):
            yield b"a=" + b"x" * 65_536 + b"&"

    r = client.post(
        "/explainers/skb/edit",
        content=chunks(),
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert r.status_code == 413
    assert r.headers["content-type"].startswith("text/html")
    assert "Request too large" in r.text and len(r.text) < 1000


def test_body_under_the_limit_still_works(client: TestClient) -> None:
    """A normal POST passes the limit untouched (streamed bodies are replayed whole)."""
    r = client.post("/api/v1/explainers/skb/run", json=RAW)
    assert r.status_code == 200


def test_body_limit_is_configurable(tmp_path: Path) -> None:
    """max_body_bytes sets the limit: 1 byte over it is 413, exactly at it is not."""
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'l.db'}", max_body_bytes=100)
    with TestClient(create_app(settings)) as c:
        at = b"[" + b" " * 98 + b"]"
        over = b"[" + b" " * 99 + b"]"
        url = "/api/v1/explainers/skb/run"
        headers = {"content-type": "application/json"}
        assert c.post(url, content=at, headers=headers).status_code == 422
        assert c.post(url, content=over, headers=headers).status_code == 413


# --- hosts and absolute URLs --------------------------------------------------------------


def test_untrusted_host_header_is_refused(client: TestClient) -> None:
    """Host: evil.example is refused (400) and never echoed, on pages, the API and shares."""
    for method, url, kw in (
        ("get", "/", {}),
        ("get", "/explainers/skb/", {}),  # would redirect to the slash-less path
        ("post", "/api/v1/scenarios", {"json": {"explainer": "skb", "params": RAW}}),
    ):
        r = getattr(client, method)(url, headers={"host": "evil.example"}, **kw)
        assert r.status_code == 400, url
        assert "evil.example" not in r.text and "evil.example" not in r.headers.get("location", "")


def test_share_urls_use_the_public_base_url(tmp_path: Path) -> None:
    """With public_base_url set, share and embed links, Location headers and pages use it, even
    when the request came in under another trusted host name."""
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'p.db'}",
        public_base_url="https://stepscope.example.org",
        trusted_hosts=["*"],  # even a proxy that passes any Host through can't change links
    )
    with TestClient(create_app(settings), base_url="http://evil.example") as c:
        r = c.post("/api/v1/scenarios", json={"explainer": "skb", "params": RAW})
        assert r.status_code == 201
        body = r.json()
        assert body["share_url"] == f"https://stepscope.example.org/s/{body['id']}"
        assert "evil.example" not in r.text + r.headers.get("location", "")
        for url in (f"/s/{body['id']}", f"/embed/s/{body['id']}", "/explainers/skb/"):
            page = c.get(url, follow_redirects=False)
            assert "evil.example" not in page.text, url
            assert "evil.example" not in page.headers.get("location", ""), url
        record = c.get(f"/api/v1/scenarios/{body['id']}").json()
        assert record["share_url"].startswith("https://stepscope.example.org/")
        embed = c.get(f"/embed/s/{body['id']}").text
        assert f"https://stepscope.example.org/s/{body['id']}" in embed
        offline = c.get(f"/export/html?scenario={body['id']}")
        assert offline.status_code == 200 and "evil.example" not in offline.text
        assert f"https://stepscope.example.org/s/{body['id']}" in offline.text


def test_public_base_url_host_is_trusted_and_cookies_secure(tmp_path: Path) -> None:
    """The public host is accepted as Host; an https public URL or secure_cookies sets Secure."""
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'h.db'}",
        public_base_url="https://stepscope.example.org",
    )
    with TestClient(create_app(settings), base_url="https://stepscope.example.org") as c:
        assert c.get("/").status_code == 200
        r = c.post("/api/v1/scenarios", json={"explainer": "skb", "params": RAW})
        cookies = r.headers.get_list("set-cookie")
        assert cookies and all("secure" in h.lower() for h in cookies)
    plain = Settings(database_url=f"sqlite:///{tmp_path / 'c.db'}", secure_cookies=True)
    with TestClient(create_app(plain)) as c:  # http to the app, https at the proxy
        assert "secure" in c.get("/").headers["set-cookie"].lower()
        c.cookies.set(PROBE_COOKIE, "1")  # the browser, over https, sends it back
        r = c.post("/api/v1/scenarios", json={"explainer": "skb", "params": RAW})
        cookies = r.headers.get_list("set-cookie")
        assert cookies and all("secure" in h.lower() for h in cookies)


def test_public_base_url_must_be_an_origin(tmp_path: Path) -> None:
    """A base URL with a path or another scheme is a configuration error at start-up."""
    for bad in ("ftp://x.example", "https://x.example/sub", "not a url"):
        with pytest.raises(ValueError, match="public_base_url"):
            app = create_app(
                Settings(database_url=f"sqlite:///{tmp_path / 'b.db'}", public_base_url=bad)
            )
            with TestClient(app) as c:
                c.get("/")


# --- short error messages -----------------------------------------------------------------


def test_errors_about_a_huge_body_stay_short(client: TestClient) -> None:
    """A body of ~1 MB of bad input yields a 422 of a few KB: messages ≤ 200 characters, locs
    cut short, at most 50 issues plus a count of the rest."""
    huge_key = "k" * 100_000
    body = {"explainer": "skb", "params": {huge_key: "v" * 500_000}, "title": "t" * 300}
    r = client.post("/api/v1/scenarios", json=body)
    assert r.status_code == 422
    assert len(r.content) < 5_000
    for issue in r.json()["detail"]:
        assert len(issue["msg"]) <= 200
        assert all(len(str(part)) <= 60 for part in issue["loc"])
    extra = {f"k{i}": i for i in range(20_000)}  # each unknown field is one validation error
    many = client.post("/api/v1/progress", json={"walkthrough": "/x", "step": 1, **extra})
    assert many.status_code == 422
    detail = many.json()["detail"]
    assert len(detail) == 51 and len(many.content) < 20_000
    assert detail[-1]["msg"] == "… and 19950 more problems"


def test_long_names_in_404s_are_cut(client: TestClient) -> None:
    """A 404 that names what was asked for quotes at most 200 characters of it."""
    r = client.get("/api/v1/scenarios/" + "A" * 5000)
    assert r.status_code == 404 and len(r.json()["detail"]) <= 200
    assert r.json()["detail"].endswith("…")


# --- three 500s ---------------------------------------------------------------------------


@pytest.mark.parametrize("depth", [990, 1_000, 5_000, 20_000])
def test_deeply_nested_p_token_is_422_naming_p(client: TestClient, depth: int) -> None:
    """A p= token nesting JSON ~1000+ levels (RecursionError in json.loads) is a 422 naming p."""
    import base64

    token = base64.urlsafe_b64encode(b"[" * depth + b"]" * depth).decode().rstrip("=")
    if len(token) > 60_000:
        pytest.skip("longer than the p limit (already a 422)")
    for url in (f"/explainers/skb/custom?p={token}", f"/explainers/skb/edit?p={token}"):
        r = client.get(url, headers={"accept": "application/json"})
        assert r.status_code == 422, (url[:40], r.status_code)
        assert any("p" in issue["loc"] for issue in r.json()["detail"])


@pytest.mark.parametrize("length", [80, 81, 253, 300, 4000])
def test_long_note_names_are_404(client: TestClient, length: int) -> None:
    """/notes/<very long name> is a 404 ("File name too long" must never reach a visitor)."""
    r = client.get("/notes/" + "a" * length)
    assert r.status_code == 404
    assert len(r.text) < 50_000 and "a" * 250 not in r.text


@pytest.mark.parametrize(
    "folder",
    [
        "/static/",
        "/static/js/",
        "/static/explainers/cwnd/",
        "/vendor/reveal.js/dist/",
        "/vendor/reveal.js/dist/theme/",
        "/vendor/idiomorph/dist/",
        "/vendor/plotly.js-basic-dist-min/",
        "/vendor/htmx.org/",
    ],
)
@pytest.mark.parametrize("length", [255, 256, 300, 5000])
def test_static_file_names_too_long_for_the_file_system_are_404(
    client: TestClient, folder: str, length: int
) -> None:
    """A static or npm file name longer than the file system allows (ENAMETOOLONG) is a 404,
    like any other missing file, under every folder either front serves."""
    r = client.get(folder + "x" * length + ".css")
    assert r.status_code == 404
    assert "x" * 250 not in r.text


def test_reveal_plugins_are_under_dist(client: TestClient) -> None:
    """reveal.js 6 keeps plugins under dist/plugin: served there; the old path is a 404."""
    if not (Settings().node_modules / "reveal.js" / "dist" / "plugin").is_dir():
        pytest.skip("npm packages not installed (scripts/test installs them)")
    assert client.get("/vendor/reveal.js/dist/plugin/notes.js").status_code == 200
    assert client.get("/vendor/reveal.js/plugin/notes/notes.js").status_code == 404


# --- /docs --------------------------------------------------------------------------------


def test_docs_use_local_swagger_assets_only(client: TestClient) -> None:
    """/docs loads Swagger UI from this server (no CDN, no inline script) and the assets exist."""
    r = client.get("/docs")
    assert r.status_code == 200
    urls = re.findall(r'(?:src|href)="([^"]+)"', r.text)
    assert urls and all(u.startswith("/") and not u.startswith("//") for u in urls), urls
    assert "http://" not in r.text and "https://" not in r.text
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", r.text)  # no inline scripts
    init = client.get("/docs/init.js")
    assert init.status_code == 200 and "/openapi.json" in init.text and "http" not in init.text
    if (Settings().node_modules / "swagger-ui-dist").is_dir():
        for u in urls:
            assert client.get(u).status_code == 200, u
    assert client.get("/openapi.json").status_code == 200
    assert client.get("/redoc").status_code == 404
