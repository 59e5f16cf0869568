"""The htmx scenario editor: add, remove, reorder, edit, with per-field errors."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from app.web.sources import decode_params

HX = {"HX-Request": "true"}


@pytest.fixture
def client(shared_client: TestClient) -> TestClient:
    """These tests fill in forms and run them: one app for the module (tests/conftest.py)."""
    return shared_client


def form(ops: list[dict], **extra: str) -> dict[str, str]:
    data = {"ops.count": str(len(ops)), **extra}
    for i, op in enumerate(ops):
        for key, value in op.items():
            data[f"ops.{i}.{key}"] = str(value)
    return data


def test_editor_starts_from_a_preset(client: TestClient) -> None:
    """/explainers/skb/edit?preset=rx-frame shows that preset's ops as rows."""
    html = client.get("/explainers/skb/edit?preset=rx-frame").text
    assert 'id="ops-row-0"' in html and 'name="ops.0.op"' in html


def test_field_error_is_shown_beside_the_field(client: TestClient) -> None:
    """A negative length marks that field invalid with the simulation's message."""
    ops = [{"op": "alloc_skb", "size": 256}, {"op": "skb_put", "len": -5}]
    html = client.post("/explainers/skb/edit", data=form(ops), headers=HX).text
    assert 'id="err-ops-1-len"' in html
    assert "-5" in html
    assert "Fix the highlighted fields" in html


def test_add_remove_and_reorder(client: TestClient) -> None:
    """Actions insert a row, delete a row and swap rows, keeping values."""
    ops = [
        {"op": "alloc_skb", "size": 256},
        {"op": "skb_reserve", "len": 16},
        {"op": "skb_put", "len": 7},
    ]
    html = client.post("/explainers/skb/edit", data=form(ops, action="add:ops:-1"), headers=HX).text
    assert 'id="ops-row-3"' in html
    html = client.post(
        "/explainers/skb/edit", data=form(ops, action="remove:ops:1"), headers=HX
    ).text
    assert 'id="ops-row-2"' not in html and 'value="7"' in html
    html = client.post("/explainers/skb/edit", data=form(ops, action="down:ops:1"), headers=HX).text
    assert html.index('value="skb_put" selected') < html.index('value="skb_reserve" selected')


def test_run_redirects_to_the_custom_player(client: TestClient) -> None:
    """Run with valid ops answers HX-Redirect to the custom scenario link; plain POST a 303."""
    ops = [{"op": "alloc_skb", "size": 256}, {"op": "skb_put", "len": 10}]
    r = client.post("/explainers/skb/edit", data=form(ops, action="run"), headers=HX)
    assert r.headers["HX-Redirect"].startswith("/explainers/skb/custom?p=")
    page = client.get(r.headers["HX-Redirect"])
    assert page.status_code == 200 and 'data-count="2"' in page.text
    r = client.post("/explainers/skb/edit", data=form(ops, action="run"), follow_redirects=False)
    assert r.status_code == 303


def test_run_with_errors_does_not_redirect(client: TestClient) -> None:
    """Run with an unknown op stays on the editor; a plain POST answers 422."""
    ops = [{"op": "alloc_skb", "size": 256}, {"op": "skb_wat", "len": 1}]
    r = client.post("/explainers/skb/edit", data=form(ops, action="run"), headers=HX)
    assert "HX-Redirect" not in r.headers and "skb_wat" in r.text
    r = client.post("/explainers/skb/edit", data=form(ops, action="run"))
    assert r.status_code == 422


CWND_FORM = {
    "link.rate_mbps": "20",
    "link.rtt_ms": "40",
    "link.buffer.kind": "buffer_bdp",
    "link.buffer.value": "1",
    "duration_s": "5",
    "flows.count": "1",
    "flows.0.cc": "cubic",
    "flows.0.start_s": "0",
}


def test_cwnd_editor_shows_link_and_flow_fields(client: TestClient) -> None:
    """The congestion editor is a form: link fields, run fields and one row per flow."""
    html = client.get("/explainers/cwnd/edit?preset=bbr-vs-cubic").text
    assert 'name="link.rate_mbps"' in html and 'name="flows.1.cc"' in html


def test_cwnd_editor_errors_sit_beside_their_fields(client: TestClient) -> None:
    """A zero rate, a negative buffer and an unknown cc are each reported beside the field."""
    bad = {**CWND_FORM, "link.rate_mbps": "0", "link.buffer.value": "-1", "flows.0.cc": "vegas"}
    html = client.post("/explainers/cwnd/edit", data=bad, headers=HX).text
    assert 'id="err-link-rate_mbps"' in html
    assert 'id="err-link-buffer"' in html
    assert 'id="err-flows-0-cc"' in html


def test_cwnd_editor_adds_and_removes_flows_and_runs(client: TestClient) -> None:
    """Add a flow, remove it again, then Run opens the custom player."""
    html = client.post(
        "/explainers/cwnd/edit", data={**CWND_FORM, "action": "add:flows:-1"}, headers=HX
    ).text
    assert 'id="flows-row-1"' in html
    two = {**CWND_FORM, "flows.count": "2", "flows.1.cc": "reno", "flows.1.start_s": "1"}
    html = client.post(
        "/explainers/cwnd/edit", data={**two, "action": "remove:flows:0"}, headers=HX
    ).text
    assert 'id="flows-row-1"' not in html and 'value="reno" selected' in html
    r = client.post("/explainers/cwnd/edit", data={**CWND_FORM, "action": "run"}, headers=HX)
    page = client.get(r.headers["HX-Redirect"])
    assert page.status_code == 200 and 'id="cwnd-chart"' in page.text


def test_run_of_a_long_run_navigates_to_its_progress_page(tmp_path: Path) -> None:
    """A run that becomes a job is not answered with the job page (htmx would swap it into the
    form): Run redirects to the scenario's page, which is the job's progress page (202)."""
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'job.db'}", job_threshold_s=0.0)
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        ops = [{"op": "alloc_skb", "size": 512}, {"op": "skb_put", "len": 11}]
        r = client.post("/explainers/skb/edit", data=form(ops, action="run"), headers=HX)
        assert r.status_code == 200 and r.text == ""
        target = r.headers["HX-Redirect"]
        assert target.startswith("/explainers/skb/custom?p=")
        page = client.get(target)
        assert page.status_code in (200, 202)
        if page.status_code == 202:
            assert 'id="job-progress"' in page.text and "/static/js/job.js" in page.text


class _FormFields(HTMLParser):
    """What a browser would post from the editor form as drawn: inputs (checkboxes only when
    checked), each select's selected option, the JSON textarea."""

    def __init__(self) -> None:
        super().__init__()
        self.pairs: list[tuple[str, str]] = []
        self.select: str | None = None
        self.first: tuple[str, str] | None = None
        self.chosen = False
        self.textarea: str | None = None
        self.text = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "input" and "name" in a:
            if a.get("type") == "checkbox" and "checked" not in a:
                return
            self.pairs.append((a["name"], a.get("value", "")))
        elif tag == "select":
            self.select, self.first, self.chosen = a["name"], None, False
        elif tag == "option" and self.select is not None:
            if self.first is None:
                self.first = (self.select, a.get("value", ""))
            if "selected" in a and not self.chosen:
                self.pairs.append((self.select, a.get("value", "")))
                self.chosen = True
        elif tag == "textarea":
            self.textarea, self.text = a["name"], ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "select" and self.select is not None:
            if not self.chosen and self.first is not None:
                self.pairs.append(self.first)
            self.select = None
        elif tag == "textarea" and self.textarea is not None:
            self.pairs.append((self.textarea, self.text))
            self.textarea = None

    def handle_data(self, data: str) -> None:
        if self.textarea is not None:
            self.text += data


def drawn_form(html: str) -> dict[str, list[str]]:
    parser = _FormFields()
    parser.feed(
        html[
            html.index('<form id="editor"') : html.index("</form>", html.index('<form id="editor"'))
        ]
    )
    out: dict[str, list[str]] = {}
    for name, value in parser.pairs:
        out.setdefault(name, []).append(value)
    return out


def test_every_preset_opens_as_a_form_and_round_trips(client: TestClient) -> None:
    """Each preset of each explainer opens Edit as a form (not the bare JSON box) and posting
    the form as drawn runs the very params of the preset: the same parse, so the same trace
    (the run's content address is the same)."""
    site = client.app.state.site  # type: ignore[attr-defined]
    for plugin in site.plugins:
        for preset in plugin.sim.presets:
            where = f"{plugin.name}/{preset.slug}"
            html = client.get(f"/explainers/{plugin.name}/edit?preset={preset.slug}").text
            assert 'name="_form"' in html and '<details class="json-advanced"' in html, where
            fields = drawn_form(html)
            assert len(fields) > 1, where
            r = client.post(
                f"/explainers/{plugin.name}/edit",
                data={**fields, "action": "run"},
                headers=HX,
            )
            target = r.headers.get("HX-Redirect", "")
            assert target.startswith(f"/explainers/{plugin.name}/custom?p="), (where, r.text[:400])
            token = parse_qs(urlparse(target).query)["p"][0]
            rebuilt = plugin.sim.parse(decode_params(token))
            original = plugin.sim.parse(dict(preset.params))
            assert rebuilt == original, where
            assert site.runs.key(plugin.sim, rebuilt) == site.runs.key(plugin.sim, original)


def test_a_json_error_shows_once_in_the_pages_language(client: TestClient) -> None:
    """Broken JSON is reported once, beside the box, in the page's words (never the json
    module's "Expecting value"), in the JSON-only editor and under the form alike."""
    broken = '{"script": [}'
    for lang, words in (("en", "That is not valid JSON"), ("zh-CN", "这不是合法的 JSON")):
        html = client.post(
            f"/explainers/tcp/edit?lang={lang}", data={"json": broken}, headers=HX
        ).text
        assert html.count(words) == 1, lang
        assert "Expecting" not in html and 'id="err-json"' in html
        assert 'aria-describedby="err-json"' in html
    page = client.get("/explainers/tcp/edit?preset=handshake&lang=zh-CN").text
    fields = drawn_form(page)
    fields["json"] = ['{"script": [1,]}']
    html = client.post("/explainers/tcp/edit?lang=zh-CN", data=fields, headers=HX).text
    assert html.count("这不是合法的 JSON") == 1 and "Expecting" not in html


def test_json_edited_under_the_form_wins_and_reopens_as_the_form(client: TestClient) -> None:
    """Changing the advanced JSON (the form's own fields unchanged) applies the JSON: the form
    comes back drawn from it, the JSON box still open."""
    page = client.get("/explainers/tcp/edit?preset=handshake").text
    fields = drawn_form(page)
    edited = json.loads(fields["json"][0])
    edited["rtt_ms"] = 77
    fields["json"] = [json.dumps(edited)]
    html = client.post("/explainers/tcp/edit", data=fields, headers=HX).text
    assert re.search(r'name="rtt_ms" value="77"', html)
    assert '<details class="json-advanced" open' in html
    fields = drawn_form(page)  # the JSON as drawn: the fields are what counts
    fields["rtt_ms"] = ["33"]
    html = client.post("/explainers/tcp/edit", data=fields, headers=HX).text
    assert re.search(r'name="rtt_ms" value="33"', html)


def test_errors_name_the_visible_label_in_the_pages_language(client: TestClient) -> None:
    """The issue beside a field starts with that field's label, translated (速率 for rate)."""
    bad = {**CWND_FORM, "link.rate_mbps": "0"}
    for lang, label in (("en", "rate: "), ("zh-CN", "速率：")):
        html = client.post(f"/explainers/cwnd/edit?lang={lang}", data=bad, headers=HX).text
        m = re.search(r'<span class="field-error" id="err-link-rate_mbps">([^<]*)</span>', html)
        assert m and m.group(1).startswith(label), (lang, m and m.group(1))
    net = {
        "script.count": "1",
        "script.0.t_ms": "0",
        "script.0.endpoint": "client",
        "script.0.call": "connect",
        "network.count": "1",
        "network.0.kind": "drop",
        "network.0.from": "client",
        "network.0.nth": "0",
    }
    html = client.post("/explainers/tcp/edit?lang=en", data=net, headers=HX).text
    m = re.search(r'id="err-network-0-nth">([^<]*)<', html)  # loc network.0.drop.nth
    assert m and m.group(1).startswith("its segment number: "), html[:2000]


def test_issues_of_fields_the_form_cannot_draw_name_their_label(client: TestClient) -> None:
    """Params the form cannot carry (a checkbox given "no") open as JSON only; their issues
    still start with the field's label in the page's language, not the raw JSON key; a key
    the form has no field for keeps its name."""
    bad = json.dumps({"path": "tx", "packets": 0, "tso": "no"})
    for lang, packets, tso in (
        ("en", "packets: ", "TSO (the NIC segments one large skb): "),
        ("zh-CN", "报文数：", "TSO（由网卡把一个大 skb 分段）："),
    ):
        html = client.post(f"/explainers/path/edit?lang={lang}", data={"json": bad}, headers=HX)
        issues = re.findall(r"<li>([^<]*)</li>", html.text.split('class="form-issues"')[1])
        assert any(i.startswith(packets) for i in issues), (lang, issues)
        assert any(i.startswith(tso) for i in issues), (lang, issues)
    html = client.post(
        "/explainers/tcp/edit?lang=en", data={"json": '{"script": "x"}'}, headers=HX
    ).text
    assert "Script: socket calls: " in html
    html = client.post(
        "/explainers/path/edit?lang=en", data={"json": '{"no_such": 1}'}, headers=HX
    ).text
    assert "no_such: " in html


def test_choices_and_units_read_in_the_pages_language(client: TestClient) -> None:
    """A choice's option shows its words translated while its value stays the params' own; a
    unit sits in the language's brackets; identifiers (syscall names) stay as they are."""
    en = client.get("/explainers/tcp/edit?preset=handshake&lang=en").text
    zh = client.get("/explainers/tcp/edit?preset=handshake&lang=zh-CN").text
    assert re.search(r'<option value="client"[^>]*>client</option>', en)
    assert re.search(r'<option value="client"[^>]*>客户端</option>', zh)
    assert re.search(r'<option value="listen"[^>]*>listen</option>', zh)
    assert '<span class="unit">(ms)</span>' in en and '<span class="unit">（ms）</span>' in zh
    zh = client.get("/explainers/scheduler/edit?preset=continuous-batching&lang=zh-CN").text
    assert re.search(r'<option value="priority"[^>]*>priority（优先级）</option>', zh)
    # every network event kind of a TCP script is a word in Chinese (delay too)
    zh = client.get("/explainers/tcp/edit?preset=keepalive&lang=zh-CN").text
    kinds = re.search(r'<select name="network\.0\.kind".*?</select>', zh, re.S)
    assert kinds
    options = dict(re.findall(r'<option value="(\w+)"[^>]*>([^<]*)</option>', kinds.group(0)))
    assert set(options) == {"drop", "delay", "duplicate", "reorder"}, options
    assert all(re.search(r"[\u4e00-\u9fff]", text) for text in options.values()), options


def test_network_event_rows_add_switch_kind_and_remove(client: TestClient) -> None:
    """TCP network events are rows: add one, switch drop → delay (count goes, ms comes), remove."""
    base = {
        "script.count": "1",
        "script.0.t_ms": "0",
        "script.0.endpoint": "client",
        "script.0.call": "connect",
        "network.count": "0",
    }
    html = client.post(
        "/explainers/tcp/edit", data={**base, "action": "add:network:-1"}, headers=HX
    ).text
    assert 'id="network-row-0"' in html and 'name="network.0.count"' in html
    assert 'name="network.0.ms"' not in html
    delay = {**base, "network.count": "1", "network.0.kind": "delay", "network.0.from": "server"}
    delay |= {"network.0.nth": "2", "network.0.count": "3"}
    html = client.post("/explainers/tcp/edit", data=delay, headers=HX).text
    assert 'name="network.0.ms"' in html and 'name="network.0.count"' not in html
    html = client.post(
        "/explainers/tcp/edit", data={**delay, "action": "remove:network:0"}, headers=HX
    ).text
    assert 'id="network-row-0"' not in html


def test_a_checkbox_left_at_its_default_sends_nothing_and_unchecked_sends_false(
    client: TestClient,
) -> None:
    """enable_chunked_prefill (default on): the box's hidden "false" alone turns it off."""
    page = client.get("/explainers/scheduler/edit?preset=head-of-line").text
    box = re.search(r'<input type="checkbox" name="config.enable_chunked_prefill"[^>]*>', page)
    assert box and "checked" not in box.group(0)
    fields = drawn_form(page)
    assert fields["config.enable_chunked_prefill"] == ["false"]
    r = client.post("/explainers/scheduler/edit", data={**fields, "action": "run"}, headers=HX)
    raw = decode_params(parse_qs(urlparse(r.headers["HX-Redirect"]).query)["p"][0])
    assert raw["config"]["enable_chunked_prefill"] is False
    assert "enable_prefix_caching" not in raw["config"]  # left at its default: not sent
    fields["config.enable_chunked_prefill"] = ["false", "true"]
    r = client.post("/explainers/scheduler/edit", data={**fields, "action": "validate"}, headers=HX)
    assert 'name="config.enable_chunked_prefill" value="true" checked' in r.text


def test_token_ids_are_edited_as_runs_of_ids(client: TestClient) -> None:
    """prefix-caching's prompt_token_ids show as runs (the shared system prompt is one run)."""
    page = client.get("/explainers/scheduler/edit?preset=prefix-caching").text
    fields = drawn_form(page)
    assert fields["requests.4.prompt_token_ids"] == ["5000-6043"]
    fields["requests.4.prompt_token_ids"] = ["5000-5009, 7"]
    r = client.post("/explainers/scheduler/edit", data={**fields, "action": "run"}, headers=HX)
    raw = decode_params(parse_qs(urlparse(r.headers["HX-Redirect"]).query)["p"][0])
    assert raw["requests"][4]["prompt_token_ids"] == [*range(5000, 5010), 7]


def test_fork_keeps_the_share_title(client: TestClient) -> None:
    """Fork → editor → Run opens the copy with the saved title in its share form."""
    body = {"explainer": "skb", "params": {"ops": [{"op": "alloc_skb", "size": 256}]}}
    r = client.post("/api/v1/scenarios", json={**body, "title": "Lab 3 & friends"})
    sid = r.json()["id"]
    page = client.get(f"/s/{sid}/fork")
    assert page.status_code == 200 and 'name="title" value="Lab 3 &amp; friends"' in page.text
    fields = drawn_form(page.text)
    r = client.post("/explainers/skb/edit", data={**fields, "action": "run"}, headers=HX)
    assert parse_qs(urlparse(r.headers["HX-Redirect"]).query)["title"] == ["Lab 3 & friends"]
    player = client.get(r.headers["HX-Redirect"]).text
    assert 'id="share-title" maxlength="200" value="Lab 3 &amp; friends"' in player
