"""A run's API answer, handed from its simulation process to the app worker through memory.

A large run's answer is tens of megabytes of JSON (``bench/api_speed.py``: 87 MB for 4,096
requests). Built in the simulation process right after the run (``RunService.submit(answer=…)``),
it reaches the worker without the result pipe: handed back through it, the answer was pickled,
written through a 64 KB pipe, read back a piece at a time and unpickled again, which cost the two
processes more CPU than writing the JSON had.

Instead each run slot has a memory file (``memfd_create``; an unlinked temporary file where
there is none) that the app worker creates before it forks its simulation processes, so they
inherit it. The process running the slot's run writes the answer's pieces into it
(:func:`put`, ``pwritev``: no joining them first) and hands back only its size; the worker reads
it in one call and empties the file (:meth:`AnswerFiles.take`) before the slot is free again.
A slot has one run at a time, so nothing else writes its file meanwhile. The files die with
the worker, so nothing is left behind in ``/dev/shm`` or ``/tmp`` by a worker that was killed.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Sequence

IOV_BATCH = 512  # pieces per pwritev call (the kernel takes at most IOV_MAX, 1024)


def _memory_file(name: str) -> int:
    try:
        return os.memfd_create(name, os.MFD_CLOEXEC)
    except (AttributeError, OSError):  # not Linux, or no memfd: an unlinked temporary file
        fd, path = tempfile.mkstemp(prefix=f"{name}-")
        os.unlink(path)
        return fd


class AnswerFiles:
    """One memory file per run slot, inherited by every simulation process forked after it."""

    def __init__(self, slots: int) -> None:
        self._fds = [_memory_file(f"stepscope-answer-{i}") for i in range(slots)]

    def fd(self, slot: int) -> int:
        """The file of ``slot`` (a descriptor the simulation processes share)."""
        return self._fds[slot]

    def take(self, slot: int, size: int) -> bytes:
        """The ``size`` bytes a run wrote into ``slot``'s file; the file is emptied."""
        fd = self._fds[slot]
        try:
            parts: list[bytes] = []
            done = 0
            while done < size:
                got = os.pread(fd, size - done, done)
                if not got:
                    raise OSError(f"answer file of slot {slot}: {done} of {size} bytes")
                parts.append(got)
                done += len(got)
            return parts[0] if len(parts) == 1 else b"".join(parts)
        finally:
            self.clear(slot)

    def clear(self, slot: int) -> None:
        """Empty ``slot``'s file (its memory goes back to the system)."""
        with contextlib.suppress(OSError):
            os.ftruncate(self._fds[slot], 0)

    def close(self) -> None:
        fds, self._fds = self._fds, []
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)


def put(fd: int, pieces: Sequence[bytes | bytearray | memoryview]) -> int:
    """In a simulation process: ``pieces`` written one after another into the memory file
    ``fd`` (emptied first); answers the bytes written."""
    os.ftruncate(fd, 0)
    offset = 0
    for start in range(0, len(pieces), IOV_BATCH):
        batch = [memoryview(p) for p in pieces[start : start + IOV_BATCH] if p]
        want = sum(len(p) for p in batch)
        wrote = os.pwritev(fd, batch, offset) if batch else 0
        offset += wrote
        if wrote < want:  # a short write (a signal, memory): the rest piece by piece
            offset = _put_rest(fd, batch, wrote, offset)
    return offset


def _put_rest(fd: int, batch: list[memoryview], skip: int, offset: int) -> int:
    for piece in batch:
        if skip >= len(piece):
            skip -= len(piece)
            continue
        view, skip = piece[skip:], 0
        while view:
            n = os.pwrite(fd, view, offset)
            if n <= 0:
                raise OSError("could not write the answer file")
            offset += n
            view = view[n:]
    return offset
