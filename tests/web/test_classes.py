"""Live classes: POST /api/v1/classes and its moves, questions and answers (status codes and
reasons), the event stream students follow (SSE, Last-Event-ID resume) on SQLite and
PostgreSQL, and a step reaching a student connected to another app instance on the same
database (LISTEN/NOTIFY on PostgreSQL, polling on SQLite)."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import uvicorn
from fastapi.testclient import TestClient
from sqlalchemy import update

from app.main import create_app
from app.settings import Settings
from app.store.models import LiveClass


@pytest.fixture
def settings(db_url: str) -> Settings:
    return Settings(database_url=db_url, classes_per_client=3)


def start(client: TestClient, scenario: str = "cwnd/reno-sawtooth", **extra: Any) -> dict[str, Any]:
    r = client.post("/api/v1/classes", json={"scenario": scenario, **extra})
    assert r.status_code == 201, r.text
    body: dict[str, Any] = r.json()
    return body


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def join(client: TestClient, code: str) -> str:
    r = client.post("/api/v1/classes/join", json={"code": code})
    assert r.status_code == 201, r.text
    token: str = r.json()["student_token"]
    return token


def test_start_move_and_refusals(client: TestClient) -> None:
    c = start(client, "/explainers/tcp/presets/handshake")
    assert set(c) >= {"id", "code", "join_url", "lecturer_token"}
    assert c["join_url"].endswith(f"/c/{c['code']}") and c["lecturer_token"] not in c["join_url"]
    url = f"/api/v1/classes/{c['id']}/step"
    none = client.post(url, json={"step": 2})
    assert none.status_code == 401 and "Bearer" in none.json()["detail"]
    assert none.headers["www-authenticate"] == "Bearer"
    assert client.post(url, json={"step": 2}, headers=bearer("guess")).status_code == 403
    outside = client.post(url, json={"step": 10_000}, headers=bearer(c["lecturer_token"]))
    assert outside.status_code == 422
    assert outside.json()["detail"][0]["loc"] == ["body", "step"]
    assert "outside this walkthrough" in outside.json()["detail"][0]["msg"]
    assert (
        client.post(url, json={"step": 4}, headers=bearer(c["lecturer_token"])).status_code == 204
    )
    status = client.get(f"/api/v1/classes/{c['id']}").json()
    assert status["step"] == 4 and status["count"] > 4
    page = client.get(f"/c/{c['code']}")
    assert page.status_code == 200 and page.headers["cache-control"] == "no-store"
    assert c["lecturer_token"] not in page.text and 'data-step="4"' in page.text
    embed = client.get(f"/embed/c/{c['code']}")  # a slide deck's embed joins too
    assert embed.status_code == 200 and 'id="class-bar"' in embed.text
    assert "frame-ancestors *" in embed.headers["content-security-policy"]
    assert client.get("/c/NOPE00").status_code == 404
    unknown = client.post("/api/v1/classes", json={"scenario": "no-such/walkthrough"})
    assert unknown.status_code == 422 and unknown.json()["detail"][0]["loc"] == ["body", "scenario"]
    assert client.get("/api/v1/classes/nope").status_code == 404
    assert client.post("/api/v1/classes/join", json={"code": "ZZZZZZ"}).status_code == 404


def test_open_classes_per_client_are_limited(client: TestClient) -> None:
    for _ in range(3):
        start(client)
    r = client.post("/api/v1/classes", json={"scenario": "cwnd/reno-sawtooth"})
    assert r.status_code == 429 and "3" in r.json()["detail"]


def test_an_idle_class_ends(client: TestClient) -> None:
    c = start(client)
    with client.app.state.engine.begin() as conn:  # type: ignore[attr-defined]
        conn.execute(update(LiveClass).values(active_at=time.time() - 86_401))
    r = client.post(
        f"/api/v1/classes/{c['id']}/step", json={"step": 1}, headers=bearer(c["lecturer_token"])
    )
    assert r.status_code == 410 and "ended" in r.json()["detail"]
    start(client)  # the ended one no longer counts against the client, and is deleted
    assert client.get(f"/api/v1/classes/{c['id']}").status_code == 404


def test_questions_answers_and_reveal(client: TestClient) -> None:
    c = start(client)
    lect = bearer(c["lecturer_token"])
    base = f"/api/v1/classes/{c['id']}"
    asked = client.post(f"{base}/questions", json={"step": 4}, headers=lect)
    assert asked.status_code == 201, asked.text
    q = asked.json()
    assert set(q) >= {"question_id", "prompt", "choices"} and "ssthresh" in q["prompt"]
    assert client.post(f"{base}/questions", json={"step": 4}).status_code == 401
    answer = {"question_id": q["question_id"], "choice": 0}
    assert client.post(f"{base}/answers", json=answer).status_code == 401  # not joined
    assert client.post(f"{base}/answers", json=answer, headers=bearer("x.y")).status_code == 403
    other = start(client)  # a token from another class is not this class's
    stranger = join(client, other["code"])
    assert client.post(f"{base}/answers", json=answer, headers=bearer(stranger)).status_code == 403
    students = [join(client, c["code"]) for _ in range(5)]
    for i, token in enumerate(students):
        r = client.post(f"{base}/answers", json={**answer, "choice": i % 2}, headers=bearer(token))
        assert r.status_code == 204, r.text
    again = client.post(f"{base}/answers", json=answer, headers=bearer(students[0]))
    assert again.status_code == 409
    too_big = {**answer, "choice": len(q["choices"])}
    bad = client.post(f"{base}/answers", json=too_big, headers=bearer(join(client, c["code"])))
    assert bad.status_code == 422 and bad.json()["detail"][0]["loc"] == ["body", "choice"]
    results = client.get(f"{base}/questions/{q['question_id']}", headers=lect).json()
    assert results["counts"][:2] == [3, 2] and sum(results["counts"]) == 5
    assert q["choices"][results["correct"]] == "68"  # Reno halves cwnd 136 at its first loss
    assert client.get(f"{base}/questions/{q['question_id']}").status_code == 401
    revealed = client.post(f"{base}/questions/{q['question_id']}/reveal", headers=lect)
    assert revealed.status_code == 200 and revealed.json()["step"] == 5
    assert client.get(base).json()["step"] == 5
    late = client.post(f"{base}/answers", json=answer, headers=bearer(join(client, c["code"])))
    assert late.status_code == 409


def test_question_choices_come_from_the_model(client: TestClient) -> None:
    """CUBIC's first loss: the right ssthresh is cwnd × 717/1024, Reno's halving is offered."""
    c = start(client, "cwnd/cubic-vs-reno")
    base = f"/api/v1/classes/{c['id']}"
    q = client.post(f"{base}/questions", json={"step": 10}, headers=bearer(c["lecturer_token"]))
    assert q.status_code == 201, q.text
    prompt, choices = q.json()["prompt"], q.json()["choices"]
    assert "cubic" in prompt and "cwnd 85" in prompt
    assert {"59", "42", "85"} <= set(choices)  # 85·717/1024, 85/2, unchanged
    got = client.get(
        f"{base}/questions/{q.json()['question_id']}", headers=bearer(c["lecturer_token"])
    )
    assert choices[got.json()["correct"]] == "59"


def test_state_machine_question_and_steps_without_one(client: TestClient) -> None:
    c = start(client, "tcp/handshake")
    lect = bearer(c["lecturer_token"])
    base = f"/api/v1/classes/{c['id']}"
    q = client.post(f"{base}/questions", json={"step": 5}, headers=lect)
    assert q.status_code == 201
    assert "SYN_SENT" in q.json()["prompt"] and "ESTABLISHED" in q.json()["choices"]
    end = client.get(base).json()["count"] - 1
    none = client.post(f"{base}/questions", json={"step": end}, headers=lect)
    assert none.status_code == 422 and "no question at this step" in none.json()["detail"][0]["msg"]
    skb = start(client, "deploy")
    asks_none = client.post(
        f"/api/v1/classes/{skb['id']}/questions",
        json={"step": 0},
        headers=bearer(skb["lecturer_token"]),
    )
    assert asks_none.status_code == 422
    assert "no question at this step" in asks_none.json()["detail"][0]["msg"]


def test_pointer_question_offers_the_other_direction(client: TestClient) -> None:
    """skb_pull of the 14-byte Ethernet header: data moves from 192 to 206; pushing instead
    (178) and not moving (192, what skb_put does to data) are the wrong answers."""
    c = start(client, "skb/rx-frame")
    q = client.post(
        f"/api/v1/classes/{c['id']}/questions",
        json={"step": 2},
        headers=bearer(c["lecturer_token"]),
    )
    assert q.status_code == 201, q.text
    assert "skb_pull" in q.json()["prompt"] and {"178", "192", "206"} <= set(q.json()["choices"])
    got = client.get(
        f"/api/v1/classes/{c['id']}/questions/{q.json()['question_id']}",
        headers=bearer(c["lecturer_token"]),
    )
    assert q.json()["choices"][got.json()["correct"]] == "206"


# --- the stream, on a real server ------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    def __init__(self, settings: Settings) -> None:
        self.url = f"http://127.0.0.1:{_free_port()}"
        port = int(self.url.rsplit(":", 1)[1])
        self.server = uvicorn.Server(
            uvicorn.Config(create_app(settings), host="127.0.0.1", port=port, log_level="warning")
        )
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> Server:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture
def server(settings: Settings) -> Iterator[Server]:
    with Server(settings) as s:
        yield s


class Listener:
    """A student's event stream, read in a thread: (id, event, data) in arrival order."""

    def __init__(self, url: str, last_id: str | None = None) -> None:
        self.events: list[tuple[int, str, dict[str, Any]]] = []
        self.status = 0
        self.headers: httpx.Headers | None = None
        self._stop = threading.Event()
        headers = {"Last-Event-ID": last_id} if last_id is not None else {}
        self.thread = threading.Thread(target=self._run, args=(url, headers), daemon=True)
        self.thread.start()

    def _run(self, url: str, headers: dict[str, str]) -> None:
        with httpx.Client(timeout=httpx.Timeout(5.0, read=30.0)) as client:
            with client.stream("GET", url, headers=headers) as r:
                self.status, self.headers = r.status_code, r.headers
                fields: dict[str, str] = {}
                for line in r.iter_lines():
                    if self._stop.is_set():
                        return
                    if line == "" and "data" in fields:
                        self.events.append(
                            (int(fields["id"]), fields["event"], json.loads(fields["data"]))
                        )
                        fields = {}
                    elif ":" in line and not line.startswith(":"):
                        key, _, value = line.partition(":")
                        fields[key] = value.removeprefix(" ")

    def wait(self, n: int, timeout: float = 15.0) -> list[tuple[int, str, dict[str, Any]]]:
        deadline = time.monotonic() + timeout
        while len(self.events) < n:
            assert time.monotonic() < deadline, f"got {self.events}, waited for {n}"
            time.sleep(0.02)
        return self.events

    def close(self) -> None:
        self._stop.set()


def _post(url: str, body: dict[str, Any] | None = None, token: str | None = None) -> httpx.Response:
    headers = bearer(token) if token else {}
    return httpx.post(url, json=body, headers=headers, timeout=10)


def test_students_follow_and_resume_with_last_event_id(server: Server) -> None:
    c = _post(f"{server.url}/api/v1/classes", {"scenario": "cwnd/reno-sawtooth", "step": 2}).json()
    api = f"{server.url}/api/v1/classes/{c['id']}"
    student = Listener(f"{api}/events")
    first = student.wait(1)
    assert student.status == 200 and student.headers is not None
    assert student.headers["content-type"].startswith("text/event-stream")
    assert first[0][1:] == ("step", {"step": 2, "at": first[0][2]["at"]})
    for step in (5, 7):
        assert _post(f"{api}/step", {"step": step}, c["lecturer_token"]).status_code == 204
    got = student.wait(3)
    assert [(e[1], e[2]["step"]) for e in got] == [("step", 2), ("step", 5), ("step", 7)]
    assert [e[0] for e in got] == [got[0][0], got[0][0] + 1, got[0][0] + 2]
    student.close()
    # while the phone sleeps: a step, a question and its reveal
    assert _post(f"{api}/step", {"step": 3}, c["lecturer_token"]).status_code == 204
    q = _post(f"{api}/questions", {"step": 4}, c["lecturer_token"]).json()
    assert (
        _post(f"{api}/questions/{q['question_id']}/reveal", None, c["lecturer_token"]).status_code
        == 200
    )
    back = Listener(f"{api}/events", last_id=str(got[1][0]))  # it had seen step 5 only
    resumed = back.wait(5)
    assert [e[1] for e in resumed] == ["step", "step", "question", "reveal", "step"]
    assert [e[2].get("step") for e in resumed if e[1] == "step"] == [7, 3, 5]
    assert resumed[2][2]["prompt"] == q["prompt"] and resumed[2][2]["choices"] == q["choices"]
    assert resumed[3][2]["question_id"] == q["question_id"] and "correct" in resumed[3][2]
    fresh = Listener(f"{api}/events")  # a new student gets the current state only
    assert [(e[1], e[2]["step"]) for e in fresh.wait(1)] == [("step", 5)]
    time.sleep(0.3)
    assert len(fresh.events) == 1
    back.close()
    fresh.close()


def test_a_step_reaches_students_on_another_instance(settings: Settings, server: Server) -> None:
    """Two app instances on one database (two replicas, or two workers): the lecturer's step
    goes to one, the student listens on the other."""
    with Server(settings) as other:
        c = _post(f"{server.url}/api/v1/classes", {"scenario": "tcp/handshake"}).json()
        student = Listener(f"{other.url}/api/v1/classes/{c['id']}/events")
        student.wait(1)
        started = time.monotonic()
        r = _post(f"{server.url}/api/v1/classes/{c['id']}/step", {"step": 9}, c["lecturer_token"])
        assert r.status_code == 204
        got = student.wait(2, timeout=5)
        assert got[1][1] == "step" and got[1][2]["step"] == 9
        assert time.monotonic() - started < 5  # polling / NOTIFY, not the stream's idle re-read
        student.close()


def test_quiz_me_asks_before_the_marked_steps(client: TestClient) -> None:
    """Self-study: a question at each step the lesson marks, its answer shown by a later step;
    a name that is no walkthrough is 422."""
    got = client.get("/api/v1/quiz", params={"scenario": "tcp/handshake"})
    assert got.status_code == 200
    questions = got.json()["questions"]
    assert questions and all(q["step"] < q["answer_step"] for q in questions)
    first = questions[0]
    assert first["choices"][first["correct"]] == "SYN_RECEIVED"  # the SYN reaches the server
    assert first["explanation"]
    zh = client.get("/api/v1/quiz", params={"scenario": "tcp/handshake", "lang": "zh-CN"})
    assert (
        "下一步" in zh.json()["questions"][0]["prompt"]
        or "状态" in zh.json()["questions"][0]["prompt"]
    )
    deploy = client.get("/api/v1/quiz", params={"scenario": "deploy"}).json()["questions"]
    assert [q["step"] for q in deploy] == [4, 6]  # the lesson's ask steps
    bad = client.get("/api/v1/quiz", params={"scenario": "nothing/here"})
    assert bad.status_code == 422 and bad.json()["detail"][0]["loc"] == ["query", "scenario"]
