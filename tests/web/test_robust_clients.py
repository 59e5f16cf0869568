"""Clients that lie or misbehave: forged forwarding headers, session floods, other clients'
jobs, numbers and text no JSON consumer expects, odd Host headers and long ids."""

from __future__ import annotations

import base64
import copy
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func
from sqlmodel import select

from app import explainers
from app.main import create_app
from app.settings import Settings
from app.store import repo
from app.store.models import VisitorSession
from app.web.pagewarm import PageWarmer
from app.web.plugin import Plugin
from app.web.security import forwarded_client, proxy_networks
from app.web.sessions import PROBE_COOKIE
from tests.contract.toy import VIEW
from tests.web.test_robust_limits import ApiLongHog

SKB = {"ops": [{"op": "alloc_skb", "size": 1500}, {"op": "skb_reserve", "len": 64}]}
NGINX = ("10.9.0.2", 40000)  # the proxy's address in these tests
VISITOR = ("198.51.100.7", 50000)  # a client reaching the server directly


def cwnd(seed: int) -> dict[str, Any]:
    """A congestion run expected to take well over a second (a long run: quota, job)."""
    link = {"rate_mbps": 100, "rtt_ms": 40, "buffer_bdp": 1}
    return {"link": link, "flows": [{"cc": "cubic"}], "duration_s": 160, "seed": seed}


# A job that runs until it is cancelled, taking no CPU (however fast the machine, it is still
# running when a test's next requests reach it): the long hog, sleeping, behind the run API.
LONG_JOB = "/api/v1/explainers/longhog/run"


def long_job(tag: int) -> dict[str, Any]:
    return {"sleep_s": 300.0, "tag": tag}


def hog_app(settings: Settings) -> Any:
    return create_app(settings, [Plugin(sim=ApiLongHog(), web=VIEW)])


@pytest.fixture
def make_client(tmp_path: Path) -> Iterator[Callable[..., TestClient]]:
    """Clients of one app per settings (several clients may share one app: ``app=``; the long
    hog's app: ``hog=True``)."""
    opened: list[TestClient] = []

    def make(
        *, peer: tuple[str, int] = VISITOR, app: Any = None, hog: bool = False, **overrides: Any
    ) -> TestClient:
        if app is not None:  # another client of a running app (its lifespan is started)
            return TestClient(app, raise_server_exceptions=False, client=peer)
        settings = Settings(database_url=f"sqlite:///{tmp_path / 'robust.db'}", **overrides)
        made = hog_app(settings) if hog else create_app(settings)
        client = TestClient(made, raise_server_exceptions=False, client=peer)
        client.__enter__()
        opened.append(client)
        return client

    yield make
    for client in reversed(opened):
        client.__exit__(None, None, None)


# --- 1. the client address ------------------------------------------------------------------


def test_right_most_untrusted_hop_is_the_client() -> None:
    nets = proxy_networks(["10.9.0.2", "192.0.2.0/24"])
    hops = [b"1.2.3.4, 203.0.113.9"]
    assert forwarded_client("10.9.0.2", hops, nets) == "203.0.113.9"
    # a chain of trusted proxies: skip each of them, right to left
    assert forwarded_client("10.9.0.2", [b"1.2.3.4, 203.0.113.9, 192.0.2.8"], nets) == (
        "203.0.113.9"
    )
    # several header lines count as one list, in order
    assert forwarded_client("10.9.0.2", [b"1.2.3.4", b"203.0.113.9"], nets) == "203.0.113.9"
    # from a peer that is not a trusted proxy the header means nothing
    assert forwarded_client("203.0.113.50", hops, nets) == "203.0.113.50"
    assert forwarded_client("127.0.0.1", hops, nets) == "127.0.0.1"
    # every hop a proxy of ours: the left-most
    assert forwarded_client("10.9.0.2", [b"192.0.2.1, 192.0.2.8"], nets) == "192.0.2.1"
    with pytest.raises(ValueError, match="trusted_proxies"):
        proxy_networks(["not-an-address"])


def share(client: TestClient, xff: str) -> int:
    r = client.post(
        "/api/v1/scenarios",
        json={"explainer": "skb", "params": SKB},
        headers={"X-Forwarded-For": xff},
    )
    return r.status_code


def test_forged_forwarded_for_does_not_escape_the_share_quota(
    make_client: Callable[..., TestClient],
) -> None:
    """A client writing a new X-Forwarded-For on every request shares no more than the
    per-client quota: directly (the header is ignored from an untrusted peer, loopback
    included) and through the proxy (only the hop the proxy appended counts)."""
    direct = make_client(share_quota_per_client=3, share_quota_per_session=100)
    assert [share(direct, f"10.0.0.{i}") for i in range(5)] == [201] * 3 + [429] * 2
    local = make_client(peer=("127.0.0.1", 1), app=direct.app)
    assert [share(local, f"10.1.0.{i}") for i in range(4)] == [201] * 3 + [429]
    proxied = make_client(
        peer=NGINX,
        share_quota_per_client=3,
        share_quota_per_session=100,
        trusted_proxies=[NGINX[0]],
    )
    forged = [share(proxied, f"10.2.0.{i}, 203.0.113.9") for i in range(5)]
    assert forged == [201] * 3 + [429] * 2
    # another visitor behind the same proxy has a quota of its own
    assert share(proxied, "203.0.113.10") == 201


def test_forged_forwarded_for_does_not_escape_the_long_run_quota(
    make_client: Callable[..., TestClient],
) -> None:
    """Long runs a minute per client hold with a forged hop per request, through the proxy."""
    client = make_client(
        peer=NGINX, job_threshold_s=0.5, expensive_runs_per_minute=2, trusted_proxies=[NGINX[0]]
    )
    answers = [
        client.post(
            "/api/v1/explainers/cwnd/run",
            json=cwnd(seed),
            headers={"X-Forwarded-For": f"10.3.0.{seed}, 203.0.113.20"},
        )
        for seed in range(4)
    ]
    assert [r.status_code for r in answers] == [202, 202, 429, 429]
    for r in answers[:2]:
        gone = client.delete(
            f"/api/v1/jobs/{r.json()['job']}", headers={"X-Forwarded-For": "203.0.113.20"}
        )
        assert gone.status_code == 204


# --- 2. sessions ----------------------------------------------------------------------------

PRESET = "/explainers/skb/presets/rx-frame"


def test_probe_cookie_alone_cannot_mint_sessions_without_limit(
    make_client: Callable[..., TestClient],
) -> None:
    """A client sending only the probe cookie to /api/v1/progress got a new session row per
    request; past sessions_per_client an hour it gets 429 with Retry-After and nothing is
    stored, while a visitor from another address still gets a session."""
    flood = make_client(sessions_per_client=3)
    answers = []
    for _ in range(5):
        flood.cookies.clear()
        flood.cookies.set(PROBE_COOKIE, "1")
        answers.append(flood.post("/api/v1/progress", json={"walkthrough": PRESET, "step": 1}))
    assert [r.status_code for r in answers] == [200, 200, 200, 429, 429]
    assert all(r.json()["saved"] for r in answers[:3])
    assert 0 < int(answers[3].headers["retry-after"]) <= 3600
    assert "3" in answers[3].json()["detail"]
    assert session_rows(flood) == 3
    # another address starts its own session
    other = make_client(peer=("203.0.113.30", 1), app=flood.app)
    other.cookies.set(PROBE_COOKIE, "1")
    assert other.post("/api/v1/progress", json={"walkthrough": PRESET, "step": 2}).json()["saved"]
    assert session_rows(flood) == 4


def session_rows(client: TestClient) -> int:
    with repo.session_for(client.app.state.engine) as db:  # type: ignore[attr-defined]
        return int(db.exec(select(func.count()).select_from(VisitorSession)).one())


# --- 3. jobs belong to their clients ----------------------------------------------------------


def test_only_the_jobs_clients_may_cancel_it(tmp_path: Path) -> None:
    """A job's id is the sha256 of its params, so another client can compute it: its DELETE
    is 404 and the job runs on, on the worker running it and on any other; the client that
    started it still cancels it, from any worker."""
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'jobs.db'}",
        job_threshold_s=0.5,
        job_idle_s=60,
    )
    one, two = hog_app(settings), hog_app(settings)
    with (
        TestClient(one, client=VISITOR) as owner,
        TestClient(one, client=("203.0.113.40", 1)) as stranger,
        TestClient(two, client=("203.0.113.40", 2)) as stranger_elsewhere,
        TestClient(two, client=VISITOR) as owner_elsewhere,
    ):
        started = owner.post(LONG_JOB, json=long_job(7))
        assert started.status_code == 202
        job = started.json()["job"]
        sim = one.state.site.get("longhog").sim
        assert job == one.state.site.runs.key(sim, sim.parse(long_job(7)))  # anyone can compute it
        for other in (stranger, stranger_elsewhere):
            assert other.delete(f"/api/v1/jobs/{job}").status_code == 404
        assert owner.get(f"/api/v1/jobs/{job}").json()["state"] == "running"
        assert owner_elsewhere.delete(f"/api/v1/jobs/{job}").status_code == 204

        def ended() -> bool:
            return owner.get(f"/api/v1/jobs/{job}").json()["state"] == "cancelled"

        wait_for(ended)


def test_only_the_jobs_clients_may_read_its_state(tmp_path: Path) -> None:
    """Another client that computes a running job's id is told there is no such job (404) on
    its state and on its result, from any worker; the client that started it follows it from
    any worker, and a client that asks for the same params joins it and may follow it too."""
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'jobs.db'}",
        job_threshold_s=0.5,
        job_idle_s=60,
    )
    one, two = hog_app(settings), hog_app(settings)
    with (
        TestClient(one, client=VISITOR) as owner,
        TestClient(two, client=VISITOR) as owner_elsewhere,
        TestClient(one, client=("203.0.113.43", 1)) as stranger,
        TestClient(two, client=("203.0.113.43", 2)) as stranger_elsewhere,
        TestClient(one, client=("203.0.113.44", 1)) as joiner,
    ):
        started = owner.post(LONG_JOB, json=long_job(9))
        assert started.status_code == 202
        job = started.json()["job"]
        for other in (stranger, stranger_elsewhere):
            for url in (f"/api/v1/jobs/{job}", f"/api/v1/jobs/{job}/result"):
                r = other.get(url)
                assert r.status_code == 404, url
                assert "state" not in r.json() and "progress" not in r.json()
        assert owner.get(f"/api/v1/jobs/{job}").json()["state"] == "running"
        assert owner_elsewhere.get(f"/api/v1/jobs/{job}").json()["state"] == "running"
        assert owner.get(f"/api/v1/jobs/{job}/result").status_code == 202
        assert joiner.post(LONG_JOB, json=long_job(9)).json()["job"] == job
        assert joiner.get(f"/api/v1/jobs/{job}").json()["state"] == "running"
        assert owner.delete(f"/api/v1/jobs/{job}").status_code == 204  # drops the owner's ask
        one.state.site.runs.cancel(job)  # the test's own clean-up
        wait_for(lambda: owner.get(f"/api/v1/jobs/{job}").json()["state"] == "cancelled")
        assert stranger.get(f"/api/v1/jobs/{job}/result").status_code == 404
        assert owner.get(f"/api/v1/jobs/{job}/result").status_code == 410


def test_a_client_sharing_a_run_cannot_cancel_it_for_the_other(
    make_client: Callable[..., TestClient],
) -> None:
    """A second client that asks for the same params joins the same job (same id) and may
    DELETE it, but that only drops its own interest: the run goes on for the first client."""
    first = make_client(hog=True, job_threshold_s=0.5, job_idle_s=60)
    second = make_client(peer=("203.0.113.42", 1), app=first.app)
    started = first.post(LONG_JOB, json=long_job(8))
    joined = second.post(LONG_JOB, json=long_job(8))
    assert started.status_code == joined.status_code == 202
    job = started.json()["job"]
    assert joined.json()["job"] == job
    assert second.delete(f"/api/v1/jobs/{job}").status_code == 204
    runs = first.app.state.site.runs  # type: ignore[attr-defined]
    running = runs.peek(job)
    assert running.state == "running" and runs._cancel[running.slot] == 0
    runs.cancel(job)  # the test's own clean-up
    wait_for(lambda: runs.peek(job).state == "cancelled")


def test_a_finished_job_is_still_shared_by_content(make_client: Callable[..., TestClient]) -> None:
    """Ids stay content addresses: once a job is done, anyone asking for the same params gets
    the stored trace at once (200), and its result under the same id."""
    owner = make_client(job_threshold_s=0.0)
    started = owner.post("/api/v1/explainers/skb/run", json=SKB)
    assert started.status_code == 202
    job = started.json()["job"]
    wait_for(lambda: owner.get(f"/api/v1/jobs/{job}").json()["state"] == "done")
    other = make_client(peer=("203.0.113.41", 1), app=owner.app)
    again = other.post("/api/v1/explainers/skb/run", json=SKB)
    assert again.status_code == 200
    assert other.get(f"/api/v1/jobs/{job}/result").json() == again.json()
    assert other.delete(f"/api/v1/jobs/{job}").status_code == 404


def wait_for(check: Callable[[], bool], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


# --- 4. numbers too large for a float, lone surrogates ----------------------------------------

BIG = 10**400  # an integer literal: 1 and 400 zeros
LONE = "\ud800"
PLUGINS = explainers.builtin()


def _leaves(value: Any, loc: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, (*loc, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _leaves(v, (*loc, i))
    else:
        yield loc, value


def _with(raw: Any, loc: tuple[Any, ...], new: Any) -> Any:
    out = copy.deepcopy(raw)
    target = out
    for part in loc[:-1]:
        target = target[part]
    target[loc[-1]] = new
    return out


def hostile_variants(raw: dict[str, Any]) -> list[tuple[tuple[Any, ...], Any]]:
    """(where, params) with one bad thing each: a huge integer in the first and last number,
    a lone surrogate in the first and last text, as a top-level key and as a key inside the
    first object of a list."""
    numbers = [loc for loc, v in _leaves(raw) if type(v) in (int, float)]
    texts = [loc for loc, v in _leaves(raw) if isinstance(v, str)]
    out = [(loc, _with(raw, loc, BIG)) for loc in dict.fromkeys([numbers[0], numbers[-1]])]
    out += [(loc, _with(raw, loc, LONE)) for loc in dict.fromkeys([texts[0], texts[-1]])]
    out.append(((LONE,), {**raw, LONE: 1}))
    nested = next(
        (k for k, v in raw.items() if isinstance(v, list) and v and isinstance(v[0], dict)), None
    )
    if nested is not None:
        out.append(((nested, 0, LONE), _with(raw, (nested, 0, LONE), 1)))
    return out


def shown(loc: tuple[Any, ...]) -> str:
    """How a loc's last part appears in an answer (a lone surrogate as U+FFFD)."""
    return str(loc[-1]).replace(LONE, "\ufffd")


@pytest.mark.parametrize("plugin", PLUGINS, ids=[p.name for p in PLUGINS])
def test_unwritable_json_is_422_naming_the_field_everywhere(
    client: TestClient, plugin: Any
) -> None:
    """Each explainer, through the API (JSON), a ``p=`` link and the editor form: 422 naming
    the field, never a 500 or a dropped connection."""
    preset = plugin.sim.preset(plugin.sim.default_preset)
    name = plugin.name
    for loc, raw in hostile_variants(json.loads(json.dumps(dict(preset.params)))):
        text = json.dumps(raw)  # JSON escapes: "\ud800" travels as six ASCII characters
        api = client.post(
            f"/api/v1/explainers/{name}/run",
            content=text,
            headers={"content-type": "application/json"},
        )
        assert api.status_code == 422, (loc, api.text[:200])
        fields = [issue["loc"] for issue in api.json()["detail"]]
        want = ["body", *[shown((p,)) if isinstance(p, str) else p for p in loc]]
        assert want in fields, (loc, fields)
        token = base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")
        link = client.get(f"/explainers/{name}/custom", params={"p": token})
        assert link.status_code == 422 and shown(loc) in link.text, loc
        form = client.post(f"/explainers/{name}/edit", data={"json": text, "action": "run"})
        assert form.status_code == 422 and shown(loc) in form.text, loc


def test_other_json_bodies_refuse_them_too(client: TestClient) -> None:
    """Every JSON endpoint, not only the explainers': a lone surrogate in a title or a key, or
    a huge integer, is 422 naming the field (the title once made the database write fail)."""
    raw = {"ops": [{"op": "alloc_skb", "size": 1500}]}
    cases = [
        ("/api/v1/scenarios", {"explainer": "skb", "params": raw, "title": LONE}, ["title"]),
        ("/api/v1/scenarios", {"explainer": LONE, "params": raw}, ["explainer"]),
        ("/api/v1/progress", {"walkthrough": PRESET, "step": 0, LONE: 1}, ["\ufffd"]),
        ("/api/v1/progress", {"walkthrough": PRESET, "step": BIG}, ["step"]),
    ]
    for path, body, loc in cases:
        r = client.post(
            path, content=json.dumps(body), headers={"content-type": "application/json"}
        )
        assert r.status_code == 422, (path, body.keys(), r.text[:200])
        assert ["body", *loc] in [issue["loc"] for issue in r.json()["detail"]]


def test_form_fields_with_undecodable_bytes_are_not_a_500(client: TestClient) -> None:
    """A form field holding the UTF-8-style bytes of a surrogate (%ED%A0%80) or a number of
    5,000 digits is answered like any other bad value."""
    for value in ("%ED%A0%80", "1" * 5000):
        body = f"ops.count=1&ops.0.op=alloc_skb&ops.0.size={value}&action=run"
        r = client.post(
            "/explainers/skb/edit",
            content=body.encode(),
            headers={"content-type": "application/x-www-form-urlencoded"},
        )
        assert r.status_code == 422, (value[:10], r.text[:200])


# --- 5. hosts, echoed ids, npm files ----------------------------------------------------------


def test_pages_are_warmed_once_not_per_host() -> None:
    """A worker renders its pages for the first host it is addressed by; a Host header with
    another port (or name) starts no second warm-up (each was 11 s of CPU)."""
    warmer = PageWarmer([], ["en"])
    hosts = ["127.0.0.1:8000", "127.0.0.1:8001", "127.0.0.1:9", "localhost:8000"]
    for host in hosts:
        warmer.see(lambda *a: None, {"headers": [(b"host", host.encode())]}, None)  # type: ignore[arg-type]
    wait_for(lambda: warmer.done_for(hosts[0]) is True, 10)
    assert [warmer.done_for(h) for h in hosts[1:]] == [None, None, None]


def test_unknown_scenario_id_is_not_echoed_whole(client: TestClient) -> None:
    """/s/<60 KB id> is a 404 that quotes a short excerpt of the id, on the page and in JSON."""
    long_id = "x" * 60_000
    page = client.get(f"/s/{long_id}")
    assert page.status_code == 404 and "x" * 100 not in page.text and "x" * 40 in page.text
    assert len(page.text) < 20_000
    api = client.get(f"/s/{long_id}", headers={"accept": "application/json"})
    assert api.status_code == 404 and len(api.text) < 300


USED_VENDOR_FILES = [
    "/vendor/htmx.org/dist/htmx.min.js",
    "/vendor/idiomorph/dist/idiomorph.min.js",
    "/vendor/plotly.js-basic-dist-min/plotly-basic.min.js",
    "/vendor/reveal.js/dist/reveal.js",
    "/vendor/reveal.js/dist/reveal.css",
    "/vendor/reveal.js/dist/theme/white.css",
    "/vendor/reveal.js/dist/plugin/notes.js",
    "/vendor/swagger-ui-dist/swagger-ui-bundle.js",
    "/vendor/swagger-ui-dist/swagger-ui.css",
]


def test_vendor_serves_only_the_dist_files_the_app_uses(client: TestClient) -> None:
    """npm packages' metadata and everything else they ship is a 404 under /vendor/, whether
    the in-memory front or a mount would have answered; the files pages use are served."""
    node_modules = Settings().node_modules
    if not (node_modules / "htmx.org" / "package.json").is_file():
        pytest.skip("npm packages not installed")
    for url in USED_VENDOR_FILES:
        assert client.get(url).status_code == 200, url
        assert client.head(url).status_code == 200, url
    refused = [
        "/vendor/plotly.js-basic-dist-min/package.json",
        "/vendor/plotly.js-basic-dist-min/README.md",
        "/vendor/swagger-ui-dist/package.json",
        "/vendor/swagger-ui-dist/index.html",
        "/vendor/swagger-ui-dist/oauth2-redirect.html",
        "/vendor/swagger-ui-dist/swagger-ui-bundle.js.map",
        "/vendor/htmx.org/dist/htmx.js",
        "/vendor/htmx.org/dist/htmx.esm.d.ts",
        "/vendor/reveal.js/dist/reveal.d.ts",
        "/vendor/htmx.org/dist/%2e%2e/package.json",
        "/vendor/reveal.js/dist/%2e%2e/package.json",
        "/vendor/reveal.js/dist/theme/%2e%2e/%2e%2e/package.json",
        "/vendor/idiomorph/package.json",
    ]
    assert (node_modules / "swagger-ui-dist" / "index.html").is_file()  # shipped, not served
    for url in refused:
        r = client.get(url)
        assert r.status_code == 404, url
        assert b'"version"' not in r.content
