"""A live class in the browser: a student's page follows the lecturer's step as it moves, steps
on its own and comes back with F; the presenter's page moves the class with the player's keys."""

from __future__ import annotations

import httpx
import pytest

pytestmark = pytest.mark.browser


def step_no(page) -> int:
    return int(page.inner_text("#step-no"))


def test_a_student_follows_the_lecturer(live_server, page) -> None:
    c = httpx.post(f"{live_server.url}/api/v1/classes", json={"scenario": "tcp/handshake"}).json()
    page.goto(c["join_url"])
    page.wait_for_function("document.getElementById('class-status').textContent.includes('step 0')")
    r = httpx.post(
        f"{live_server.url}/api/v1/classes/{c['id']}/step",
        json={"step": 6},
        headers={"Authorization": f"Bearer {c['lecturer_token']}"},
    )
    assert r.status_code == 204
    page.wait_for_function("document.getElementById('step-no').textContent.trim() === '6'")
    assert page.is_hidden("#class-follow")
    page.focus("#stage")
    page.keyboard.press("ArrowRight")
    assert step_no(page) == 7
    assert page.is_visible("#class-follow")  # on its own: the way back is offered
    page.keyboard.press("f")
    assert step_no(page) == 6 and page.is_hidden("#class-follow")


def test_the_presenter_moves_the_class(live_server, page) -> None:
    c = httpx.post(f"{live_server.url}/api/v1/classes", json={"scenario": "tcp/handshake"}).json()
    page.goto(live_server.url + "/")  # the token is kept in this browser, as "Start a class" does
    page.evaluate(
        "([id, token]) => localStorage.setItem('stepscope.class.lecturer.' + id, token)",
        [c["id"], c["lecturer_token"]],
    )
    page.goto(f"{live_server.url}{c['presenter_url']}")
    page.wait_for_selector(".class-qr svg")
    page.focus("#stage")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    api = f"{live_server.url}/api/v1/classes/{c['id']}"
    page.wait_for_function("document.getElementById('step-no').textContent.trim() === '2'")
    for _ in range(50):
        if httpx.get(api).json()["step"] == 2:
            break
        page.wait_for_timeout(100)
    assert httpx.get(api).json()["step"] == 2
    assert page.inner_text("#class-next-narration").strip()  # the next step's narration


def test_quiz_me_asks_and_scores(live_server, page) -> None:
    page.goto(f"{live_server.url}/explainers/tcp/presets/handshake")
    page.click("#quiz-start")
    page.wait_for_selector("#quiz-panel .class-choice")
    prompt = page.inner_text("#quiz-panel .quiz-prompt")
    assert "Which state" in prompt
    assert step_no(page) == 4  # the first question's step, just before the SYN arrives
    page.click("#quiz-panel .class-choice:text-is('SYN_RECEIVED')")
    page.wait_for_selector("#quiz-panel .class-result")
    assert page.inner_text("#quiz-panel .class-result").startswith("Right!")
    assert "1 of 1" in page.inner_text("#quiz-panel .quiz-score")
    page.click("#quiz-panel .quiz-tools .primary")  # the next question
    page.wait_for_function("document.getElementById('step-no').textContent.trim() === '6'")


def test_a_marked_step_asks_by_itself_and_the_lecturer_skips_it(live_server, page, browser) -> None:
    """tcp/handshake's lesson marks step 4: the presenter moving there asks the class without
    pressing "ask" (the student sees the question, the presenter the answer bars and Skip);
    Skip closes it for the student and the class stays at step 4."""
    c = httpx.post(
        f"{live_server.url}/api/v1/classes", json={"scenario": "tcp/handshake", "step": 3}
    ).json()
    page.goto(live_server.url + "/")
    page.evaluate(
        "([id, token]) => localStorage.setItem('stepscope.class.lecturer.' + id, token)",
        [c["id"], c["lecturer_token"]],
    )
    page.goto(f"{live_server.url}{c['presenter_url']}")
    ctx = browser.new_context(viewport={"width": 390, "height": 844})
    phone = ctx.new_page()
    phone.goto(c["join_url"])
    phone.wait_for_function(
        "document.getElementById('class-status').textContent.includes('step 3')"
    )
    assert phone.is_hidden("#class-question")
    page.focus("#stage")
    page.keyboard.press("ArrowRight")
    phone.wait_for_selector("#class-question .class-choice")  # nobody pressed "ask"
    assert "SYN_RECEIVED" in phone.inner_text("#class-choices")
    page.wait_for_selector("#class-skip:not([hidden])")
    assert page.is_visible("#class-reveal") and page.is_visible("#class-counts")
    page.click("#class-skip")
    phone.wait_for_selector("#class-question", state="hidden")
    page.wait_for_selector("#class-skip", state="hidden")
    assert httpx.get(f"{live_server.url}/api/v1/classes/{c['id']}").json()["step"] == 4
    ctx.close()


def test_a_student_stream_refused_once_is_opened_again(live_server, page) -> None:
    """An event stream answered with an error status (a 503 while the store is busy) is closed
    for good by the browser: the page opens it again and still follows the lecturer."""
    c = httpx.post(f"{live_server.url}/api/v1/classes", json={"scenario": "tcp/handshake"}).json()
    refused: list[str] = []

    def once(route) -> None:
        if not refused:
            refused.append(route.request.url)
            route.fulfill(status=503, headers={"Retry-After": "1"}, body="busy")
        else:
            route.continue_()

    page.route("**/events*", once)
    page.goto(c["join_url"])
    page.wait_for_function("document.getElementById('class-status').textContent.includes('step 0')")
    r = httpx.post(
        f"{live_server.url}/api/v1/classes/{c['id']}/step",
        json={"step": 4},
        headers={"Authorization": f"Bearer {c['lecturer_token']}"},
    )
    assert r.status_code == 204
    page.wait_for_function("document.getElementById('step-no').textContent.trim() === '4'")
    assert len(refused) == 1
