"""GroupCommit: writes from many requests committed together, each answered once committed."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Sequence
from typing import Any

import pytest

from app.web.groupcommit import GroupCommit


def run(main: Coroutine[Any, Any, None]) -> None:
    """asyncio.run on a thread of its own (a browser test's sync Playwright may have left an
    event loop running on this one)."""
    failed: list[BaseException] = []

    def go() -> None:
        try:
            asyncio.run(main)
        except BaseException as exc:  # noqa: BLE001 - raised again below
            failed.append(exc)

    thread = threading.Thread(target=go)
    thread.start()
    thread.join(30)
    assert not thread.is_alive(), "timed out"
    if failed:
        raise failed[0]


def test_writes_arriving_during_a_commit_share_the_next_transaction() -> None:
    """While one batch is being written, the next ones gather: 200 writes at once take far
    fewer than 200 transactions, each submit returns only after its own item was written,
    and every item is written exactly once."""
    written: list[list[int]] = []
    release = threading.Event()

    def write(items: Sequence[int]) -> None:
        if not written:
            release.wait(5)  # the first commit is slow: everything else queues behind it
        written.append(list(items))

    gc: GroupCommit[int] = GroupCommit(write)

    async def main() -> None:
        async def one(i: int) -> int:
            await gc.submit(i)
            assert any(i in batch for batch in written)  # committed before answered
            return i

        tasks = [asyncio.create_task(one(i)) for i in range(200)]
        await asyncio.sleep(0.05)
        assert not any(t.done() for t in tasks)  # nobody is answered before the commit
        release.set()
        assert sorted(await asyncio.gather(*tasks)) == list(range(200))

    run(main())
    assert sorted(i for batch in written for i in batch) == list(range(200))
    assert len(written) <= 3, [len(b) for b in written]
    assert gc.batches == len(written) and gc.items == 200


def test_a_failed_write_is_raised_to_every_request_of_its_batch_and_the_writer_goes_on() -> None:
    calls: list[list[str]] = []

    def write(items: Sequence[str]) -> None:
        calls.append(list(items))
        if "bad" in items:
            raise RuntimeError("database is locked")

    gc: GroupCommit[str] = GroupCommit(write)

    async def main() -> None:
        with pytest.raises(RuntimeError, match="locked"):
            await gc.submit("bad")
        await gc.submit("good")  # the next batch is written by the same thread

    run(main())
    assert calls == [["bad"], ["good"]]


def test_batches_are_capped() -> None:
    sizes: list[int] = []
    gate = threading.Event()

    def write(items: Sequence[int]) -> None:
        gate.wait(5)
        sizes.append(len(items))

    gc: GroupCommit[int] = GroupCommit(write, max_batch=10)

    async def main() -> None:
        tasks = [asyncio.create_task(gc.submit(i)) for i in range(35)]
        await asyncio.sleep(0.05)
        gate.set()
        await asyncio.gather(*tasks)

    run(main())
    assert sum(sizes) == 35 and max(sizes) <= 10


def test_closing_ends_the_writer_thread_after_what_waits_is_written() -> None:
    """close() (the app's shutdown) lets the writer thread end once nothing waits; a later
    submit starts a new one."""
    written: list[int] = []
    gc: GroupCommit[int] = GroupCommit(lambda items: written.extend(items))

    async def one(i: int) -> None:
        await gc.submit(i)

    run(one(1))
    thread = gc._thread
    assert thread is not None and thread.is_alive()
    gc.close()
    thread.join(5)
    assert not thread.is_alive()
    run(one(2))
    assert written == [1, 2]
    gc.close()
