"""The packetdrill page in a browser: → steps line by line (the script pane follows and the URL
holds the step), a pasted script with a wrong expectation shows the red diff and the verdict."""

from __future__ import annotations


def test_stepping_follows_the_script_lines(live_server, page) -> None:  # type: ignore[no-untyped-def]
    page.goto(f"{live_server.url}/explainers/tcp/packetdrill?example=basic-client")
    page.wait_for_selector("#pd-verdict")
    assert "Pass" in page.inner_text("#pd-verdict")
    first = page.get_attribute(".pd-step:not([hidden])", "data-line")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    third = page.get_attribute(".pd-step:not([hidden])", "data-line")
    assert int(third or 0) > int(first or 0)
    assert page.get_attribute(".pd-source li.current", "data-line") == third
    assert "step=3" in page.url
    assert page.inner_text("#pd-pos").startswith("3 /")


def test_a_wrong_expectation_shows_a_red_diff(live_server, page) -> None:  # type: ignore[no-untyped-def]
    page.goto(f"{live_server.url}/explainers/tcp/packetdrill?example=basic-client")
    script = page.input_value("#pd-script").replace(
        "> P. 1:2001(2000) ack 1", "> P. 1:1501(1500) ack 1"
    )
    page.fill("#pd-script", script)
    page.click(".pd-form button[type=submit]")
    page.wait_for_selector("#pd-verdict")
    assert "Fails at line" in page.inner_text("#pd-verdict")
    page.click("#pd-source")  # leave the text box so arrow keys step
    for _ in range(20):
        if page.get_attribute(".pd-step:not([hidden])", "data-status") == "mismatch":
            break
        page.keyboard.press("ArrowRight")
    step = page.locator(".pd-step:not([hidden])")
    assert step.get_attribute("data-status") == "mismatch"
    assert step.locator("tr.bad").count() >= 1
