"""The JSON API contract: /api/v1/explainers and /api/v1/explainers/skb/run."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

INT_FIELDS = (
    "head",
    "data",
    "tail",
    "end",
    "len",
    "data_len",
    "truesize",
    "headroom",
    "tailroom",
    "users",
    "dataref",
    "nr_frags",
)


@pytest.fixture
def client(shared_client: TestClient) -> TestClient:
    """These tests only read pages and run scenarios, as any visitor may: the worker's one app
    (tests/conftest.py), as a new visitor."""
    return shared_client


def run(client: TestClient, body: object):
    return client.post("/api/v1/explainers/skb/run", json=body)


def test_lists_explainers_with_presets(client: TestClient) -> None:
    """GET /api/v1/explainers lists skb with its five walkthroughs, each runnable as given."""
    body = client.get("/api/v1/explainers").json()
    skb = next(e for e in body["explainers"] if e["name"] == "skb")
    slugs = {p["slug"] for p in skb["presets"]}
    assert {"tcp-transmit", "rx-frame", "clone-retransmit", "gro-linearize", "panic"} <= slugs
    for preset in skb["presets"]:
        assert run(client, preset["params"]).status_code == 200


def test_run_issue_example(client: TestClient) -> None:
    """The issue's example: alloc_skb(1500), reserve 64, put 100 → end 1728, data 64, tail 164."""
    r = run(
        client,
        {
            "ops": [
                {"op": "alloc_skb", "size": 1500},
                {"op": "skb_reserve", "len": 64},
                {"op": "skb_put", "len": 100},
            ]
        },
    )
    assert r.status_code == 200
    body = r.json()
    assert body["sim_version"]
    frames = body["frames"]
    assert [f["index"] for f in frames] == [0, 1, 2]
    assert [f["op"] for f in frames] == ["alloc_skb", "skb_reserve", "skb_put"]
    assert all(f["result"] == "ok" for f in frames)
    skb = frames[-1]["skb"]
    assert all(isinstance(skb[k], int) for k in INT_FIELDS)
    assert (skb["head"], skb["data"], skb["tail"], skb["end"]) == (0, 64, 164, 1728)
    assert (skb["len"], skb["truesize"], skb["headroom"], skb["tailroom"]) == (100, 2304, 64, 1564)
    assert frames[0]["source"]["function"] and frames[0]["source"]["path"].endswith((".c", ".h"))
    assert isinstance(frames[0]["source"]["line"], int)
    assert frames[2]["narration"]


def test_over_panic_is_a_result_not_an_error(client: TestClient) -> None:
    """skb_put past end is the skb_over_panic outcome (kernel BUG), and ends the scenario."""
    r = run(
        client,
        {
            "ops": [
                {"op": "alloc_skb", "size": 128},
                {"op": "skb_put", "len": 400},
                {"op": "skb_put", "len": 1},
            ]
        },
    )
    assert r.status_code == 200
    frames = r.json()["frames"]
    assert frames[-1]["result"] == "skb_over_panic"
    assert len(frames) == 2


def test_pull_beyond_len_returns_null(client: TestClient) -> None:
    """skb_pull with len > skb->len returns NULL and leaves the skb unchanged."""
    r = run(
        client,
        {
            "ops": [
                {"op": "alloc_skb", "size": 128},
                {"op": "skb_put", "len": 10},
                {"op": "skb_pull", "len": 11},
            ]
        },
    )
    frames = r.json()["frames"]
    assert frames[-1]["result"] == "null"
    assert frames[-1]["skb"] == frames[-2]["skb"]


def test_clone_frames_carry_every_live_skb(client: TestClient) -> None:
    """After skb_clone the frames carry every live skb by name; the data is shared (dataref 2)."""
    r = run(
        client,
        {
            "ops": [
                {"op": "alloc_skb", "size": 256},
                {"op": "skb_put", "len": 60},
                {"op": "skb_clone", "skb": "clone1"},
            ]
        },
    )
    assert r.status_code == 200, r.text
    last = r.json()["frames"][-1]
    assert set(last["skbs"]) == {"skb", "clone1"}
    assert last["skbs"]["skb"]["dataref"] == last["skbs"]["clone1"]["dataref"] == 2


@pytest.mark.parametrize(
    ("body", "loc_start", "needle"),
    [
        (
            {"ops": [{"op": "alloc_skb", "size": 100}, {"op": "skb_frobnicate", "len": 1}]},
            ["body", "ops", 1],
            "skb_frobnicate",
        ),
        (
            {"ops": [{"op": "alloc_skb", "size": 100}, {"op": "skb_put", "len": -4}]},
            ["body", "ops", 1, "len"],
            "-4",
        ),
        (
            {"ops": [{"op": "alloc_skb", "size": 100}, {"op": "skb_put"}]},
            ["body", "ops", 1, "len"],
            "len",
        ),
        (
            {"ops": [{"op": "alloc_skb", "size": 100}] + [{"op": "skb_put", "len": 1}] * 500},
            ["body", "ops"],
            "500",
        ),
        ({"ops": [{"op": "alloc_skb", "size": "big"}]}, ["body", "ops", 0, "size"], "size"),
        ({"nothing": 1}, ["body"], "ops"),
        ([1, 2, 3], ["body"], ""),
    ],
)
def test_bad_input_is_422_naming_the_op(
    client: TestClient, body: object, loc_start: list, needle: str
) -> None:
    """Unknown op, negative length, missing field, >500 ops, wrong type → 422 naming index and reason."""
    r = run(client, body)
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert any(
        d["loc"][: len(loc_start)] == loc_start and needle in d["msg"] + str(d["loc"])
        for d in detail
    ), detail


def test_malformed_json_is_422(client: TestClient) -> None:
    """A body that is not JSON answers 422, never 500."""
    r = client.post(
        "/api/v1/explainers/skb/run",
        content=b"{not json",
        headers={"content-type": "application/json"},
    )
    assert r.status_code == 422


def test_unknown_explainer_is_404(client: TestClient) -> None:
    """Running an explainer that does not exist answers 404 with JSON."""
    r = client.post("/api/v1/explainers/nope/run", json={})
    assert r.status_code == 404
    assert "nope" in r.json()["detail"]


def test_openapi_documents_the_api(client: TestClient) -> None:
    """FastAPI's OpenAPI lists the run endpoint."""
    spec = client.get("/openapi.json").json()
    assert "/api/v1/explainers/{name}/run" in spec["paths"]


def test_json_the_parser_gives_up_on_is_422(client: TestClient) -> None:
    """Bodies json.loads refuses (5000-digit numbers, deep nesting) answer 422 on the body."""
    for body in (b'{"ops": [{"op": "alloc_skb", "size": ' + b"9" * 5000 + b"}]}", b"[" * 100_000):
        r = client.post(
            "/api/v1/explainers/skb/run", content=body, headers={"content-type": "application/json"}
        )
        assert r.status_code == 422
        assert r.json()["detail"][0]["loc"] == ["body"]


def test_freed_skbs_leave_the_skbs_map(client: TestClient) -> None:
    """After consume_skb on a clone, frames list only the skbs still alive; the op's own skb stays in "skb"."""
    r = client.post(
        "/api/v1/explainers/skb/run",
        json={
            "ops": [
                {"op": "alloc_skb", "size": 256},
                {"op": "skb_clone", "skb": "clone1"},
                {"op": "consume_skb", "skb": "clone1"},
            ]
        },
    )
    last = r.json()["frames"][-1]
    assert set(last["skbs"]) == {"skb"}
    assert last["skb"]["users"] == 0
