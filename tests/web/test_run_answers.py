"""A run the API waits for has its answer written in its simulation process and handed to the app
worker through the run slot's memory file (app.web.answers): the answer is the documented JSON
in the request's language, the file is emptied once read, a run joined or not asked for an
answer is answered from its trace, and an answer nobody takes is not kept."""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
import time
import zlib as compress_module
from collections.abc import Callable
from functools import partial
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app import explainers
from app.main import create_app
from app.settings import Settings
from app.sim.core import EncodedJSON, Trace
from app.web import answers, fastjson, i18n, simworker
from app.web.plugin import Plugin
from app.web.routes import api as api_routes
from app.web.routes.api import answer_pieces, trace_json
from app.web.runs import RunService

PLUGINS = {p.name: p for p in explainers.builtin()}


def wait_for(check: Callable[[], bool], seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.02)


def stored(runs: RunService, key: str) -> bool:
    return runs.cached(key) is not None


def documented(plugin: Plugin, trace: Trace[Any, Any], lang: str) -> Any:
    with i18n.speaking(lang):
        return json.loads(json.dumps(trace_json(plugin, trace)))


def decoded(plugin: Plugin, answer: bytes | Any) -> Any:
    """An answer (compact by default) as the documented JSON."""
    return plugin.sim.decode_compact(json.loads(answer) if isinstance(answer, bytes) else answer)


# --- the memory files ----------------------------------------------------------------------------


def _write_in_child(fd: int, pieces: list[bytes], out: Any) -> None:
    out.send(answers.put(fd, pieces))


def test_a_forked_process_writes_the_pieces_and_the_worker_reads_them_once() -> None:
    files = answers.AnswerFiles(2)
    try:
        # more pieces than one pwritev takes, of every size, some empty, one a bytearray
        pieces: list[Any] = [b"x" * (i % 7) + str(i).encode() for i in range(answers.IOV_BATCH * 3)]
        pieces[5] = b""
        pieces[9] = bytearray(b"[1,2]")
        pieces.append(b"y" * (answers.MAP_AT // 2))  # under MAP_AT: read
        expected = b"".join(pieces)
        ctx = multiprocessing.get_context("fork")
        ours, theirs = ctx.Pipe()
        child = ctx.Process(target=_write_in_child, args=(files.fd(1), pieces, theirs))
        child.start()
        size = ours.recv()
        child.join(10)
        assert size == len(expected)
        assert os.fstat(files.fd(0)).st_size == 0  # the other slot's file is untouched
        got = files.take(1, size)
        assert isinstance(got, bytes) and got == expected
        assert os.fstat(files.fd(1)).st_size == 0  # emptied once read
        assert answers.put(files.fd(1), [b"ab", b"c"]) == 3  # written again from empty
        assert files.take(1, 3) == b"abc"
        with pytest.raises(OSError):
            files.take(1, 10)  # fewer bytes than said: refused, not a short answer
    finally:
        files.close()


def _put_in_child(fd: int, pieces: list[bytes]) -> int:
    ctx = multiprocessing.get_context("fork")
    ours, theirs = ctx.Pipe()
    child = ctx.Process(target=_write_in_child, args=(fd, pieces, theirs))
    child.start()
    size: int = ours.recv()
    child.join(10)
    return size


@pytest.mark.skipif(sys.platform != "linux", reason="memfd and hole punching are Linux's")
def test_a_large_answer_is_sent_from_its_pages_which_go_back_once_sent() -> None:
    """An answer of MAP_AT bytes or more is a view of the pages the process wrote (not read
    into the worker); the slot's next answer is written after it while it is being sent, and
    its pages go back to the system when the last view of them is gone."""
    files = answers.AnswerFiles(1)
    try:
        assert files.mapped
        fd = files.fd(0)
        first = [b'["', b"a" * (2 * answers.MAP_AT), b'"]']
        size = _put_in_child(fd, first)
        view = files.take(0, size)
        assert isinstance(view, memoryview) and bytes(view) == b"".join(first)
        assert files.in_use(0) == size
        head = view[:10]  # a view of the view holds the pages too
        del view
        assert files.in_use(0) == size
        second = [b'["', b"b" * answers.MAP_AT, b'"]']
        size2 = _put_in_child(fd, second)  # the next run, while the first is being sent
        assert bytes(head) == b'["aaaaaaaa'  # not written over
        view2 = files.take(0, size2)
        assert bytes(view2) == b"".join(second)
        del head
        assert files.in_use(0) == size2  # the first answer's pages went back
        del view2
        assert files.in_use(0) == 0
        assert os.fstat(fd).st_blocks == 0  # all of them
        assert _put_in_child(fd, [b"[1]"]) == 3  # nothing left: written from the start
        assert os.fstat(fd).st_size == 3
        assert files.take(0, 3) == b"[1]"
        assert os.fstat(fd).st_size == 0
        view3 = files.take(0, _put_in_child(fd, first))
        files.clear(0)  # (a run that ended) keeps what is being sent
        assert bytes(view3[-3:]) == b'a"]'
    finally:
        files.close()
    del view3  # after the files are closed: nothing is written to a closed descriptor


def test_the_pieces_are_the_json_orjson_writes() -> None:
    content = {
        "sim_version": "x-1",
        "steps": EncodedJSON(b'[{"a":1}]'),
        "rest": {"b": [1.5, None, "\u00e9"], 2: "two"},
        "big": 10**30,
    }
    joined = b"".join(fastjson.render_pieces(content))
    assert json.loads(joined) == {
        "sim_version": "x-1",
        "steps": [{"a": 1}],
        "rest": {"b": [1.5, None, "\u00e9"], "2": "two"},
        "big": 10**30,
    }
    plain = {"a": 1, "b": [2, 3]}
    assert b"".join(fastjson.render_pieces(plain)) == fastjson.render_json(plain)
    assert b"".join(fastjson.render_pieces({})) == b"{}"


# --- the run service ---------------------------------------------------------------------------


SCHED = {
    "config": {
        "num_gpu_blocks": 64,
        "block_size": 16,
        "max_num_batched_tokens": 256,
        "max_model_len": 512,
    },
    "requests": [{"id": f"q{i}", "prompt_tokens": 100 + i, "max_tokens": 9} for i in range(12)],
}


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("name", sorted(PLUGINS))
def test_the_answer_from_the_simulation_process_is_the_documented_json(
    make_runs: Callable[..., RunService], name: str, lang: str
) -> None:
    plugin = PLUGINS[name]
    preset = plugin.sim.preset(plugin.sim.default_preset)
    assert preset is not None
    runs = make_runs()
    params = plugin.sim.parse(preset.params)
    key = runs.key(plugin.sim, params)
    job = runs.submit(
        plugin.sim, params, key, answer=partial(answer_pieces, plugin.sim, lang, "compact")
    )
    got = runs.wait_answer(job, plugin.sim)
    assert isinstance(got, EncodedJSON)
    wait_for(lambda: job.state == "done")  # stored once its waiter has the answer
    trace = runs.cached(key)  # stored as well, for the pages and the next ask
    assert trace is not None
    assert decoded(plugin, got.data) == documented(plugin, trace, lang)
    assert os.fstat(runs._answers.fd(job.slot)).st_size == 0
    assert job.answered is None  # handed to its waiter, not kept with the job


def test_a_second_waiter_and_a_run_without_an_answer_get_the_trace(
    make_runs: Callable[..., RunService],
) -> None:
    sim = PLUGINS["scheduler"].sim
    runs = make_runs()
    params = sim.parse(SCHED)
    key = runs.key(sim, params)
    job = runs.submit(sim, params, key, answer=partial(answer_pieces, sim, "en", "compact"))
    first = runs.wait_answer(job, sim)
    assert isinstance(first, EncodedJSON)
    again = runs.wait_answer(job, sim)  # the answer was taken: the trace
    assert isinstance(again, Trace)
    assert decoded(PLUGINS["scheduler"], first.data) == documented(
        PLUGINS["scheduler"], again, "en"
    )
    other = sim.parse({**SCHED, "requests": SCHED["requests"][:5]})
    plain = runs.submit(sim, other, runs.key(sim, other))  # no answer asked for
    assert isinstance(runs.wait_answer(plain, sim), Trace)


def test_an_answer_nobody_waits_for_is_not_kept(make_runs: Callable[..., RunService]) -> None:
    sim = PLUGINS["scheduler"].sim
    runs = make_runs()
    params = sim.parse(SCHED)
    key = runs.key(sim, params)
    job = runs.submit(sim, params, key, answer=partial(answer_pieces, sim, "en", "compact"))
    wait_for(lambda: job.state == "done")
    assert job.answered is None
    assert os.fstat(runs._answers.fd(job.slot)).st_size == 0
    assert runs.cached(key) is not None


def test_the_run_route_answers_from_the_simulation_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the API (and in Chinese): the answer read from the memory file is sent, it
    parses to the documented JSON, and the same params again are answered from the store."""
    taken: list[int] = []
    take = answers.AnswerFiles.take

    def counting_take(self: answers.AnswerFiles, slot: int, size: int) -> bytes:
        taken.append(size)
        return take(self, slot, size)

    monkeypatch.setattr(answers.AnswerFiles, "take", counting_take)
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'api.db'}", warm_presets=False)
    with TestClient(create_app(settings)) as client:
        for lang in ("zh", "en"):
            body = {
                **SCHED,
                "requests": [{**r, "id": f"{lang}{r['id']}"} for r in SCHED["requests"]],
            }
            r = client.post(
                f"/api/v1/explainers/scheduler/run?lang={lang}",
                json=body,
                headers={"Accept-Language": lang},
            )
            assert r.status_code == 200
            assert taken and taken[-1] == len(r.content)
            site = client.app.state.site  # type: ignore[attr-defined]
            sim = site.get("scheduler").sim
            key = site.runs.key(sim, sim.parse(body))
            wait_for(partial(stored, site.runs, key))  # stored after it answered
            trace = site.runs.cached(key)
            assert decoded(site.get("scheduler"), r.json()) == documented(
                site.get("scheduler"), trace, lang
            )
            count = len(taken)
            again = client.post(f"/api/v1/explainers/scheduler/run?lang={lang}", json=body)
            assert again.status_code == 200 and len(taken) == count  # from the store
            assert again.json() == r.json()


@pytest.mark.skipif(sys.platform != "linux", reason="memfd and hole punching are Linux's")
@pytest.mark.parametrize("encoding", ["identity", "gzip"])
def test_a_large_answer_goes_from_its_pages_to_the_client(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, encoding: str
) -> None:
    """An answer sent from the pages it was written into (made "large" here) reaches the
    client whole, plain (its length said) or gzipped, and its pages go back once sent."""
    for module, name in ((answers, "MAP_AT"), (fastjson, "STREAM_AT"), (fastjson, "GZIP_AT")):
        monkeypatch.setattr(module, name, 1024)
    monkeypatch.setattr(fastjson, "FIRST_BYTES", 100)
    taken: list[Any] = []
    take = answers.AnswerFiles.take

    def recording_take(self: answers.AnswerFiles, slot: int, size: int) -> bytes | memoryview:
        got = take(self, slot, size)
        taken.append(type(got))
        return got

    monkeypatch.setattr(answers.AnswerFiles, "take", recording_take)
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'api.db'}", warm_presets=False)
    with TestClient(create_app(settings)) as client:
        r = client.post(
            "/api/v1/explainers/scheduler/run", json=SCHED, headers={"Accept-Encoding": encoding}
        )
        assert r.status_code == 200 and taken == [memoryview]
        zipped = encoding == "gzip"
        assert r.headers.get("content-encoding") == ("gzip" if zipped else None)
        if not zipped:
            assert int(r.headers["content-length"]) == len(r.content) > 1024
        site = client.app.state.site  # type: ignore[attr-defined]
        sim = site.get("scheduler").sim
        key = site.runs.key(sim, sim.parse(SCHED))
        wait_for(partial(stored, site.runs, key))
        plugin = site.get("scheduler")
        assert decoded(plugin, r.json()) == documented(plugin, site.runs.cached(key), "en")
        files = site.runs._answers
        wait_for(lambda: sum(files.in_use(s) for s in range(len(files._fds))) == 0)
        # asked again: from the stored trace, its pieces sent a chunk at a time
        again = client.post(
            "/api/v1/explainers/scheduler/run", json=SCHED, headers={"Accept-Encoding": encoding}
        )
        assert again.status_code == 200 and taken == [memoryview]
        assert again.json() == r.json()
        if not zipped:
            assert int(again.headers["content-length"]) == len(again.content)


def test_many_pieces_go_a_chunk_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """A streamed answer's messages join to its pieces; small pieces are joined up to about
    CHUNK_BYTES, a larger one goes alone, and the first message is bytes (a view's first
    FIRST_BYTES copied: the GZip middleware compares the first body with itself)."""
    monkeypatch.setattr(fastjson, "CHUNK_BYTES", 100)
    monkeypatch.setattr(fastjson, "FIRST_BYTES", 10)
    big = memoryview(b"v" * 250)
    small = [str(i).encode() * 7 for i in range(40)]
    for pieces in ([big, *small], [*small, big, b"x" * 120, *small], small, [big]):
        chunks = list(fastjson._chunks(pieces))
        assert b"".join(chunks) == b"".join(pieces)
        assert isinstance(chunks[0], bytes) and len(chunks[0]) <= 100 + 14
        assert all(len(c) < 100 + 14 or len(c) >= 120 for c in chunks)


def test_the_answer_is_sent_while_the_trace_is_still_being_stored(
    make_runs: Callable[..., RunService], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The simulation process flags its answer as soon as it is written: the waiter has it
    while the process still compresses the trace (made slow here), which is stored after."""
    compress = simworker.zlib.compress

    def slow_compress(data: bytes, level: int = -1) -> bytes:
        time.sleep(1.5)
        return compress(data, level)

    # the processes fork with it (the run module's zlib is the one module: patched only there),
    # forked from this process rather than started by the fork server
    slow_zlib = SimpleNamespace(compress=slow_compress, decompress=compress_module.decompress)
    monkeypatch.setattr(simworker, "zlib", slow_zlib)
    monkeypatch.setattr(simworker, "START_METHOD", "fork")
    sim = PLUGINS["scheduler"].sim
    runs = make_runs()
    params = sim.parse(SCHED)
    key = runs.key(sim, params)
    job = runs.submit(sim, params, key, answer=partial(answer_pieces, sim, "en", "compact"))
    got = runs.wait_answer(job, sim)
    assert isinstance(got, EncodedJSON)
    assert job.state == "running" and runs.cached(key) is None  # not stored yet
    wait_for(lambda: job.state == "done")
    trace = runs.cached(key)
    assert trace is not None
    assert decoded(PLUGINS["scheduler"], got.data) == documented(PLUGINS["scheduler"], trace, "en")
    assert os.fstat(runs._answers.fd(job.slot)).st_size == 0


def test_a_joined_run_is_answered_in_its_own_language_and_form() -> None:
    """A request that joins a run someone else started takes that run's answer only when it
    was built as its own would be (the same explainer, language and form); else its answer is
    written from the trace (``run_explainer``)."""
    sim = PLUGINS["scheduler"].sim
    mine = partial(answer_pieces, sim, "en", "compact")
    assert api_routes._same_answer(partial(answer_pieces, sim, "en", "compact"), mine)
    assert not api_routes._same_answer(partial(answer_pieces, sim, "en", "full"), mine)
    assert not api_routes._same_answer(partial(answer_pieces, sim, "zh", "compact"), mine)
    assert not api_routes._same_answer(
        partial(answer_pieces, PLUGINS["skb"].sim, "en", "compact"), mine
    )
    assert not api_routes._same_answer(None, mine)
