"""The explainer contract, checked over every registered explainer plus a toy one defined only in
the tests: presets have lessons, runs are deterministic and report progress, params round-trip,
every page and export renders, bad input gets 422 — with no edit of generic code for the toy."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from markupsafe import escape

from app.explainers import builtin
from app.main import create_app
from app.settings import Settings
from app.sim.core import Cancelled
from app.web.plugin import Plugin
from tests.contract.toy import LESSON, LESSON_ZH, TOY

REPO = Settings().root
PLUGINS: tuple[Plugin, ...] = (*builtin(), TOY)
IDS = [p.name for p in PLUGINS]


@pytest.fixture(scope="module")
def toy_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A site root like the repository's, whose content folder also holds the toy's lesson."""
    root = tmp_path_factory.mktemp("site")
    for part in ("templates", "static", "node_modules"):
        (root / part).symlink_to(REPO / part)
    shutil.copytree(REPO / "content", root / "content")
    (root / "content" / "toy-count.md").write_text(LESSON, encoding="utf-8")
    (root / "content" / "zh-CN" / "toy-count.md").write_text(LESSON_ZH, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def client(toy_root: Path) -> Iterator[TestClient]:
    settings = Settings(root=toy_root, database_url=f"sqlite:///{toy_root / 'test.db'}")
    with TestClient(create_app(settings, PLUGINS), raise_server_exceptions=False) as c:
        yield c


@pytest.mark.parametrize("plugin", PLUGINS, ids=IDS)
def test_presets_have_lessons(client: TestClient, plugin: Plugin) -> None:
    """Every preset names a lesson file whose front matter points back at it."""
    site = client.app.state.site  # type: ignore[attr-defined]
    assert plugin.sim.preset(plugin.sim.default_preset) is not None
    for preset in plugin.sim.presets:
        lesson = site.content.lesson(preset.lesson)
        assert lesson is not None, preset.lesson
        assert (lesson.explainer, lesson.preset) == (plugin.name, preset.slug)


def _default(plugin: Plugin) -> Any:
    preset = plugin.sim.preset(plugin.sim.default_preset)
    assert preset is not None
    return plugin.sim.parse(dict(preset.params))


@pytest.mark.parametrize("plugin", PLUGINS, ids=IDS)
def test_runs_are_deterministic_and_json_round_trips(plugin: Plugin) -> None:
    """Two runs of the same params give the same public JSON; parse(dump(p)) == p."""
    params = _default(plugin)
    assert plugin.sim.parse(plugin.sim.dump(params)) == params
    assert plugin.sim.parse(json.loads(json.dumps(plugin.sim.dump(params)))) == params
    a, b = plugin.sim.run(params), plugin.sim.run(params)
    ja, jb = plugin.sim.public_json(a), plugin.sim.public_json(b)
    assert json.dumps(ja, sort_keys=True) == json.dumps(jb, sort_keys=True)
    assert [f.narration.render() for f in a.frames] == [f.narration.render() for f in b.frames]
    assert all(plugin.sim.result_kind(f.result).key == f.result for f in a.frames)


@pytest.mark.parametrize("plugin", PLUGINS, ids=IDS)
def test_cost_is_declared_and_runs_report_progress_and_cancel(plugin: Plugin) -> None:
    """A run's cost is known before it starts, progress climbs to the total, and a progress
    callback that raises Cancelled stops the run."""
    params = _default(plugin)
    cost = plugin.sim.cost(params)
    assert 0 < cost <= plugin.sim.limits.max_work
    seen: list[tuple[float, float]] = []
    plugin.sim.run(params, lambda done, total: seen.append((done, total)))
    assert seen and all(0 <= d <= t for d, t in seen)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)

    def stop(done: float, total: float) -> None:
        raise Cancelled

    with pytest.raises(Cancelled):
        plugin.sim.run(params, stop)


@pytest.mark.parametrize("plugin", PLUGINS, ids=IDS)
def test_player_editor_share_embed_and_exports_render(client: TestClient, plugin: Plugin) -> None:
    """The generic pages all work for the explainer: player, editor (and Run), share, embed,
    every export but PNG (drawn in chromium; see the toy test and tests/web/test_export.py)."""
    name, slug = plugin.name, plugin.sim.default_preset
    page = client.get(f"/explainers/{name}/presets/{slug}?step=1")
    assert page.status_code == 200 and 'data-step="1"' in page.text
    assert client.get(f"/explainers/{name}").status_code == 200
    assert client.get(f"/explainers/{name}/edit?preset={slug}").status_code == 200
    preset = plugin.sim.preset(slug)
    assert preset is not None
    run = client.post(
        f"/explainers/{name}/edit",
        data={"json": json.dumps(dict(preset.params)), "action": "run"},
        follow_redirects=False,
    )
    assert run.status_code == 303
    assert client.get(run.headers["location"]).status_code == 200
    shared = client.post(
        "/api/v1/scenarios", json={"explainer": name, "params": dict(preset.params)}
    )
    assert shared.status_code == 201
    sid = shared.json()["id"]
    assert client.get(f"/s/{sid}?step=1").status_code == 200
    assert client.get(f"/embed/s/{sid}").status_code == 200
    assert client.get(f"/embed/{name}/presets/{slug}?controls=min").status_code == 200
    for fmt in ("svg", "json", "html"):
        r = client.get(f"/export/{fmt}?explainer={name}&preset={slug}&step=1")
        assert r.status_code == 200, (fmt, r.text[:200])
    for action in plugin.web.actions:
        assert client.get(f"/explainers/{name}/{action.path}").status_code == 200


@pytest.mark.parametrize("plugin", PLUGINS, ids=IDS)
def test_bad_input_is_a_422_naming_the_field(client: TestClient, plugin: Plugin) -> None:
    """Nonsense params answer 422 with located issues (never a 500)."""
    for body in ("nonsense", {"no_such_field": 1}, [1, 2]):
        r = client.post(f"/api/v1/explainers/{plugin.name}/run", json=body)
        assert r.status_code == 422
        assert r.json()["detail"] and all("loc" in d and "msg" in d for d in r.json()["detail"])


@pytest.mark.parametrize("plugin", PLUGINS, ids=IDS)
def test_api_lists_and_runs_it(client: TestClient, plugin: Plugin) -> None:
    """GET /api/v1/explainers lists it; its default preset runs through the API."""
    listed = {e["name"]: e for e in client.get("/api/v1/explainers").json()["explainers"]}
    entry = listed[plugin.name]
    assert entry["sim_version"] == plugin.sim.sim_version
    params = next(p["params"] for p in entry["presets"] if p["slug"] == plugin.sim.default_preset)
    r = client.post(f"/api/v1/explainers/{plugin.name}/run", json=params)
    assert r.status_code == 200 and r.json()["sim_version"] == plugin.sim.sim_version


@pytest.mark.parametrize("plugin", PLUGINS, ids=IDS)
def test_home_card_shows_the_declared_thumbnail(client: TestClient, plugin: Plugin) -> None:
    """Every explainer declares a thumbnail: a step that exists in one of its presets. The home
    page draws that step's picture in the card, named by the step's narration and linking to the
    walkthrough at that step."""
    thumb = plugin.web.thumbnail
    assert thumb is not None, f"{plugin.name} declares no WebView.thumbnail"
    preset = plugin.sim.preset(thumb.preset)
    assert preset is not None, f"{plugin.name}: thumbnail preset {thumb.preset!r} does not exist"
    trace = plugin.sim.run(plugin.sim.parse(dict(preset.params)))
    assert 0 <= thumb.step < len(trace.frames), (thumb.step, len(trace.frames))
    frame = trace.frames[thumb.step]
    html = client.get("/").text
    start = html.index(f'id="explainer-{plugin.name}"')
    card = html[start : html.index("</article>", start)]
    href = f"/explainers/{plugin.name}/presets/{thumb.preset}?step={thumb.step}"
    assert f'id="thumb-{plugin.name}" href="{href}"' in card
    alt = str(escape(frame.narration.render()))
    assert f'role="img" aria-label="{alt}"' in card
    # the picture itself, its element ids prefixed so that no two pictures share one
    assert "thumb-inner" in card and f'id="thumb-{plugin.name}-' in card
    assert "<a " not in card.split('class="thumb-inner"')[1].split("<figcaption>")[0]


def test_toy_shows_its_own_words_badges_and_links(client: TestClient) -> None:
    """The toy's narration, its declared result label, its lesson note and its action appear."""
    html = client.get("/explainers/toy/presets/count?step=5").text
    assert "The counter is 5." in html and "reached done" in html
    assert "The counter passes two." in html
    assert 'id="action-again"' in html and "/explainers/toy/presets/count" in html
    assert 'id="toy-bar"' in html


def test_toy_speaks_chinese_from_its_own_catalog_and_lesson(client: TestClient) -> None:
    """In zh-CN the toy's words come from its own catalog (tests/contract/locale, a fallback
    after the site's catalog, which it never edits) and its lesson from content/zh-CN/."""
    html = client.get("/explainers/toy/presets/count?step=5&lang=zh-CN").text
    assert "计数器现在是 5。" in html and "The counter is 5." not in html
    assert "玩具计数器" in html and "再数一遍" in html  # title, action label
    assert "到达" in html  # the result badge, a message with a parameter
    step2 = client.get("/explainers/toy/presets/count?step=2&lang=zh-CN").text
    assert "计数器经过二。" in step2
    english = client.get("/explainers/toy/presets/count?step=5&lang=en").text
    assert "The counter is 5." in english and "计数器" not in english
    editor = client.get("/explainers/toy/edit?preset=count&lang=zh-CN").text
    assert "上限" in editor  # an editor label


def test_toy_png_export(client: TestClient) -> None:
    """The toy's picture exports as a PNG like the built-in explainers' (Debian chromium)."""
    r = client.get("/export/png?explainer=toy&preset=count&step=2&scale=1")
    assert r.status_code == 200 and r.content[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("plugin", PLUGINS, ids=IDS)
def test_declared_styles_and_packages_are_served_and_linked(
    client: TestClient, plugin: Plugin
) -> None:
    """A view's stylesheets are linked by every page showing it (player, embed, home) and
    served; its scripts, from /static or from a declared npm package's /vendor folder, load."""
    name, slug = plugin.name, plugin.sim.default_preset
    pages = [
        client.get(f"/explainers/{name}/presets/{slug}").text,
        client.get(f"/embed/{name}/presets/{slug}").text,
        client.get("/").text,
    ]
    for href in plugin.web.styles:
        assert all(f'<link rel="stylesheet" href="{href}">' in page for page in pages), href
        assert client.get(href).status_code == 200, href
    for package in plugin.web.packages:
        assert (REPO / "node_modules" / package).is_dir(), package
    for src in plugin.web.scripts:
        if src.startswith("/vendor/"):
            assert any(src.startswith(f"/vendor/{p}/") for p in plugin.web.packages), (
                f"{src}: declare its npm package in WebView.packages"
            )
        assert client.get(src).status_code == 200, src


GENERIC = [
    *sorted((REPO / "app" / "web").glob("*.py")),
    *sorted((REPO / "app" / "web" / "routes").glob("*.py")),
    *sorted((REPO / "app" / "web" / "classes").glob("*.py")),
    *sorted(p for p in (REPO / "templates").rglob("*.html") if "explainers" not in p.parts),
    *sorted((REPO / "static" / "js").glob("*.js")),
    *sorted((REPO / "static" / "css").glob("*.css")),
]


def test_generic_code_names_no_explainer() -> None:
    """Player, editor, share, embed, export, sessions, API, templates and the site's stylesheets
    never name an explainer (nor its package or algorithms): explainer code, styles included,
    lives in its own package (a view declares its stylesheets in ``WebView.styles``)."""
    names = {p.name for p in PLUGINS} | {
        type(p.sim).__module__.split(".")[2] for p in PLUGINS if p.name != "toy"
    }
    # Names that are also everyday words of web code (a URL's path) are caught where code would
    # name the explainer: in an explainer URL, an import, or a comparison with a name.
    common = {"path"}
    # ...nor a chart library an explainer's view declares (WebView.packages)
    bare = (names - common) | {"sk_buff", "cubic", "bbr", "reno", "vllm", "plotly"}
    patterns = [re.compile(r"\b(" + "|".join(sorted(bare)) + r")\b", re.IGNORECASE)]
    for word in names & common:
        patterns += [
            re.compile(rf"explainers/{word}\b"),
            re.compile(rf"app\.(sim|web\.explainers)\.{word}\b"),
            re.compile(rf"(name|explainer)\S*\s*(==|!=)\s*['\"]{word}['\"]"),
        ]
    found = [
        f"{path.relative_to(REPO)}:{n}: {line.strip()}"
        for path in GENERIC
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if any(p.search(line) for p in patterns)
    ]
    assert GENERIC and not found, "\n".join(found)
