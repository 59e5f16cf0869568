"""/docs: Swagger UI from local npm assets runs under the app's Content-Security-Policy."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.browser


def test_swagger_ui_renders_under_the_csp(live_server: Any, page: Any) -> None:
    """/docs shows the API's operations with no CSP violation and no request to another host."""
    violations: list[str] = []
    hosts: set[str] = set()
    page.on(
        "console", lambda m: violations.append(m.text) if "Content Security" in m.text else None
    )
    page.on("request", lambda r: hosts.add(r.url.split("/")[2]))
    page.goto(f"{live_server.url}/docs")
    page.wait_for_selector(".swagger-ui .opblock", timeout=20_000)
    assert "Stepscope" in page.locator(".swagger-ui .info .title").inner_text()
    assert page.locator(".swagger-ui .opblock").count() >= 5
    assert violations == []
    assert hosts == {live_server.url.split("/")[2]}
