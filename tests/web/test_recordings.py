"""Users' recordings and captures: POST/GET /api/v1/recordings, the /recordings form, /r/{id}."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from app.store import repo
from tests.native import pure_python
from tests.recordings.pcaps import handshake_data_close, pcap

PCAP = "application/vnd.tcpdump.pcap"


@pytest.fixture
def settings(db_url: str) -> Settings:
    """Every test here runs on SQLite and on PostgreSQL (``db_url`` in tests/conftest.py)."""
    return Settings(database_url=db_url)


@pytest.fixture
def client(module_db_client: TestClient) -> TestClient:
    """One app per database for the module (tests/conftest.py), each test a new visitor: an
    app and a database per test cost more than most of these tests. What earlier tests
    uploaded stays stored, as other visitors' recordings do: a test counts what it stores
    itself (:func:`stored` before and after)."""
    module_db_client.cookies.clear()
    return module_db_client


def stored(client: TestClient) -> int:
    with repo.session_for(client.app.state.engine) as db:  # type: ignore[attr-defined]
        return repo.recording_count(db=db)


def recording(kind: str = "tcp", events: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "format": "stepscope-recording",
        "schema": 1,
        "kind": kind,
        "kernel": {"release": "6.4.0", "machine": "x86_64"},
        "sysctls": {"net.ipv4.tcp_congestion_control": "cubic"},
        "link": None,
        "flows": [],
        "events": events if events is not None else [],
    }


def set_state(t: float, old: str, new: str, sport: int = 40312) -> dict[str, Any]:
    return {
        "t_ms": t,
        "event": "sock:inet_sock_set_state",
        "fields": {
            "family": "AF_INET",
            "saddr": "10.0.0.1",
            "sport": str(sport),
            "daddr": "10.0.0.2",
            "dport": "80",
            "oldstate": old,
            "newstate": new,
        },
    }


def probe(t: float, cwnd: int, ssthresh: int, srtt: int) -> dict[str, Any]:
    return {
        "t_ms": t,
        "event": "tcp:tcp_probe",
        "fields": {
            "src": "10.0.0.1:40312",
            "dest": "10.0.0.2:5201",
            "snd_cwnd": str(cwnd),
            "ssthresh": str(ssthresh),
            "srtt": str(srtt),
        },
    }


def test_capture_round_trip_segments_and_states(client: TestClient) -> None:
    """A handshake + data + close capture → 201 {id, url, kind}; GET has its segments and each
    endpoint's states in order; /r/{id} steps through one frame per segment."""
    r = client.post(
        "/api/v1/recordings", content=pcap(handshake_data_close()), headers={"Content-Type": PCAP}
    )
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["kind"] == "capture" and body["url"] == f"/r/{body['id']}"
    got = client.get(f"/api/v1/recordings/{body['id']}").json()
    assert [s["flags"] for s in got["segments"]] == [
        "S",
        "S.",
        ".",
        "P.",
        ".",
        "F.",
        ".",
        "F.",
        ".",
    ]
    first = got["segments"][0]
    assert set(first) >= {"t_ms", "from", "flags", "seq", "ack", "win", "len", "options"}
    assert first["options"] == "<mss 1460,nop,wscale 7>"
    assert got["states"] == {
        "10.0.0.1:40312": ["SYN_SENT", "ESTABLISHED", "FIN_WAIT_1", "FIN_WAIT_2", "TIME_WAIT"],
        "10.0.0.2:80": [
            "LISTEN",
            "SYN_RECEIVED",
            "ESTABLISHED",
            "CLOSE_WAIT",
            "LAST_ACK",
            "CLOSED",
        ],
    }
    page = client.get(body["url"])
    assert page.status_code == 200
    assert 'data-count="9"' in page.text
    assert "tcp_rcv_state_process" in page.text
    assert 'data-state="SYN_SENT"' in page.text


def test_recording_page_speaks_both_languages(client: TestClient) -> None:
    rid = client.post(
        "/api/v1/recordings", content=pcap(handshake_data_close()), headers={"Content-Type": PCAP}
    ).json()["id"]
    en = client.get(f"/r/{rid}?step=5&lang=en").text
    zh = client.get(f"/r/{rid}?step=5&lang=zh-CN").text
    assert "close() or shutdown() ran tcp_close_state" in en
    assert "close() or shutdown() ran tcp_close_state" not in zh
    assert "tcp_close_state" in zh  # the kernel's names stay as they are
    assert re.search(r"[\u4e00-\u9fff]", zh)
    frames = client.get(f"/r/{rid}/frames?start=0&count=3")
    assert frames.status_code == 200 and 'id="frame-2"' in frames.text


def test_tcp_recording_states_come_from_the_kernel_events(client: TestClient) -> None:
    events = [
        set_state(0.0, "TCP_CLOSE", "TCP_SYN_SENT"),
        set_state(1.2, "TCP_SYN_SENT", "TCP_ESTABLISHED"),
        set_state(9.0, "TCP_ESTABLISHED", "TCP_FIN_WAIT1"),
        {"t_ms": 9.5, "event": "tcp:tcp_retransmit_skb", "fields": {"sport": "40312"}},
    ]
    r = client.post("/api/v1/recordings", json=recording("tcp", events))
    assert r.status_code == 201, r.text
    assert r.json()["kind"] == "tcp"
    got = client.get(f"/api/v1/recordings/{r.json()['id']}").json()
    assert got["segments"] == []
    assert got["states"] == {"10.0.0.1:40312": ["CLOSED", "SYN_SENT", "ESTABLISHED", "FIN_WAIT_1"]}
    page = client.get(r.json()["url"])
    assert page.status_code == 200 and 'data-count="4"' in page.text


def test_cwnd_recording_gives_flows_with_series(client: TestClient) -> None:
    """snd_cwnd, ssthresh (2147483647, infinite, as null) and srtt per event, per flow."""
    events = [
        probe(0.0, 10, 2147483647, 40000),
        probe(40.0, 20, 2147483647, 41000),
        probe(80.0, 14, 14, 45000),
    ]
    r = client.post("/api/v1/recordings", json=recording("cwnd", events))
    assert r.status_code == 201, r.text
    got = client.get(f"/api/v1/recordings/{r.json()['id']}").json()
    (flow,) = got["flows"]
    assert flow["cc"] == "cubic" and flow["src"] == "10.0.0.1:40312"
    assert [p["cwnd"] for p in flow["series"]] == [10, 20, 14]
    assert [p["ssthresh"] for p in flow["series"]] == [None, None, 14]
    assert [p["srtt_us"] for p in flow["series"]] == [40000, 41000, 45000]
    assert "link" in got


def test_path_recording_keeps_stacks_and_a_kind_without_a_view_gets_a_summary(
    client: TestClient,
) -> None:
    ev = {
        "t_ms": 0.0,
        "event": "net:net_dev_queue",
        "fields": {"len": "74"},
        "stack": ["__dev_queue_xmit", "ip_finish_output2", "ip_output"],
    }
    r = client.post("/api/v1/recordings", json=recording("path", [ev]))
    assert r.status_code == 201, r.text
    got = client.get(f"/api/v1/recordings/{r.json()['id']}").json()
    assert got["events"][0]["stack"] == ev["stack"]
    page = client.get(r.json()["url"])
    assert page.status_code == 200  # a page, never a 500, whoever shows (or not) this kind


@pytest.mark.parametrize(
    ("body", "loc_part"),
    [
        (b"[" * 50 + b"]" * 50, "body"),
        (b'{"format": "stepscope-recording", "schema": 1, "kind": "tcp", "events": "x"}', "events"),
        (
            b'{"format": "stepscope-recording", "schema": 1, "kind": "tcp", '
            b'"events": [], "tool": "\\ud800"}',
            "tool",
        ),
        (b'{"format": "stepscope-recording", "schema": 2, "kind": "tcp", "events": []}', "schema"),
        (b"{not json", "line 1"),
    ],
)
def test_hostile_json_gets_a_422_naming_the_field_and_nothing_is_stored(
    client: TestClient, body: bytes, loc_part: str
) -> None:
    before = stored(client)
    r = client.post(
        "/api/v1/recordings", content=body, headers={"Content-Type": "application/json"}
    )
    assert r.status_code == 422, r.text
    assert any(loc_part in ".".join(map(str, d["loc"])) for d in r.json()["detail"]), r.text
    assert stored(client) == before


def test_too_many_events_is_refused(client: TestClient) -> None:
    before = stored(client)
    ev = '{"t_ms":0,"event":"tcp:tcp_probe","fields":{}}'
    text = (
        '{"format":"stepscope-recording","schema":1,"kind":"cwnd","events":['
        + ",".join([ev] * 300_000)
        + "]}"
    )
    r = client.post(
        "/api/v1/recordings", content=text.encode(), headers={"Content-Type": "application/json"}
    )
    assert r.status_code in (413, 422), r.text
    assert stored(client) == before


def test_three_hundred_thousand_small_events_name_the_limit(client: TestClient) -> None:
    """Under 5 MB but over 200,000 events: 422 naming events and the limit."""
    before = stored(client)
    text = (
        '{"format":"stepscope-recording","schema":1,"kind":"cwnd","events":['
        + ",".join(["{}"] * 300_000)
        + "]}"
    )
    assert len(text) < 5 * 1024 * 1024
    r = client.post(
        "/api/v1/recordings", content=text.encode(), headers={"Content-Type": "application/json"}
    )
    assert r.status_code == 422, r.text
    (issue,) = r.json()["detail"]
    assert issue["loc"] == ["body", "events"] and "200000" in issue["msg"]
    assert stored(client) == before


def test_wrong_type_and_oversized_bodies(client: TestClient) -> None:
    before = stored(client)
    r = client.post("/api/v1/recordings", content=b"hello", headers={"Content-Type": "text/plain"})
    assert r.status_code == 415
    assert PCAP in r.json()["detail"] and "application/json" in r.json()["detail"]
    r = client.post(
        "/api/v1/recordings", content=b"\0" * (6 * 1024 * 1024), headers={"Content-Type": PCAP}
    )
    assert r.status_code == 413 and "5 MB" in r.json()["detail"]
    assert stored(client) == before


def test_bad_captures_name_the_byte_offset(client: TestClient) -> None:
    before = stored(client)
    good = pcap(handshake_data_close())
    huge = bytearray(good)
    huge[24 + 8 : 24 + 12] = (0xFFFFFFF0).to_bytes(4, "little")  # first record claims ~4 GB
    cases = {
        "truncated": good[:-7],
        "4 GB": bytes(huge),
        "header": good[:10],
    }
    for name, body in cases.items():
        r = client.post("/api/v1/recordings", content=body, headers={"Content-Type": PCAP})
        assert r.status_code == 422, (name, r.text)
        assert "byte" in r.json()["detail"][0]["msg"], (name, r.text)
    assert stored(client) == before


def test_the_upload_form_round_trip(client: TestClient) -> None:
    """The page's form posts multipart: the recording opens, and both lists show it; a bad
    file answers the form again with the error, in the reader's language."""
    before = stored(client)
    assert client.get("/recordings").status_code == 200
    client.get("/")  # the probe cookie: this browser keeps cookies, so it gets a session
    r = client.post(
        "/recordings",
        files={"file": ("conn.pcap", pcap(handshake_data_close()), PCAP)},
        data={"kind": "auto", "title": "My first capture"},
        follow_redirects=False,
    )
    assert r.status_code == 303, r.text
    rid = r.headers["location"].removeprefix("/r/")
    assert "My first capture" in client.get("/recordings").text
    assert f'data-recording="{rid}"' in client.get("/my-scenarios").text
    bad = client.post(
        "/recordings",
        files={"file": ("x.pcap", b"\xd4\xc3\xb2\xa1" + b"\0" * 6, PCAP)},
        data={"kind": "capture"},
    )
    assert bad.status_code == 422 and 'id="upload-errors"' in bad.text
    bad_zh = client.post(
        "/recordings?lang=zh-CN",
        files={"file": ("x.json", b"{", "application/json")},
        data={"kind": "recording"},
    )
    assert bad_zh.status_code == 422 and re.search(r"[\u4e00-\u9fff]", bad_zh.text)
    assert stored(client) == before + 1


def test_embed_and_unknown_ids(client: TestClient) -> None:
    rid = client.post(
        "/api/v1/recordings", content=pcap(handshake_data_close()), headers={"Content-Type": PCAP}
    ).json()["id"]
    r = client.get(f"/r/{rid}/embed", follow_redirects=False)
    assert r.status_code == 307 and r.headers["location"] == f"/embed/r/{rid}"
    embed = client.get(f"/embed/r/{rid}")
    assert embed.status_code == 200 and 'data-embed="1"' in embed.text
    assert client.get("/r/NoSuchRecording0").status_code == 404
    assert client.get("/api/v1/recordings/NoSuchRecording0").status_code == 404


def test_openapi_documents_the_endpoints(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    post = spec["paths"]["/api/v1/recordings"]["post"]
    assert set(post["requestBody"]["content"]) == {"application/json", PCAP}
    assert "example" in post["requestBody"]["content"]["application/json"]
    assert "/api/v1/recordings/{recording_id}" in spec["paths"]


def test_parsed_json_is_stored_compressed(client: TestClient) -> None:
    rid = client.post(
        "/api/v1/recordings", content=pcap(handshake_data_close()), headers={"Content-Type": PCAP}
    ).json()["id"]
    with repo.session_for(client.app.state.engine) as db:  # type: ignore[attr-defined]
        row = repo.get_recording(db=db, recording_id=rid)
    assert row is not None and row.kind == "capture"
    import zlib

    assert zlib.decompress(row.original) == pcap(handshake_data_close())
    assert json.loads(zlib.decompress(row.parsed))["kind"] == "capture"


def test_offline_export_of_a_recording(client: TestClient) -> None:
    """The offline HTML file holds every step of the recording, drawn by its view."""
    rid = client.post(
        "/api/v1/recordings", content=pcap(handshake_data_close()), headers={"Content-Type": PCAP}
    ).json()["id"]
    r = client.get(f"/r/{rid}/export/html?step=2")
    assert r.status_code == 200, r.text
    assert "attachment" in r.headers["content-disposition"]
    assert set(re.findall(r'<template id="frame-(\d+)"', r.text)) == {str(i) for i in range(9)}
    assert f"/r/{rid}" in r.text  # its online link is the recording's page


def test_the_replay_link_opens_the_model_run(client: TestClient) -> None:
    rid = client.post(
        "/api/v1/recordings", content=pcap(handshake_data_close()), headers={"Content-Type": PCAP}
    ).json()["id"]
    page = client.get(f"/r/{rid}?lang=zh-CN").text
    assert 'id="replay-panel"' in page and "在模型中重放" in page
    link = re.search(r'id="replay-link" href="([^"]+)"', page)
    assert link is not None
    assert client.get(link.group(1).replace("&amp;", "&")).status_code == 200


def test_png_of_a_recording_step(client: TestClient) -> None:
    """One step of a recording as a PNG, drawn server-side like a run's (SQLite only: one
    Chromium drawing is enough)."""
    if "postgresql" in str(client.app.state.settings.database_url):  # type: ignore[attr-defined]
        pytest.skip("drawn once, on SQLite")
    rid = client.post(
        "/api/v1/recordings", content=pcap(handshake_data_close()), headers={"Content-Type": PCAP}
    ).json()["id"]
    r = client.get(f"/r/{rid}/export/png?step=4&scale=1")
    assert r.status_code == 200, r.text[:300]
    assert r.content[:8] == b"\x89PNG\r\n\x1a\n" and "step4" in r.headers["content-disposition"]


def test_uploads_count_against_a_per_client_quota(settings: Settings) -> None:
    quota = settings.model_copy(update={"recording_quota_per_client": 2})
    with TestClient(create_app(quota), raise_server_exceptions=False) as client:
        body = pcap(handshake_data_close())
        codes = [
            client.post(
                "/api/v1/recordings", content=body, headers={"Content-Type": PCAP}
            ).status_code
            for _ in range(3)
        ]
        assert codes == [201, 201, 429]
        assert stored(client) == 2


def test_overrides_reach_the_view_and_its_refusal_is_a_422(client: TestClient) -> None:
    """Query parameters other than the player's own are the view's overrides (the TCP view
    takes none: 422 naming them, not a 500); ``lang`` and ``step`` are the player's."""
    rid = client.post(
        "/api/v1/recordings", content=pcap(handshake_data_close()), headers={"Content-Type": PCAP}
    ).json()["id"]
    assert client.get(f"/r/{rid}?step=3&lang=en").status_code == 200
    r = client.get(f"/r/{rid}?rtt_ms=5")
    assert r.status_code == 422 and "overrides" in r.text
    r = client.get(f"/r/{rid}/frames?start=0&count=2&o=%%%")
    assert r.status_code == 422


def test_the_cwnd_overlay_runs_the_model_again_for_the_link_the_user_types(
    client: TestClient,
) -> None:
    """A cwnd recording's page has the model's link as a form (from the recording's link);
    submitting it (GET, the fields as the view's overrides) runs the model for the typed RTT,
    and a refused value answers 422 naming the field."""
    events = [probe(t * 10.0, 10 + t, 2147483647 if t < 30 else 30, 40000) for t in range(60)]
    body = recording("cwnd", events)
    body["link"] = {"rate_mbit": 20, "rtt_ms": 40, "buffer_bytes": 100000, "mtu": 1500}
    rid = client.post("/api/v1/recordings", json=body).json()["id"]
    page = client.get(f"/r/{rid}").text
    form = re.search(r'<form class="recorded-link".*?</form>', page, re.S)
    assert form is not None, page[:2000]
    assert re.search(r'name="rtt_ms"[^>]*value="40"', form.group(0))
    assert re.search(r'<option value="cubic" selected>', form.group(0))
    again = client.get(f"/r/{rid}?rate_mbit=20&rtt_ms=80&buffer_bytes=100000&cc=reno")
    assert again.status_code == 200
    edited = re.search(r'<form class="recorded-link".*?</form>', again.text, re.S)
    assert edited is not None and re.search(r'name="rtt_ms"[^>]*value="80"', edited.group(0))
    assert '<option value="reno" selected>' in edited.group(0)
    bad = client.get(f"/r/{rid}?rate_mbit=20&rtt_ms=-5&buffer_bytes=100000&cc=cubic")
    assert bad.status_code == 422 and "rtt_ms" in bad.text


def _href(page: str, anchor_id: str) -> str:
    found = re.search(
        rf'id="{anchor_id}"[^>]*?href="([^"]+)"|href="([^"]+)"[^>]*?id="{anchor_id}"', page
    )
    assert found is not None, anchor_id
    return (found.group(1) or found.group(2)).replace("&amp;", "&")


def _cwnd_rid(client: TestClient) -> str:
    events = [probe(t * 10.0, 10 + t, 2147483647 if t < 30 else 30, 40000) for t in range(60)]
    body = recording("cwnd", events)
    body["link"] = {"rate_mbit": 20, "rtt_ms": 40, "buffer_bytes": 100000, "mtu": 1500}
    return str(client.post("/api/v1/recordings", json=body).json()["id"])


EDITED = "rate_mbit=20&rtt_ms=80&buffer_bytes=100000&cc=reno"


def _link_form_rtt(html: str) -> str:
    found = re.search(
        r'<form class="recorded-link".*?name="rtt_ms"[^>]*value="([^"]+)"', html, re.S
    )
    assert found is not None
    return found.group(1)


def test_exports_and_embed_of_a_recording_page_carry_its_overrides(client: TestClient) -> None:
    """The page of a cwnd recording whose model link the user edited (RTT 80 ms instead of the
    recording's 40, Reno): its offline HTML, its PNG link and its embed (the Embed menu's path
    and the embed's own link back) show the edited model, not the recording's defaults."""
    rid = _cwnd_rid(client)
    page = client.get(f"/r/{rid}?{EDITED}&step=3").text
    assert _link_form_rtt(page) == "80"
    html = _href(page, "recording-export-html")
    assert html.startswith(f"/r/{rid}/export/html?o=") and "step=3" in html
    exported = client.get(html)
    assert exported.status_code == 200, exported.text[:300]
    assert _link_form_rtt(exported.text) == "80"
    assert '<option value="reno" selected>' in exported.text
    png = _href(page, "recording-export-png")
    assert (
        png.startswith(f"/r/{rid}/export/png?o=")
        and png.split("?o=")[1].split("&")[0] == (html.split("?o=")[1].split("&")[0])
    )
    embed_path = re.search(r'id="embed-ready" data-path="([^"]+)"', page)
    assert embed_path is not None and embed_path.group(1).startswith(f"/embed/r/{rid}?o=")
    embed = client.get(embed_path.group(1).replace("&amp;", "&"))
    assert embed.status_code == 200 and _link_form_rtt(embed.text) == "80"
    credit = re.search(r'class="embed-credit" href="([^"]+)"', embed.text)
    assert credit is not None and credit.group(1).endswith(embed_path.group(1).split("/embed")[1])
    # without overrides the links are the recording's own
    plain = client.get(f"/r/{rid}").text
    assert _href(plain, "recording-export-html").startswith(f"/r/{rid}/export/html?step=")
    assert _link_form_rtt(client.get(_href(plain, "recording-export-html")).text) == "40"


def test_png_of_a_recording_follows_its_overrides(client: TestClient) -> None:
    """Two PNGs of the same step, one of the recording's model and one under the user's edited
    link: different pictures (the cache keeps them apart), SQLite only (Chromium draws)."""
    if "postgresql" in str(client.app.state.settings.database_url):  # type: ignore[attr-defined]
        pytest.skip("drawn once, on SQLite")
    rid = _cwnd_rid(client)
    edited = _href(client.get(f"/r/{rid}?{EDITED}").text, "recording-export-png")
    plain = client.get(f"/r/{rid}/export/png?step=0&scale=1")
    again = client.get(edited.replace("step=0", "step=0&scale=1"))
    assert plain.status_code == again.status_code == 200, again.text[:300]
    assert plain.content[:8] == again.content[:8] == b"\x89PNG\r\n\x1a\n"
    assert plain.content != again.content


HEAVY = "rate_mbit=100&rtt_ms=40&buffer_bytes=500000&cc=cubic&duration_ms=160000"


@pure_python  # needs a run that takes seconds: the pure modules' pace
def test_a_recordings_build_over_the_cpu_limit_is_a_422_naming_it(db_url: str) -> None:
    """A recording's view is built within a run's limits: the cwnd overlay asked to run the
    model for 160 s at 100 Mbit/s (inside the explainer's work limit, over 1 s of CPU) with
    APP_SIM_CPU_S=0.5 answers 422 naming APP_SIM_CPU_S, in JSON and as a page; the recording's
    own view still opens afterwards, and nothing of the refused build is kept."""
    # its wait is wall time: at nice 0, not starved by a loaded machine
    settings = Settings(database_url=db_url, sim_cpu_s=0.5, sim_nice=0)
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        rid = _cwnd_rid(client)
        page = client.get(f"/r/{rid}?{HEAVY}")
        assert page.status_code == 422, page.text[:300]
        assert "APP_SIM_CPU_S" in page.text
        frames = client.get(
            f"/r/{rid}/frames?{HEAVY}&start=0&count=1", headers={"Accept": "application/json"}
        )
        assert frames.status_code == 422
        detail = frames.json()["detail"][0]
        assert detail["type"] == "sim_limit.cpu" and "APP_SIM_CPU_S" in detail["msg"]
        assert client.get(f"/r/{rid}").status_code == 200
        zh = client.get(f"/r/{rid}?{HEAVY}&lang=zh-CN")
        assert zh.status_code == 422 and "APP_SIM_CPU_S" in zh.text
        assert re.search(r"[\u4e00-\u9fff]", zh.text)


def _sleepy(recording: dict[str, Any], overrides: dict[str, Any]) -> Any:
    """A build that takes wall time but no CPU (module level: it crosses into the process)."""
    import time

    time.sleep(float(overrides["s"]))
    return recording


def test_a_build_that_waits_past_its_limit_is_a_503_naming_it(
    client: TestClient, module_db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request waits for its recording's build at most twice APP_SIM_CPU_S and a margin:
    past it, BuildWaitExceeded, answered 503 with Retry-After and a sentence naming the wait."""
    from app.web.recbuild import BuildWaitExceeded, RecordingBuilder

    builder = RecordingBuilder(Settings(database_url=module_db_url, sim_cpu_s=0.5), margin_s=0)
    try:
        # The process's start (the fork server's first fork, on a loaded machine) is not what
        # this limit measures: wait for it apart, then time builds in a process that is up.
        builder.start()
        assert builder._lane().submit(_sleepy, {"x": 0}, {"s": 0}).result(timeout=60) == {"x": 0}
        assert builder.build(_sleepy, {"x": 1}, {"s": 0}) == {"x": 1}
        with pytest.raises(BuildWaitExceeded) as waited:
            builder.build(_sleepy, {}, {"s": 5})
        assert waited.value.seconds == 1
    finally:
        builder.close()
    rid = _cwnd_rid(client)
    site = client.app.state.site  # type: ignore[attr-defined]

    def refuse(*_: Any) -> Any:
        raise waited.value

    monkeypatch.setattr(site.recording_builder, "build", refuse)  # this test's only
    page = client.get(f"/r/{rid}?rtt_ms=33")
    assert page.status_code == 503 and page.headers["retry-after"] == "5"
    assert "APP_SIM_CPU_S" in page.text
    api = client.get(f"/r/{rid}/frames?rtt_ms=33", headers={"Accept": "application/json"})
    assert api.status_code == 503 and "more than 1 s" in api.json()["detail"]
