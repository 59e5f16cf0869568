"""The lecture-hall fast paths: kept pages and static files answered in front of the app, with
exactly the app's answer (headers, ETag, 304, cookies), never another language's, theme's,
scenario's or visitor's page."""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import os
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from starlette.types import Message, Receive, Scope, Send

from app.store import repo
from app.web.pagecache import PageCache
from app.web.sessions import COOKIE, PROBE_COOKIE
from app.web.staticcache import StaticFront

SKB = {"ops": [{"op": "alloc_skb", "size": 1500}, {"op": "skb_reserve", "len": 64}]}
LONG = {
    "ops": [
        {"op": "alloc_skb", "size": 1500},
        {"op": "skb_reserve", "len": 64},
        {"op": "skb_put", "len": 100},
        {"op": "skb_push", "len": 14},
    ]
}
SKB_OTHER = {"ops": [{"op": "alloc_skb", "size": 900}, {"op": "skb_reserve", "len": 32}]}
PER_REQUEST = {"date", "server"}


def share(client: TestClient, params: Any = SKB, title: str | None = None) -> str:
    body: dict[str, Any] = {"explainer": "skb", "params": params}
    if title:
        body["title"] = title
    r = client.post("/api/v1/scenarios", json=body)
    assert r.status_code == 201
    return str(r.json()["id"])


def headers_of(response: Any) -> list[tuple[str, str]]:
    return sorted((k, v) for k, v in response.headers.multi_items() if k not in PER_REQUEST)


def app_only(client: TestClient) -> None:
    """From now on the routes may not render or answer from the page cache: whatever still
    answers a page does it in front of them."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the request reached the route")

    client.app.state.site.pages.respond = refuse  # type: ignore[attr-defined]


def test_fast_path_answers_exactly_as_the_app_did(client: TestClient) -> None:
    """The second GET of a kept page (served in front of routing) carries the same status,
    headers (ETag, Cache-Control, Vary, Content-Language, the probe Set-Cookie, security
    headers) and bytes as the app's first answer; If-None-Match gets the same 304."""
    sid = share(client)
    client.cookies.clear()
    first = client.get(f"/s/{sid}", headers={"accept-encoding": "gzip"})
    app_only(client)
    client.cookies.clear()
    again = client.get(f"/s/{sid}", headers={"accept-encoding": "gzip"})
    assert first.status_code == again.status_code == 200
    assert headers_of(first) == headers_of(again)
    assert first.content == again.content and "<html" in again.text
    assert again.headers["content-language"] == "en"
    assert f"{PROBE_COOKIE}=1" in again.headers["set-cookie"]
    assert "frame-ancestors 'self'" in again.headers["content-security-policy"]
    etag = again.headers["etag"]
    not_modified = client.get(f"/s/{sid}", headers={"if-none-match": etag})
    assert not_modified.status_code == 304 and not_modified.content == b""
    assert not_modified.headers["etag"] == etag
    plain = client.get(f"/s/{sid}", headers={"accept-encoding": "identity"})
    assert "content-encoding" not in plain.headers and plain.content == first.content
    assert int(plain.headers["content-length"]) == len(plain.content)


def test_kept_pages_of_the_two_languages_are_not_mixed_up(client: TestClient) -> None:
    """A page kept for an English reader is not what a Chinese reader (Accept-Language, cookie
    or ?lang=) gets from the fast path, and the other way round; ?lang= still sets its cookie."""
    sid = share(client)
    client.cookies.clear()
    en = client.get(f"/s/{sid}")
    zh = client.get(f"/s/{sid}", headers={"accept-language": "zh-CN,zh;q=0.9"})
    app_only(client)
    for _ in range(2):
        client.cookies.clear()
        assert client.get(f"/s/{sid}").text == en.text
        zh_again = client.get(f"/s/{sid}", headers={"accept-language": "zh-CN,zh;q=0.9"})
        assert zh_again.text == zh.text != en.text
        assert zh_again.headers["content-language"] == "zh-CN"
        client.cookies.set("stepscope_lang", "zh-CN")
        assert client.get(f"/s/{sid}").text == zh.text
    assert 'lang="zh-CN"' in zh.text and 'lang="en"' in en.text


def test_lang_query_that_must_set_a_cookie_goes_to_the_app(client: TestClient) -> None:
    """``?lang=zh-CN`` from a reader whose cookie says otherwise is remembered in a cookie, as
    the language middleware does: the fast path leaves that request to the app."""
    sid = share(client)
    client.cookies.clear()
    client.get(f"/s/{sid}?lang=zh-CN")  # kept
    client.cookies.clear()
    r = client.get(f"/s/{sid}?lang=zh-CN")
    assert "stepscope_lang=zh-CN" in r.headers.get("set-cookie", "")


def test_embed_themes_and_scenarios_are_not_mixed_up(client: TestClient) -> None:
    """Each theme of an embed and each shared scenario is kept under its own URL: the fast path
    never answers one with another's page."""
    a, b = share(client, SKB), share(client, SKB_OTHER)
    client.cookies.clear()
    pages = {
        url: client.get(url).text
        for url in (f"/embed/s/{a}", f"/embed/s/{a}?theme=dark", f"/s/{a}", f"/s/{b}")
    }
    assert len(set(pages.values())) == 4
    app_only(client)
    for url, text in pages.items():
        client.cookies.clear()
        assert client.get(url).text == text
    assert "1500" in pages[f"/s/{a}"] and "900" in pages[f"/s/{b}"]


def test_a_share_made_with_another_simulation_says_so(client: TestClient) -> None:
    """A page is kept per scenario id: a scenario saved under an older simulation version shows
    its note, a current one does not, however often each is opened."""
    old, new = share(client, SKB), share(client, SKB)
    with repo.session_for(client.app.state.engine) as db:  # type: ignore[attr-defined]
        row = repo.get_scenario(db=db, scenario_id=old)
        assert row is not None
        row.sim_version = "0-older"
        db.add(row)
        db.commit()
    for _ in range(3):
        client.cookies.clear()
        assert 'id="sim-changed"' in client.get(f"/s/{old}").text
        assert 'id="sim-changed"' not in client.get(f"/s/{new}").text


def test_a_visitor_with_progress_gets_their_continue_link_privately(client: TestClient) -> None:
    """With progress saved, a visitor's page offers "continue at step N" and is private; an
    anonymous reader (fast path) never gets that link; a visitor with a session but no progress
    gets everyone's page."""
    sid = share(client, LONG)
    client.cookies.clear()
    anonymous = client.get(f"/s/{sid}")
    client.get("/")  # probe cookie
    fresh = client.post("/api/v1/scenarios", json={"explainer": "skb", "params": SKB_OTHER})
    other = fresh.json()["id"]
    assert COOKIE in client.cookies
    same = client.get(f"/s/{sid}")
    assert same.text == anonymous.text and "resume-link" not in same.text
    saved = client.post("/api/v1/progress", json={"walkthrough": f"/s/{sid}", "step": 2})
    assert saved.json()["saved"] is True
    mine = client.get(f"/s/{sid}")
    assert 'id="resume-link"' in mine.text and 'href="?step=2"' in mine.text
    assert mine.headers["cache-control"].startswith("private")
    assert client.get(f"/s/{sid}?step=1").headers["cache-control"].startswith("public")
    client.post("/api/v1/progress", json={"walkthrough": f"/s/{sid}", "step": 1})
    assert 'href="?step=1"' in client.get(f"/s/{sid}").text
    jar = dict(client.cookies)
    client.cookies.clear()
    for _ in range(2):
        assert "resume-link" not in client.get(f"/s/{sid}").text
    client.cookies.update(jar)
    assert "resume-link" not in client.get(f"/s/{other}").text


CJK_RESUME = "从第 3 步继续"


def test_one_render_serves_every_visitors_continue_link(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Visitors who left a walkthrough at different steps each get their own "continue at step
    N" link (in their language), yet the page is rendered once: the link is put into everyone's
    kept page, which is otherwise the same byte for byte."""
    sid = share(client, LONG)
    renders: list[str] = []
    real = PageCache._render

    def counting(self: PageCache, request: Any, *args: Any, **kwargs: Any) -> Any:
        renders.append(request.url.path)
        return real(self, request, *args, **kwargs)

    monkeypatch.setattr(PageCache, "_render", counting)
    client.cookies.clear()
    everyone = client.get(f"/s/{sid}").text
    assert "resume-link" not in everyone
    pages = {}
    for step, lang in ((1, "en"), (2, "en"), (3, "zh-CN")):
        client.cookies.clear()
        client.cookies["stepscope_lang"] = lang
        client.get("/")  # the probe cookie
        fresh = client.post("/api/v1/scenarios", json={"explainer": "skb", "params": SKB_OTHER})
        assert fresh.status_code == 201 and COOKIE in client.cookies
        saved = client.post("/api/v1/progress", json={"walkthrough": f"/s/{sid}", "step": step})
        assert saved.status_code == 200 and saved.json()["saved"] is True, saved.text
        pages[step] = client.get(f"/s/{sid}")
        assert pages[step].headers["cache-control"].startswith("private")
    for step, page in pages.items():
        assert page.text.count('id="resume-link"') == 1 and f'href="?step={step}"' in page.text
    assert "Continue at step 2" in pages[2].text
    assert "Continue at step" not in pages[3].text and CJK_RESUME in pages[3].text
    link = re.search(r'<a class="button resume".*?</a>', pages[1].text, flags=re.S)
    assert link is not None
    assert pages[1].text.replace(link.group(0), "<!--resume-->") == everyone
    assert renders.count(f"/s/{sid}") == 2  # everyone's page in English, then in Chinese


def test_frame_chunks_are_shared_with_visitors_with_a_session(client: TestClient) -> None:
    """A frame chunk kept for one reader answers a visitor with a session from the fast path."""
    url = "/explainers/skb/frames?preset=rx-frame&start=0&count=3"
    client.cookies.clear()
    first = client.get(url)
    assert first.status_code == 200 and "<template" in first.text
    client.get("/")
    client.post(
        "/api/v1/progress", json={"walkthrough": "/explainers/skb/presets/rx-frame", "step": 1}
    )
    assert COOKIE in client.cookies
    app_only(client)
    again = client.get(url)
    assert again.status_code == 200 and again.text == first.text


def test_progress_titles_follow_the_readers_language(client: TestClient) -> None:
    """Progress keeps the walkthrough's title in the language of the request that saved it
    (the walkthrough facts are remembered per language)."""
    client.get("/")
    key = "/explainers/skb/presets/rx-frame"
    client.post("/api/v1/progress", json={"walkthrough": key, "step": 1})
    sid = client.cookies[COOKIE]
    client.post(
        "/api/v1/progress",
        json={"walkthrough": key, "step": 2},
        headers={"accept-language": "zh-CN"},
    )
    engine = client.app.state.engine  # type: ignore[attr-defined]
    with repo.session_for(engine) as db:
        zh = repo.get_progress(db=db, session_id=sid, walkthrough=key)
    client.post("/api/v1/progress", json={"walkthrough": key, "step": 3})
    with repo.session_for(engine) as db:
        en = repo.get_progress(db=db, session_id=sid, walkthrough=key)
    assert zh is not None and en is not None and en.step == 3
    assert zh.title != en.title and any("\u4e00" <= ch <= "\u9fff" for ch in zh.title)


# --- static files ------------------------------------------------------------------------


async def _not_found(scope: Scope, receive: Receive, send: Send) -> None:
    await send({"type": "http.response.start", "status": 404, "headers": []})
    await send({"type": "http.response.body", "body": b"app"})


def call(front: StaticFront, path: str, method: str = "GET", **headers: str) -> Message:
    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "query_string": b"",
        "headers": [(k.replace("_", "-").encode(), v.encode()) for k, v in headers.items()],
    }
    out: dict[str, Any] = {}

    async def receive() -> Message:
        return {"type": "http.request", "body": b""}

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start":
            out.update(status=message["status"], headers=dict(message["headers"]))
        else:
            out["body"] = out.get("body", b"") + message.get("body", b"")

    # in a thread of its own: this thread may already run an event loop (Playwright's, when the
    # browser tests ran first in the same session)
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, front(scope, receive, send)).result()
    return out


def test_static_front_serves_from_memory_and_notices_a_changed_file(tmp_path: Path) -> None:
    """A file is answered gzipped (to clients that accept it) with Starlette's ETag for it, a
    HEAD without a body, 304 for its ETag; a changed file is read again; paths outside the
    folder, missing files and Range requests go on to the app."""
    (tmp_path / "s").mkdir()
    (tmp_path / "secret.txt").write_text("no")
    f = tmp_path / "s" / "app.js"
    f.write_text("console.log('one');\n" * 200)
    front = StaticFront(_not_found, mounts={"/static/": tmp_path / "s"})
    r = call(front, "/static/app.js", accept_encoding="gzip")
    assert r["status"] == 200 and r["headers"][b"content-encoding"] == b"gzip"
    assert gzip.decompress(r["body"]) == f.read_bytes()
    st = f.stat()
    etag = '"' + hashlib.md5(f"{st.st_mtime}-{st.st_size}".encode()).hexdigest() + '"'
    assert r["headers"][b"etag"] == etag.encode()
    assert r["headers"][b"cache-control"] == b"public, max-age=3600"
    plain = call(front, "/static/app.js")
    assert plain["body"] == f.read_bytes() and b"content-encoding" not in plain["headers"]
    head = call(front, "/static/app.js", "HEAD", accept_encoding="gzip")
    assert (
        head["body"] == b"" and head["headers"][b"content-length"] == str(len(r["body"])).encode()
    )
    assert call(front, "/static/app.js", if_none_match=etag)["status"] == 304
    f.write_text("console.log('two');\n" * 300)
    os.utime(f, ns=(st.st_mtime_ns + 10**9, st.st_mtime_ns + 10**9))
    changed = call(front, "/static/app.js")
    assert changed["body"] == f.read_bytes() and changed["headers"][b"etag"] != etag.encode()
    for path in ("/static/../secret.txt", "/static/nope.js", "/static/"):
        assert call(front, path)["body"] == b"app"
    assert call(front, "/static/app.js", range="bytes=0-3")["body"] == b"app"


@pytest.mark.parametrize("path", ["/static/css/app.css", "/vendor/htmx.org/dist/htmx.min.js"])
def test_static_files_answer_as_starlette_would(client: TestClient, path: str) -> None:
    """The fast path's ETag and Last-Modified are StaticFiles' own (a Range request, which the
    app answers, reports the same), and a HEAD gets the headers only."""
    fast = client.get(path)
    ranged = client.get(path, headers={"range": "bytes=0-9"})
    assert fast.status_code == 200 and ranged.status_code == 206
    assert fast.headers["etag"] == ranged.headers["etag"]
    assert fast.headers["last-modified"] == ranged.headers["last-modified"]
    head = client.head(path)
    assert head.status_code == 200 and head.content == b""
