"""A failed job's error is stored as a message and shown in the language of whoever asks
(app.web.joberrors): a Chinese page that follows a job that failed reads Chinese, from the
worker that ran it and from any other."""

from __future__ import annotations

import time
from pathlib import Path

from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from app.sim.core import ParamError, msg
from app.sim.core.cost import TraceTooLarge
from app.web import joberrors
from app.web.simproc import SimLimitExceeded, SimProcessDied
from tests.native import pure_python

ZH_CPU = "这个模拟需要的 CPU 时间超过单次运行允许的 0.5 秒（APP_SIM_CPU_S）；请选择更小的参数"
EN_CPU = "this simulation needs more than the 0.5 s of CPU time a run may use (APP_SIM_CPU_S)"


def test_each_failure_is_stored_as_its_message_and_rendered_per_language() -> None:
    for exc in (TraceTooLarge(60e6), SimLimitExceeded("memory", 1536), SimProcessDied()):
        stored = joberrors.describe(exc)
        assert stored.startswith(joberrors.PREFIX) and len(stored) <= joberrors.MAX_STORED
        assert joberrors.render(stored, "en") == joberrors.message_of(exc).render()
        zh = joberrors.render(stored, "zh-CN")
        assert zh != joberrors.render(stored, "en")
        assert any("\u4e00" <= ch <= "\u9fff" for ch in zh), zh
    assert "60 MB" in joberrors.render(joberrors.describe(TraceTooLarge(60e6)), "zh-CN")


def test_several_issues_and_nested_messages_survive_the_store() -> None:
    inner = msg("a list")
    exc = ParamError.single(("x",), msg("you gave {what}", what=inner))
    stored = joberrors.describe(exc)
    assert joberrors.render(stored, "en") == "you gave a list"


def test_an_unexpected_error_is_named_in_a_translated_sentence() -> None:
    stored = joberrors.describe(MemoryError())
    assert joberrors.render(stored, "en") == "the simulation stopped with an error (MemoryError)"
    assert joberrors.render(stored, "zh-CN") == "模拟因错误而停止（MemoryError）"


def test_text_stored_otherwise_is_shown_as_it_is() -> None:
    assert joberrors.render("RuntimeError: from an older worker", "zh-CN") == (
        "RuntimeError: from an older worker"
    )
    assert (
        joberrors.render(joberrors.PREFIX + "{not json", "zh-CN") == joberrors.PREFIX + "{not json"
    )
    too_long = msg("{a}", a="x" * 400)  # more than the shared job's column holds as a message
    stored = joberrors.describe(ParamError.single((), too_long))
    assert not stored.startswith(joberrors.PREFIX) and len(stored) == joberrors.MAX_STORED


@pure_python  # needs a run that takes seconds: the pure modules' pace
def test_a_failed_job_reads_in_the_pages_language_on_every_worker(tmp_path: Path) -> None:
    """A job over the CPU limit fails; its state, asked in Chinese (the page's cookie or
    ``?lang=zh``), from the worker that ran it and from another, says why in Chinese; asked
    in English, in English."""
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'jobs.db'}",
        sim_cpu_s=0.5,  # the run below takes ~1.8 s of CPU on a fast machine
        sim_nice=0,  # its wait is CPU time: not starved by a loaded machine
        job_threshold_s=0.5,
        job_idle_s=60,
    )
    body = {
        "link": {"rate_mbps": 100, "rtt_ms": 40, "buffer_bdp": 1},
        "flows": [{"cc": "cubic"}],
        "duration_s": 160,
        "seed": 3,
    }
    one, two = create_app(settings), create_app(settings)
    with TestClient(one) as here, TestClient(two) as elsewhere:
        started = here.post("/api/v1/explainers/cwnd/run", json=body)
        assert started.status_code == 202, started.text
        url = f"/api/v1/jobs/{started.json()['job']}"
        deadline = time.monotonic() + 120
        while here.get(url).json()["state"] == "running":
            assert time.monotonic() < deadline, "the job did not end"
            time.sleep(0.2)
        for client in (here, elsewhere):
            zh = client.get(url, params={"lang": "zh"}).json()
            assert zh["state"] == "failed"
            assert zh["error"] == ZH_CPU
            en = client.get(url, params={"lang": "en"}).json()
            assert en["error"].startswith(EN_CPU)
