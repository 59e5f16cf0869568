"""The packetdrill page in a browser: → steps line by line (the script pane follows and the URL
holds the step), a pasted script with a wrong expectation shows the red diff and the verdict, and
an uploaded file fills the script box (one over 64 KB is refused there)."""

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


def test_an_uploaded_script_fills_the_box_and_runs(live_server, page, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The upload field reads a .pkt file into the script box (a file over 64 KB is refused
    there, with the limit named); Run then steps it like a pasted one."""
    page.goto(f"{live_server.url}/explainers/tcp/packetdrill")
    ours = tmp_path / "ours.pkt"
    ours.write_text(
        "0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n"
        "+0...0.100 connect(3, ..., ...) = 0\n"
        "+0 > S 0:0(0) <...>\n"
        "+.1 < S. 0:0(0) ack 1 win 8000 <mss 1000>\n"
        "+0 > . 1:1(0) ack 1\n"
        "+0 close(3) = 0\n"
        "+0 > F. 1:1(0) ack 1\n"
    )
    big = tmp_path / "big.pkt"
    big.write_text("// padding\n" * 7000)
    page.set_input_files("#pd-file", str(big))
    page.wait_for_selector("#pd-file-error:not([hidden])")
    assert "64 KB" in page.inner_text("#pd-file-error")
    page.set_input_files("#pd-file", str(ours))
    page.wait_for_function("document.getElementById('pd-script').value.includes('close(3) = 0')")
    assert page.is_hidden("#pd-file-error")
    page.click(".pd-form button[type=submit]")
    page.wait_for_selector("#pd-verdict")
    assert "Pass" in page.inner_text("#pd-verdict")
    assert page.locator(".pd-source li").count() >= 7
