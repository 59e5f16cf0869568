"""The editor's Run as a user drives it: a long run (a job) opens the scenario's own page, whose
progress bar follows the job until the walkthrough opens."""

from __future__ import annotations

import pytest

from tests.native import pure_python

pytestmark = pytest.mark.browser


@pure_python  # compiled, no cwnd run is predicted over the 1.5 s job threshold
def test_editor_run_of_a_long_run_reaches_its_walkthrough(live_server, page) -> None:
    """cubic-lfn made twice as long is expected to take 3 s (over the 1.5 s job threshold):
    Run navigates to the custom page (no second site header inside the form), the job page
    there polls, and the player opens by itself when the job is done."""
    page.goto(f"{live_server.url}/explainers/cwnd/edit?preset=cubic-lfn")
    duration = page.locator('input[name="duration_s"]')
    duration.fill("120")
    duration.dispatch_event("change")
    page.wait_for_selector(".ok-msg")  # the changed form was checked
    statuses: list[int] = []
    page.on(
        "response",
        lambda r: statuses.append(r.status) if "/explainers/cwnd/custom" in r.url else None,
    )
    page.click("#run-btn")
    page.wait_for_url("**/explainers/cwnd/custom?p=*")
    assert page.locator("#editor").count() == 0  # a page of its own, not a swap into the form
    page.wait_for_selector("#cwnd-chart", timeout=90_000)
    assert page.locator("header.site-header, body > header").count() == 1
    assert 202 in statuses  # the scenario's page was the job's progress page first
    count = int(page.get_attribute("#player", "data-count") or "0")
    assert count > 1
