"""Robustness: nothing a visitor can type or send produces a 500 or a stack trace.

Regression tests from a QA pass. The first group reproduces real 500s and runaway responses found
by hand-fuzzing and in the browser (they fail until fixed); the second group pins a sample of bad
inputs that are already handled well (422 naming the field, 404 for traversal), so they stay so.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    db: Path = tmp_path_factory.mktemp("robustness") / "test.db"
    settings = Settings(database_url=f"sqlite:///{db}")
    with TestClient(create_app(settings), raise_server_exceptions=False) as c:
        yield c


def token(raw: Any) -> str:
    data = json.dumps(raw, separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def cwnd(duration_s: float = 2.0, flows: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "link": {"rate_mbps": 10, "rtt_ms": 40, "buffer_packets": 50},
        "flows": flows or [{"cc": "cubic", "start_s": 0}],
        "duration_s": duration_s,
    }


# A run shorter than one RTT: valid for the API (200), but the summary has no RTT samples.
SHORT = cwnd(duration_s=0.01)
# A realistic multi-flow run where the second flow starts just before the end.
LATE_FLOW = cwnd(flows=[{"cc": "cubic", "start_s": 0}, {"cc": "reno", "start_s": 1.99}])

SKB_FORM = {
    "ops.count": "2",
    "ops.0.op": "alloc_skb",
    "ops.0.size": "1500",
    "ops.1.op": "skb_put",
    "ops.1.len": "100",
}
CWND_FORM = {
    "link.rate_mbps": "10",
    "link.rtt_ms": "40",
    "link.buffer.kind": "buffer_packets",
    "link.buffer.value": "50",
    "duration_s": "2",
    "flows.count": "1",
    "flows.0.cc": "cubic",
    "flows.0.start_s": "0",
}
HUGE = "9" * 5000  # past Python's 4300-digit int() limit


def no_500(response: Any) -> None:
    assert response.status_code < 500, (response.status_code, response.text[:300])
    assert "Traceback" not in response.text


# --- bugs found (these fail until fixed) ----------------------------------------------------


def test_api_accepts_short_cwnd_run(client: TestClient) -> None:
    """Sanity: the API itself accepts both scenarios, so every page must be able to show them."""
    for raw in (SHORT, LATE_FLOW):
        assert client.post("/api/v1/explainers/cwnd/run", json=raw).status_code == 200


@pytest.mark.parametrize("raw", [SHORT, LATE_FLOW], ids=["shorter-than-rtt", "late-flow"])
def test_cwnd_custom_page_without_rtt_samples(client: TestClient, raw: dict[str, Any]) -> None:
    """summary_table formats rtt_mean_ms=None with :.1f -> TypeError -> 500."""
    no_500(client.get(f"/explainers/cwnd/custom?p={token(raw)}"))


def test_cwnd_offline_export_without_rtt_samples(client: TestClient) -> None:
    no_500(client.get(f"/export/html?explainer=cwnd&p={token(SHORT)}"))


def test_shared_short_cwnd_scenario_opens(client: TestClient) -> None:
    """The API saves it (201), then the share link and its embed answer 500 forever."""
    created = client.post(
        "/api/v1/scenarios", json={"explainer": "cwnd", "params": SHORT, "title": "short"}
    )
    assert created.status_code == 201
    sid = created.json()["id"]
    no_500(client.get(f"/s/{sid}"))
    no_500(client.get(f"/embed/s/{sid}"))


def test_compare_with_tiny_duration(client: TestClient) -> None:
    no_500(client.get("/explainers/cwnd/compare?duration_s=0.01"))
    no_500(
        client.get(
            "/explainers/cwnd/compare?duration_s=0.01", headers={"accept": "application/json"}
        )
    )


@pytest.mark.parametrize(
    "change",
    [
        {"ops.0.size": HUGE},
        {"ops.0.size": "-" + HUGE},
        {"action": "add:ops:" + HUGE},
        {"action": "add:ops:²"},  # "²".isdigit() is True but int("²") raises
        {"action": "remove:ops:²"},
    ],
    ids=[
        "huge-size",
        "huge-negative-size",
        "huge-action-index",
        "superscript-add",
        "superscript-rm",
    ],
)
def test_skb_editor_form_nonsense(client: TestClient, change: dict[str, str]) -> None:
    no_500(client.post("/explainers/skb/edit", data={**SKB_FORM, **change}))
    no_500(
        client.post(
            "/explainers/skb/edit", data={**SKB_FORM, **change}, headers={"HX-Request": "true"}
        )
    )


@pytest.mark.parametrize(
    "text",
    ["[" * 100_000 + "]" * 100_000, HUGE, '{"ops":[{"op":"alloc_skb","size":' + HUGE + "}]}"],
    ids=["deep-nesting", "huge-int", "huge-int-field"],
)
def test_json_editor_nonsense(client: TestClient, text: str) -> None:
    """json.loads raises RecursionError / ValueError (not JSONDecodeError) for these."""
    response = client.post("/explainers/skb/edit", data={"json": text})
    no_500(response)


@pytest.mark.parametrize(
    "change",
    [
        {"link.rate_mbps": HUGE},
        {"duration_s": HUGE},
        {"action": "remove:flows:²"},
        {"action": "remove:flows:" + HUGE},
    ],
    ids=["huge-rate", "huge-duration", "superscript-remove", "huge-remove-index"],
)
def test_cwnd_editor_form_nonsense(client: TestClient, change: dict[str, str]) -> None:
    no_500(client.post("/explainers/cwnd/edit", data={**CWND_FORM, **change}))


def test_cwnd_editor_run_of_short_scenario_lands_on_a_working_page(client: TestClient) -> None:
    """Editor says valid and redirects; the page it redirects to must not be a 500."""
    response = client.post(
        "/explainers/cwnd/edit",
        data={**CWND_FORM, "duration_s": "0.01", "action": "run"},
        follow_redirects=False,
    )
    assert response.status_code == 303
    no_500(client.get(response.headers["location"]))


def test_many_clones_page_stays_reasonable(client: TestClient) -> None:
    """Every frame re-draws every live skb into a <template>: 100 clones -> ~9 MB of HTML,
    499 clones (allowed: the op limit is 500) -> 217 MB and ~33 s. Should be bounded."""
    ops = [{"op": "alloc_skb", "size": 100}] + [{"op": "skb_clone"}] * 100
    response = client.get(f"/explainers/skb/custom?p={token({'ops': ops})}")
    assert response.status_code in (200, 422)
    assert len(response.content) < 4_000_000, f"{len(response.content) / 1e6:.1f} MB page"


# --- inputs already handled well (keep them so) ---------------------------------------------


@pytest.mark.parametrize(
    ("body", "loc"),
    [
        ({"ops": None}, ["body", "ops"]),
        ({"ops": [{"op": "alloc_skb", "size": 1500.5}]}, ["body", "ops", 0, "size"]),
        ({"ops": [{"op": "alloc_skb", "size": True}]}, ["body", "ops", 0, "size"]),
        ({"ops": [{"op": "alloc_skb", "size": 10**30}]}, ["body", "ops", 0, "size"]),
        ({"ops": [{"op": "alloc_skb", "size": 1}] * 501}, ["body", "ops"]),
        ({"ops": [{"op": "alloc_skb", "size": 1, "extra": 1}]}, ["body", "ops", 0, "extra"]),
    ],
)
def test_skb_api_bad_input_names_the_field(
    client: TestClient, body: dict[str, Any], loc: list[Any]
) -> None:
    response = client.post("/api/v1/explainers/skb/run", json=body)
    assert response.status_code == 422
    detail = response.json()["detail"]
    assert detail[0]["loc"] == loc and detail[0]["msg"]


@pytest.mark.parametrize(
    ("raw", "loc"),
    [
        (
            b'{"link":{"rate_mbps":NaN,"rtt_ms":40,"buffer_packets":50},"flows":[{"cc":"cubic"}],'
            b'"duration_s":2}',
            ["body", "link", "rate_mbps"],
        ),
        (
            b'{"link":{"rate_mbps":10,"rtt_ms":40,"buffer_packets":50},"flows":[{"cc":"cubic"}],'
            b'"duration_s":Infinity}',
            ["body", "duration_s"],
        ),
        (
            b'{"link":{"rate_mbps":10,"rtt_ms":40,"buffer_packets":50},"flows":[{"cc":"vegas"}],'
            b'"duration_s":2}',
            ["body", "flows", 0, "cc"],
        ),
        (
            b'{"link":{"rate_mbps":10000,"rtt_ms":40,"buffer_bdp":1},"flows":[{"cc":"cubic"}],'
            b'"duration_s":600}',
            ["body", "duration_s"],
        ),
    ],
    ids=["nan-rate", "inf-duration", "unknown-cc", "too-many-events"],
)
def test_cwnd_api_bad_input_names_the_field(client: TestClient, raw: bytes, loc: list[Any]) -> None:
    response = client.post(
        "/api/v1/explainers/cwnd/run", content=raw, headers={"content-type": "application/json"}
    )
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == loc


@pytest.mark.parametrize("step", ["-1", "abc", "99999999999999999999", "1.5", "١"])
def test_bad_step_is_422(client: TestClient, step: str) -> None:
    assert client.get("/explainers/skb", params={"step": step}).status_code == 422
    assert client.get("/embed/skb", params={"step": step}).status_code == 422


@pytest.mark.parametrize(
    ("key", "value"), [("theme", "xx"), ("controls", "xx"), ("autoplay", "maybe")]
)
def test_bad_embed_option_is_422_naming_it(client: TestClient, key: str, value: str) -> None:
    response = client.get("/embed/skb", params={key: value}, headers={"accept": "application/json"})
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["query", key]


@pytest.mark.parametrize(
    "path",
    [
        "/static/..%2F..%2Fapp%2Fmain.py",
        "/static/%2e%2e/%2e%2e/app/main.py",
        "/vendor/htmx.org/dist/..%2F..%2F..%2Fpackage.json",
        "/vendor/reveal.js/dist/%2e%2e/%2e%2e/package.json",
    ],
)
def test_path_traversal_is_404(client: TestClient, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 404
    assert "import" not in response.text and '"name"' not in response.text


@pytest.mark.parametrize("sid", ["a", "a" * 9, "a" * 100, "😀" * 10, "..%2F..%2Fetc"])
def test_unknown_or_malformed_share_id_is_404(client: TestClient, sid: str) -> None:
    assert client.get(f"/s/{sid}").status_code == 404
    assert client.get(f"/api/v1/scenarios/{sid}").status_code == 404


@pytest.mark.parametrize("p", ["garbage", "!!!", "bnVsbA", "W10", "%FF%FE"])
def test_damaged_custom_link_is_422(client: TestClient, p: str) -> None:
    assert client.get(f"/explainers/skb/custom?p={p}").status_code == 422
