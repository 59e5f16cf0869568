"""A lesson's marked steps (front matter ``ask: N, M``; docs/live-class.md): a live class that
reaches one is asked its question without the lecturer asking, once; the lecturer can skip it
(closed, no answer shown, the class stays). Every marked step of every lesson has a question,
the translation marks the same steps, and "Quiz me" asks at them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.settings import Settings
from app.web.classes import store
from app.web.content import parse_lesson

CONTENT = Path(__file__).resolve().parents[2] / "content"


@pytest.fixture
def settings(db_url: str) -> Settings:
    return Settings(database_url=db_url)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def snapshot(client: TestClient, class_id: str) -> list[tuple[str, dict[str, Any]]]:
    engine = client.app.state.engine  # type: ignore[attr-defined]
    return [(e.kind, json.loads(e.data)) for e in store.events_after(engine, class_id, None)]


def test_front_matter_ask_is_parsed() -> None:
    lesson = parse_lesson("x", "---\ntitle: T\nask: 9, 4,4\n---\nIntro\n\n## Step 5\nNote\n")
    assert lesson.ask_steps == (4, 9) and sorted(lesson.step_notes) == [5]
    assert parse_lesson("y", "---\ntitle: T\n---\nIntro\n").ask_steps == ()


def test_marked_steps_have_questions_in_both_languages(client: TestClient) -> None:
    """Every ``ask`` step names a step of its walkthrough that has a question, the zh-CN file
    marks the same steps, and each explainer with questions marks at least one lesson."""
    site = client.app.state.site  # type: ignore[attr-defined]
    marked: set[str] = set()
    for path in sorted(CONTENT.glob("*.md")):
        lesson = parse_lesson(path.stem, path.read_text(encoding="utf-8"))
        zh = CONTENT / "zh-CN" / path.name
        if zh.is_file():
            translated = parse_lesson(path.stem, zh.read_text(encoding="utf-8"))
            assert translated.ask_steps == lesson.ask_steps, path.name
        if not lesson.ask_steps:
            continue
        plugin = site.plugin(lesson.explainer)
        preset = plugin.sim.preset(lesson.preset)
        trace = plugin.sim.run(plugin.sim.parse(dict(preset.params)))
        for step in lesson.ask_steps:
            assert plugin.web.question is not None, path.name
            assert plugin.web.question(trace, step) is not None, f"{path.name}: step {step}"
        marked.add(lesson.explainer)
    asking = {p.name for p in site.plugins if p.web.question is not None}
    assert asking and asking <= marked


def test_a_marked_step_asks_once_and_the_lecturer_can_skip(client: TestClient) -> None:
    """tcp/handshake marks steps 4 and 6: moving there asks; coming back does not ask again; a
    skipped question closes (answers 409), is not shown to a student who joins later, and the
    class stays where it is."""
    c = client.post("/api/v1/classes", json={"scenario": "tcp/handshake"}).json()
    lect = bearer(c["lecturer_token"])
    base = f"/api/v1/classes/{c['id']}"
    assert client.post(f"{base}/step", json={"step": 3}, headers=lect).status_code == 204
    assert [k for k, _ in snapshot(client, c["id"])] == ["step"]  # a new listener: the step only
    assert client.post(f"{base}/step", json={"step": 4}, headers=lect).status_code == 204
    now = snapshot(client, c["id"])
    assert [k for k, _ in now] == ["step", "question"]  # a later student gets it too
    asked = now[1][1]
    assert asked["step"] == 4
    qid = asked["question_id"]
    got = client.get(f"{base}/questions/{qid}", headers=lect).json()
    assert got["choices"][got["correct"]] == "SYN_RECEIVED" and got["revealed"] is False
    # the student answers the question nobody pressed "ask" for
    student = client.post("/api/v1/classes/join", json={"code": c["code"]}).json()["student_token"]
    ok = client.post(
        f"{base}/answers", json={"question_id": qid, "choice": 0}, headers=bearer(student)
    )
    assert ok.status_code == 204
    # skipping needs the lecturer
    assert client.post(f"{base}/questions/{qid}/skip").status_code == 401
    assert client.post(f"{base}/questions/{qid}/skip", headers=lect).status_code == 204
    assert client.post(f"{base}/questions/{qid}/skip", headers=lect).status_code == 409
    late = client.post(
        f"{base}/answers", json={"question_id": qid, "choice": 1}, headers=bearer(student)
    )
    assert late.status_code == 409 and "skipped" in late.json()["detail"]
    assert [k for k, _ in snapshot(client, c["id"])] == ["step"]  # nothing open after a skip
    assert client.get(base).json()["step"] == 4  # the class did not move
    # back and forth over the marked step: no second question; the next marked step asks
    for step in (3, 4):
        client.post(f"{base}/step", json={"step": step}, headers=lect)
    assert [k for k, _ in snapshot(client, c["id"])] == ["step"]
    client.post(f"{base}/step", json={"step": 6}, headers=lect)
    assert [k for k, _ in snapshot(client, c["id"])] == ["step", "question"]


def test_quiz_me_asks_at_the_marked_steps(client: TestClient) -> None:
    got = client.get("/api/v1/quiz", params={"scenario": "deploy/8b-one-h100"}).json()
    assert [q["step"] for q in got["questions"]] == [4, 6]
    assert "num_gpu_blocks" in got["questions"][1]["prompt"]
