"""The reader's language on every page: chosen per request, remembered, switched in place."""

from __future__ import annotations

import importlib
import re
from urllib.parse import parse_qsl, urljoin, urlsplit

import pytest
from fastapi.testclient import TestClient

from app.web import i18n

CJK = re.compile(r"[\u4e00-\u9fff]")
HTML_LANG = re.compile(r'<html lang="([^"]+)"')
ZH = {"accept-language": "zh-CN,zh;q=0.9,en;q=0.5"}
EN = {"accept-language": "en-GB,en;q=0.9"}
OPS = {"ops": [{"op": "alloc_skb", "size": 1500}, {"op": "skb_put", "len": 100}]}


def html_lang(text: str) -> str:
    m = HTML_LANG.search(text)
    assert m, "no <html lang>"
    return m.group(1)


# --- choosing the language -----------------------------------------------------------------


@pytest.fixture
def client(shared_client: TestClient) -> TestClient:
    """These tests read pages as visitors: one app for the module (tests/conftest.py)."""
    return shared_client


@pytest.mark.parametrize(
    ("header", "want"),
    [
        ("zh-CN,zh;q=0.9", "zh-CN"),
        ("zh", "zh-CN"),
        ("zh-Hans-CN", "zh-CN"),
        ("zh-TW", "zh-CN"),
        ("en-US,en;q=0.9,zh;q=0.8", "en"),
        ("fr-FR,zh;q=0.5,en;q=0.4", "zh-CN"),
        ("de", None),
        ("", None),
        ("zh;q=0, en", "en"),
    ],
)
def test_accept_language(header: str, want: str | None) -> None:
    """Accept-Language picks the best supported language by q (zh, zh-CN, zh-Hans… → zh-CN)."""
    assert i18n.from_accept_language(header) == want


def test_choice_order() -> None:
    """?lang= beats the cookie, the cookie beats Accept-Language, English is the default."""
    assert i18n.choose("lang=zh-CN", {"stepscope_lang": "en"}, "en").lang == "zh-CN"
    assert i18n.choose("", {"stepscope_lang": "zh-CN"}, "en").lang == "zh-CN"
    assert i18n.choose("", {}, "zh").lang == "zh-CN"
    assert i18n.choose("lang=klingon", {}, None).lang == "en"
    assert i18n.choose("lang=zh-CN", {"stepscope_lang": "zh-CN"}, None).remember is False


def test_query_sets_cookie_and_cookie_is_remembered(client: TestClient) -> None:
    """?lang=zh-CN answers in Chinese and sets stepscope_lang (SameSite=Lax, a year); later
    pages without ?lang= follow the cookie even when Accept-Language says English."""
    r = client.get("/?lang=zh-CN", headers=EN)
    assert html_lang(r.text) == "zh-CN"
    cookie = next(v for k, v in r.headers.multi_items() if k == "set-cookie" and "lang" in v)
    assert "stepscope_lang=zh-CN" in cookie and "SameSite=Lax" in cookie
    assert "Max-Age=31536000" in cookie
    r = client.get("/my-scenarios", headers=EN)
    assert html_lang(r.text) == "zh-CN" and CJK.search(r.text)
    r = client.get("/?lang=en", headers=ZH)
    assert html_lang(r.text) == "en"
    assert html_lang(client.get("/", headers=ZH).text) == "en"


def test_first_visit_follows_accept_language(client: TestClient) -> None:
    """Without ?lang= or a cookie, Accept-Language decides; otherwise English."""
    assert html_lang(client.get("/", headers=ZH).text) == "zh-CN"
    assert html_lang(client.get("/", headers=EN).text) == "en"
    assert html_lang(client.get("/", headers={"accept-language": "de"}).text) == "en"


# --- every page in both languages ----------------------------------------------------------


def _pages(client: TestClient) -> dict[str, str]:
    r = client.post("/api/v1/scenarios", json={"explainer": "skb", "params": OPS})
    assert r.status_code == 201, r.text
    sid = r.json()["id"]
    return {
        "home": "/",
        "preset": "/explainers/skb/presets/panic?step=2",
        "custom": "/explainers/skb/custom?p="
        + __import__("app.web.sources", fromlist=["x"]).encode_params(OPS),
        "editor": "/explainers/skb/edit",
        "lesson note": "/notes/skb-kernel-check",
        "glossary": "/notes/glossary",
        "my scenarios": "/my-scenarios",
        "slides": "/examples/slides",
        "embed": "/embed/skb/presets/panic",
        "shared": f"/s/{sid}",
        "missing scenario": "/s/Xy3_k9QpLm2aB7cD",
        "not found": "/no/such/page",
        "bad params": "/explainers/skb/presets/nope",
        "offline export": "/export/html?explainer=skb&preset=panic",
        "cwnd": "/explainers/cwnd",
    }


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
def test_every_page_type_renders_in_both_languages(client: TestClient, lang: str) -> None:
    """Home, player (preset, custom, shared, embed), editor, notes, glossary, slides, errors and
    the offline export all say <html lang="…"> right and read in that language."""
    for name, url in _pages(client).items():
        sep = "&" if "?" in url else "?"
        r = client.get(f"{url}{sep}lang={lang}")
        assert r.status_code in (200, 404), (name, r.status_code)
        assert html_lang(r.text) == lang, name
        body = re.sub(r"<script.*?</script>|<style.*?</style>", "", r.text, flags=re.S)
        if lang == "zh-CN":
            assert CJK.search(body), f"{name} has no Chinese"
        elif name != "glossary":  # the glossary's table has a 中文 column in both languages
            assert not CJK.search(body.replace("中文", "")), f"{name} has Chinese in English"


def test_chinese_player_words(client: TestClient) -> None:
    """A Chinese walkthrough: controls, key map, badges and narration are Chinese; kernel
    identifiers stay as they are."""
    r = client.get("/explainers/skb/presets/rx-frame?step=1&lang=zh-CN")
    text = r.text
    for word in ("上一步", "下一步", "播放", "按键", "分享", "导出", "第一步"):
        assert word in text, word
    assert "skb" in text and "Previous step" not in text


def test_lessons_per_language(client: TestClient, tmp_path, monkeypatch) -> None:
    """A lesson is read from content/<lang>/<stem>.md when it exists, else the English file."""
    from app.web.content import Content

    (tmp_path / "zh-CN").mkdir()
    (tmp_path / "demo.md").write_text("---\ntitle: Demo\n---\nIntro.\n\n## Step 1\nOne.\n")
    (tmp_path / "zh-CN" / "demo.md").write_text(
        "---\ntitle: 演示\n---\n引言。\n\n## 第 1 步\n一。\n"
    )
    (tmp_path / "only.md").write_text("---\ntitle: Only English\n---\nx\n")
    c = Content(tmp_path)
    zh = c.lesson("demo", "zh-CN")
    assert zh and zh.title == "演示" and "一。" in zh.step_notes[1]
    en = c.lesson("demo", "en")
    assert en and en.title == "Demo" and "One." in en.step_notes[1]
    fallback = c.lesson("only", "zh-CN")
    assert fallback and fallback.title == "Only English"
    assert c.lesson("../demo", "zh-CN") is None


# --- the switch keeps the page -------------------------------------------------------------


def test_switch_links_keep_path_and_query() -> None:
    """Each language link is this page (a relative ?query: same path) with the same query and
    lang replaced."""
    links = i18n.switch_links("step=3&lang=en&x=a%20b", "en")
    by = {link["lang"]: str(link["href"]) for link in links}
    for lang, href in by.items():
        target = urljoin("http://h/explainers/skb/presets/panic?step=9", href)
        parts = urlsplit(target)
        assert parts.path == "/explainers/skb/presets/panic"
        assert parse_qsl(parts.query) == [("step", "3"), ("x", "a b"), ("lang", lang)]
    assert [bool(link["current"]) for link in links] == [True, False]


def test_header_switch_on_a_player_page(client: TestClient) -> None:
    """The header's switch on a walkthrough at step 3 links to step 3 in the other language."""
    r = client.get("/explainers/skb/presets/rx-frame?step=3", headers=EN)
    hrefs = re.findall(r'href="([^"]+)"[^>]*data-lang-switch="zh-CN"', r.text)
    assert hrefs and hrefs[0].replace("&amp;", "&") == "?step=3&lang=zh-CN"
    zh = client.get("/explainers/skb/presets/rx-frame" + hrefs[0].replace("&amp;", "&"))
    assert html_lang(zh.text) == "zh-CN" and 'data-step="3"' in zh.text


# --- the page cache and the API ------------------------------------------------------------


def test_page_cache_keeps_languages_apart(client: TestClient) -> None:
    """The same cached URL is answered per language, and says it varies by language."""
    url = "/explainers/skb/presets/panic?step=1"
    en = client.get(url, headers=EN)
    zh = client.get(url, headers=ZH)
    again = client.get(url, headers=EN)
    assert html_lang(en.text) == "en" and html_lang(zh.text) == "zh-CN"
    assert again.text == en.text and en.headers["etag"] != zh.headers["etag"]
    assert "Accept-Language" in en.headers["vary"] and "Cookie" in en.headers["vary"]


def test_api_422_in_the_language_of_accept_language(client: TestClient) -> None:
    """The JSON API's 422 msg follows Accept-Language (and ?lang=), with the same loc."""
    bad = {"ops": [{"op": "alloc_skb", "size": 1500}, {"op": "skb_pull", "len": -4}]}
    url = "/api/v1/explainers/skb/run"
    en = client.post(url, json=bad, headers=EN)
    zh = client.post(url, json=bad, headers=ZH)
    assert en.status_code == zh.status_code == 422
    (e,), (z,) = en.json()["detail"], zh.json()["detail"]
    assert e["loc"] == z["loc"] == ["body", "ops", 1, "len"]
    assert e["msg"] == "len must be ≥ 0; you gave -4."
    assert CJK.search(z["msg"]) and "-4" in z["msg"] and "len" in z["msg"]
    assert zh.headers["content-language"] == "zh-CN"
    q = client.post(url + "?lang=zh-CN", json=bad, headers=EN)
    assert q.json()["detail"][0]["msg"] == z["msg"]


def test_editor_422_in_the_page_language(client: TestClient) -> None:
    """The editor shows a field's problem in the page's language."""
    form = {"action": "validate", "json": '{"ops": [{"op": "alloc_skb", "size": -1}]}'}
    r = client.post("/explainers/skb/edit?lang=zh-CN", data=form)
    assert html_lang(r.text) == "zh-CN"
    assert "必须 ≥ 0" in r.text or "必须" in r.text


def test_plain_string_issue_still_works() -> None:
    """An explainer not yet converted may raise ParamIssue(msg="text"): shown as it is."""
    from app.sim.core import ParamError, ParamIssue

    e = ParamError([ParamIssue(loc=("x",), msg="x {is} odd")])
    assert e.issues[0].msg == "x {is} odd"
    assert e.issues[0].text(i18n.gettext_for("zh-CN")) == "x {is} odd"


def test_api_frames_narrate_in_the_request_language(client: TestClient) -> None:
    """The run API's frames carry their narration in the request's language, same figures."""
    url = "/api/v1/explainers/skb/run"
    en = client.post(url, json=OPS, headers=EN).json()["frames"]
    zh = client.post(url, json=OPS, headers=ZH).json()["frames"]
    assert [f["skb"] for f in en] == [f["skb"] for f in zh]
    for e, z in zip(en, zh, strict=True):
        assert CJK.search(z["narration"]) and not CJK.search(e["narration"])
        assert sorted(re.findall(r"\d+", e["narration"])) == sorted(
            re.findall(r"\d+", z["narration"])
        )


def test_pictures_kept_in_a_process_follow_the_readers_language(client: TestClient) -> None:
    """A process keeps the packet-path pictures' layout (with its sk_buff labels) between
    requests: a Chinese reader's home page drawn first must not leave Chinese labels in the
    English one (the path thumbnail showed "−20 字节" to English readers), nor the reverse."""
    picture = importlib.import_module("app.web.explainers.path.picture")
    picture.LAYOUTS.clear()
    zh = client.get("/?lang=zh-CN")
    en = client.get("/?lang=en")
    assert zh.status_code == en.status_code == 200
    english = re.sub(r"<script.*?</script>|<style.*?</style>", "", en.text, flags=re.S)
    assert "字节" in zh.text
    assert not CJK.search(english.replace("中文", "")), "Chinese in the English home page"
    picture.LAYOUTS.clear()
    assert "bytes" in client.get("/?lang=en").text
    assert "−20 bytes" not in client.get("/?lang=zh-CN").text
