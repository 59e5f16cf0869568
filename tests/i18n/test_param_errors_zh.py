"""Parameter errors speak the page's language: the editor names the field by its label and
gives the simulation's reason in Chinese on a zh-CN page, while the API's 422 body stays the
English it always was (same ``loc``, ``msg`` and ``type``) for a client that asks for no
language.

The reasons come from each simulation's own validation (``app/sim/*/params.py``); they are
``msg()`` ids, so the catalog translates them and the English source is the API's text."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.explainers import builtin
from app.main import create_app
from app.settings import Settings
from app.sim.core import ParamError
from app.web import i18n
from tests.i18n.leaks import english_in

CJK = re.compile(r"[\u4e00-\u9fff]")
PLUGINS = {p.sim.name: p for p in builtin()}
ERRORS = re.compile(
    r'<(?:span|p) class="field-error[^"]*"[^>]*>(.*?)</(?:span|p)>'
    r'|<div class="form-issues"[^>]*>(.*?)</div>',
    re.S,
)
TAG = re.compile(r"<[^>]+>")

# A handful of bad inputs per explainer, each reaching several of its validator's sentences.
BAD: dict[str, list[dict[str, Any]]] = {
    "tcp": [
        {
            "script": [
                {"t_ms": -1, "endpoint": "client", "call": "close", "bytes": 5},
                {"t_ms": 0, "endpoint": "server", "call": "listen", "backlog": 5000},
                {"t_ms": 0, "endpoint": "client", "call": "send"},
            ],
            "rtt_ms": 0,
            "mss": 10,
            "sysctl": {"tcp_syn_retries": 0, "tcp_fin_timeout_s": 0.5},
        },
        {
            "script": [{"t_ms": 0, "endpoint": "client", "call": "connect", "nonblock": "yes"}],
            "network": [{"drop": {"from": "client", "nth": 0}}, {"delay": {"from": "server"}}],
            "until_ms": -5,
        },
    ],
    "scheduler": [
        {
            "config": {"max_num_seqs": 0, "watermark": 1.5, "policy": "lifo"},
            "requests": [{"id": "a", "prompt_tokens": 0}, {"id": "b"}],
        },
        {
            "config": {"enable_chunked_prefill": False, "max_num_batched_tokens": 512},
            "requests": [
                {"id": "a", "prompt_tokens": 4, "prompt_token_ids": [1, 2]},
                {"id": "a", "prompt_tokens": 5},
            ],
        },
        {"config": {"num_gpu_blocks": 10}, "requests": [{"id": "a", "prompt_tokens": 5000}]},
    ],
    "path": [
        {"path": "forward", "device": "veth", "packets": 0, "payload_bytes": 0},
        {"path": "tx", "scenario": "vxlan", "packets": 2, "payload_bytes": 1440, "drop": "ttl"},
        {"path": "rx", "device": "nic", "drop": "netfilter", "hook": "FORWARD", "flows": 3},
    ],
    "skb": [
        {"ops": [{"op": "alloc_skb", "size": -1}, {"op": "skb_put", "len": "x"}]},
        {"ops": [{"op": "skb_put", "len": 10}]},
    ],
}

# What the API answers today for some of them, word for word (clients and saved tests read it).
ENGLISH: dict[str, list[tuple[list[str | int], str]]] = {
    "tcp": [
        (["body", "script", 0, "t_ms"], "negative time"),
        (["body", "script", 0, "bytes"], "close takes no bytes"),
        (["body", "script", 1, "backlog"], "expected an integer 0 to 4096"),
        (["body", "script", 2, "bytes"], "send needs bytes, 1 to 10000000"),
        (["body", "rtt_ms"], "expected 0.01 to 10000 ms"),
        (["body", "mss"], "expected an integer 64 to 65483"),
        (["body", "sysctl", "tcp_syn_retries"], "expected an integer 1 to 127"),
        (["body", "sysctl", "tcp_fin_timeout_s"], "expected 1 to 120 seconds"),
    ],
    "scheduler": [
        (["body", "config", "max_num_seqs"], "max_num_seqs must be ≥ 1; you gave 0"),
        (
            ["body", "config", "policy"],
            "policy must be one of fcfs, priority; you gave the text 'lifo'",
        ),
        (["body", "config", "watermark"], "watermark must be < 1; you gave 1.5"),
        (["body", "requests", 0, "prompt_tokens"], "prompt_tokens must be ≥ 1; you gave 0"),
        (
            ["body", "requests", 1, "prompt_tokens"],
            "give prompt_tokens (a length) or prompt_token_ids",
        ),
    ],
    "path": [
        (["body", "packets"], "must be between 1 and 1000"),
        (["body", "payload_bytes"], "must be between 1 and 64000"),
    ],
}


@pytest.fixture(scope="module")
def app_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    db = tmp_path_factory.mktemp("errs") / "errs.db"
    with TestClient(create_app(Settings(database_url=f"sqlite:///{db}"))) as c:
        yield c


def _issues(name: str, raw: dict[str, Any]) -> tuple[Any, ...]:
    try:
        PLUGINS[name].sim.parse(raw)
    except ParamError as exc:
        return exc.issues
    raise AssertionError(f"{name}: {raw} was accepted")


def _shown_errors(page: str) -> list[str]:
    """The texts of the editor's error spans and its list of issues without a field."""
    return [html.unescape(TAG.sub(" ", a or b)).strip() for a, b in ERRORS.findall(page)]


def _cases() -> list[tuple[str, int]]:
    return [(name, i) for name, cases in BAD.items() for i in range(len(cases))]


@pytest.mark.parametrize(("name", "i"), _cases())
def test_editor_gives_each_reason_in_chinese(app_client: TestClient, name: str, i: int) -> None:
    """Each issue the simulation finds shows on the zh-CN editor in its Chinese rendering (not
    the English), and no error text there holds an English catalog sentence."""
    raw = BAD[name][i]
    issues = _issues(name, raw)
    zh = i18n.gettext_for("zh-CN")
    form = {"action": "validate", "json": json.dumps(raw)}
    r = app_client.post(
        f"/explainers/{name}/edit?lang=zh-CN", data=form, cookies={"stepscope_lang": "zh-CN"}
    )
    assert r.status_code in (200, 422), (name, r.status_code)
    shown = _shown_errors(r.text)
    assert shown, (name, r.text[:600])
    joined = "\n".join(shown)
    for issue in issues:
        english, chinese = issue.msg, issue.text(zh)
        assert chinese != english and CJK.search(chinese), (name, english)
        assert chinese in joined, (name, chinese, shown)
        assert english not in joined, (name, english, shown)
    leaked = english_in("".join(f"<p>{html.escape(s)}</p>" for s in shown))
    assert not leaked, (name, leaked)


@pytest.mark.parametrize("name", sorted(ENGLISH))
def test_api_422_keeps_its_english(name: str, tmp_path: Any) -> None:
    """A client that asks for no language gets the 422 body in English, word for word as
    before; ``?lang=zh-CN`` gets the same issues at the same places, in Chinese."""
    raw = BAD[name][0]
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'api.db'}")
    with TestClient(create_app(settings)) as fresh:
        r = fresh.post(f"/api/v1/explainers/{name}/run", json=raw)
        assert r.status_code == 422, r.text[:300]
        detail = r.json()["detail"]
        assert all(set(d) == {"loc", "msg", "type"} and d["type"] == "value_error" for d in detail)
        got = [(d["loc"], d["msg"]) for d in detail]
        for expected in ENGLISH[name]:
            assert list(expected) in [list(g) for g in got], (expected, got)
        assert len(got) == len(_issues(name, raw))
        r = fresh.post(f"/api/v1/explainers/{name}/run?lang=zh-CN", json=raw)
        assert r.status_code == 422
        zh = r.json()["detail"]
        assert [d["loc"] for d in zh] == [d["loc"] for d in detail]
        assert all(CJK.search(d["msg"]) for d in zh), zh


def test_limits_on_work_are_translated() -> None:
    """The cost limits each explainer checks after parsing speak Chinese too."""
    zh = i18n.gettext_for("zh-CN")
    big = {
        "tcp": {
            "script": [{"t_ms": 0, "endpoint": "client", "call": "send", "bytes": 10_000_000}]
            * 1000,
            "until_ms": 3_600_000,
        },
        "scheduler": {
            "requests": [
                {"id": str(i), "prompt_tokens": 2000, "max_tokens": 40} for i in range(20_000)
            ]
        },
        "path": {"path": "rx", "scenario": "gro_burst", "packets": 1000, "flows": 16},
    }
    for name, raw in big.items():
        (issue,) = _issues(name, raw)
        assert "limit" in issue.msg, issue.msg
        assert CJK.search(issue.text(zh)) and "上限" in issue.text(zh), issue.text(zh)
