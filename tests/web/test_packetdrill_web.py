"""packetdrill over HTTP: the API's shape (verdict, lines, frames), its bad inputs (422 naming
line and column or line and construct, 422 with the run limit, 413 over 64 KB) and the page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

API = "/api/v1/explainers/tcp/packetdrill"
EXAMPLES = Path(__file__).resolve().parents[2] / "content" / "packetdrill"


def test_api_runs_a_script_and_answers_the_issue_shape(client: TestClient) -> None:
    script = (EXAMPLES / "basic-server.pkt").read_text()
    r = client.post(API, json={"script": script, "tolerance_us": 4000})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["verdict"] == {"pass": True, "line": None, "reason": "every line matches"}
    assert {ln["status"] for ln in body["lines"]} <= {"match", "comment"}
    for ln in body["lines"]:
        assert {"line", "status", "expected", "got"} <= set(ln)
    synack = next(ln for ln in body["lines"] if ln["got"] and ln["got"].get("flags") == "S.")
    assert synack["function"] == "tcp_v4_send_synack"
    assert body["frames"] and {"line", "t_ms", "narration", "source"} <= set(body["frames"][0])


def test_api_reports_the_first_mismatch(client: TestClient) -> None:
    script = "0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n+0 listen(3, 1) = 7\n"
    body = client.post(API, json={"script": script}).json()
    assert body["verdict"]["pass"] is False
    assert body["verdict"]["line"] == 2
    assert "returned 0, expected 7" in body["verdict"]["reason"]
    assert body["lines"][1]["status"] == "mismatch"


def test_syntax_error_is_422_naming_line_and_column(client: TestClient) -> None:
    r = client.post(API, json={"script": "0 close(3) = 0\n+0 > S 0:0(0) ack\n"})
    assert r.status_code == 422
    d = r.json()["detail"][0]
    assert d["loc"][-3:] == ["script", 2, 18]
    assert "line 2, column 18" in d["msg"]


def test_unsupported_construct_is_422_naming_line_and_construct(client: TestClient) -> None:
    script = "0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n%{ print(1) }%\n"
    r = client.post(API, json={"script": script})
    assert r.status_code == 422
    d = r.json()["detail"][0]
    assert "line 2" in d["msg"] and "python" in d["msg"]


@pytest.mark.parametrize(
    ("line1", "words"),
    [
        ("`sysctl -q net.ipv4.tcp_rmem=abc`", "tcp_rmem=abc"),
        ('`sysctl -q net.ipv4.tcp_wmem="4096 1 1"`', "tcp_wmem=4096 1 1"),
        ("`sysctl -q net.ipv4.tcp_syn_retries=-7`", "tcp_syn_retries=-7"),
        ("--tolerance_usecs=5000000", "--tolerance_usecs"),
        ("--tolerance_usecs=abc", "--tolerance_usecs"),
    ],
)
def test_a_bad_setting_in_the_script_is_422_naming_its_line(
    client: TestClient, line1: str, words: str
) -> None:
    """A sysctl the model has, set to a value it cannot take, and a tolerance option out of
    the request's own range, are bad input on their line (not a knob 'the model lacks', nor
    a tolerance that bypasses the request's limit); the page answers the same."""
    script = f"{line1}\n0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n"
    r = client.post(API, json={"script": script})
    assert r.status_code == 422
    d = r.json()["detail"][0]
    assert d["loc"][-2:] == ["script", 1]
    assert d["msg"].startswith("line 1: ") and words in d["msg"]
    page = client.post("/explainers/tcp/packetdrill", data={"script": script})
    assert page.status_code == 422 and words in page.text
    fine = client.post(API, json={"script": script.replace(line1, "--tolerance_usecs=10000")})
    assert fine.status_code == 200 and fine.json()["tolerance_us"] == 10000


def test_run_limit_is_422_with_the_limit(client: TestClient) -> None:
    r = client.post(
        API, json={"script": "0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n+900 close(3) = 0\n"}
    )
    assert r.status_code == 422
    assert "600 s" in r.json()["detail"][0]["msg"]


def test_over_64_kb_is_413(client: TestClient) -> None:
    script = "// " + "x" * (64 * 1024) + "\n"
    r = client.post(API, json={"script": script})
    assert r.status_code == 413
    assert "64 KB" in r.json()["detail"][0]["msg"]


def test_bad_tolerance_and_missing_script_are_422(client: TestClient) -> None:
    assert client.post(API, json={"script": "", "tolerance_us": -1}).status_code == 422
    assert client.post(API, json={"tolerance_us": 4000}).status_code == 422


def test_page_shows_an_example_stepped_and_its_verdict(client: TestClient) -> None:
    r = client.get("/explainers/tcp/packetdrill?example=zero-window")
    assert r.status_code == 200
    assert 'id="pd-verdict"' in r.text and "Pass" in r.text
    assert r.text.count('class="pd-step') > 10
    assert "tcp_send_probe0" in r.text or "tcp_probe_timer" in r.text or "probe" in r.text


def test_page_runs_a_pasted_script_and_shows_the_red_diff(client: TestClient) -> None:
    script = (EXAMPLES / "basic-client.pkt").read_text().replace("ack 2001 win", "ack 2001 win")
    script = script.replace("> P. 1:2001(2000) ack 1", "> P. 1:2501(2500) ack 1")
    r = client.post("/explainers/tcp/packetdrill", data={"script": script, "tolerance_us": "4000"})
    assert r.status_code == 200
    assert "Fails at line" in r.text
    assert '<tr class="bad">' in r.text


def test_page_unknown_example_is_422(client: TestClient) -> None:
    assert client.get("/explainers/tcp/packetdrill?example=nope").status_code == 422


def test_page_in_chinese(client: TestClient) -> None:
    r = client.get("/explainers/tcp/packetdrill?example=basic-client&lang=zh-CN")
    assert r.status_code == 200
    assert "Stepscope 示例" in r.text


def test_page_runs_a_script_with_unsupported_lines_and_marks_them(client: TestClient) -> None:
    """The page (unlike the API) runs past unsupported lines and shows them as such."""
    script = (EXAMPLES / "basic-server.pkt").read_text() + "+0 %{ assert tcpi_rto == 10 }%\n"
    r = client.post("/explainers/tcp/packetdrill", data={"script": script})
    assert r.status_code == 200
    assert 'data-status="unsupported"' in r.text
    assert "not supported: %{ python }% block" in r.text


def test_page_checks_a_cwnd_assertion(client: TestClient) -> None:
    """``%{ assert tcpi_snd_cwnd == N }%`` is checked against the model's cwnd: a wrong
    value is a mismatch naming the field and both values."""
    base = (EXAMPLES / "zero-window.pkt").read_text()
    ok = client.post(
        "/explainers/tcp/packetdrill",
        data={"script": base + "+0 %{ assert tcpi_snd_cwnd >= 10, tcpi_snd_cwnd }%\n"},
    )
    assert ok.status_code == 200 and 'data-status="unsupported"' not in ok.text
    bad = client.post(
        "/explainers/tcp/packetdrill",
        data={"script": base + "+0 %{ assert tcpi_snd_cwnd == 3 }%\n"},
    )
    assert bad.status_code == 200
    assert "tcpi_snd_cwnd is" in bad.text and "expected == 3" in bad.text


def test_page_over_64_kb_is_413(client: TestClient) -> None:
    r = client.post("/explainers/tcp/packetdrill", data={"script": "// " + "x" * 70_000})
    assert r.status_code == 413


def test_a_pasted_script_has_a_share_link_that_opens_it(client: TestClient) -> None:
    script = (EXAMPLES / "zero-window.pkt").read_text().replace("+.3 > .", "+.31 > .")
    r = client.post("/explainers/tcp/packetdrill", data={"script": script})
    m = re.search(r'id="pd-share" readonly value="([^"]+)"', r.text)
    assert m is not None
    url = m.group(1).replace("&amp;", "&")
    shared = client.get(url[url.index("/explainers") :])
    assert shared.status_code == 200
    assert "+.31 &gt; ." in shared.text  # the pasted script, not the example
    assert "Fails at line" in shared.text


def test_a_damaged_share_link_is_422(client: TestClient) -> None:
    r = client.get("/explainers/tcp/packetdrill?s=not-a-script")
    assert r.status_code == 422


def _embed_of(client: TestClient, script: str) -> str:
    """The embed link the page offers for a pasted script (its 'copy embed code' box)."""
    r = client.post("/explainers/tcp/packetdrill", data={"script": script})
    m = re.search(r'id="pd-embed-open" href="([^"]+)"', r.text)
    assert m is not None and 'id="pd-embed-copy"' in r.text
    assert "&lt;iframe src=" in r.text and 'width="960" height="600"' in r.text.replace(
        "&#34;", '"'
    ).replace("&quot;", '"')
    return m.group(1).replace("&amp;", "&")


def test_the_embed_of_a_shared_script_steps_its_lines(client: TestClient) -> None:
    """The page's embed link opens the chrome-free player of the same run: one step per
    script line that is not a comment, the verdict and the failing line's diff drawn."""
    script = (EXAMPLES / "zero-window.pkt").read_text().replace("+.3 > .", "+.31 > .")
    url = _embed_of(client, script)
    assert url.startswith("/embed/tcp/packetdrill?s=")
    r = client.get(url)
    assert r.status_code == 200, r.text
    assert (
        'data-embed="1"' in r.text and "frame-ancestors *" in r.headers["content-security-policy"]
    )
    steps = [ln for ln in script.split("\n") if ln.strip() and not ln.strip().startswith("//")]
    assert f'data-count="{len(steps)}"' in r.text
    assert "✗ Fails at line" in r.text  # the verdict on every step's picture
    wrong = 1 + script.split("\n").index(next(x for x in script.split("\n") if "+.31 > ." in x))
    step = next(i for i, x in enumerate(steps) if "+.31 > ." in x)
    one = client.get(f"{url}&step={step}")
    assert f'data-step="{step}"' in one.text
    assert 'data-status="mismatch"' in one.text and f"Line {wrong}" in one.text
    assert 'data-field="t_ms"\n    class="changed"' in one.text  # the late packet's time differs


def test_the_embed_speaks_chinese_and_takes_the_slide_options(client: TestClient) -> None:
    r = client.get("/embed/tcp/packetdrill?example=basic-client&lang=zh-CN&theme=dark&controls=min")
    assert r.status_code == 200
    assert 'data-theme="dark"' in r.text and 'lang="zh-CN"' in r.text
    assert "通过" in r.text  # the verdict in Chinese
    assert client.get("/embed/tcp/packetdrill?example=basic-client&theme=neon").status_code == 422


def test_a_bad_embed_link_is_422_naming_it(client: TestClient) -> None:
    r = client.get("/embed/tcp/packetdrill?s=not-a-script", headers={"accept": "application/json"})
    assert r.status_code == 422
    assert "s" in str(r.json()["detail"][0]["loc"])
    r = client.get("/embed/tcp/packetdrill?example=nope", headers={"accept": "application/json"})
    assert r.status_code == 422 and "example" in str(r.json()["detail"][0]["loc"])
    assert client.get("/embed/tcp/packetdrill?s=" + "A" * 9000).status_code == 422


def test_the_embed_fetches_more_frames(client: TestClient) -> None:
    r = client.get("/embed/tcp/packetdrill/frames?example=fast-retransmit&start=2&count=3")
    assert r.status_code == 200
    assert r.text.count('class="pd-svg"') == 3
