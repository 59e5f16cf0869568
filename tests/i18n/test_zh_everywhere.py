"""Chinese everywhere: every page type and a step of every preset, rendered in zh-CN, show no
English catalog text (see :mod:`tests.i18n.leaks` for what counts), and every walkthrough has
its lesson written in Chinese.

One app serves the whole module, so each simulation runs once. Each preset contributes two
steps (the first after the start and the middle one) through the player's frame fragment: the
picture, the fields, the narration and the lesson's note of that step. The congestion-control
presets run their first few seconds only (the same words; a 60 s CUBIC run costs seconds)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.explainers import builtin
from app.main import create_app
from app.settings import Settings
from app.web.content import Content
from app.web.sources import encode_params
from tests.i18n.leaks import english_in

ROOT = Path(__file__).resolve().parents[2]
CJK = re.compile(r"[\u4e00-\u9fff]")
PLUGINS = {p.sim.name: p for p in builtin()}
# Congestion-control presets simulate up to a minute of a fast link: the steps of the first
# seconds carry the same picture and field words.
CWND_SECONDS = 4


@pytest.fixture(scope="module")
def zh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    db = tmp_path_factory.mktemp("zh") / "zh.db"
    app = create_app(Settings(database_url=f"sqlite:///{db}"))
    with TestClient(app, raise_server_exceptions=False, cookies={"stepscope_lang": "zh-CN"}) as c:
        yield c


def _get(client: TestClient, url: str, ok: tuple[int, ...] = (200,)) -> str:
    sep = "&" if "?" in url else "?"
    r = client.get(f"{url}{sep}lang=zh-CN")
    assert r.status_code in ok, (url, r.status_code, r.text[:300])
    assert '<html lang="zh-CN"' in r.text or "<html" not in r.text, url
    return r.text


def _report(leaks: dict[str, list[tuple[str, str]]]) -> str:
    lines = []
    for where, found in leaks.items():
        for msgid, text in found:
            lines.append(f"{where}: {msgid!r} in {text!r}")
    return "English catalog text on Chinese pages:\n" + "\n".join(lines)


def _page_urls(client: TestClient) -> dict[str, tuple[str, tuple[int, ...]]]:
    skb = {"ops": [{"op": "alloc_skb", "size": 1500}, {"op": "skb_put", "len": 100}]}
    r = client.post("/api/v1/scenarios", json={"explainer": "skb", "params": skb})
    assert r.status_code == 201, r.text
    shared = r.json()["id"]
    urls: dict[str, tuple[str, tuple[int, ...]]] = {
        "home": ("/", (200,)),
        "glossary": ("/notes/glossary", (200,)),
        "note": ("/notes/cwnd-kernel-check", (200,)),
        "my scenarios": ("/my-scenarios", (200,)),
        "shared": (f"/s/{shared}", (200,)),
        "shared embed": (f"/embed/s/{shared}", (200,)),
        "slides": ("/examples/slides", (200,)),
        "not found": ("/no/such/page", (404,)),
        "missing scenario": ("/s/Xy3_k9QpLm2aB7cD", (404,)),
        "no such preset": ("/explainers/skb/presets/nope", (404, 422)),
        "bad step": ("/explainers/skb/presets/panic?step=x", (422,)),
    }
    for name, plugin in PLUGINS.items():
        slug = plugin.sim.presets[0].slug
        urls[f"{name} player"] = (f"/explainers/{name}/presets/{slug}?step=1", (200,))
        urls[f"{name} embed"] = (f"/embed/{name}/presets/{slug}", (200,))
        for action in plugin.web.actions:
            # the congestion-control compare page: a few seconds of a slower link (same words)
            query = f"?duration_s={CWND_SECONDS}&rate_mbps=20" if name == "cwnd" else ""
            urls[f"{name} {action.key}"] = (f"/explainers/{name}/{action.path}{query}", (200,))
    return urls


def test_every_page_type_in_chinese(zh: TestClient) -> None:
    """Home, players, embeds, compare pages, notes, glossary, my scenarios, a shared scenario,
    the slide deck and the error pages carry no English catalog text (editors: below)."""
    leaks = {}
    for name, (url, ok) in _page_urls(zh).items():
        found = english_in(_get(zh, url, ok))
        if found:
            leaks[name] = found
    assert not leaks, _report(leaks)


def test_editors_in_chinese(zh: TestClient) -> None:
    """Every explainer's editor, and its validation errors and hints, read in Chinese."""
    leaks = {}
    for name, plugin in PLUGINS.items():
        # the first preset, and the one with the most parameters (rows of every kind, e.g. a
        # TCP script with network events, whose drop-downs list every choice)
        richest = max(plugin.sim.presets, key=lambda p: (len(p.params), len(repr(p.params))))
        for slug in dict.fromkeys((plugin.sim.presets[0].slug, richest.slug)):
            found = english_in(_get(zh, f"/explainers/{name}/edit?preset={slug}"))
            if found:
                leaks[f"{name} editor ({slug})"] = found
        for what, text in (("broken JSON", '{"no_such_field": 1'), ("unknown field", "[1]")):
            form = {"action": "validate", "json": text}
            r = zh.post(f"/explainers/{name}/edit?lang=zh-CN", data=form)
            assert r.status_code in (200, 422), (name, r.status_code)
            assert CJK.search(r.text)
            found = english_in(r.text)
            if found:
                leaks[f"{name} editor, {what}"] = found
    assert not leaks, _report(leaks)


def _steps(zh: TestClient, name: str) -> Iterator[tuple[str, str]]:
    """(where, frame fragment URL) for two steps of every preset of one explainer."""
    plugin = PLUGINS[name]
    site = zh.app.state.site  # type: ignore[attr-defined]
    for preset in plugin.sim.presets:
        raw: dict[str, Any] = dict(preset.params)
        if name == "cwnd":
            raw["duration_s"] = min(raw.get("duration_s", CWND_SECONDS), CWND_SECONDS)
            query = f"p={encode_params(raw)}"
        else:
            query = f"preset={preset.slug}"
        _, trace = site.run(plugin, raw)
        for step in sorted({min(1, len(trace.frames) - 1), len(trace.frames) // 2}):
            url = f"/explainers/{name}/frames?{query}&start={step}&count=1"
            yield f"{name}/{preset.slug} step {step}", url


@pytest.mark.parametrize("name", sorted(PLUGINS))
def test_steps_of_every_preset_in_chinese(zh: TestClient, name: str) -> None:
    """The picture, fields, narration and lesson note of steps of every preset: no English
    catalog text."""
    leaks = {}
    for where, url in _steps(zh, name):
        html = _get(zh, url)
        assert CJK.search(html), where
        found = english_in(html)
        if found:
            leaks[where] = found
    assert not leaks, _report(leaks)


def test_every_lesson_is_written_in_chinese() -> None:
    """Every preset's lesson (and every explainer's notes) has a Chinese version with a
    Chinese title, and it has a note for each step the English lesson explains."""
    content = Content(ROOT / "content")
    missing = []
    for name, plugin in PLUGINS.items():
        stems = {p.lesson for p in plugin.sim.presets} | {n.stem for n in content.lessons_for(name)}
        for stem in sorted(stems):
            en = content.lesson(stem, "en")
            zh = content.lesson(stem, "zh-CN")
            if not (ROOT / "content" / "zh-CN" / f"{stem}.md").exists() or zh is None:
                missing.append(f"{stem}: no content/zh-CN/{stem}.md")
                continue
            if not CJK.search(zh.title) or not CJK.search(zh.summary or ""):
                missing.append(f"{stem}: title or summary not in Chinese")
            if en and set(en.step_notes) - set(zh.step_notes):
                missing.append(
                    f"{stem}: no Chinese note for steps {set(en.step_notes) - set(zh.step_notes)}"
                )
    assert not missing, missing
